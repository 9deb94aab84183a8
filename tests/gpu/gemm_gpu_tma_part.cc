// The TMA kernel's GPU tests beyond the curated comparison (part of the gemm_gpu_test program:
// KTUNE_TEST_PARTS in tests/CMakeLists.txt): every layout, tile shape, cluster size and epilogue
// against the float64 reference, the grid of resident clusters, and the split tail.
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
namespace {

using namespace gemm_gpu;  // NOLINT: the shared helpers (gemm_gpu_problem.h)

// A kTma config with GROUP_M 8: the two tests below list theirs with it.
Config tmaConfig(int64_t bn, int64_t cons, int64_t wgm, int64_t st, int64_t cl, int64_t epi,
                 int64_t split, int64_t pp = 0) {
  return Config{{"BLOCK_N", bn},     {"CONSUMERS", cons},     {"WG_M", wgm},
                {"NUM_STAGES", st},  {"GROUP_M", int64_t{8}}, {"CLUSTER_M", cl},
                {"EPI_TMA", epi},    {"SPLIT_K", split},      {"PINGPONG", pp}};
}

// The TMA kernel in every layout: MN-major A (TN, TT) and B (NN, TN) come in as TMA boxes of the
// stored matrix and are read by wgmma with its transpose flags. Odd sizes and epilogues against the
// float64 reference, tile shapes / consumers / clusters / split tail, then 2048^3 against cuBLASLt.
TEST(GemmGpu, TmaEveryLayoutVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "tma needs sm_90a, device is " << env().dev.arch;
  // cfgs[kPairDefer]: a cluster pair with the deferred epilogue (the short-K winner, K = 1000; at
  // the odd cases the pair's second block lies below M). The last three: ping-pong consumers
  // (64x256, 128x128 and 128x192 tiles, one per consumer warpgroup; 192 accumulators per thread
  // in the last).
  constexpr size_t kPairDefer = 8;
  const std::vector<Config> cfgs = {tmaConfig(256, 2, 1, 4, 1, 1, 1), tmaConfig(128, 1, 1, 8, 1, 0, 1),
                                    tmaConfig(192, 2, 1, 4, 1, 1, 1), tmaConfig(128, 2, 2, 4, 1, 1, 1),
                                    tmaConfig(256, 2, 1, 4, 2, 0, 1), tmaConfig(256, 2, 1, 4, 1, 1, 2),
                                    tmaConfig(192, 2, 1, 4, 1, 2, 1), tmaConfig(128, 2, 2, 4, 1, 2, 2),
                                    tmaConfig(256, 2, 1, 4, 2, 2, 1),
                                    tmaConfig(256, 2, 1, 4, 1, 1, 1, 1), tmaConfig(128, 2, 2, 5, 1, 0, 1, 1),
                                    tmaConfig(192, 2, 2, 5, 1, 1, 1, 1)};
  // Wide tiles (BLOCK_N not a multiple of 64: B's last 64-row box overlapping the one before it;
  // the deferred epilogue's last C box too, EPI_TMA 0 / 1 storing the columns past the last whole
  // box directly): a K-major B only, so NT and TT run them and NN and TN must refuse them.
  // wide[kW168]: 128 x 168, five stages (cuBLASLt's fastest tile at 4096x6144x4096); 152 with the
  // split tail, 200; the last: ping-pong with a 128 x 176 tile per consumer warpgroup.
  constexpr size_t kW168 = 4;
  const std::vector<Config> wide = {tmaConfig(224, 2, 1, 4, 1, 2, 2), tmaConfig(176, 2, 1, 4, 1, 1, 1),
                                    tmaConfig(224, 2, 1, 4, 1, 0, 1), tmaConfig(168, 2, 1, 4, 1, 1, 1),
                                    tmaConfig(168, 2, 1, 5, 1, 2, 1), tmaConfig(152, 2, 1, 4, 1, 2, 2),
                                    tmaConfig(200, 2, 1, 4, 1, 2, 1), tmaConfig(176, 2, 2, 4, 1, 1, 1, 1)};
  // Four-block clusters (a quarter of B per block) on the grid of the kernel's resident clusters:
  // M >= 512 only (the small cases must refuse them), so their own odd cases: 600 rows leave the
  // second cluster tile one partial block and three below M; 1100 x 4097 runs 3 x 17 cluster tiles
  // (more than the resident clusters: the grid-stride walk); K = 1000 and 264 end mid k-tile.
  const Config four = tmaConfig(256, 2, 1, 4, 4, 2, 1);
  // The cluster pair with its maps' L2 promotion off or halved (TMA_L2A/B/C, host-side probe
  // knobs: the same compiled kernel as cfgs[kPairDefer], other tensor maps).
  Config l2p = tmaConfig(256, 2, 1, 4, 2, 2, 1);
  l2p.set("TMA_L2A", int64_t{0});
  l2p.set("TMA_L2B", int64_t{128});
  l2p.set("TMA_L2C", int64_t{0});
  auto kMajorB = [](Layout l) { return l == Layout::kNT || l == Layout::kTT; };
  struct Case { int64_t m, n, k; ElemType ab, c; bool bias; Activation act; float beta; };
  const Case four_cases[] = {
      {600, 520, 1000, ElemType::kBF16, ElemType::kBF16, true, Activation::kSilu, 0.f},
      {1100, 4097, 264, ElemType::kF16, ElemType::kF32, false, Activation::kNone, 0.5f},
  };
  const Case cases[] = {
      {300, 520, 264, ElemType::kBF16, ElemType::kBF16, false, Activation::kNone, 0.f},
      {130, 200, 1000, ElemType::kF16, ElemType::kF32, true, Activation::kGelu, 0.5f},
      {33, 4097, 72, ElemType::kBF16, ElemType::kBF16, true, Activation::kSilu, 0.f},
  };
  // The wide tiles only (the first case's kernels): C += with a 16-bit C through the TMA stores
  // (the deferred epilogue reads C for the whole tile before its overlapping boxes store it),
  // N = 1000 ending mid-tile for every width, K = 200 mid k-tile.
  const Case wide_case = {260, 1000, 200, ElemType::kBF16, ElemType::kBF16, false, Activation::kNone, 0.5f};
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  std::vector<GemmShape> shapes, bigs, four_shapes, wide_shapes;
  auto caseShape = [](Layout l, const Case& cs) {
    GemmShape s = shapeOf(l, cs.ab, cs.c, cs.m, cs.n, cs.k);
    // Leading dimensions padded to 8 elements (TMA needs 16-byte row pitches); M, N, K stay odd.
    s.lda = (gemm::storedColsA(s) + 7) / 8 * 8;
    s.ldb = (gemm::storedColsB(s) + 7) / 8 * 8;
    s.has_bias = cs.bias;
    s.act = cs.act;
    s.beta = cs.beta;
    return s;
  };
  for (Layout l : kLayouts) {
    for (const Case& cs : four_cases) {
      four_shapes.push_back(caseShape(l, cs));
      jobs.emplace_back(KernelKind::kTma, four, four_shapes.back());
    }
    for (const Case& cs : cases) {
      const GemmShape s = caseShape(l, cs);
      shapes.push_back(s);
      for (const Config& c : cfgs) jobs.emplace_back(KernelKind::kTma, c, s);
      if (kMajorB(l))
        for (const Config& c : wide) jobs.emplace_back(KernelKind::kTma, c, s);
    }
    if (kMajorB(l)) wide_shapes.push_back(caseShape(l, wide_case));
    bigs.push_back(shapeOf(l, ElemType::kBF16, ElemType::kBF16, 2048, 2048, 2048));
    for (size_t i : {size_t{0}, kPairDefer, cfgs.size() - 2, cfgs.size() - 1})
      jobs.emplace_back(KernelKind::kTma, cfgs[i], bigs.back());
    jobs.emplace_back(KernelKind::kTma, four, bigs.back());
    if (kMajorB(l))
      for (size_t i : {size_t{0}, kW168, wide.size() - 1})
        jobs.emplace_back(KernelKind::kTma, wide[i], bigs.back());
  }
  precompile(jobs);
  uint32_t seed = 4000;
  for (const GemmShape& s : shapes) {
    Problem p(s, seed++);
    const auto ref = p.hostReference();
    for (const Config& c : cfgs) expectMatches(KernelKind::kTma, c, p, ref);
    expectMatches(KernelKind::kTma, l2p, p, ref);
    EXPECT_EQ(gemm::applicable(KernelKind::kTma, four, s).code(), Code::kUnsupported)
        << gemm::shapeKey(s);
    for (const Config& c : wide) {
      if (kMajorB(s.layout)) {
        expectMatches(KernelKind::kTma, c, p, ref);
        continue;
      }
      EXPECT_EQ(gemm::applicable(KernelKind::kTma, c, s).code(), Code::kUnsupported)
          << c.toString() << " | " << gemm::shapeKey(s);
    }
  }
  for (const GemmShape& s : four_shapes) {
    Problem p(s, seed++);
    expectMatches(KernelKind::kTma, four, p, p.hostReference());
  }
  for (const GemmShape& s : wide_shapes) {
    Problem p(s, seed++);
    const auto ref = p.hostReference();
    for (const Config& c : wide) expectMatches(KernelKind::kTma, c, p, ref);
  }
  if (!env().lt) GTEST_SKIP() << "cuBLASLt unavailable for the large check: " << env().lt_skip;
  for (const GemmShape& s : bigs) {
    Problem p(s, seed++);
    const auto ref = p.cublasReference();
    // Ping-pong at 2048^3: 256 tiles, two per block, one on each consumer; the pair with the
    // deferred epilogue: 8 x 8 cluster tiles of 256 x 256 on 66 clusters; four-block clusters:
    // 4 x 8 cluster tiles of 512 x 256 on the resident clusters.
    for (size_t i : {size_t{0}, kPairDefer, cfgs.size() - 2, cfgs.size() - 1})
      expectMatches(KernelKind::kTma, cfgs[i], p, ref);
    expectMatches(KernelKind::kTma, four, p, ref);
    // 16 x 10 tiles of 128 x 224 (132 + a split tail of 28); 16 x 13 of 128 x 168; 16 x 12 of
    // 128 x 176 in ping-pong.
    if (kMajorB(s.layout))
      for (size_t i : {size_t{0}, kW168, wide.size() - 1})
        expectMatches(KernelKind::kTma, wide[i], p, ref);
  }
}

// The box probe knobs (TMA_ABOX / TMA_BBOX = 64, defines the kernel reads): A and / or B in 64-row
// boxes as before the one-box copies, the maps' boxes from tmaBoxRows of the same config (a map
// that disagreed with the kernel's copies would hang or corrupt here): ping-pong 128 x 176 (B's
// last box overlapping the one before it), the cooperative 128 x 256, the four-block clusters,
// in NT, TT and NN against float64, then at 3000x5000x1000 NT and NN against cuBLASLt.
TEST(GemmGpu, TmaBoxProbeKnobsVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "tma needs sm_90a, device is " << env().dev.arch;
  auto box = [](Config c, bool a, bool b) {
    if (a) c.set("TMA_ABOX", int64_t{64});
    if (b) c.set("TMA_BBOX", int64_t{64});
    return c;
  };
  const Config p176 = tmaConfig(176, 2, 2, 4, 1, 1, 1, 1), b = tmaConfig(256, 2, 1, 4, 1, 2, 1);
  const Config cl4 = tmaConfig(256, 2, 1, 4, 4, 2, 1), cl2 = tmaConfig(256, 2, 1, 4, 2, 2, 1);
  const std::vector<Config> cfgs = {box(p176, true, true), box(p176, false, true), box(b, true, false),
                                    box(b, true, true),    box(cl4, true, true),   box(cl4, true, false),
                                    box(cl2, false, true)};
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  std::vector<GemmShape> shapes, bigs;
  for (Layout l : {Layout::kNT, Layout::kTT, Layout::kNN}) {
    GemmShape s = shapeOf(l, ElemType::kBF16, ElemType::kBF16, 600, 520, 1000);
    s.lda = (gemm::storedColsA(s) + 7) / 8 * 8;  // TMA needs 16-byte row pitches
    s.ldb = (gemm::storedColsB(s) + 7) / 8 * 8;
    s.has_bias = true;
    s.beta = 0.5f;
    shapes.push_back(s);
    if (l != Layout::kTT) bigs.push_back(shapeOf(l, ElemType::kBF16, ElemType::kBF16, 3000, 5000, 1000));
  }
  for (const GemmShape& s : shapes)
    for (const Config& c : cfgs)
      if (gemm::applicable(KernelKind::kTma, c, s).ok()) jobs.emplace_back(KernelKind::kTma, c, s);
  for (const GemmShape& s : bigs)
    for (const Config& c : cfgs)
      if (gemm::applicable(KernelKind::kTma, c, s).ok()) jobs.emplace_back(KernelKind::kTma, c, s);
  ASSERT_GE(jobs.size(), 12u);
  precompile(jobs);
  uint32_t seed = 6000;
  for (const GemmShape& s : shapes) {
    Problem p(s, seed++);
    const auto ref = p.hostReference();
    for (const Config& c : cfgs)
      if (gemm::applicable(KernelKind::kTma, c, s).ok()) expectMatches(KernelKind::kTma, c, p, ref);
  }
  if (!env().lt) GTEST_SKIP() << "cuBLASLt unavailable for the large check: " << env().lt_skip;
  for (const GemmShape& s : bigs) {
    Problem p(s, seed++);
    const auto ref = p.cublasReference();
    for (const Config& c : cfgs)
      if (gemm::applicable(KernelKind::kTma, c, s).ok()) expectMatches(KernelKind::kTma, c, p, ref);
  }
}

// The gate/up pair (act silu_mul, tma_gated.cuh): B = [gate; up], C gets N / 2 columns. Both
// epilogues (direct and TMA store), one and two consumers, 128- and 256-wide tiles, the split
// tail (few tiles: every block on part of K), a cluster pair and ping-pong, against float64 on
// odd N / 2 (tails of both halves' boxes), K tails, M not a power of two, bias, C += and f32 C;
// A stored [K][M] (TT) once. The configs the kernel does not take for the pair refuse it.
TEST(GemmGpu, TmaGateUpPairVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "tma needs sm_90a, device is " << env().dev.arch;
  const std::vector<Config> cfgs = {tmaConfig(128, 1, 1, 8, 1, 0, 1), tmaConfig(128, 1, 1, 8, 1, 1, 1),
                                    tmaConfig(256, 1, 1, 4, 1, 1, 1), tmaConfig(128, 2, 1, 5, 1, 1, 1),
                                    tmaConfig(256, 2, 1, 4, 1, 1, 2), tmaConfig(128, 2, 2, 4, 1, 1, 1),
                                    tmaConfig(128, 2, 1, 4, 2, 1, 1), tmaConfig(256, 2, 1, 4, 1, 1, 1, 1)};
  struct Case { Layout l; int64_t m, n, k; ElemType c; bool bias; float beta; };
  const Case cases[] = {
      {Layout::kNT, 97, 2 * 333, 1032, ElemType::kF16, true, 0.f},
      {Layout::kNT, 64, 2 * 4099, 520, ElemType::kBF16, false, 1.f},
      {Layout::kNT, 3, 2 * 129, 4104, ElemType::kBF16, true, 0.f},
      {Layout::kNT, 120, 2 * 2050, 1000, ElemType::kBF16, false, 0.f},
      {Layout::kNT, 33, 2 * 333, 264, ElemType::kF32, true, 0.5f},
      {Layout::kTT, 100, 2 * 161, 520, ElemType::kBF16, true, 0.f},
  };
  std::vector<GemmShape> shapes;
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  for (const Case& cs : cases) {
    GemmShape s = shapeOf(cs.l, ElemType::kBF16, cs.c, cs.m, cs.n, cs.k);
    s.lda = (gemm::storedColsA(s) + 7) / 8 * 8;  // TMA needs 16-byte row pitches
    s.act = Activation::kSiluMul;
    s.has_bias = cs.bias;
    s.beta = cs.beta;
    s.ldc = gemm::outCols(s);
    shapes.push_back(s);
    for (const Config& c : cfgs) jobs.emplace_back(KernelKind::kTma, c, s);
  }
  precompile(jobs);
  uint32_t seed = 5000;
  for (const GemmShape& s : shapes) {
    Problem p(s, seed++);
    const auto ref = p.hostReference();
    for (const Config& c : cfgs) expectMatches(KernelKind::kTma, c, p, ref, 2);
    for (const Config& c : {tmaConfig(192, 2, 1, 4, 1, 1, 1), tmaConfig(256, 2, 1, 4, 1, 2, 1)})
      EXPECT_EQ(gemm::applicable(KernelKind::kTma, c, s).code(), Code::kUnsupported) << c.toString();
  }
}

// The persistent cluster grids are the resident clusters of the compiled kernel: the driver's
// answer for the pair and the four-block clusters (one block per SM: at most SMs / size, fewer
// where a GPC's SMs do not divide), printed for the bench notes.
TEST(GemmGpu, TmaClusterGridIsTheResidentClusters) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "tma needs sm_90a, device is " << env().dev.arch;
  const GemmShape s = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 3000, 5000, 1000);
  for (int64_t cl : {2, 4}) {
    const Config c{{"BLOCK_N", int64_t{256}}, {"CONSUMERS", int64_t{2}}, {"WG_M", int64_t{1}},
                   {"NUM_STAGES", int64_t{4}}, {"GROUP_M", int64_t{16}}, {"CLUSTER_M", cl},
                   {"EPI_TMA", int64_t{2}},    {"SPLIT_K", int64_t{1}},  {"PINGPONG", int64_t{0}}};
    auto plan = gemm::launchPlan(KernelKind::kTma, c, s, env().dev);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    auto code = env().runner->compile(KernelKind::kTma, c, s);
    ASSERT_TRUE(code.ok()) << code.status().toString();
    Backend& b = *env().backend;
    auto mod = b.loadModule((*code)->binary);
    ASSERT_TRUE(mod.ok()) << mod.status().toString();
    auto fn = b.getFunction(*mod, (*code)->lowered_entry.empty() ? (*code)->entry
                                                                 : (*code)->lowered_entry);
    ASSERT_TRUE(fn.ok()) << fn.status().toString();
    ASSERT_TRUE(b.setMaxDynamicShared(*fn, plan->shared_bytes).ok());
    auto n = b.maxActiveClusters(*fn, Dim3{static_cast<unsigned>(cl), 1, 1}, plan->block.x,
                                 static_cast<size_t>(plan->shared_bytes));
    ASSERT_TRUE(n.ok()) << n.status().toString();
    std::printf("resident clusters of %lld blocks: %d on %d SMs (plan's bound %u blocks)\n",
                static_cast<long long>(cl), *n, env().dev.multiprocessors, plan->grid.x);
    EXPECT_GE(*n, 1);
    EXPECT_LE(*n, env().dev.multiprocessors / cl);
    const Dim3 g = residentClusterGrid(b, *fn, plan->grid, plan->block,
                                       static_cast<size_t>(plan->shared_bytes),
                                       static_cast<unsigned>(cl));
    EXPECT_EQ(g.x, std::min<unsigned>(plan->grid.x, static_cast<unsigned>(*n * cl)));
    (void)b.unloadModule(*mod);
  }
}

// The TMA kernel's split tail (SPLIT_K 2 | 4): the last round of the persistent grid shared out along
// K (several rounds + a short one; a single partial round; uneven K splits; ranges that cross tile
// boundaries; beta, bias, SiLU; the deferred epilogue), three
// launches in a row (the counters must come back to zero), then the mma split-K kernel on the same
// runner (the shared workspace must be left zero).
TEST(GemmGpu, TmaSplitTailIsCorrectAndSelfCleaning) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "tma needs sm_90a, device is " << env().dev.arch;
  auto tma = [](int64_t bn, int64_t cons, int64_t wgm, int64_t split, int64_t epi = 1) {
    return Config{{"BLOCK_N", bn},          {"CONSUMERS", cons},     {"WG_M", wgm},
                  {"NUM_STAGES", int64_t{4}}, {"GROUP_M", int64_t{8}}, {"CLUSTER_M", int64_t{1}},
                  {"EPI_TMA", epi},          {"SPLIT_K", split},      {"PINGPONG", int64_t{0}}};
  };
  // The last: a 224-wide tile (columns past its three whole boxes stored directly), the deferred
  // epilogue; 1152x4096 is 9 x 19 = 171 tiles (132 + 39), 1280x5120 10 x 23 = 230 (132 + 98).
  const std::vector<Config> cfgs = {tma(256, 2, 1, 2), tma(256, 2, 1, 4), tma(128, 2, 1, 4),
                                    tma(128, 1, 2, 2), tma(256, 2, 1, 2, 2), tma(224, 2, 1, 2, 2)};
  struct Case { int64_t m, n, k; bool bias; Activation act; float beta; };
  const Case cases[] = {
      {1152, 4096, 200, true, Activation::kSilu, 0.5f},  // 144 tiles of 128x256: 132 + 12
      {640, 2560, 1000, false, Activation::kNone, 0.f},  // 50 tiles: one partial round
      {1000, 3000, 520, true, Activation::kNone, 0.f},   // ragged edges, 9 k-tiles split 4 ways
      // 200 tiles of 128x256 = 132 + 68: the tail's 340 k-tiles in 132 ranges of 2-3 that cross
      // tile boundaries (stream-K: a block ends one tile and starts the next).
      {1280, 5120, 264, false, Activation::kNone, 0.5f},
  };
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  std::vector<GemmShape> shapes;
  for (const Case& cs : cases) {
    GemmShape s = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, cs.m, cs.n, cs.k);
    s.has_bias = cs.bias;
    s.act = cs.act;
    s.beta = cs.beta;
    shapes.push_back(s);
    for (const Config& c : cfgs) jobs.emplace_back(KernelKind::kTma, c, s);
  }
  GemmShape big = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 1024, 14336, 4096);
  for (const Config& c : cfgs) jobs.emplace_back(KernelKind::kTma, c, big);
  const Config mma = mmaConfig(64, 128, 64, 2, 2, 4, 4);
  jobs.emplace_back(KernelKind::kMma, mma, shapes[0]);
  precompile(jobs);
  uint32_t seed = 3000;
  for (const GemmShape& s : shapes) {
    Problem p(s, seed++);
    const auto ref = p.hostReference();
    for (const Config& c : cfgs) expectMatches(KernelKind::kTma, c, p, ref, 3);
    if (&s == &shapes[0]) expectMatches(KernelKind::kMma, mma, p, ref, 2);
  }
  if (!env().lt) GTEST_SKIP() << "cuBLASLt unavailable for the large check: " << env().lt_skip;
  Problem p(big, 3100);  // 448 tiles of 128x256 on 132 SMs: 3 rounds + 52 tiles split in two
  const auto ref = p.cublasReference();
  for (const Config& c : cfgs) expectMatches(KernelKind::kTma, c, p, ref, 2);
}

}  // namespace
}  // namespace ktune
