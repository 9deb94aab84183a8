// GPU correctness of the GEMM templates and the cuBLASLt wrapper (NVIDIA). Random inputs, outputs
// poisoned with NaN, float64 host reference for small problems and cuBLASLt for large ones.
// Skips (visibly) when no CUDA device, NVRTC or cuBLASLt is present.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include "autotune/autotuner.h"
#include "base/dtype.h"
#include "ops/gemm.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"
#include "ops/vendor/cublaslt.h"
#include "templates/gemm.h"
#include "tests/gpu/gemm_gpu_env.h"
#include "tests/gpu/gemm_gpu_problem.h"

namespace ktune {
namespace gemm_gpu {
Env& env() {
  static Env* e = openEnv([](const DeviceInfo& d) {
    return d.cc_major < 8 ? "no GPU: mma.sync GEMM needs sm_80+, device is " + d.arch : std::string();
  });
  return *e;
}
}  // namespace gemm_gpu
namespace {

using namespace gemm_gpu;  // NOLINT: the shared helpers (gemm_gpu_problem.h)

TEST(GemmGpu, MmaEveryLayoutDtypeEpilogue) {
  REQUIRE_GPU();
  const std::pair<ElemType, ElemType> dtypes[] = {
      {ElemType::kBF16, ElemType::kBF16}, {ElemType::kF16, ElemType::kF16},
      {ElemType::kBF16, ElemType::kF32}, {ElemType::kF16, ElemType::kF32}};
  struct Epi { bool bias; Activation act; float alpha, beta; };
  const Epi epis[] = {{false, Activation::kNone, 1.f, 0.f},
                      {true, Activation::kSilu, 1.f, 0.f},
                      {true, Activation::kGelu, 0.75f, 0.5f}};
  // Aligned (ALIGNED=1 path, partial tiles) and odd (element-wise path) sizes.
  const int64_t dims[][3] = {{100, 72, 136}, {7, 33, 7}, {1, 1, 1}, {33, 130, 1000}};
  const Config cfgs[] = {mmaConfig(128, 128, 32, 2, 2, 4), mmaConfig(64, 128, 64, 2, 2, 3)};
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  std::vector<GemmShape> shapes;
  for (Layout l : kLayouts)
    for (auto [ab, c] : dtypes)
      for (const Epi& e : epis)
        for (const auto& d : dims) {
          GemmShape s = shapeOf(l, ab, c, d[0], d[1], d[2]);
          s.has_bias = e.bias;
          s.act = e.act;
          s.alpha = e.alpha;
          s.beta = e.beta;
          shapes.push_back(s);
          for (const Config& cfg : cfgs) jobs.emplace_back(KernelKind::kMma, cfg, s);
        }
  precompile(jobs);
  uint32_t seed = 1;
  for (const GemmShape& s : shapes) {
    Problem p(s, seed++);
    const auto ref = p.hostReference();
    for (const Config& cfg : cfgs) expectMatches(KernelKind::kMma, cfg, p, ref);
  }
}

TEST(GemmGpu, MmaOddSizes) {
  REQUIRE_GPU();
  const int64_t dims[][3] = {{1, 4097, 33},   {4097, 1, 7},    {33, 1000, 1000}, {1000, 7, 4097},
                             {7, 1000, 4097}, {4097, 33, 1},   {1000, 1000, 33}, {33, 33, 4097},
                             {1, 1, 4097},    {4097, 1000, 7}};
  const Config cfg = mmaConfig(128, 128, 32, 2, 2, 4);
  std::vector<GemmShape> shapes;
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  for (const auto& d : dims)
    for (Layout l : {Layout::kNT, Layout::kNN}) {
      shapes.push_back(shapeOf(l, ElemType::kBF16, ElemType::kBF16, d[0], d[1], d[2]));
      jobs.emplace_back(KernelKind::kMma, cfg, shapes.back());
    }
  precompile(jobs);
  uint32_t seed = 100;
  for (const GemmShape& s : shapes) {
    Problem p(s, seed++);
    expectMatches(KernelKind::kMma, cfg, p, p.hostReference());
  }
}

TEST(GemmGpu, MmaSplitKIsCorrectAndSelfCleaning) {
  REQUIRE_GPU();
  const int64_t dims[][3] = {{33, 200, 1000}, {128, 256, 4097}, {7, 100, 8192}};
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  std::vector<GemmShape> shapes;
  for (const auto& d : dims) {
    GemmShape s = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, d[0], d[1], d[2]);
    s.has_bias = true;
    s.beta = 0.5f;
    s.act = Activation::kSilu;
    shapes.push_back(s);
    for (int64_t split : {2, 4}) jobs.emplace_back(KernelKind::kMma, mmaConfig(64, 128, 64, 2, 2, 4, split), s);
  }
  precompile(jobs);
  uint32_t seed = 200;
  for (const GemmShape& s : shapes) {
    Problem p(s, seed++);
    const auto ref = p.hostReference();
    for (int64_t split : {2, 4})
      expectMatches(KernelKind::kMma, mmaConfig(64, 128, 64, 2, 2, 4, split), p, ref, 3);
  }
}

TEST(GemmGpu, MmaCuratedConfigsVsReference) {
  REQUIRE_GPU();
  GemmShape s = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 300, 520, 264);
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  auto cfgs = gemm::curatedConfigs(KernelKind::kMma, s);
  GemmShape big = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096);
  auto big_cfgs = gemm::curatedConfigs(KernelKind::kMma, big);
  for (auto& c : cfgs) jobs.emplace_back(KernelKind::kMma, c, s);
  for (auto& c : big_cfgs) jobs.emplace_back(KernelKind::kMma, c, big);
  precompile(jobs);
  {
    Problem p(s, 300);
    const auto ref = p.hostReference();
    for (const Config& c : cfgs) expectMatches(KernelKind::kMma, c, p, ref, 2);
  }
  if (!env().lt) GTEST_SKIP() << "cuBLASLt unavailable for the large check: " << env().lt_skip;
  Problem p(big, 301);
  const auto ref = p.cublasReference();
  for (const Config& c : big_cfgs) expectMatches(KernelKind::kMma, c, p, ref);
}

TEST(GemmGpu, MmaLargeEveryLayoutVsCublasLt) {
  REQUIRE_GPU();
  if (!env().lt) GTEST_SKIP() << "cuBLASLt unavailable: " << env().lt_skip;
  const Config cfg = mmaConfig(128, 256, 32, 2, 4, 4);
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  std::vector<GemmShape> shapes;
  for (Layout l : kLayouts) {
    GemmShape s = shapeOf(l, ElemType::kBF16, ElemType::kBF16, 2048, 1536, 4096);
    s.has_bias = (l == Layout::kNT);
    shapes.push_back(s);
    jobs.emplace_back(KernelKind::kMma, cfg, s);
  }
  precompile(jobs);
  uint32_t seed = 400;
  for (const GemmShape& s : shapes) {
    Problem p(s, seed++);
    const auto ref = p.cublasReference();
    ASSERT_FALSE(ref.empty());
    expectMatches(KernelKind::kMma, cfg, p, ref);
  }
}

TEST(GemmGpu, SkinnyVsReference) {
  REQUIRE_GPU();
  struct Case { int64_t m, n, k; ElemType c; bool bias; Activation act; float beta; };
  const Case cases[] = {
      {1, 4096, 4096, ElemType::kBF16, false, Activation::kNone, 0.f},
      {7, 1000, 1000, ElemType::kBF16, true, Activation::kSilu, 0.f},
      {16, 4096, 4096, ElemType::kBF16, false, Activation::kNone, 0.f},
      {33, 1000, 4096, ElemType::kF32, true, Activation::kGelu, 0.5f},
      {64, 520, 1000, ElemType::kF16, false, Activation::kNone, 0.f},
      {128, 4096, 4096, ElemType::kBF16, false, Activation::kNone, 0.f},
      {16, 14336, 4096, ElemType::kBF16, false, Activation::kNone, 0.f},
  };
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  std::vector<GemmShape> shapes;
  for (const Case& cs : cases) {
    GemmShape s = shapeOf(Layout::kNT, ElemType::kBF16, cs.c, cs.m, cs.n, cs.k);
    s.has_bias = cs.bias;
    s.act = cs.act;
    s.beta = cs.beta;
    shapes.push_back(s);
    for (auto& c : gemm::curatedConfigs(KernelKind::kSkinny, s)) jobs.emplace_back(KernelKind::kSkinny, c, s);
  }
  precompile(jobs);
  uint32_t seed = 500;
  for (const GemmShape& s : shapes) {
    Problem p(s, seed++);
    const bool host = s.m * s.n * s.k <= (int64_t{200} << 20) || !env().lt || s.act != Activation::kNone;
    const auto ref = host ? p.hostReference() : p.cublasReference();
    for (const Config& c : gemm::curatedConfigs(KernelKind::kSkinny, s))
      expectMatches(KernelKind::kSkinny, c, p, ref, 2);
  }
}

// The decode kind (stream-K, M <= 128): every M tier's curated configs over M = 1..16 and a spread
// up to 128 at odd N and K not a multiple of any step (tile and range boundaries, partial sums
// through the workspace), epilogues, and twice in a row (the workspace and counters self-clean).
TEST(GemmGpu, UnalignedPointerFallsBackToSafePath) {
  REQUIRE_GPU();
  // A offset by one element: not 16-byte aligned, so the element-wise path must be used.
  GemmShape s = shapeOf(Layout::kNN, ElemType::kBF16, ElemType::kBF16, 64, 64, 64);
  Problem p(s, 600);
  GemmBuffers buf = p.buffers();
  buf.a += 2;
  GemmShape shifted = s;
  shifted.m = 63;  // keep every row of the shifted A inside the allocation
  const auto aligned = withAlignment(shifted, buf);
  EXPECT_FALSE(aligned.aligned16);
  std::vector<float> a_shift(p.a.vals.begin() + 1, p.a.vals.end());
  a_shift.resize(p.a.vals.size());
  const auto ref = gemm::reference(shifted, a_shift.data(), p.b.vals.data(), nullptr, nullptr);
  p.s = shifted;
  p.resetC();
  const Config cfg = mmaConfig(128, 128, 32, 2, 2, 4);
  ASSERT_TRUE(env().runner->launch(KernelKind::kMma, cfg, shifted, buf).ok());
  auto cr = compare(p.download(), ref, s.c, s.k);
  EXPECT_TRUE(cr.ok) << cr.bad << " bad; first " << cr.first;
}

TEST(GemmGpu, CublasLtAlgosRoundTripThroughIds) {
  REQUIRE_GPU();
  if (!env().lt) GTEST_SKIP() << "cuBLASLt unavailable: " << env().lt_skip;
  GemmShape s = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 384, 512, 640);
  s.has_bias = true;
  Problem p(s, 700);
  const auto ref = p.hostReference();
  auto lp = toLtProblem(s);
  ASSERT_TRUE(lp.ok());
  auto algos = env().lt->heuristics(*lp, 4, 32 << 20);
  ASSERT_TRUE(algos.ok()) << algos.status().toString();
  ASSERT_FALSE(algos->empty());
  DevBuf ws(32 << 20);
  for (const auto& a : *algos) {
    auto back = cublaslt::LtAlgo::parse(a.id());
    ASSERT_TRUE(back.ok()) << back.status().toString();
    EXPECT_EQ(back->bytes, a.bytes);
    back->workspace_bytes = a.workspace_bytes;
    p.resetC();
    ASSERT_TRUE(env().lt->run(*lp, &*back, p.da.p, p.db.p, p.dc.p, p.dbias.p, ws.p,
                              static_cast<int64_t>(ws.bytes)).ok());
    auto cr = compare(p.download(), ref, s.c, s.k);
    EXPECT_TRUE(cr.ok) << a.id() << ": " << cr.bad << " bad; first " << cr.first;
  }
}

// Hopper wgmma kernel (sm_90a only): curated configs vs the float64 reference (edges, epilogues,
// dtypes) and vs cuBLASLt on a large problem.
void hopperKindVsReference(KernelKind kind) {
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << gemm::kernelKindName(kind) << " needs sm_90a, device is " << env().dev.arch;
  struct Case {
    int64_t m, n, k;
    ElemType ab, c;
    bool bias;
    Activation act;
    float beta, alpha = 1.f;
  };
  const Case cases[] = {
      // alpha != 1 without beta (the tma kind's HAS_BETA 0 kernels scale the accumulators).
      {300, 520, 264, ElemType::kBF16, ElemType::kBF16, false, Activation::kNone, 0.f, 0.75f},
      {130, 200, 72, ElemType::kBF16, ElemType::kBF16, true, Activation::kSilu, 0.5f},
      {257, 384, 1000, ElemType::kF16, ElemType::kF32, true, Activation::kGelu, 0.f},
      {64, 128, 64, ElemType::kBF16, ElemType::kBF16, false, Activation::kNone, 0.f},
      // Odd N: the split-K configs' scalar-atomic path (no 8-byte column pairs), with beta.
      {70, 203, 520, ElemType::kBF16, ElemType::kF32, true, Activation::kNone, 0.5f},
      // Odd sizes: a single row, a 7-wide output, 33 rows, 4097 columns.
      {1, 4097, 264, ElemType::kBF16, ElemType::kBF16, false, Activation::kNone, 0.f},
      {33, 7, 1000, ElemType::kF16, ElemType::kF16, true, Activation::kSilu, 0.f},
  };
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  std::vector<GemmShape> shapes;
  for (const Case& cs : cases) {
    GemmShape s = shapeOf(Layout::kNT, cs.ab, cs.c, cs.m, cs.n, cs.k);
    s.has_bias = cs.bias;
    s.act = cs.act;
    s.beta = cs.beta;
    s.alpha = cs.alpha;
    shapes.push_back(s);
    for (auto& c : gemm::curatedConfigs(kind, s)) jobs.emplace_back(kind, c, s);
  }
  GemmShape big = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096);
  for (auto& c : gemm::curatedConfigs(kind, big)) jobs.emplace_back(kind, c, big);
  // Decode-sized M with the split-K configs (grid.z slices reduced through the workspace).
  GemmShape decode = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 128, 4096, 4096);
  for (auto& c : gemm::curatedConfigs(kind, decode)) jobs.emplace_back(kind, c, decode);
  precompile(jobs);
  uint32_t seed = 1000;
  for (const GemmShape& s : shapes) {
    Problem p(s, seed++);
    const auto ref = p.hostReference();
    for (const Config& c : gemm::curatedConfigs(kind, s))
      expectMatches(kind, c, p, ref, 2);
  }
  if (!env().lt) GTEST_SKIP() << "cuBLASLt unavailable for the large check: " << env().lt_skip;
  Problem p(big, 1100);
  const auto ref = p.cublasReference();
  for (const Config& c : gemm::curatedConfigs(kind, big)) expectMatches(kind, c, p, ref);
  Problem pd(decode, 1101);
  const auto dref = pd.cublasReference();
  for (const Config& c : gemm::curatedConfigs(kind, decode))
    expectMatches(kind, c, pd, dref, 2);
}

TEST(GemmGpu, WgmmaVsReference) {
  REQUIRE_GPU();
  hopperKindVsReference(KernelKind::kWgmma);
}

// The TMA + warp-specialised persistent kernel: same cases (edges are zero-filled by the copy
// engine: M, N, K of 130/200/72, 257/384/1000, 70/203/520), beta, bias, activations, and the big
// and decode problems against cuBLASLt.
TEST(GemmGpu, TmaVsReference) {
  REQUIRE_GPU();
  hopperKindVsReference(KernelKind::kTma);
}

// The tunable op end to end: tunes (JIT configs + cuBLASLt algorithms + default), verifies every
// candidate, records the winner, and the tuned call writes the right result.
TEST(GemmGpu, TunableOpTunesVerifiesAndRuns) {
  REQUIRE_GPU();
  EngineOptions o = opTestOptions("ktune-gemm-op-test", 4);
  o.options.compile_threads = 0;
  auto tuner = Engine::create(env().backend, o);
  ASSERT_TRUE(tuner.ok()) << tuner.status().toString();
  std::shared_ptr<Engine> t = std::move(tuner).value();
  auto op = GemmOp::create(t);
  ASSERT_TRUE(op.ok()) << op.status().toString();
  std::vector<GemmShape> shapes;
  shapes.push_back(shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 16, 4096, 4096));
  GemmShape epi = shapeOf(Layout::kNN, ElemType::kBF16, ElemType::kBF16, 300, 520, 264);
  epi.has_bias = true;
  epi.act = Activation::kSilu;
  epi.beta = 0.5f;
  shapes.push_back(epi);
  uint32_t seed = 800;
  for (const GemmShape& s : shapes) {
    Problem p(s, seed++);
    p.resetC();
    auto rep = (*op)->tune(GemmCall{s, p.buffers()});
    ASSERT_TRUE(rep.ok()) << rep.status().toString();
    std::cout << rep->tree() << "\n";
    EXPECT_FALSE(rep->winner.empty());
    int ok = 0;
    for (const auto& c : rep->candidates) ok += c.measured();
    EXPECT_GT(ok, 1);
    const auto ref = s.m * s.n * s.k <= (int64_t{64} << 20) ? p.hostReference() : p.cublasReference();
    p.resetC();
    Status st = (**op)(GemmCall{s, p.buffers()});
    ASSERT_TRUE(st.ok()) << st.toString();
    auto cr = compare(p.download(), ref, s.c, s.k);
    EXPECT_TRUE(cr.ok) << "tuned call (" << rep->winner << "): " << cr.bad << " bad, " << cr.nans
                       << " NaN; first " << cr.first;
    auto sel = (*op)->lookup(GemmCall{s, p.buffers()});
    ASSERT_TRUE(sel.ok()) << sel.status().toString();
    EXPECT_EQ(sel->winner, rep->winner);
  }
  // Bad input is a clear error, not a crash.
  GemmShape bad = shapes[0];
  bad.lda = 3;
  Problem p(shapes[0], 900);
  Status st = (**op)(GemmCall{bad, p.buffers()});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("lda"), std::string::npos) << st.message();
}

// The tuned op on the decode kind alone: the gate/up pair (silu_mul, bias) and a plain decode GEMM
// tune with no candidate failing (the op gave decode's stream-K configs no workspace: only
// SPLIT_K configs got one), and the tuned calls match float64.
}  // namespace
}  // namespace ktune
