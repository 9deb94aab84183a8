// The decode kernel's GPU tests (part of the gemm_gpu_test program: KTUNE_TEST_PARTS in
// tests/CMakeLists.txt): every body against the float64 reference over M = 1..128 and odd N/K,
// the fused epilogues, and the tuned op on the gate/up pair.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/results.h"
#include "ops/gemm.h"
#include "templates/gemm.h"
#include "tests/gpu/gemm_gpu_decode.h"
#include "tests/gpu/gemm_gpu_env.h"
#include "tests/gpu/gemm_gpu_problem.h"

namespace ktune {
namespace gemm_gpu {

// Declared (and explained) in gemm_gpu_decode.h.
void curatedVsHostReference(KernelKind kind, const std::vector<GemmShape>& shapes, uint32_t seed,
                            const std::string& only) {
  auto curated = [&](const GemmShape& s) {
    std::vector<Config> out;
    for (auto& c : gemm::curatedConfigs(kind, s))
      if (only.empty() || c.has(only)) out.push_back(c);
    return out;
  };
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  for (const GemmShape& s : shapes)
    for (auto& c : curated(s)) jobs.emplace_back(kind, c, s);
  precompile(jobs);
  for (const GemmShape& s : shapes) {
    Problem p(s, seed++);
    const auto ref = p.hostReference();
    const auto configs = curated(s);
    EXPECT_FALSE(configs.empty()) << gemm::shapeKey(s);
    for (const Config& c : configs) expectMatches(kind, c, p, ref, 2);
  }
}

void checkDecodeWgBody(int64_t wg, const std::vector<std::array<int64_t, 7>>& knobs,
                       std::vector<DecodeCase> cases, int64_t l2p,
                       const Config& probe) {
  if (cases.empty()) cases = {
      {1, 333, 1032, ElemType::kBF16, false, Activation::kNone, 0.f},
      {13, 4099, 520, ElemType::kBF16, true, Activation::kNone, 0.f},
      {31, 1001, 1000, ElemType::kF32, false, Activation::kNone, 1.f},
      {64, 77, 4104, ElemType::kBF16, false, Activation::kNone, 0.f},
      {97, 2 * 333, 1032, ElemType::kF16, true, Activation::kSiluMul, 0.f},
      {128, 4096, 4096, ElemType::kBF16, false, Activation::kNone, 0.f},
      {3, 2 * 4099, 1000, ElemType::kBF16, true, Activation::kSiluMul, 1.f},
      {40, 2 * 129, 4104, ElemType::kBF16, false, Activation::kSiluMul, 0.f},
      // More tiles than SMs: a persistent block (DC_GRID = 6) streams several whole tiles.
      {6, 18000, 520, ElemType::kBF16, true, Activation::kNone, 0.f},
      {9, 2 * 9001, 264, ElemType::kBF16, false, Activation::kSiluMul, 0.f},
  };
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  std::vector<GemmShape> shapes;
  for (const DecodeCase& cs : cases) {
    GemmShape s = shapeOf(Layout::kNT, cs.ab, cs.c, cs.m, cs.n, cs.k);
    s.has_bias = cs.bias;
    s.act = cs.act;
    s.beta = cs.beta;
    s.ldc = gemm::outCols(s);
    shapes.push_back(s);
  }
  auto configsFor = [&](const GemmShape& s) {
    std::vector<Config> out;
    for (const auto& k : knobs) {
      // The tier: rows of A / 8 (DC_GRID = 7: a block's half of them), for the FMA body (DC_WG = 3)
      // rows of A.
      const int64_t rows = k[4] == 7 ? (s.m + 1) / 2 : s.m;
      int64_t mt = 1;
      while (mt < 16 && (wg == 3 ? 1 : 8) * mt < rows) mt *= 2;
      Config c{{"DC_WG", wg},           {"DC_WARPS", k[0]}, {"DC_NT", k[1]}, {"DC_MT", mt},
               {"DC_U", k[2]},        {"DC_DEPTH", k[3]}, {"DC_PF", k[5]},
               {"DC_XR", k[6]}, {"DC_GRID", k[4]}};
      if (l2p != gemm::kDecodeL2Promotion) c.set("DC_L2P", l2p);
      for (const auto& [name, value] : probe.params()) c.set(name, value);  // probe knobs (DC_WP, DC_PW)
      if (gemm::configSpace(KernelKind::kDecode).validate(c).ok() &&
          gemm::launchPlan(KernelKind::kDecode, c, s, env().dev).ok())
        out.push_back(c);
    }
    return out;
  };
  for (const GemmShape& s : shapes)
    for (const Config& c : configsFor(s)) jobs.emplace_back(KernelKind::kDecode, c, s);
  precompile(jobs);
  uint32_t seed = 990;
  for (const GemmShape& s : shapes) {
    Problem p(s, seed++);
    const auto ref = p.hostReference();
    const auto configs = configsFor(s);
    EXPECT_GE(configs.size(), 2u) << gemm::shapeKey(s);
    for (const Config& c : configs) expectMatches(KernelKind::kDecode, c, p, ref, 2);
  }
}

}  // namespace gemm_gpu

namespace {

using namespace gemm_gpu;  // NOLINT: the shared helpers (gemm_gpu_problem.h)


TEST(GemmGpu, DecodeVsReference) {
  REQUIRE_GPU();
  std::vector<GemmShape> shapes;
  for (int64_t m = 1; m <= 128; ++m)
    shapes.push_back(shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, m, 333, 1032));
  for (int64_t m : {3, 12, 31, 64, 97})
    shapes.push_back(shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, m, 77, 1000));
  shapes.push_back(shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 128, 4099, 520));
  shapes.push_back(shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 1, 4096, 4096));
  shapes.push_back(shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 16, 14336, 4096));
  // The wide-N entries (min_n 6144 .. 28672: 256-row tiles, DC_PF = 3 at 65..128 rows), K tails,
  // and their gate/up twins.
  for (int64_t m : {40, 64, 97, 128})
    shapes.push_back(shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, m, m < 97 ? 28673 : 14337, 264));
  GemmShape wide_gu = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 120, 2 * 14337, 264);
  wide_gu.act = Activation::kSiluMul;
  wide_gu.has_bias = true;
  shapes.push_back(wide_gu);
  GemmShape epi = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kF32, 33, 1000, 4096);
  epi.has_bias = true;
  epi.act = Activation::kGelu;
  epi.beta = 0.5f;
  shapes.push_back(epi);
  GemmShape silu = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kF16, 7, 1001, 1000);
  silu.has_bias = true;
  silu.act = Activation::kSilu;
  shapes.push_back(silu);
  curatedVsHostReference(KernelKind::kDecode, shapes, 900);
}

// The decode kind's fused epilogues: the gate/up pair (silu_mul: N/2 odd, with bias, with C +=),
// the residual add (beta = 1) and a padded, odd ldc, over every M tier, against float64.
TEST(GemmGpu, DecodeFusedEpilogues) {
  REQUIRE_GPU();
  struct Case { int64_t m, n, k; ElemType c; bool bias; Activation act; float beta; int64_t pad; };
  const Case cases[] = {
      {1, 666, 1032, ElemType::kBF16, false, Activation::kSiluMul, 0.f, 0},
      {5, 666, 1032, ElemType::kBF16, true, Activation::kSiluMul, 0.f, 3},
      {16, 666, 1000, ElemType::kF32, true, Activation::kSiluMul, 1.f, 0},
      {33, 2 * 4099, 520, ElemType::kBF16, false, Activation::kSiluMul, 1.f, 0},
      {128, 666, 1032, ElemType::kF16, true, Activation::kSiluMul, 0.f, 1},
      {4, 2 * 14336, 4096, ElemType::kBF16, false, Activation::kSiluMul, 0.f, 0},
      {8, 333, 1032, ElemType::kBF16, false, Activation::kNone, 1.f, 5},
      {64, 4096, 1032, ElemType::kBF16, true, Activation::kNone, 1.f, 0},
      // The widest tier's residual and gate/up with C += (the epilogue's C loads ahead of its stores).
      {128, 4096, 1032, ElemType::kBF16, true, Activation::kNone, 1.f, 3},
      {120, 2 * 2050, 1032, ElemType::kBF16, true, Activation::kSiluMul, 1.f, 0},
  };
  std::vector<GemmShape> shapes;
  for (const Case& cs : cases) {
    GemmShape s = shapeOf(Layout::kNT, ElemType::kBF16, cs.c, cs.m, cs.n, cs.k);
    s.has_bias = cs.bias;
    s.act = cs.act;
    s.beta = cs.beta;
    s.ldc = gemm::outCols(s) + cs.pad;
    shapes.push_back(s);
  }
  curatedVsHostReference(KernelKind::kDecode, shapes, 950);
  // Every other kind refuses the gate/up pair with a reason.
  const GemmShape g = shapes.front();
  Status st = env().runner->launch(KernelKind::kMma, mmaConfig(64, 64, 32, 2, 2, 3), g,
                                   GemmBuffers{1, 1, 1, 0});
  EXPECT_EQ(st.code(), Code::kUnsupported) << st.toString();
}


// DC_WG = 1: every M tier, both warpgroup counts and slab counts, every grid rule (stream-K ranges
// that cut tiles, and DC_GRID=0), ring depths and k per stage, both producer widths.
TEST(GemmGpu, DecodeWgmmaVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=1 needs sm_90a, device is " << env().dev.arch;
  checkDecodeWgBody(1, {{4, 1, 1, 4, 2, 1}, {4, 1, 2, 2, 0, 1}, {8, 1, 1, 2, 1, 1}, {4, 2, 1, 2, 3, 1},
                        {8, 1, 4, 2, 2, 1}, {4, 1, 1, 4, 2, 2}, {8, 1, 2, 2, 1, 2}, {4, 1, 4, 2, 0, 2}});
}

// DC_WG = 2 (TMA-fed ring): the same cases over its grid rules (stream-K, one block per tile,
// clusters of 2 and 4 splitting K, persistent), one and two warpgroups and slabs, 1..8 x 64 k per
// stage and ring depths of 2..10 stages (6 and 10: up to 216 KB in flight); A in boxes of its tier's rows, the gate/up halves in 32-row boxes;
// five of them again with the weight maps' L2 promotion off (DC_L2P = 0).
TEST(GemmGpu, DecodeTmaVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=2 needs sm_90a, device is " << env().dev.arch;
  checkDecodeWgBody(2, {{4, 1, 2, 4, 1, 1}, {4, 1, 1, 4, 2, 1}, {4, 2, 1, 4, 1, 1}, {8, 1, 1, 2, 0, 1},
                        {4, 2, 2, 2, 3, 1}, {8, 2, 1, 2, 1, 1}, {4, 1, 4, 2, 0, 1}, {4, 1, 4, 2, 4, 1},
                        {4, 2, 4, 1, 5, 1}, {4, 1, 8, 1, 4, 1}, {8, 1, 2, 1, 4, 1}, {4, 1, 2, 2, 4, 1},
                        {4, 1, 1, 2, 1, 1}, {4, 1, 4, 2, 6, 1}, {4, 2, 2, 2, 6, 1}, {8, 1, 8, 1, 6, 1},
                        {8, 2, 2, 1, 6, 1}, {4, 1, 2, 5, 4, 1}, {8, 2, 1, 3, 6, 1}});
  // The weight maps without L2 promotion (DC_L2P = 0; the rows above run the default, 128): the
  // persistent grid, the cluster split, XR3, stream-K (at least two rows apply to every case).
  checkDecodeWgBody(2, {{8, 1, 2, 2, 6, 1}, {4, 1, 2, 2, 6, 1}, {4, 1, 2, 2, 4, 1}, {4, 2, 2, 2, 4, 1, 3},
                        {4, 1, 1, 4, 2, 1}},
                    {}, 0);
}

// DC_WP = 1 (the probe knob: the consumers keep a stage's wgmmas in flight and release its slot a
// stage later) over the TMA-fed grids (stream-K cutting tiles, one block per tile, the clusters of 2
// and 4 splitting K with XR 0, 1, 3, persistent over several tiles, the row-split pair at 65..128
// rows), 1..8 x 64 k per stage, ring depths of 2..10 stages: the default cases (odd N, K tails, M
// not a power of two, the gate/up pair, bias, C +=, f32 C), against float64, twice each.
TEST(GemmGpu, DecodeTmaPipelinedVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=2 needs sm_90a, device is " << env().dev.arch;
  checkDecodeWgBody(2, {{4, 1, 2, 4, 1, 1}, {4, 1, 1, 4, 2, 1}, {8, 1, 1, 2, 0, 1}, {4, 2, 2, 2, 3, 1},
                        {4, 1, 2, 2, 4, 1}, {4, 1, 2, 2, 4, 1, 1}, {4, 2, 2, 2, 4, 1, 3}, {4, 1, 4, 2, 4, 1, 3},
                        {4, 2, 4, 1, 5, 1}, {4, 1, 2, 5, 4, 1, 3}, {8, 1, 2, 1, 6, 1}, {4, 1, 4, 2, 6, 1},
                        {8, 2, 1, 3, 6, 1}, {4, 1, 2, 2, 7, 1}, {4, 2, 2, 2, 7, 1}},
                    {}, gemm::kDecodeL2Promotion, Config{{"DC_WP", int64_t{1}}});
}

// DC_PW = 0 and 1 (the probe knob: the TMA producer's elected thread alone, dividing the unit
// index per stage or stepping it; absent, the shipped path: the whole producer warp, one elected
// lane issuing) over the TMA-fed grids with one producer warp (stream-K cutting tiles, one block
// per tile, the clusters of 2 and 4 with XR 0, 1, 3, persistent over several tiles, the row-split
// pair), 1..8 x 64 k per stage, 2..10 stages: the default cases, against float64, twice each.
TEST(GemmGpu, DecodeTmaProducerPathVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=2 needs sm_90a, device is " << env().dev.arch;
  for (int64_t pw : {0, 1})
    checkDecodeWgBody(2, {{4, 1, 2, 4, 1, 1}, {4, 1, 1, 4, 2, 1}, {8, 1, 1, 2, 0, 1}, {4, 2, 2, 2, 3, 1},
                          {4, 1, 2, 2, 4, 1}, {4, 1, 2, 2, 4, 1, 1}, {4, 1, 4, 2, 4, 1, 3}, {4, 2, 4, 1, 5, 1},
                          {8, 1, 2, 1, 6, 1}, {4, 1, 4, 2, 6, 1}, {4, 1, 2, 2, 7, 1}, {4, 1, 1, 5, 4, 1, 3}},
                      {}, gemm::kDecodeL2Promotion, Config{{"DC_PW", pw}});
}

// DC_CW = 2 (two consumer warpgroups on the same weight slabs, each over every second 8-row group of
// A's rows) over the TMA-fed grids (the cluster K split with XR 0, 1, 3 on clusters of 2 and 4,
// persistent over several tiles, one block per tile, stream-K cutting tiles), one and two slabs,
// 1..4 x 64 k per stage, 4..8 stages, at 9..128 rows (wgmma n8..n64 a warpgroup; M not a power of
// two), odd N, K tails, bias, C +=, f32 and f16 C, the gate/up pair in halves and in pairs, against
// float64 (twice each); then DC_PP = 1 on the cluster K split.
TEST(GemmGpu, DecodeTmaTwoConsumersVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=2 needs sm_90a, device is " << env().dev.arch;
  const auto bf = ElemType::kBF16;
  const auto none = Activation::kNone, gu = Activation::kSiluMul;
  // Both knobs' cases: 9..128 rows (M not a power of two), odd N, K tails, bias, C +=, f32 / f16 C,
  // the gate/up pair; DC_CW = 2 three more (40 and 128 rows of gate/up, 18000 columns).
  std::vector<DecodeCase> cases = {{9, 333, 1032, bf, false, none, 0.f},
                                   {13, 4099, 520, bf, true, none, 0.f},
                                   {31, 1001, 1000, ElemType::kF32, false, none, 1.f},
                                   {64, 77, 4104, bf, false, none, 0.f},
                                   {97, 2 * 333, 1032, ElemType::kF16, true, gu, 0.f},
                                   {128, 4096, 4096, bf, false, none, 0.f},
                                   {57, 2 * 4099, 1000, bf, true, gu, 1.f},
                                   {127, 1001, 4104, bf, true, none, 1.f}};
  std::vector<DecodeCase> cw_cases = cases;
  cw_cases.insert(cw_cases.end(), {{40, 2 * 129, 4104, bf, false, gu, 0.f},
                                   {100, 18000, 520, bf, true, none, 1.f},
                                   {128, 2 * 9001, 264, bf, false, gu, 0.f}});
  checkDecodeWgBody(2, {{8, 1, 2, 2, 4, 1, 0}, {8, 1, 2, 2, 4, 1, 1}, {8, 1, 2, 2, 4, 1, 3}, {8, 1, 4, 1, 5, 1, 3},
                        {8, 1, 2, 2, 6, 1, 0}, {8, 1, 2, 2, 0, 1, 0}, {8, 1, 2, 2, 1, 1, 0}, {8, 2, 1, 2, 4, 1, 1},
                        {8, 2, 2, 1, 6, 1, 0}, {8, 1, 1, 4, 4, 1, 1}},
                    cw_cases, gemm::kDecodeL2Promotion, Config{{"DC_CW", int64_t{2}}});
  // DC_PP = 1 (the warpgroups on alternate stages, the sums traded after the loop): the cluster K
  // split's rows (one stage per block, several, odd counts).
  checkDecodeWgBody(2, {{8, 1, 2, 2, 4, 1, 0}, {8, 1, 2, 2, 4, 1, 1}, {8, 1, 2, 2, 4, 1, 3}, {8, 1, 4, 1, 5, 1, 3},
                        {8, 1, 1, 4, 4, 1, 1}, {8, 1, 1, 2, 5, 1, 0}},
                    cases, gemm::kDecodeL2Promotion, Config{{"DC_CW", int64_t{2}}, {"DC_PP", int64_t{1}}});
}

// DC_GRID = 7 (a pair per tile splitting A's rows, the weight boxes multicast): one and two slabs
// and warpgroups, 1..4 x 64 k per stage, at 65..128 rows (block 1 with 1 row, 33, 63 and 64), odd
// N, K tails, the gate/up pair in 32-row halves and in 64-row pairs (bias, C +=), a residual, f32
// and f16 C, against float64 (twice each).
TEST(GemmGpu, DecodeTmaPairVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=2 needs sm_90a, device is " << env().dev.arch;
  const auto bf = ElemType::kBF16;
  checkDecodeWgBody(2, {{4, 1, 2, 2, 7, 1}, {4, 1, 1, 4, 7, 1}, {4, 2, 1, 4, 7, 1}, {4, 1, 4, 1, 7, 1},
                        {8, 1, 2, 2, 7, 1}, {4, 2, 2, 2, 7, 1}},
                    {{65, 333, 1032, bf, false, Activation::kNone, 0.f},
                     {97, 4099, 520, bf, true, Activation::kNone, 0.f},
                     {127, 1001, 1000, ElemType::kF32, false, Activation::kNone, 1.f},
                     {128, 4096, 4096, bf, false, Activation::kNone, 0.f},
                     {100, 2 * 333, 1032, ElemType::kF16, true, Activation::kSiluMul, 0.f},
                     {120, 2 * 129, 4104, bf, true, Activation::kSiluMul, 1.f},
                     {128, 77, 4104, bf, true, Activation::kNone, 1.f},
                     {126, 2 * 4099, 264, bf, false, Activation::kSiluMul, 0.f}});
}

// DC_GRID = 5 with 128-row tiles (two warpgroups of one slab, or one of two): a cluster of four
// splitting K, reduce-scattered (each block sums and stores a quarter of A's rows: at 33 and 65 rows
// the last blocks own one row or none), at 33..128 rows, odd N, K tails, bias, C +=, f32 C, the
// gate/up pair in 32-row halves and in 64-row pairs, against float64 (twice each).
TEST(GemmGpu, DecodeTmaQuadVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=2 needs sm_90a, device is " << env().dev.arch;
  const auto bf = ElemType::kBF16;
  checkDecodeWgBody(2, {{8, 1, 1, 2, 5, 1}, {8, 1, 2, 1, 5, 1}, {8, 1, 2, 2, 5, 1}, {4, 2, 2, 2, 5, 1}},
                    {{65, 333, 1032, bf, false, Activation::kNone, 0.f},
                     {97, 4099, 520, bf, true, Activation::kNone, 0.f},
                     {127, 1001, 1000, ElemType::kF32, false, Activation::kNone, 1.f},
                     {128, 4096, 4096, bf, false, Activation::kNone, 0.f},
                     {33, 2 * 333, 1032, ElemType::kF16, true, Activation::kSiluMul, 0.f},
                     {64, 2 * 129, 4104, bf, true, Activation::kSiluMul, 1.f},
                     {128, 77, 4104, bf, true, Activation::kNone, 1.f},
                     {50, 2 * 4099, 264, bf, false, Activation::kSiluMul, 0.f}});
}

// DC_XR = 1 on the cluster K split (C staged through the ring, stored as 16-byte vectors) and 3
// (also the sums handed over counted on the receiver's barrier) beside DC_XR = 0: clusters of 2 and 4, the reduce-scatter and the gather, one and two warpgroups, both
// producer widths, over the default cases (M = 1..128, odd N and ldc: the element-wise stores past
// N and on unaligned rows, bias, C +=, f32 and f16 C; the gate/up pair staged too, in 32-row halves
// and 64-row pairs), against float64 (twice each).
TEST(GemmGpu, DecodeTmaClusterEndVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=2 needs sm_90a, device is " << env().dev.arch;
  // The gate/up pair runs every row here, DC_XR 1 and 3 too (its runs staged from the gate and up
  // sums), but the DC_WARPS = 8 one-slab rows at 97 rows (they spill; the kind refuses them).
  // DC_XR = 3: the reduce-scatter's sums counted on the receiver's barrier. 256-row tiles (two
  // warpgroups of two slabs): DC_PF = 3 (setmaxnreg; 128 accumulators at 65..128 rows) on clusters
  // of 2 and 4, plain and gate/up, and DC_PF = 1 where its 64 accumulators fit (up to 64 rows).
  checkDecodeWgBody(2, {{4, 1, 2, 2, 4, 1, 0}, {4, 1, 2, 2, 4, 1, 1}, {8, 1, 2, 1, 5, 1, 1}, {4, 1, 2, 2, 4, 2, 1},
                        {8, 1, 2, 1, 4, 1, 1}, {8, 1, 2, 1, 4, 1, 0}, {4, 1, 1, 4, 4, 1, 0}, {4, 1, 2, 2, 4, 1, 3},
                        {8, 1, 2, 1, 5, 1, 3}, {8, 2, 1, 2, 4, 3, 3}, {8, 2, 1, 2, 4, 3, 0}, {8, 2, 1, 2, 5, 3, 3},
                        {8, 2, 2, 1, 4, 1, 3}, {8, 2, 1, 2, 4, 1, 3}, {8, 2, 1, 2, 5, 1, 3}, {4, 1, 2, 5, 4, 1, 3}});
}

// DC_WG = 2 with DC_PF = 2 (A's rows by the producer warpgroup's cp.async, the weight boxes by
// TMA): its grid rules (stream-K with the workspace, one block per tile, clusters of 2 and 4,
// persistent), one and two warpgroups and slabs, over the default cases (M = 1..128, odd N, K
// tails, the gate/up pair, bias, C +=, f32 and f16 C), against float64 (twice each).
TEST(GemmGpu, DecodeTmaCpAsyncAVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=2 needs sm_90a, device is " << env().dev.arch;
  checkDecodeWgBody(2, {{4, 1, 2, 2, 4, 2}, {4, 1, 2, 2, 0, 2}, {4, 2, 2, 1, 4, 2}, {8, 1, 2, 1, 4, 2},
                        {4, 1, 4, 2, 1, 2}, {4, 1, 2, 2, 6, 2}, {4, 2, 4, 1, 5, 2}, {8, 1, 1, 2, 0, 2}});
}

// DC_WG = 3 (the CUDA-core FMA body, M <= 8): one group per warp and persistent grids (up to three
// blocks of 8 warps per SM), groups of 2 and 4 rows (gate/up: 1 and 2 columns), 1..4 chunks per
// stage, ring depths 2 and 4, both load policies; on every M up to 8, odd N, K not a multiple of a stage (256*DC_U), more groups than
// warps, the gate/up pair (odd N/2, bias, C +=), f32 and f16 C, f16 operands, against float64.
TEST(GemmGpu, DecodeFmaVsReference) {
  REQUIRE_GPU();
  const auto bf = ElemType::kBF16;
  checkDecodeWgBody(3,
                    {{8, 1, 2, 2, 0, 1}, {8, 1, 4, 2, 2, 1}, {4, 2, 1, 2, 3, 1}, {8, 2, 1, 2, 0, 2},
                     {4, 1, 2, 4, 1, 1}, {8, 1, 1, 2, 2, 2}, {4, 1, 4, 2, 0, 1}, {8, 2, 1, 2, 1, 1},
                     {8, 2, 2, 2, 1, 1}, {8, 1, 2, 2, 3, 1}, {4, 1, 4, 2, 3, 1},
                     // Plain loads (DC_PF = 0), the ring refilled before the FMAs (DC_XR = 1).
                     {8, 1, 2, 2, 2, 0}, {8, 1, 2, 2, 0, 0, 1}, {4, 1, 4, 2, 3, 0, 1}, {8, 2, 1, 2, 1, 1, 1},
                     {4, 2, 1, 2, 3, 0, 1}},
                    {{1, 333, 1032, bf, false, Activation::kNone, 0.f},
                     {2, 4099, 520, bf, true, Activation::kNone, 0.f},
                     {3, 1001, 1000, ElemType::kF32, false, Activation::kNone, 1.f},
                     {4, 18000, 520, bf, true, Activation::kNone, 0.f},
                     {5, 2 * 333, 1032, ElemType::kF16, true, Activation::kSiluMul, 0.f},
                     {6, 2 * 9001, 264, bf, false, Activation::kSiluMul, 0.f},
                     {7, 2 * 4099, 264, bf, true, Activation::kSiluMul, 1.f},
                     {8, 77, 4104, bf, false, Activation::kNone, 0.f},
                     {1, 2 * 14336, 4096, bf, false, Activation::kSiluMul, 0.f},
                     {8, 4096, 4096, ElemType::kF16, false, Activation::kNone, 0.f, ElemType::kF16}});
}

TEST(GemmGpu, DecodeOpTunesTheGateUpPair) {
  REQUIRE_GPU();
  EngineOptions o = opTestOptions("ktune-gemm-decode-op", EngineOptions{}.options.vendor_algos);
  o.options.compile_threads = 0;
  auto tuner = Engine::create(env().backend, o);
  ASSERT_TRUE(tuner.ok()) << tuner.status().toString();
  GemmOp::OpOptions oo;
  oo.kinds = {KernelKind::kDecode};
  auto op = GemmOp::create(std::shared_ptr<Engine>(std::move(tuner).value()), oo);
  ASSERT_TRUE(op.ok()) << op.status().toString();
  GemmShape gate = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 16, 2 * 4099, 1032);
  gate.act = Activation::kSiluMul;
  gate.has_bias = true;
  gate.ldc = 4099;
  uint32_t seed = 990;
  for (const GemmShape& s : {gate, shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 3, 4096, 4096)}) {
    Problem p(s, seed++);
    p.resetC();
    auto rep = (*op)->tune(GemmCall{s, p.buffers()});
    ASSERT_TRUE(rep.ok()) << rep.status().toString();
    EXPECT_NE(rep->winner.find("KIND=decode"), std::string::npos) << rep->winner;
    int ok = 0;
    for (const auto& c : rep->candidates) {
      ok += c.measured();
      EXPECT_TRUE(c.status == Code::kOk || c.status == Code::kUnsupported || rejectedAsSlower(c))
          << gemm::shapeKey(s) << " " << c.config << ": " << c.reason;
    }
    EXPECT_GT(ok, 1);
    const auto ref = p.hostReference();
    p.resetC();
    Status st = (**op)(GemmCall{s, p.buffers()});
    ASSERT_TRUE(st.ok()) << st.toString();
    auto cr = compare(p.download(), ref, s.c, s.k);
    EXPECT_TRUE(cr.ok) << "tuned call (" << rep->winner << "): " << cr.bad << " bad, " << cr.nans
                       << " NaN; first " << cr.first;
  }
}

}  // namespace
}  // namespace ktune
