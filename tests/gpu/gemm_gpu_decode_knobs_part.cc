// The decode kernel's probe-knob GPU tests (part of the gemm_gpu_test program: KTUNE_TEST_PARTS in
// tests/CMakeLists.txt): the few-row start and hand-over knobs, the weight boxes' L2 hint, the wide
// start path and the hand-over from 64 rows, each against the float64 reference.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "templates/gemm.h"
#include "tests/gpu/gemm_gpu_decode.h"
#include "tests/gpu/gemm_gpu_env.h"

namespace ktune {
namespace {

using namespace gemm_gpu;  // NOLINT: the shared helpers (gemm_gpu_decode.h)

// The few-row probe knobs at M <= 32: DC_XH (the cluster split's sums handed over into a region of
// their own: the reduce-scatter from 9 rows, block 1's whole sums to block 0 below), DC_ST (the
// tensor maps at entry, no first-stage line prefetches, the first stages issued before the block
// barrier) and both, over the cluster of 2 (XR 0, 1, 3; one and two slabs and warpgroups),
// one block per tile, stream-K cutting tiles and the persistent grid: odd N, K tails, M not a power
// of two, the gate/up pair, bias, C +=, f32 and f16 C, against float64 (twice each).
TEST(GemmGpu, DecodeTmaFewRowKnobsVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=2 needs sm_90a, device is " << env().dev.arch;
  const auto bf = ElemType::kBF16;
  const std::vector<DecodeCase> cases = {{1, 333, 1032, bf, false, Activation::kNone, 0.f},
                                         {5, 4099, 520, bf, true, Activation::kNone, 0.f},
                                         {13, 1001, 1000, ElemType::kF32, false, Activation::kNone, 1.f},
                                         {16, 4096, 4096, bf, false, Activation::kNone, 0.f},
                                         {27, 77, 4104, bf, true, Activation::kNone, 1.f},
                                         {31, 2 * 333, 1032, ElemType::kF16, true, Activation::kSiluMul, 0.f},
                                         {3, 2 * 4099, 1000, bf, true, Activation::kSiluMul, 1.f},
                                         {9, 2 * 129, 4104, bf, false, Activation::kSiluMul, 0.f},
                                         {6, 18000, 520, bf, true, Activation::kNone, 0.f}};
  const std::vector<std::array<int64_t, 7>> rows = {
      {4, 1, 4, 2, 4, 1, 3}, {4, 1, 2, 5, 4, 1, 0}, {4, 2, 2, 2, 4, 1, 3}, {4, 1, 2, 2, 4, 1, 1},
      {8, 1, 2, 2, 4, 1, 0}, {4, 1, 1, 4, 4, 1, 3}, {4, 1, 2, 2, 0, 1, 0}, {8, 1, 4, 1, 6, 1, 0},
      {4, 1, 2, 2, 1, 1, 0}};
  for (const Config& probe : {Config{{"DC_XH", int64_t{1}}}, Config{{"DC_ST", int64_t{1}}},
                              Config{{"DC_XH", int64_t{1}}, {"DC_ST", int64_t{1}}}})
    checkDecodeWgBody(2, rows, cases, gemm::kDecodeL2Promotion, probe);
}

// DC_EF = 1 (the weight boxes evict-first in L2) over the persistent grid, the cluster split (XR 0, 3), stream-K and one block per tile
// at M = 1..128, odd N, K tails, the gate/up pair, bias, C +=, f32 and f16 C, against float64.
TEST(GemmGpu, DecodeTmaCacheHintVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=2 needs sm_90a, device is " << env().dev.arch;
  const std::vector<std::array<int64_t, 7>> rows = {
      {8, 1, 2, 2, 6, 1}, {4, 1, 2, 2, 6, 1}, {4, 1, 2, 2, 4, 1}, {4, 2, 2, 2, 4, 1, 3}, {4, 1, 1, 4, 2, 1},
      {4, 2, 4, 1, 0, 1}, {4, 2, 2, 2, 4, 1, 0}, {4, 2, 4, 1, 4, 1, 0}};
  checkDecodeWgBody(2, rows, {}, gemm::kDecodeL2Promotion, Config{{"DC_EF", int64_t{1}}});
}

// The curated DC_EF twins alone (GemmGpu.DecodeVsReference runs them among every curated config):
// 1..16 rows, odd N and K, N = 6144 at 1..16 rows (odd K, M not a power of two), the persistent
// grid's N from 8192, gate/up (N = 6144 too).
TEST(GemmGpu, DecodeCacheHintTwinsVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=2 needs sm_90a, device is " << env().dev.arch;
  std::vector<GemmShape> shapes;
  for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{
           {1, 333, 1032}, {5, 4099, 520}, {8, 777, 1000}, {13, 6144, 1032}, {16, 4096, 4104}, {3, 8193, 520},
           {16, 14337, 264}, {3, 6144, 520}, {7, 6144, 4104}})
    shapes.push_back(shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, m, n, k));
  for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{{9, 2 * 8193, 264}, {5, 6144, 1032}}) {
    GemmShape gu = shapeOf(Layout::kNT, ElemType::kBF16, ElemType::kBF16, m, n, k);
    gu.act = Activation::kSiluMul;
    gu.has_bias = true;
    shapes.push_back(gu);
  }
  curatedVsHostReference(KernelKind::kDecode, shapes, 970, "DC_EF");
}

// DC_ST at 33..128 rows (DC_MT 8 and 16 on the warp-converged producer path, and 4 on the few-row
// one): the first stages issued before the block barrier, the producer's warp going on after them;
// the cluster K split (XR 0, 1, 3; one and two consumer warpgroups, DC_PP; a 6-stage ring), one
// block per tile, stream-K and the persistent grid: odd N, K tails, M not a power of two, the gate/up
// pair, bias, C +=, f32 and f16 C, against float64 (twice each).
TEST(GemmGpu, DecodeTmaWideStartVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=2 needs sm_90a, device is " << env().dev.arch;
  const auto bf = ElemType::kBF16;
  const std::vector<DecodeCase> cases = {{40, 333, 1032, bf, false, Activation::kNone, 0.f},
                                         {65, 4099, 520, bf, true, Activation::kNone, 0.f},
                                         {127, 1001, 1000, ElemType::kF32, false, Activation::kNone, 1.f},
                                         {128, 4096, 4096, bf, false, Activation::kNone, 0.f},
                                         {64, 77, 4104, bf, true, Activation::kNone, 1.f},
                                         {100, 2 * 333, 1032, ElemType::kF16, true, Activation::kSiluMul, 0.f},
                                         {120, 18000, 520, bf, true, Activation::kNone, 0.f}};
  const std::vector<std::array<int64_t, 7>> rows = {
      {4, 1, 2, 2, 4, 1, 3}, {4, 1, 2, 2, 4, 1, 1}, {4, 1, 2, 3, 4, 1, 0}, {4, 1, 2, 2, 1, 1, 0}, {8, 1, 2, 2, 6, 1, 0}};
  checkDecodeWgBody(2, rows, cases, gemm::kDecodeL2Promotion, Config{{"DC_ST", int64_t{1}}});
  const std::vector<std::array<int64_t, 7>> two = {{8, 1, 2, 2, 4, 1, 3}, {8, 1, 2, 2, 4, 1, 1}, {8, 1, 2, 2, 4, 1, 0}};
  checkDecodeWgBody(2, {two[0], two[1], {8, 2, 1, 2, 5, 1, 3}}, cases, gemm::kDecodeL2Promotion,
                    Config{{"DC_CW", int64_t{2}}, {"DC_ST", int64_t{1}}});
  checkDecodeWgBody(2, two, cases, gemm::kDecodeL2Promotion,
                    Config{{"DC_CW", int64_t{2}}, {"DC_PP", int64_t{1}}, {"DC_ST", int64_t{1}}});
}

// DC_XH from 64 rows (DC_MT 8 and 16): the cluster K split of 2's sums handed over into the gate/up
// hand-over's region without a cluster barrier after the main loop; one consumer warpgroup (XR 0, 1, 3;
// one and two slabs) and two (DC_CW 2), with and without DC_ST: odd N, K tails, M not a power of two,
// the gate/up pair (whose epilogue rewrites that region), bias, C +=, f32 and f16 C, against float64.
TEST(GemmGpu, DecodeTmaWideHandOverVsReference) {
  REQUIRE_GPU();
  if (env().dev.arch != "sm_90a") GTEST_SKIP() << "DC_WG=2 needs sm_90a, device is " << env().dev.arch;
  const auto bf = ElemType::kBF16;
  const std::vector<DecodeCase> cases = {{40, 333, 1032, bf, false, Activation::kNone, 0.f},
                                         {65, 4099, 520, bf, true, Activation::kNone, 0.f},
                                         {127, 1001, 1000, ElemType::kF32, false, Activation::kNone, 1.f},
                                         {128, 4096, 4096, bf, false, Activation::kNone, 0.f},
                                         {64, 77, 4104, bf, true, Activation::kNone, 1.f},
                                         {100, 2 * 333, 1032, ElemType::kF16, true, Activation::kSiluMul, 0.f},
                                         {57, 2 * 4099, 1000, bf, false, Activation::kSiluMul, 1.f}};
  const std::vector<std::array<int64_t, 7>> one = {{4, 1, 2, 2, 4, 1, 3}, {4, 1, 2, 2, 4, 1, 1}, {4, 1, 2, 2, 4, 1, 0},
                                                   {4, 2, 1, 2, 4, 1, 3}};
  const std::vector<std::array<int64_t, 7>> two = {{8, 1, 2, 2, 4, 1, 3}, {8, 1, 2, 2, 4, 1, 1}, {8, 1, 2, 2, 4, 1, 0}};
  checkDecodeWgBody(2, one, cases, gemm::kDecodeL2Promotion, Config{{"DC_XH", int64_t{1}}});
  checkDecodeWgBody(2, {one[0], one[1]}, cases, gemm::kDecodeL2Promotion,
                    Config{{"DC_XH", int64_t{1}}, {"DC_ST", int64_t{1}}});
  checkDecodeWgBody(2, two, cases, gemm::kDecodeL2Promotion, Config{{"DC_CW", int64_t{2}}, {"DC_XH", int64_t{1}}});
  checkDecodeWgBody(2, {two[0], two[1]}, cases, gemm::kDecodeL2Promotion,
                    Config{{"DC_CW", int64_t{2}}, {"DC_XH", int64_t{1}}, {"DC_ST", int64_t{1}}});
}

}  // namespace
}  // namespace ktune
