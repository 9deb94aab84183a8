// CI (no GPU): GEMM config spaces, constraints, launch rules, the float64 reference, the cuBLASLt
// algo ids, and that representative NVIDIA configs compile with NVRTC for sm_90a to PTX holding
// mma.sync (every config of the skinny space; a spread of the mma space, which is too large to
// compile whole on CI's 2 cores).
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <cstdio>
#include <cmath>
#include <set>
#include <thread>

#include "compiler/compiler.h"
#include "ops/vendor/cublaslt.h"
#include "templates/embedded.h"
#include "templates/gemm.h"
#include "tests/support/tools.h"
#include "tests/unit/gemm_test_util.h"

namespace ktune::gemm {
namespace {

using testutil::mmaConfig;
using testutil::sm90aDevice;

TEST(GemmSpace, MmaConstraintsRejectImpossibleConfigs) {
  const ConfigSpace& sp = configSpace(KernelKind::kMma);
  auto e = sp.enumerate("cuda", 227 * 1024);
  EXPECT_GT(e.accepted.size(), 100u);
  EXPECT_GT(e.rejected.size(), 0u);
  for (const Config& c : e.accepted) {
    const int64_t w = c.getInt("WARPS_M") * c.getInt("WARPS_N");
    EXPECT_TRUE(w == 4 || w == 8) << c.toString();
    EXPECT_EQ(c.getInt("BLOCK_M") % (16 * c.getInt("WARPS_M")), 0) << c.toString();
    EXPECT_EQ(c.getInt("BLOCK_N") % (16 * c.getInt("WARPS_N")), 0) << c.toString();
    EXPECT_LE(sharedBytes(KernelKind::kMma, c), 227 * 1024) << c.toString();
  }
  // Shared memory: 5 stages of 256x256x64 tiles = 320 KiB is rejected by the resource check.
  bool saw_shared_reject = false;
  for (const auto& r : e.rejected)
    if (r.reason.find("shared") != std::string::npos) saw_shared_reject = true;
  EXPECT_TRUE(saw_shared_reject);
  EXPECT_EQ(sharedBytes(KernelKind::kMma, mmaConfig(128, 256, 32, 2, 4, 4)), 4 * (128 * 32 + 32 * 256) * 2);
  // 1 x 1 warps is rejected, as is a warp tile that does not divide the block.
  EXPECT_FALSE(sp.validate(mmaConfig(128, 128, 32, 1, 1, 3)).ok());
  EXPECT_FALSE(sp.validate(mmaConfig(64, 64, 32, 4, 2, 3)).ok());
  EXPECT_TRUE(sp.validate(mmaConfig(128, 128, 32, 2, 2, 3)).ok());
}

TEST(GemmSpace, SkinnyAndMfmaSpaces) {
  auto sk = configSpace(KernelKind::kSkinny).enumerate("cuda", 227 * 1024);
  EXPECT_GT(sk.accepted.size(), 20u);
  for (const Config& c : sk.accepted) {
    const int64_t regs = 8 * c.getInt("SK_DEPTH") * c.getInt("SK_NT") * c.getInt("SK_U") +
                         4 * c.getInt("SK_MT") * c.getInt("SK_U") +
                         4 * c.getInt("SK_NT") * c.getInt("SK_MT");
    EXPECT_LE(regs, 144) << c.toString();
  }
  // Deep rings of wide loads over many tiles are rejected (register budget).
  EXPECT_FALSE(configSpace(KernelKind::kSkinny)
                   .validate(Config{{"SK_NT", int64_t{2}}, {"SK_MT", int64_t{2}},
                                    {"SK_U", int64_t{4}}, {"NUM_WARPS", int64_t{8}},
                                    {"SPLIT_K", int64_t{1}}, {"SK_DEPTH", int64_t{4}},
                                    {"SK_PF", int64_t{0}}})
                   .ok());
  auto mf = configSpace(KernelKind::kMfma).enumerate("hip", 64 * 1024);
  EXPECT_GT(mf.accepted.size(), 10u);
  for (const Config& c : mf.accepted) {
    EXPECT_TRUE(c.getInt("MATRIX_INSTR") == 16 || c.getInt("MATRIX_INSTR") == 32);
    EXPECT_LE(sharedBytes(KernelKind::kMfma, c), 64 * 1024);
  }
  EXPECT_EQ(kernelsForBackend("cuda").size(), 3u);  // mma, skinny, decode
  EXPECT_EQ(kernelsForBackend("hip").size(), 1u);
}

TEST(GemmShapeTest, ValidateAndAlignment) {
  GemmShape s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 16, 4096, 4096);
  EXPECT_TRUE(validate(s).ok());
  EXPECT_EQ(s.lda, 4096);
  EXPECT_EQ(s.ldb, 4096);
  EXPECT_TRUE(fastPathOk(s));
  GemmShape t = denseShape(Layout::kTN, ElemType::kF16, ElemType::kF32, 7, 9, 11);
  EXPECT_EQ(t.lda, 7);  // A stored [K][M]
  EXPECT_EQ(t.ldb, 9);
  EXPECT_FALSE(fastPathOk(t));
  GemmShape bad = s;
  bad.lda = 100;
  Status st = validate(bad);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("lda"), std::string::npos) << st.message();
  bad = s;
  bad.k = 0;
  EXPECT_FALSE(validate(bad).ok());
  bad = s;
  bad.ab = ElemType::kF32;
  EXPECT_FALSE(validate(bad).ok());
  EXPECT_NE(shapeKey(s), shapeKey(t));
  EXPECT_EQ(*parseLayout("TT"), Layout::kTT);
  EXPECT_FALSE(parseLayout("XY").ok());
  EXPECT_EQ(*parseElemType("bf16"), ElemType::kBF16);
  EXPECT_EQ(*parseActivation("gelu"), Activation::kGelu);
}

TEST(GemmLaunch, GridsSplitKAndApplicability) {
  const DeviceInfo dev = sm90aDevice();
  GemmShape s = denseShape(Layout::kNN, ElemType::kBF16, ElemType::kBF16, 1000, 1000, 4097);
  auto p = launchPlan(KernelKind::kMma, mmaConfig(128, 256, 32, 2, 4, 4, 2), s, dev);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->grid.x, 8u * 4u);
  EXPECT_EQ(p->grid.z, 2u);
  EXPECT_EQ(p->block.x, 256u);
  EXPECT_EQ(p->workspace_bytes, 1000 * 1000 * 4);
  EXPECT_EQ(p->counters, 32);
  // SPLIT_K=4 over K=64 with BLOCK_K=32 leaves empty slices.
  GemmShape small = denseShape(Layout::kNN, ElemType::kBF16, ElemType::kBF16, 64, 64, 64);
  auto q = launchPlan(KernelKind::kMma, mmaConfig(128, 128, 32, 2, 2, 3, 4), small, dev);
  EXPECT_EQ(q.status().code(), Code::kUnsupported);
  // Shared memory over the device limit -> out of resources.
  DeviceInfo tiny = dev;
  tiny.shared_per_block_optin = 64 * 1024;
  auto r = launchPlan(KernelKind::kMma, mmaConfig(128, 256, 32, 2, 4, 4), s, tiny);
  EXPECT_EQ(r.status().code(), Code::kOutOfResources);
  // Skinny: NT and aligned only.
  Config skc{{"SK_NT", int64_t{1}},    {"SK_MT", int64_t{2}},    {"SK_U", int64_t{2}},
             {"NUM_WARPS", int64_t{8}}, {"SPLIT_K", int64_t{1}}, {"SK_DEPTH", int64_t{4}},
             {"SK_PF", int64_t{1}}};
  GemmShape d = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 16, 4096, 4096);
  auto ps = launchPlan(KernelKind::kSkinny, skc, d, dev);
  ASSERT_TRUE(ps.ok()) << ps.status().toString();
  EXPECT_EQ(ps->grid.x, 4096u / 16u);
  EXPECT_EQ(ps->grid.y, 1u);
  EXPECT_EQ(ps->shared_bytes, 8 * 16 * (16 + 1) * 4);
  GemmShape nn = d;
  nn.layout = Layout::kNN;
  nn.ldb = 4096;
  EXPECT_EQ(applicable(KernelKind::kSkinny, skc, nn).code(), Code::kUnsupported);
  GemmShape odd = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 16, 4096, 4100);
  EXPECT_EQ(applicable(KernelKind::kSkinny, skc, odd).code(), Code::kUnsupported);
  GemmShape unal = d;
  unal.aligned16 = false;
  EXPECT_EQ(applicable(KernelKind::kSkinny, skc, unal).code(), Code::kUnsupported);
  // The mma kernel always applies; unaligned shapes compile the element-wise path.
  auto defs = defines(KernelKind::kMma, mmaConfig(128, 128, 32, 2, 2, 3), unal);
  bool aligned_flag = true;
  for (auto& [k, v] : defs)
    if (k == "ALIGNED") aligned_flag = v == "1";
  EXPECT_FALSE(aligned_flag);
}

TEST(GemmLaunch, CuratedConfigsAreValidAndApplicable) {
  for (auto [m, n, k] : {std::tuple{8192, 8192, 8192}, {1024, 14336, 4096}, {1, 4096, 4096},
                         {16, 14336, 4096}, {128, 4096, 4096}, {33, 1000, 1000}}) {
    GemmShape s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, m, n, k);
    for (KernelKind kind : {KernelKind::kMma, KernelKind::kSkinny}) {
      auto cs = curatedConfigs(kind, s);
      EXPECT_FALSE(cs.empty()) << kernelKindName(kind) << " " << shapeKey(s);
      for (const Config& c : cs) {
        EXPECT_TRUE(configSpace(kind).validate(c).ok()) << c.toString();
        EXPECT_TRUE(launchPlan(kind, c, s, sm90aDevice()).ok()) << c.toString();
      }
    }
  }
}

TEST(GemmReference, SmallHandComputedCases) {
  // NN 2x2x2: [[1,2],[3,4]] * [[5,6],[7,8]] = [[19,22],[43,50]]
  GemmShape s = denseShape(Layout::kNN, ElemType::kBF16, ElemType::kF32, 2, 2, 2);
  const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  auto r = reference(s, a, b, nullptr, nullptr);
  EXPECT_EQ(r, (std::vector<double>{19, 22, 43, 50}));
  // TT with the same logical operands stored transposed.
  GemmShape t = denseShape(Layout::kTT, ElemType::kBF16, ElemType::kF32, 2, 2, 2);
  const float at[] = {1, 3, 2, 4}, bt[] = {5, 7, 6, 8};
  EXPECT_EQ(reference(t, at, bt, nullptr, nullptr), r);
  // alpha, beta, bias, SiLU.
  s.alpha = 0.5f;
  s.beta = 2.0f;
  s.has_bias = true;
  s.act = Activation::kSilu;
  const float c[] = {1, 1, 1, 1}, bias[] = {-10, 0};
  auto r2 = reference(s, a, b, c, bias);
  const double v0 = 0.5 * 19 + 2 - 10;
  EXPECT_NEAR(r2[0], v0 / (1 + std::exp(-v0)), 1e-12);
  const double v3 = 0.5 * 50 + 2;
  EXPECT_NEAR(r2[3], v3 / (1 + std::exp(-v3)), 1e-12);
}

TEST(CublasLtIds, RoundTripAndErrors) {
  cublaslt::LtAlgo a;
  a.index = 3;
  for (int i = 0; i < 8; ++i) a.bytes[i] = 0x0123456789abcdefULL * (i + 1);
  const std::string id = a.id();
  EXPECT_EQ(id.rfind("cublaslt:idx=3:algo=", 0), 0u) << id;
  auto b = cublaslt::LtAlgo::parse(id);
  ASSERT_TRUE(b.ok()) << b.status().toString();
  EXPECT_EQ(b->index, 3);
  EXPECT_EQ(b->bytes, a.bytes);
  EXPECT_FALSE(cublaslt::LtAlgo::parse("hipblaslt:idx=1").ok());
  EXPECT_FALSE(cublaslt::LtAlgo::parse("cublaslt:idx=1:algo=12").ok());
  EXPECT_FALSE(cublaslt::LtAlgo::parse(id.substr(0, id.size() - 1) + "g").ok());
}

// Compiles with NVRTC for sm_90a (no GPU needed) and checks the PTX for mma.sync.
class GemmNvrtc : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = compilerForArch("sm_90a");
    if (!c.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << c.status().toString());
    cc_ = std::move(c).value();
  }
  // Spills fail the compile unless allow_spills_: for the mma kernel they depend on the layout
  // (e.g. 256x64 tiles with A stored [K][M] spill ~90 bytes), which the config space cannot
  // see; the tuner prunes spilling binaries from the compiler report at run time.
  bool allow_spills_ = false;
  using PtxCheck = testutil::PtxCheck;
  // The jobs' failures (testutil::compileJobs); the default check wants mma.sync m16n8k16.
  std::vector<std::string> compileAll(const std::vector<testutil::CompileJob>& jobs,
                                      PtxCheck check = {}) {
    if (!check)
      check = [](const Config&, const GemmShape&, const std::string& ptx) {
        return ptx.find("mma.sync.aligned.m16n8k16") == std::string::npos
                   ? std::string("PTX lacks mma.sync.aligned.m16n8k16")
                   : std::string();
      };
    return testutil::compileJobs(*cc_, jobs, check, allow_spills_);
  }
  std::unique_ptr<Compiler> cc_;
};

TEST_F(GemmNvrtc, SkinnyConfigsCompileWithMmaSync) {
  // The space is too large to compile whole in CI: every curated config of the decode shapes, and
  // a deterministic spread of the accepted space (every 23rd: tiles, depths, hints, splits appear).
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  for (int64_t m : {1, 16, 128}) {
    GemmShape s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, m, 4096, 4096);
    for (const Config& c : curatedConfigs(KernelKind::kSkinny, s)) jobs.emplace_back(KernelKind::kSkinny, c, s);
  }
  GemmShape s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 16, 4096, 4096);
  const auto acc = configSpace(KernelKind::kSkinny).enumerate("cuda", 227 * 1024).accepted;
  for (size_t j = 0; j < acc.size(); j += 23) jobs.emplace_back(KernelKind::kSkinny, acc[j], s);
  for (const auto& f : compileAll(jobs)) ADD_FAILURE() << f;
}

TEST_F(GemmNvrtc, RepresentativeMmaConfigsCompileWithMmaSync) {
  // A deterministic spread of the accepted space (every 41st config: tile shapes, warp
  // layouts, stages, split-K values appear), every layout/dtype once, plus the curated set.
  allow_spills_ = true;
  auto acc = configSpace(KernelKind::kMma).enumerate("cuda", 227 * 1024).accepted;
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  const Layout layouts[] = {Layout::kNN, Layout::kNT, Layout::kTN, Layout::kTT};
  size_t i = 0;
  for (size_t j = 0; j < acc.size(); j += 41, ++i) {
    GemmShape s = denseShape(layouts[i % 4], i % 3 == 1 ? ElemType::kF16 : ElemType::kBF16,
                             i % 5 == 2 ? ElemType::kF32 : ElemType::kBF16, 512, 512, 512);
    s.has_bias = i % 2 == 1;
    s.act = static_cast<Activation>(i % 3);
    s.aligned16 = i % 7 != 3;
    jobs.emplace_back(KernelKind::kMma, acc[j], s);
  }
  GemmShape big = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096);
  for (const Config& c : curatedConfigs(KernelKind::kMma, big)) jobs.emplace_back(KernelKind::kMma, c, big);
  for (const auto& f : compileAll(jobs)) ADD_FAILURE() << f;
}

TEST_F(GemmNvrtc, WgmmaCuratedConfigsCompileForSm90a) {
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  GemmShape s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096);
  for (const Config& c : curatedConfigs(KernelKind::kWgmma, s)) jobs.emplace_back(KernelKind::kWgmma, c, s);
  GemmShape decode = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 128, 4096, 4096);
  for (const Config& c : curatedConfigs(KernelKind::kWgmma, decode))
    if (c.getInt("SPLIT_K") > 1) jobs.emplace_back(KernelKind::kWgmma, c, decode);
  GemmShape f = denseShape(Layout::kNT, ElemType::kF16, ElemType::kF32, 100, 100, 100);
  f.aligned16 = true;
  f.lda = f.ldb = 104;
  f.has_bias = true;
  f.act = Activation::kGelu;
  jobs.emplace_back(KernelKind::kWgmma, curatedConfigs(KernelKind::kWgmma, f).front(), f);
  ASSERT_GE(jobs.size(), 4u);
  for (const auto& fl : compileAll(jobs, [](const Config&, const GemmShape&, const std::string& ptx) {
         return ptx.find("wgmma.mma_async.sync.aligned.m64n") == std::string::npos
                    ? std::string("PTX lacks wgmma.mma_async")
                    : std::string();
       }))
    ADD_FAILURE() << fl;
  // Launch rule (wgmma kernel): sm_90a only, NT only.
  DeviceInfo h = sm90aDevice();
  auto p = launchPlan(KernelKind::kWgmma, curatedConfigs(KernelKind::kWgmma, s).front(), s, h);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->block.x, 256u);
  EXPECT_EQ(p->grid.x, (4096u / 128u) * (4096u / 256u));
  h.arch = "sm_80";
  EXPECT_EQ(launchPlan(KernelKind::kWgmma, curatedConfigs(KernelKind::kWgmma, s).front(), s, h).status().code(),
            Code::kUnsupported);
  // Split-K: grid.z slices, one counter per output tile, an M*N fp32 workspace; empty slices are
  // rejected.
  GemmShape d = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 128, 4096, 4096);
  Config sk{{"BLOCK_N", int64_t{128}}, {"WARPGROUPS", int64_t{2}}, {"NUM_STAGES", int64_t{6}},
            {"GROUP_M", int64_t{8}},   {"SPLIT_K", int64_t{4}}};
  auto ps = launchPlan(KernelKind::kWgmma, sk, d, sm90aDevice());
  ASSERT_TRUE(ps.ok()) << ps.status().toString();
  EXPECT_EQ(ps->grid.x, 32u);
  EXPECT_EQ(ps->grid.z, 4u);
  EXPECT_EQ(ps->counters, 32);
  EXPECT_EQ(ps->workspace_bytes, 128 * 4096 * 4);
  GemmShape shortk = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 128, 4096, 192);
  EXPECT_EQ(applicable(KernelKind::kWgmma, sk, shortk).code(), Code::kUnsupported);
  EXPECT_EQ(kernelsForArch("sm_90a").size(), 5u);
  EXPECT_EQ(kernelsForArch("sm_80").size(), 3u);
}

// Every config of the TMA space compiles for sm_90a (bf16 -> bf16 at 4096^3; the curated ones also
// f16 -> f32 with bias + GELU at an odd shape): the PTX has the bulk tensor copy on mbarriers,
// wgmma, and (two consumers) setmaxnreg; nothing spills.
// The TMA space sweep is the longest compile sweep of the unit suite: it runs as kTmaParts tests,
// each compiling every kTmaParts-th job, so that ctest's shards of this program (tests/CMakeLists.txt)
// share it out evenly. Together the parts compile every job once.
constexpr size_t kTmaParts = 4;
// A tma config from "BLOCK_N,CONSUMERS,WG_M,NUM_STAGES,EPI_TMA,SPLIT_K,PINGPONG,CLUSTER_M,tag"
// (GROUP_M 8); *tag gets the trailing word, empty when the spec does not parse.
Config tmaSpecConfig(const char* spec, std::string* tag) {
  long v[8];
  char t[4] = {};
  tag->clear();
  if (std::sscanf(spec, "%ld,%ld,%ld,%ld,%ld,%ld,%ld,%ld,%3s", &v[0], &v[1], &v[2], &v[3], &v[4],
                  &v[5], &v[6], &v[7], t) != 9)
    return Config{};
  *tag = t;
  return Config{{"BLOCK_N", int64_t{v[0]}},    {"CONSUMERS", int64_t{v[1]}}, {"WG_M", int64_t{v[2]}},
                {"NUM_STAGES", int64_t{v[3]}}, {"GROUP_M", int64_t{8}},      {"EPI_TMA", int64_t{v[4]}},
                {"SPLIT_K", int64_t{v[5]}},    {"PINGPONG", int64_t{v[6]}},  {"CLUSTER_M", int64_t{v[7]}}};
}

class GemmNvrtcTmaPart : public GemmNvrtc, public ::testing::WithParamInterface<size_t> {};

TEST_P(GemmNvrtcTmaPart, TmaSpaceCompilesForSm90a) {
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  GemmShape s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096);
  const auto space = configSpace(KernelKind::kTma).enumerate("cuda").accepted;
  const bool quick = testsupport::quick();  // KTUNE_TEST_QUICK=1; 0 or unset: every config
  // GROUP_M only changes the tile-order arithmetic: one value covers the code paths; the TMA-store
  // epilogue with one pipeline depth per tile shape; ping-pong and the direct epilogue of the
  // 176- / 224-wide tiles (the same code as 192 / 256 past the MMA) with one depth (4 stages).
  for (size_t i = 0; i < space.size(); ++i)
    if (space[i].getInt("GROUP_M") == 8 && (!quick || i % 4 == 0) &&
        ((space[i].getInt("PINGPONG") == 0 && space[i].getInt("BLOCK_N") % 64 == 0) ||
         space[i].getInt("NUM_STAGES") == 4) &&
        (space[i].getInt("EPI_TMA") == 0 ||
         (space[i].getInt("EPI_TMA") == 1 && space[i].getInt("NUM_STAGES") == 3) ||
         (space[i].getInt("EPI_TMA") == 2 && space[i].getInt("NUM_STAGES") == 4 &&
          (space[i].getInt("SPLIT_K") == 2 || space[i].getInt("CLUSTER_M") >= 2))))
      jobs.emplace_back(KernelKind::kTma, space[i], s);
  GemmShape f = denseShape(Layout::kNT, ElemType::kF16, ElemType::kF32, 1000, 33, 4097);
  f.lda = f.ldb = 4104;
  f.has_bias = true;
  f.act = Activation::kGelu;
  f.beta = 0.5f;
  // (With fp32 C the deferred epilogue, EPI_TMA 2, is the direct path EPI_TMA 1 compiles too.)
  for (const Config& c : curatedConfigs(KernelKind::kTma, f))
    if (c.getInt("EPI_TMA") != 2) jobs.emplace_back(KernelKind::kTma, c, f);
  // The other layouts (MN-major A and/or B): the first curated configs, one with a cluster.
  for (Layout l : {Layout::kNN, Layout::kTN, Layout::kTT}) {
    GemmShape g = denseShape(l, ElemType::kBF16, ElemType::kBF16, 1000, 520, 264);
    ASSERT_TRUE(applicable(KernelKind::kTma, curatedConfigs(KernelKind::kTma, g).front(), g).ok());
    const auto cur = curatedConfigs(KernelKind::kTma, g);
    for (size_t i = 0; i < cur.size(); i += quick ? 8 : 4) jobs.emplace_back(KernelKind::kTma, cur[i], g);
    jobs.emplace_back(KernelKind::kTma, cur.back(), g);
  }
  // The box probe knobs (TMA_ABOX / TMA_BBOX = 64, defines the kernel reads): P176 with both, B with
  // A's only, the four-block cluster with both (NT).
  for (const char* spec : {"176,2,2,4,1,1,1,1,ab", "256,2,1,4,2,1,0,1,a", "256,2,1,4,2,1,0,4,ab"}) {
    std::string t;
    Config c = tmaSpecConfig(spec, &t);
    ASSERT_FALSE(t.empty()) << spec;
    c.set("TMA_ABOX", int64_t{64});
    if (t == "ab") c.set("TMA_BBOX", int64_t{64});
    ASSERT_TRUE(configSpace(KernelKind::kTma).validate(c).ok()) << spec;
    jobs.emplace_back(KernelKind::kTma, c, s);
  }
  // The gate/up pair (act silu_mul, tma_gated.cuh): both epilogues, the split tail, a cluster,
  // ping-pong; bf16 C at a decode shape and fp32 C with bias and residual (A MN-major).
  GemmShape gu = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 64, 2 * 4096, 4096);
  gu.act = Activation::kSiluMul;
  gu.ldc = 4096;
  GemmShape gf = denseShape(Layout::kTT, ElemType::kF16, ElemType::kF32, 104, 666, 264);
  gf.act = Activation::kSiluMul;
  gf.ldc = 333;
  gf.has_bias = true;
  gf.beta = 1.0f;
  // BLOCK_N, CONSUMERS, WG_M, NUM_STAGES, EPI_TMA, SPLIT_K, PINGPONG, CLUSTER_M, C.
  for (const char* spec : {"128,1,1,8,0,1,0,1,bf", "128,1,1,8,1,1,0,1,bf", "256,2,1,4,1,2,0,1,bf",
                           "256,2,1,4,1,1,1,1,bf", "128,2,1,4,1,1,0,2,bf", "128,2,2,4,1,1,0,1,f32"}) {
    std::string t;
    const Config c = tmaSpecConfig(spec, &t);
    ASSERT_FALSE(t.empty()) << spec;
    const GemmShape& sh = t[0] == 'b' ? gu : gf;
    ASSERT_TRUE(configSpace(KernelKind::kTma).validate(c).ok()) << spec;
    ASSERT_TRUE(applicable(KernelKind::kTma, c, sh).ok()) << spec << ": " << applicable(KernelKind::kTma, c, sh).toString();
    jobs.emplace_back(KernelKind::kTma, c, sh);
  }
  ASSERT_GE(jobs.size(), 10u);
  const size_t part = GetParam();
  std::vector<std::tuple<KernelKind, Config, GemmShape>> mine;
  for (size_t i = part; i < jobs.size(); i += kTmaParts) mine.push_back(jobs[i]);
  auto tma_ptx = [](const Config& c, const GemmShape& sh, const std::string& ptx) -> std::string {
    if (ptx.find("cp.async.bulk.tensor.2d") == std::string::npos)
      return "PTX lacks cp.async.bulk.tensor";
    if (ptx.find("wgmma.mma_async.sync.aligned.m64n") == std::string::npos)
      return "PTX lacks wgmma.mma_async";
    if (c.getInt("CONSUMERS") == 2 && ptx.find("setmaxnreg.inc") == std::string::npos)
      return "PTX lacks setmaxnreg";
    if (c.getInt("CLUSTER_M") == 2 && ptx.find(".multicast::cluster") == std::string::npos)
      return "PTX lacks the multicast copy";
    if (c.getInt("EPI_TMA") >= 1 && sh.c != ElemType::kF32 &&
        ptx.find("cp.async.bulk.tensor.2d.global.shared") == std::string::npos)
      return "PTX lacks the TMA store";
    // Without a tensor map of C the warpgroup copies its staged boxes (store_boxes): no second
    // epilogue storing C from every accumulator, which cost ~60% of the compile (bench/NOTES.md,
    // issue 34): fewer global stores (the split tail's v4 aside) than accumulators per thread.
    if (c.getInt("EPI_TMA") >= 1 && sh.c != ElemType::kF32) {
      int64_t stores = 0;
      for (size_t at = ptx.find("st.global."); at != std::string::npos; at = ptx.find("st.global.", at + 1))
        if (ptx.substr(at, ptx.find('\n', at) - at).find(".v4") == std::string::npos) ++stores;
      if (stores >= c.getInt("WG_M") * c.getInt("BLOCK_N") / 2)
        return "PTX stores C from every accumulator beside the TMA store (" + std::to_string(stores) +
               " global stores)";
    }
    // beta == 0 (HAS_BETA 0): C is never read, so without a bias no 16-bit global load at all
    // (the beta * C code was about a third of a 128 x 256 compile: bench/NOTES.md, issue 34).
    if (sh.beta == 0.0f && !sh.has_bias && sh.c != ElemType::kF32 &&
        ptx.find("ld.global.u16") != std::string::npos)
      return "PTX reads 16-bit C although beta is 0";
    // wgmma's transpose flags: A MN-major for TN/TT, B MN-major for NN/TN.
    const bool ta = sh.layout == Layout::kTN || sh.layout == Layout::kTT;
    const bool tb = sh.layout == Layout::kNN || sh.layout == Layout::kTN;
    const std::string flags = std::string("p, 1, 1, ") + (ta ? "1" : "0") + ", " + (tb ? "1" : "0") + ";";
    if (ptx.find(flags) == std::string::npos) return "PTX lacks wgmma with transpose flags '" + flags + "'";
    if (c.getInt("SPLIT_K") > 1 && (ptx.find("ld.acquire.gpu") == std::string::npos ||
                                    ptx.find("atom.global.add") == std::string::npos))
      return "PTX lacks the split tail's acquire load / counter increment";
    // The SiLU: tanh.approx (one MUFU op) for bf16 C, ex2 + rcp for f16 and f32 C (tma_gated.cuh).
    const char* silu = sh.c == ElemType::kBF16 ? "tanh.approx.f32" : "ex2.approx";
    if (sh.act == Activation::kSiluMul && ptx.find(silu) == std::string::npos)
      return std::string("the gate/up pair's PTX lacks the SiLU's ") + silu;
    // A K-major operand's tile in one copy per stage (gemm::tmaBoxRows: the host's maps have
    // these boxes): NT and TT without clusters or the gate/up pair, one copy of A and one of B.
    if (!tb && c.getInt("CLUSTER_M") == 1 && sh.act != Activation::kSiluMul) {
      int64_t loads = 0;
      const std::string ld = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier";
      for (size_t at = ptx.find(ld); at != std::string::npos; at = ptx.find(ld, at + 1)) ++loads;
      const int64_t a_boxes = c.getInt("WG_M") * (c.getInt("PINGPONG") ? 1 : c.getInt("CONSUMERS"));
      // An MN-major A and the box probe knobs (TMA_ABOX / TMA_BBOX): 64-row boxes.
      const int64_t want = (ta || c.has("TMA_ABOX") ? a_boxes : 1) +
                           (c.has("TMA_BBOX") ? (c.getInt("BLOCK_N") + 63) / 64 : 1);
      if (loads != want)
        return "PTX has " + std::to_string(loads) + " tensor loads, not " + std::to_string(want) +
               " (K-major operands in one box each, or 64-row boxes with the box knobs)";
    }
    // The per-phase trace (tma/tma_trace.cuh) is a probe build's: never in a shipped kernel.
    if (ptx.find("globaltimer") != std::string::npos) return "the shipped kernel carries the per-phase trace";
    return "";
  };
  for (const auto& fl : compileAll(mine, tma_ptx)) ADD_FAILURE() << fl;
}

INSTANTIATE_TEST_SUITE_P(Parts, GemmNvrtcTmaPart, ::testing::Range(size_t{0}, kTmaParts));

TEST(GemmMfma, LaunchRuleAndApplicability) {
  DeviceInfo mi;
  mi.vendor = Vendor::kAmd;
  mi.arch = "gfx90a";
  mi.shared_per_block = 64 * 1024;
  Config c{{"BLOCK_M", int64_t{128}}, {"BLOCK_N", int64_t{128}}, {"BLOCK_K", int64_t{32}},
           {"MATRIX_INSTR", int64_t{32}}, {"NUM_WAVES", int64_t{4}}, {"WAVES_PER_EU", int64_t{0}},
           {"NUM_STAGES", int64_t{2}}, {"GROUP_M", int64_t{8}}, {"SPLIT_K", int64_t{1}}};
  GemmShape s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 1000, 300, 512);
  auto p = launchPlan(KernelKind::kMfma, c, s, mi);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->grid.x, 8u * 3u);
  EXPECT_EQ(p->block.x, 256u);
  EXPECT_EQ(p->shared_bytes, 0);
  EXPECT_EQ(sharedBytes(KernelKind::kMfma, c), 2 * 256 * 32 * 2);  // two unpadded buffers
  // A stored [K][M] is transposed in 8x8 blocks, one per thread at least: 128 x 32 has 64.
  GemmShape tn = denseShape(Layout::kTN, ElemType::kBF16, ElemType::kBF16, 64, 64, 64);
  EXPECT_EQ(applicable(KernelKind::kMfma, c, tn).code(), Code::kUnsupported);
  Config big = c;
  big.set("BLOCK_K", int64_t{128});
  big.set("NUM_STAGES", int64_t{0});
  big.set("MATRIX_INSTR", int64_t{16});
  EXPECT_TRUE(applicable(KernelKind::kMfma, big, tn).ok());
  GemmShape odd = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 64, 64, 60);
  EXPECT_EQ(applicable(KernelKind::kMfma, c, odd).code(), Code::kUnsupported);
}

}  // namespace
}  // namespace ktune::gemm
