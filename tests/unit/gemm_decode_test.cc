// CI (no GPU): the decode GEMM kind (templates/gemm/decode): its space and register budget, its
// launch rule (stream-K grid, workspace, counters), the reasons it refuses a problem, its curated
// configs, and that a spread of its configs compiles with NVRTC for sm_90a to PTX holding
// mma.sync without spills; the gate/up (silu_mul) epilogue's contract.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <thread>

#include "compiler/compiler.h"
#include "templates/gemm.h"
#include "tests/support/tools.h"

namespace ktune::gemm {
namespace {

DeviceInfo h100Like() {
  DeviceInfo d;
  d.vendor = Vendor::kNvidia;
  d.name = "test sm_90a device";
  d.arch = "sm_90a";
  d.shared_per_block = 48 * 1024;
  d.shared_per_block_optin = 227 * 1024;
  d.multiprocessors = 132;
  return d;
}

Config decodeConfig(int64_t mt, int64_t grid = 2) {
  return Config{{"DC_WG", int64_t{0}},    {"DC_WARPS", int64_t{8}}, {"DC_NT", int64_t{1}}, {"DC_MT", mt},
                {"DC_U", int64_t{4}},     {"DC_DEPTH", int64_t{2}}, {"DC_PF", int64_t{1}},
                {"DC_XR", int64_t{1}},    {"DC_GRID", grid}};
}

GemmShape nt(int64_t m, int64_t n, int64_t k) {
  return denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, m, n, k);
}

TEST(GemmDecode, SpaceKeepsTheRegisterBudget) {
  auto e = configSpace(KernelKind::kDecode).enumerate("cuda", 227 * 1024);
  EXPECT_GT(e.accepted.size(), 50u);
  EXPECT_FALSE(e.rejected.empty());
  for (const Config& c : e.accepted) {
    if (c.getInt("DC_WG") != 0) continue;  // the wgmma body: GemmDecode.WgmmaVariant*
    const int64_t nt = c.getInt("DC_NT"), mt = c.getInt("DC_MT"), u = c.getInt("DC_U");
    const int64_t xr = c.getInt("DC_XR"), x = 4 * mt * u;
    EXPECT_LE(c.getInt("DC_DEPTH") * (8 * nt * u + xr * x) + (1 - xr) * x + 4 * nt * mt, 232)
        << c.toString();
  }
  EXPECT_EQ(kernelKindName(KernelKind::kDecode), std::string("decode"));
  auto k = parseKernelKind("decode");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(*k, KernelKind::kDecode);
  // The warps' sums of a tile: 8 warps x 16 rows x (8 + 1) floats.
  EXPECT_EQ(sharedBytes(KernelKind::kDecode, decodeConfig(1)), 8 * 16 * 9 * 4);
  // A ring of 4-deep 16-byte loads over two 16-row tiles at M <= 128 is over the register budget.
  Config big = decodeConfig(16);
  big.set("DC_NT", int64_t{2});
  big.set("DC_DEPTH", int64_t{4});
  big.set("DC_U", int64_t{1});
  big.set("DC_XR", int64_t{0});
  EXPECT_FALSE(configSpace(KernelKind::kDecode).validate(big).ok());
}

TEST(GemmDecode, LaunchRuleIsStreamKOverTheSms) {
  const DeviceInfo dev = h100Like();
  auto p = launchPlan(KernelKind::kDecode, decodeConfig(1), nt(1, 4096, 4096), dev);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->grid.x, 2u * 132u);
  EXPECT_EQ(p->grid.y, 1u);
  EXPECT_EQ(p->block.x, 256u);
  EXPECT_EQ(p->shared_bytes, 8 * 16 * 9 * 4);
  EXPECT_EQ(p->counters, 4096 / 16);
  EXPECT_EQ(p->workspace_bytes, 1 * 4096 * 4);
  // Fewer (tile, block step) units than blocks: one block per unit. N=17 is two tiles of 16
  // rows, K=8 one block step.
  auto q = launchPlan(KernelKind::kDecode, decodeConfig(1), nt(1, 17, 8), dev);
  ASSERT_TRUE(q.ok()) << q.status().toString();
  EXPECT_EQ(q->grid.x, 2u);
  // ... and each unit is a whole tile: no range is cut, so no workspace and no counters.
  EXPECT_EQ(q->counters, 0);
  EXPECT_EQ(q->workspace_bytes, 0);
  Config m16 = decodeConfig(16, 1);
  m16.set("DC_U", int64_t{1});
  m16.set("DC_XR", int64_t{0});
  // DC_GRID = 0: one block per tile of 16*DC_NT rows, whatever the SM count.
  auto t = launchPlan(KernelKind::kDecode, decodeConfig(1, 0), nt(1, 4099, 4096), dev);
  ASSERT_TRUE(t.ok()) << t.status().toString();
  EXPECT_EQ(t->grid.x, 257u);
  EXPECT_EQ(t->workspace_bytes, 0);  // no range cuts a tile
  EXPECT_EQ(t->counters, 0);
  auto r = launchPlan(KernelKind::kDecode, m16, nt(128, 28672, 4096), dev);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->grid.x, 132u);
  EXPECT_EQ(r->workspace_bytes, 128 * 28672 * 4);
}

Config wgConfig(int64_t mt, int64_t warps, int64_t nt_, int64_t u, int64_t depth, int64_t grid,
                int64_t pf = 1) {
  return Config{{"DC_WG", int64_t{1}}, {"DC_WARPS", warps}, {"DC_NT", nt_},
                {"DC_MT", mt},         {"DC_U", u},         {"DC_DEPTH", depth},
                {"DC_PF", pf},         {"DC_XR", int64_t{0}}, {"DC_GRID", grid}};
}

// DC_WG = 1 (decode_wg.cuh): its knobs pinned where unused, its ring's shared memory, its launch
// rule (tiles of 64*DC_NT*DC_WARPS/4 rows, units of 64*DC_U k, a producer warp) and sm_90a only.
TEST(GemmDecode, WgmmaVariantSpaceAndLaunchRule) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  auto e = sp.enumerate("cuda", 227 * 1024);
  size_t wgs = 0;
  for (const Config& c : e.accepted) {
    if (c.getInt("DC_WG") != 1 && c.getInt("DC_WG") != 2) continue;
    ++wgs;
    EXPECT_EQ(c.getInt("DC_XR"), 0) << c.toString();
    EXPECT_GE(c.getInt("DC_PF"), 1) << c.toString();  // the producer width: a warp or a warpgroup
    EXPECT_LE(sharedBytes(KernelKind::kDecode, c), 227 * 1024) << c.toString();
  }
  EXPECT_GT(wgs, 100u);
  Config pinned = wgConfig(1, 4, 1, 1, 4, 2);
  pinned.set("DC_XR", int64_t{1});
  EXPECT_FALSE(sp.validate(pinned).ok());
  // 8 stages x (64 weight rows + 8 A rows) x 128 bytes + alignment + 16 mbarriers + the flag.
  const Config c = wgConfig(1, 4, 1, 1, 4, 2);
  EXPECT_EQ(sharedBytes(KernelKind::kDecode, c), 8 * 72 * 128 + 1024 + 16 * 8 + 16);
  // 256-row tiles at M = 128, 4 stages of 2 x 64 k: over the opt-in limit.
  EXPECT_GT(sharedBytes(KernelKind::kDecode, wgConfig(16, 8, 2, 2, 2, 1)), 227 * 1024);
  const DeviceInfo dev = h100Like();
  auto p = launchPlan(KernelKind::kDecode, c, nt(8, 4096, 4096), dev);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->grid.x, 2u * 132u);
  EXPECT_EQ(p->block.x, 4u * 32u + 32u);
  Config wide = c;
  wide.set("DC_PF", int64_t{2});  // a producer warpgroup
  auto pw = launchPlan(KernelKind::kDecode, wide, nt(8, 4096, 4096), dev);
  ASSERT_TRUE(pw.ok()) << pw.status().toString();
  EXPECT_EQ(pw->block.x, 4u * 32u + 128u);
  EXPECT_EQ(p->counters, 4096 / 64);
  EXPECT_EQ(p->workspace_bytes, 8 * 4096 * 4);
  // DC_GRID = 0: one block per 128-row tile (two warpgroups), no workspace.
  auto q = launchPlan(KernelKind::kDecode, wgConfig(16, 8, 1, 1, 2, 0), nt(128, 4100, 4104), dev);
  ASSERT_TRUE(q.ok()) << q.status().toString();
  EXPECT_EQ(q->grid.x, 33u);
  EXPECT_EQ(q->block.x, 288u);
  EXPECT_EQ(q->workspace_bytes, 0);
  EXPECT_EQ(q->counters, 0);
  // Not on other NVIDIA architectures (the mma.sync body covers them).
  DeviceInfo a100 = dev;
  a100.arch = "sm_80";
  auto r = launchPlan(KernelKind::kDecode, c, nt(8, 4096, 4096), a100);
  EXPECT_EQ(r.status().code(), Code::kUnsupported);
  EXPECT_NE(r.status().toString().find("sm_90a"), std::string::npos) << r.status().toString();
  EXPECT_TRUE(launchPlan(KernelKind::kDecode, decodeConfig(1), nt(8, 4096, 4096), a100).ok());
  // Same M tier rule as the mma.sync body: DC_MT = 4 serves 17..32.
  EXPECT_TRUE(applicable(KernelKind::kDecode, wgConfig(4, 4, 1, 1, 4, 2), nt(17, 64, 64)).ok());
  EXPECT_EQ(applicable(KernelKind::kDecode, wgConfig(4, 4, 1, 1, 4, 2), nt(33, 64, 64)).code(),
            Code::kUnsupported);
}

TEST(GemmDecode, RefusesWhatItCannotComputeWithAReason) {
  const Config c = decodeConfig(2);
  EXPECT_TRUE(applicable(KernelKind::kDecode, c, nt(16, 4096, 4096)).ok());
  EXPECT_TRUE(applicable(KernelKind::kDecode, c, nt(9, 4099, 520)).ok());
  GemmShape nn = nt(16, 4096, 4096);
  nn.layout = Layout::kNN;
  nn.ldb = 4096;
  Status s = applicable(KernelKind::kDecode, c, nn);
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.toString().find("layout NT"), std::string::npos) << s.toString();
  s = applicable(KernelKind::kDecode, c, nt(16, 4096, 4100));  // K % 8 != 0
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.toString().find("K % 8"), std::string::npos) << s.toString();
  GemmShape unal = nt(16, 4096, 4096);
  unal.aligned16 = false;
  EXPECT_EQ(applicable(KernelKind::kDecode, c, unal).code(), Code::kUnsupported);
  GemmShape lda = nt(16, 4096, 4096);
  lda.lda = 4100;
  EXPECT_EQ(applicable(KernelKind::kDecode, c, lda).code(), Code::kUnsupported);
  // Only the smallest M tier: DC_MT=2 serves 9..16, not 8 or 17; nothing above 128.
  EXPECT_EQ(applicable(KernelKind::kDecode, c, nt(8, 4096, 4096)).code(), Code::kUnsupported);
  s = applicable(KernelKind::kDecode, c, nt(17, 4096, 4096));
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.toString().find("DC_MT"), std::string::npos) << s.toString();
  EXPECT_TRUE(applicable(KernelKind::kDecode, decodeConfig(16), nt(128, 64, 64)).ok());
  EXPECT_EQ(applicable(KernelKind::kDecode, decodeConfig(16), nt(129, 64, 64)).code(),
            Code::kUnsupported);
}

// The gate/up pair (act silu_mul): B = [gate; up], C gets N/2 columns; its checks, its key, the
// float64 reference against a hand computation, and only the decode kind computes it.
TEST(GemmDecode, SiluMulIsTheGateUpPairOnTheDecodeKernel) {
  auto a = parseActivation("silu_mul");
  ASSERT_TRUE(a.ok()) << a.status().toString();
  EXPECT_EQ(*a, Activation::kSiluMul);
  EXPECT_EQ(activationName(Activation::kSiluMul), std::string("silu_mul"));
  GemmShape s = nt(2, 4, 8);
  s.act = Activation::kSiluMul;
  s.ldc = 2;
  EXPECT_EQ(outCols(s), 2);
  EXPECT_TRUE(validate(s).ok()) << validate(s).toString();
  EXPECT_NE(shapeKey(s).find("act=silu_mul"), std::string::npos) << shapeKey(s);
  GemmShape odd = nt(2, 5, 8);
  odd.act = Activation::kSiluMul;
  Status v = validate(odd);
  EXPECT_EQ(v.code(), Code::kInvalidArgument);
  EXPECT_NE(v.toString().find("even N"), std::string::npos) << v.toString();
  GemmShape narrow = s;
  narrow.ldc = 1;
  EXPECT_EQ(validate(narrow).code(), Code::kInvalidArgument);
  // C[m][j] = silu(alpha*g + bias[j]) * (alpha*u + bias[N/2 + j]) + beta*C[m][j].
  s.has_bias = true;
  s.alpha = 0.5f;
  s.beta = 2.0f;
  std::vector<float> A(2 * 8), B(4 * 8), bias = {0.25f, -0.5f, 1.0f, 0.125f}, C = {1, 2, 3, 4};
  for (size_t i = 0; i < A.size(); ++i) A[i] = float(int(i % 5) - 2) / 4;
  for (size_t i = 0; i < B.size(); ++i) B[i] = float(int(i % 7) - 3) / 8;
  const auto ref = reference(s, A.data(), B.data(), C.data(), bias.data());
  ASSERT_EQ(ref.size(), 4u);
  for (int m = 0; m < 2; ++m)
    for (int j = 0; j < 2; ++j) {
      double g = 0, u = 0;
      for (int k = 0; k < 8; ++k) {
        g += double(A[m * 8 + k]) * B[j * 8 + k];
        u += double(A[m * 8 + k]) * B[(j + 2) * 8 + k];
      }
      g = 0.5 * g + bias[j];
      u = 0.5 * u + bias[2 + j];
      EXPECT_NEAR(ref[m * 2 + j], g / (1 + std::exp(-g)) * u + 2.0 * C[m * 2 + j], 1e-12);
    }
  EXPECT_TRUE(applicable(KernelKind::kDecode, decodeConfig(1), s).ok());
  auto plan = launchPlan(KernelKind::kDecode, decodeConfig(1), s, h100Like());
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->counters, 0);  // one unit: the tile is never cut
  for (KernelKind k : {KernelKind::kMma, KernelKind::kSkinny, KernelKind::kWgmma, KernelKind::kTma}) {
    const auto cs = curatedConfigs(k, nt(2, 4096, 4096));
    if (cs.empty()) continue;
    Status st = applicable(k, cs.front(), s);
    EXPECT_EQ(st.code(), Code::kUnsupported) << kernelKindName(k);
    EXPECT_NE(st.toString().find("decode kernel only"), std::string::npos) << st.toString();
  }
}

TEST(GemmDecode, CuratedConfigsCoverEveryDecodeM) {
  for (int64_t m = 1; m <= 128; m += (m < 16 ? 1 : 7)) {
    const GemmShape s = nt(m, 4096, 4096);
    auto cs = curatedConfigs(KernelKind::kDecode, s);
    ASSERT_FALSE(cs.empty()) << "M=" << m;
    for (const Config& c : cs) {
      EXPECT_TRUE(configSpace(KernelKind::kDecode).validate(c).ok()) << c.toString();
      EXPECT_TRUE(launchPlan(KernelKind::kDecode, c, s, h100Like()).ok()) << c.toString();
    }
  }
  EXPECT_TRUE(curatedConfigs(KernelKind::kDecode, nt(129, 4096, 4096)).empty());
}

// The curated configs of the smallest and largest M tier and every 251st config of the accepted
// space (each compiled for a shape of its own tier; NVRTC takes seconds per config on CI's two
// cores), for sm_90a: no spills, mma.sync in the PTX.
// Compiles each (config, shape) of the decode kind for sm_90a on two threads; a failure for every
// job that does not compile, spills, or whose PTX `check` refuses (check returns the reason).
// The FMA body's PTX: fp32 FMAs, no matrix instruction (the point of the body).
std::string fmaBodyCheck(const std::string& ptx) {
  if (ptx.find("fma.rn.f32") == std::string::npos) return "PTX lacks fp32 FMAs";
  if (ptx.find("mma") != std::string::npos) return "PTX has a matrix instruction";
  return "";
}

void compileEach(Compiler& cc, const std::vector<std::pair<Config, GemmShape>>& jobs,
                 const std::function<std::string(const Config&, const std::string&)>& check) {
  std::vector<std::string> failures(jobs.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t j; (j = next++) < jobs.size();) {
      const auto& [c, s] = jobs[j];
      CompileRequest req;
      req.source = std::string(kernelSource(KernelKind::kDecode));
      req.source_name = sourceFile(KernelKind::kDecode);
      req.entry = entryName(KernelKind::kDecode);
      req.defines = defines(KernelKind::kDecode, c, s);
      req.arch = "sm_90a";
      req.dumps = kDumpPtx;
      auto r = cc.compile(req);
      std::string why;
      if (!r.ok())
        why = r.status().toString().substr(0, 2000);
      else if (r->resources.spills())
        why = "spills";
      else
        why = check(c, r->dumps["ptx"]);
      if (!why.empty()) failures[j] = c.toString() + ": " + why;
    }
  };
  std::thread t1(work), t2(work);
  t1.join();
  t2.join();
  for (const auto& f : failures)
    if (!f.empty()) ADD_FAILURE() << f;
}

TEST(GemmDecode, ConfigsCompileWithMmaSyncAndNoSpills) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  // (The TMA-fed body, DC_WG = 2: GemmDecode.TmaFedBodyCompilesWithBulkTensorCopies.)
  for (int64_t m : {1, 128})
    for (const Config& c : curatedConfigs(KernelKind::kDecode, nt(m, 4096, 4096)))
      if (!decodeTakesTensorMaps(KernelKind::kDecode, c) && c.getInt("DC_WG") != 3)
        jobs.emplace_back(c, nt(m, 4096, 4096));
  std::vector<Config> acc;
  for (const Config& c : configSpace(KernelKind::kDecode).enumerate("cuda", 227 * 1024).accepted)
    if (!decodeTakesTensorMaps(KernelKind::kDecode, c)) acc.push_back(c);
  for (size_t j = 0; j < acc.size(); j += 251) jobs.emplace_back(acc[j], nt(8 * acc[j].getInt("DC_MT"), 4096, 4096));
  // The gate/up epilogue (with bias and C +=) at the smallest and the largest tier.
  for (int64_t m : {1, 128}) {
    GemmShape g = nt(m, 8192, 4096);
    g.act = Activation::kSiluMul;
    g.has_bias = true;
    g.beta = 1.0f;
    g.ldc = 4096;
    jobs.emplace_back(curatedConfigs(KernelKind::kDecode, g).front(), g);
    jobs.emplace_back(m == 1 ? wgConfig(1, 4, 1, 1, 4, 2) : wgConfig(16, 8, 1, 1, 2, 1, 2), g);
  }
  compileEach(**cc, jobs, [](const Config& c, const std::string& ptx) -> std::string {
    if (c.getInt("DC_WG") == 3) return fmaBodyCheck(ptx);
    if (ptx.find(c.getInt("DC_WG") ? "wgmma.mma_async.sync.aligned.m64n"
                                   : "mma.sync.aligned.m16n8k16") == std::string::npos)
      return "PTX lacks its matrix instruction";
    return "";
  });
}

Config fmaConfig(int64_t warps, int64_t nt_, int64_t u, int64_t depth, int64_t grid, int64_t mt = 1) {
  return Config{{"DC_WG", int64_t{3}}, {"DC_WARPS", warps}, {"DC_NT", nt_},
                {"DC_MT", mt},         {"DC_U", u},         {"DC_DEPTH", depth},
                {"DC_PF", int64_t{1}}, {"DC_XR", int64_t{0}}, {"DC_GRID", grid}};
}

// DC_WG = 3, the CUDA-core FMA body: M <= 8 only (DC_MT the power of two >= M, DC_XR 0, grids
// 0..3 pinned), no shared
// memory, no workspace; groups of 2*DC_NT rows (silu_mul: DC_NT columns) over DC_WARPS warps a
// block, one group per warp (DC_GRID = 0) or DC_GRID blocks per SM; any NVIDIA architecture.
TEST(GemmDecode, FmaBodySpaceAndLaunchRule) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  size_t fmas = 0;
  for (const Config& c : sp.enumerate("cuda", 227 * 1024).accepted) {
    if (c.getInt("DC_WG") != 3) continue;
    ++fmas;
    EXPECT_LE(c.getInt("DC_MT"), 8) << c.toString();
    EXPECT_EQ(c.getInt("DC_XR"), 0) << c.toString();
    EXPECT_LE(c.getInt("DC_GRID"), 3) << c.toString();
    const int64_t nt = c.getInt("DC_NT"), mt = c.getInt("DC_MT"), u = c.getInt("DC_U");
    const int64_t w = c.getInt("DC_WARPS"), g = c.getInt("DC_GRID");
    EXPECT_LE(c.getInt("DC_DEPTH") * 8 * nt * u + 2 * nt * mt + 8 * mt * std::min<int64_t>(u, 2) + 8,
              std::min<int64_t>(255, 2048 / (w * (g ? g : 16 / w))) - 24)
        << c.toString();
    EXPECT_EQ(sharedBytes(KernelKind::kDecode, c), 0) << c.toString();
  }
  EXPECT_GT(fmas, 20u);
  // 8 rows of A at 128 registers a thread (two blocks of 8 warps per SM): over the budget (spills);
  // at 170 (three blocks of 4 warps), within.
  EXPECT_FALSE(sp.validate(fmaConfig(8, 2, 1, 2, 0, 8)).ok());
  EXPECT_TRUE(sp.validate(fmaConfig(4, 2, 1, 2, 3, 8)).ok());
  EXPECT_FALSE(sp.validate(fmaConfig(4, 1, 2, 2, 1, 16)).ok());
  DeviceInfo dev = h100Like();
  dev.arch = "sm_80";  // no sm_90a instruction in this body
  auto p = launchPlan(KernelKind::kDecode, fmaConfig(8, 2, 1, 2, 0), nt(1, 4099, 4096), dev);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->grid.x, 129u);  // ceil(ceil(4099 / 4) / 8)
  EXPECT_EQ(p->block.x, 256u);
  EXPECT_EQ(p->shared_bytes, 0);
  EXPECT_EQ(p->workspace_bytes, 0);
  EXPECT_EQ(p->counters, 0);
  auto q = launchPlan(KernelKind::kDecode, fmaConfig(4, 1, 2, 2, 2, 8), nt(8, 28672, 4096), dev);
  ASSERT_TRUE(q.ok()) << q.status().toString();
  EXPECT_EQ(q->grid.x, 2u * 132u);
  GemmShape g = nt(3, 2 * 14336, 4096);  // gate/up: 14336 columns in groups of DC_NT = 2
  g.act = Activation::kSiluMul;
  g.ldc = 14336;
  auto r = launchPlan(KernelKind::kDecode, fmaConfig(4, 2, 1, 2, 0, 4), g, dev);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->grid.x, 14336u / 2u / 4u);
  EXPECT_TRUE(applicable(KernelKind::kDecode, fmaConfig(4, 1, 2, 2, 0, 8), nt(8, 64, 64)).ok());
  EXPECT_TRUE(applicable(KernelKind::kDecode, fmaConfig(4, 1, 2, 2, 0, 4), nt(3, 64, 64)).ok());
  const Status three = applicable(KernelKind::kDecode, fmaConfig(4, 1, 2, 2, 0, 2), nt(3, 64, 64));
  EXPECT_EQ(three.code(), Code::kUnsupported);
  EXPECT_NE(three.toString().find("power of two >= M"), std::string::npos) << three.toString();
  const Status nine = applicable(KernelKind::kDecode, fmaConfig(4, 1, 2, 2, 0, 8), nt(9, 64, 64));
  EXPECT_EQ(nine.code(), Code::kUnsupported);
  EXPECT_NE(nine.toString().find("M <= 8"), std::string::npos) << nine.toString();
  // The curated list's DC_MT "auto" follows the same rule for this body.
  for (int64_t m : {1, 2, 3, 5, 8})
    for (const Config& c : curatedConfigs(KernelKind::kDecode, nt(m, 4096, 4096)))
      if (c.getInt("DC_WG") == 3) {
        EXPECT_TRUE(c.getInt("DC_MT") >= m && c.getInt("DC_MT") < 2 * m) << m;
      }
}

// The FMA body compiles for sm_90a (its curated configs; gate/up with bias and C +=, f16 operands,
// a persistent grid of 3 blocks per SM with 4-row groups): fp32 FMAs and no matrix instruction in the PTX, no
// spills.
TEST(GemmDecode, FmaBodyCompilesWithoutMatrixInstructions) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  GemmShape g = nt(3, 8192, 4096);
  g.act = Activation::kSiluMul;
  g.has_bias = true;
  g.beta = 1.0f;
  g.ldc = 4096;
  GemmShape h = denseShape(Layout::kNT, ElemType::kF16, ElemType::kF32, 8, 4096, 4096);
  for (const Config& c : curatedConfigs(KernelKind::kDecode, nt(1, 4096, 4096)))
    if (c.getInt("DC_WG") == 3) jobs.emplace_back(c, nt(1, 4096, 4096));
  EXPECT_GE(jobs.size(), 2u) << "the curated list offers the FMA body at M = 1";
  jobs.emplace_back(fmaConfig(4, 2, 1, 2, 3, 4), nt(4, 4096, 4096));
  jobs.emplace_back(fmaConfig(8, 2, 1, 2, 0, 4), g);
  jobs.emplace_back(fmaConfig(4, 1, 2, 2, 1, 8), h);
  // At the register budget with 8 rows of A: 136 of 146 (three blocks of 4 warps), 104 of 104;
  // with one row, 58 of 61 (three blocks of 8 warps).
  GemmShape g8 = g;
  g8.m = 8;
  jobs.emplace_back(fmaConfig(4, 2, 1, 2, 3, 8), g8);
  jobs.emplace_back(fmaConfig(8, 1, 1, 2, 2, 8), nt(7, 4096, 4096));
  jobs.emplace_back(fmaConfig(8, 1, 2, 2, 3), nt(1, 4096, 4096));
  compileEach(**cc, jobs, [](const Config&, const std::string& ptx) { return fmaBodyCheck(ptx); });
}

// DC_WG = 2, the TMA-fed ring: its knobs (DC_PF pinned), one producer warp, the same ring bytes as
// the cp.async body, and the tensor maps its launch carries (A in boxes of its M tier's rows, up to
// 64; weights in boxes of 64 rows and 32 for the gate/up halves).
TEST(GemmDecode, TmaFedBodySpaceLaunchRuleAndMaps) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  Config c = wgConfig(1, 4, 1, 2, 4, 1);
  c.set("DC_WG", int64_t{2});
  ASSERT_TRUE(sp.validate(c).ok()) << sp.validate(c).toString();
  Config wide = c;
  wide.set("DC_PF", int64_t{2});
  EXPECT_FALSE(sp.validate(wide).ok());
  Config cp = c;
  cp.set("DC_WG", int64_t{1});
  // The same ring as the cp.async body, plus the gate/up hand-over: 64 threads x 4 floats.
  EXPECT_EQ(sharedBytes(KernelKind::kDecode, c), sharedBytes(KernelKind::kDecode, cp) + 64 * 4 * 4);
  EXPECT_TRUE(decodeTakesTensorMaps(KernelKind::kDecode, c));
  EXPECT_FALSE(decodeTakesTensorMaps(KernelKind::kDecode, cp));
  EXPECT_FALSE(decodeTakesTensorMaps(KernelKind::kDecode, decodeConfig(1)));
  const DeviceInfo dev = h100Like();
  auto p = launchPlan(KernelKind::kDecode, c, nt(8, 4096, 4096), dev);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->grid.x, 132u);
  EXPECT_EQ(p->block.x, 4u * 32u + 32u);
  EXPECT_EQ(p->counters, 4096 / 64);
  DeviceInfo a100 = dev;
  a100.arch = "sm_80";
  EXPECT_EQ(launchPlan(KernelKind::kDecode, c, nt(8, 4096, 4096), a100).status().code(),
            Code::kUnsupported);
  // DC_GRID = 4, 5: a cluster of 2 or 4 blocks per tile, no workspace, no counters.
  Config cl = c;
  cl.set("DC_GRID", int64_t{4});
  auto q = launchPlan(KernelKind::kDecode, cl, nt(8, 4099, 4104), dev);
  ASSERT_TRUE(q.ok()) << q.status().toString();
  EXPECT_EQ(q->grid.x, 2u * 65u);
  EXPECT_EQ(q->workspace_bytes, 0);
  EXPECT_EQ(q->counters, 0);
  cl.set("DC_GRID", int64_t{5});
  auto q4 = launchPlan(KernelKind::kDecode, cl, nt(8, 4096, 4096), dev);
  ASSERT_TRUE(q4.ok()) << q4.status().toString();
  EXPECT_EQ(q4->grid.x, 4u * 64u);
  // DC_GRID = 6: persistent, one block per SM at most one per tile, whole tiles: no workspace.
  Config per = c;
  per.set("DC_GRID", int64_t{6});
  ASSERT_TRUE(sp.validate(per).ok()) << sp.validate(per).toString();
  auto r6 = launchPlan(KernelKind::kDecode, per, nt(8, 28672, 4096), dev);
  ASSERT_TRUE(r6.ok()) << r6.status().toString();
  EXPECT_EQ(r6->grid.x, 132u);
  EXPECT_EQ(r6->workspace_bytes, 0);
  EXPECT_EQ(r6->counters, 0);
  auto r6small = launchPlan(KernelKind::kDecode, per, nt(8, 4096, 4096), dev);
  ASSERT_TRUE(r6small.ok());
  EXPECT_EQ(r6small->grid.x, 64u);
  Config per_cp = per;
  per_cp.set("DC_WG", int64_t{1});
  EXPECT_FALSE(sp.validate(per_cp).ok());
  // Only the TMA-fed body splits over a cluster; its ring must hold the other blocks' sums
  // (3 x 128 threads x 64 floats at the 128 tier > 2 stages x 192 rows x 128 bytes).
  Config cp4 = cp;
  cp4.set("DC_GRID", int64_t{4});
  EXPECT_FALSE(sp.validate(cp4).ok());
  EXPECT_FALSE(sp.validate(wgConfig(16, 4, 1, 1, 1, 5)).ok());
  Config small_ring = wgConfig(16, 4, 1, 1, 1, 5);
  small_ring.set("DC_WG", int64_t{2});
  EXPECT_FALSE(sp.validate(small_ring).ok());
  small_ring.set("DC_GRID", int64_t{4});  // one slot of 32 KB fits the 48 KB ring
  EXPECT_TRUE(sp.validate(small_ring).ok()) << sp.validate(small_ring).toString();
  // 1 KB of each weight row per stage: TMA only.
  Config u8 = cp;
  u8.set("DC_U", int64_t{8});
  u8.set("DC_DEPTH", int64_t{1});
  EXPECT_FALSE(sp.validate(u8).ok());
  u8.set("DC_WG", int64_t{2});
  EXPECT_TRUE(sp.validate(u8).ok()) << sp.validate(u8).toString();
  // The weights in boxes of 64 rows and of 32 (a slab's gate half and up half).
  GemmShape g = nt(4, 8190, 1000);
  g.act = Activation::kSiluMul;
  g.ldb = 1008;
  EXPECT_TRUE(applicable(KernelKind::kDecode, c, g).ok()) << applicable(KernelKind::kDecode, c, g).toString();
  const TmaDescriptors dd = decodeDescriptors(g, 4096, 8192);
  for (const TensorMap2DDesc& w : {dd.b, dd.c}) {
    EXPECT_EQ(w.base, 8192u);
    EXPECT_EQ(w.rows, 8190u);
    EXPECT_EQ(w.cols, 1000u);
    EXPECT_EQ(w.row_stride_bytes, 2016u);
    EXPECT_EQ(w.box_cols, 64u);
    EXPECT_TRUE(checkTensorMap2D(w).ok()) << checkTensorMap2D(w).toString();
  }
  EXPECT_EQ(dd.b.box_rows, 64u);
  EXPECT_EQ(dd.c.box_rows, 32u);
  EXPECT_EQ(dd.a.base, 4096u);
  // The one-slab gate/up hand-over at the 128 tier fits 160 threads' registers, not 288's.
  GemmShape g128 = nt(128, 8192, 4096);
  g128.act = Activation::kSiluMul;
  Config w8 = wgConfig(16, 8, 1, 1, 2, 1);
  w8.set("DC_WG", int64_t{2});
  EXPECT_EQ(applicable(KernelKind::kDecode, w8, g128).code(), Code::kUnsupported);
  w8.set("DC_WARPS", int64_t{4});
  EXPECT_TRUE(applicable(KernelKind::kDecode, w8, g128).ok());
  // A's boxes: the tier's rows (8, 16, 32, 64), 64 at the 128 tier (two boxes per stage).
  const std::pair<int64_t, int64_t> tiers[] = {{1, 8}, {8, 8}, {9, 16}, {17, 32}, {33, 64}, {65, 64}, {128, 64}};
  for (auto [m, rows] : tiers) EXPECT_EQ(decodeABoxRows(m), rows) << m;
  GemmShape s = nt(5, 4096, 1000);
  s.lda = 1024;
  const TensorMap2DDesc a = decodeAMap(s, 4096);
  EXPECT_EQ(a.rows, 5u);
  EXPECT_EQ(a.cols, 1000u);
  EXPECT_EQ(a.row_stride_bytes, 2048u);
  EXPECT_EQ(a.box_rows, 8u);
  EXPECT_EQ(a.box_cols, 64u);
  EXPECT_EQ(a.swizzle_bytes, 128u);
  EXPECT_TRUE(checkTensorMap2D(a).ok()) << checkTensorMap2D(a).toString();
  // Every curated TMA config is a valid point of the space.
  size_t tma = 0;
  for (int64_t m : {1, 16, 32, 128})
    for (const Config& k : curatedConfigs(KernelKind::kDecode, nt(m, 4096, 4096)))
      tma += decodeTakesTensorMaps(KernelKind::kDecode, k) ? 1 : 0;
  EXPECT_GE(tma, 8u);
}

// The TMA-fed body compiles for sm_90a (plain, bias + C +=, gate/up; stream-K, both cluster
// splits and the persistent whole-tile grid) at the smallest, a middle and the largest tier: bulk tensor copies and wgmma in the PTX
// (and the cluster reduction's stores), no spills.
TEST(GemmDecode, TmaFedBodyCompilesWithBulkTensorCopies) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  // (M, DC_MT, DC_WARPS, DC_U, DC_DEPTH, gate/up with bias and C +=, DC_GRID, DC_NT)
  const int64_t cases[][8] = {{1, 1, 4, 8, 1, 0, 5, 1}, {40, 8, 4, 1, 4, 1, 4, 1},
                              {128, 16, 4, 2, 2, 1, 1, 1}, {16, 2, 8, 4, 1, 1, 4, 2},
                              {8, 1, 4, 2, 2, 1, 6, 2}};
  for (const auto& k : cases) {
    Config c = wgConfig(k[1], k[2], k[7], k[3], k[4], k[6]);
    c.set("DC_WG", int64_t{2});
    GemmShape g = nt(k[0], 8192, 4096);
    if (k[5]) {
      g.act = Activation::kSiluMul;
      g.has_bias = true;
      g.beta = 1.0f;
      g.ldc = 4096;
    }
    jobs.emplace_back(c, g);
  }
  compileEach(**cc, jobs, [](const Config& c, const std::string& ptx) -> std::string {
    if (ptx.find("cp.async.bulk.tensor.2d") == std::string::npos ||
        ptx.find("wgmma.mma_async") == std::string::npos)
      return "PTX lacks bulk tensor copies or wgmma";
    const bool cluster = c.getInt("DC_GRID") == 4 || c.getInt("DC_GRID") == 5;
    if (cluster != (ptx.find("st.shared::cluster") != std::string::npos))
      return cluster ? "PTX lacks the cluster reduction" : "PTX has a cluster reduction";
    return "";
  });
}

}  // namespace
}  // namespace ktune::gemm
