// The comparison with a trusted output on the device (autotune/device_compare.h), where no GPU is
// needed: the kernel's per-thread part and merge (the shared file's `pass` and `merge`, run here
// for every thread of a grid on the host) give exactly compareHostTrusted's result on planted
// cases of every type, contiguous and in padded rows; the storage formats' values the kernel
// reads are the host's for all 65536 fp16 and bf16 patterns; the kernel compiles for Hopper without
// a fused multiply-add; on the simulated backend the comparison stays the host's. On a GPU, the
// kernel's results against the host's: tests/gpu/device_compare_gpu_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "autotune/device_compare.h"
#include "autotune/verifier.h"
#include "base/dtype.h"
#include "compiler/compiler.h"
#include "runtime/sim/sim_backend.h"
#include "templates/kernels/verify_compare.cuh"
#include "tests/support/tools.h"
#include "tests/support/verify_expect.h"

namespace ktune {
namespace {

void expectSame(const VerifyResult& a, const VerifyResult& b, const std::string& what) {
  testsupport::expectSameVerifyResult(a, b, what);
}

int kindOf(DType t) {
  return t == DType::kF32 ? 0 : t == DType::kF16 ? 1 : t == DType::kBF16 ? 2 : 3;
}

// The kernel's partition on the host: every thread's `pass`, merged (the atomics' order does not
// matter: counts add, maxima and the lowest index combine in any order). The first mismatch's
// values are read from the buffers at its index, as the device path reads them back.
VerifyResult emulateGrid(const std::vector<unsigned char>& o, const std::vector<unsigned char>& r,
                         DType t, int64_t rows, int64_t cols, int64_t ld, Tolerance tol,
                         int64_t blocks, int64_t threads) {
  verify_rule::Acc all;
  verify_rule::init(all);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t th = 0; th < threads; ++th) {
      verify_rule::Acc a;
      verify_rule::init(a);
      const void *po = o.data(), *pr = r.data();
      switch (kindOf(t)) {
        case 0: verify_rule::pass<0>(a, po, pr, rows, cols, ld, tol.atol, tol.rtol, b, blocks, th, threads); break;
        case 1: verify_rule::pass<1>(a, po, pr, rows, cols, ld, tol.atol, tol.rtol, b, blocks, th, threads); break;
        case 2: verify_rule::pass<2>(a, po, pr, rows, cols, ld, tol.atol, tol.rtol, b, blocks, th, threads); break;
        default: verify_rule::pass<3>(a, po, pr, rows, cols, ld, tol.atol, tol.rtol, b, blocks, th, threads); break;
      }
      verify_rule::merge(all, a);
    }
  VerifyResult v;
  v.tol = tol;
  v.checked = rows * cols;
  v.mismatches = all.mismatches;
  v.nans = all.nans;
  v.max_abs_error = all.max_abs;
  v.max_rel_error = all.max_rel;
  v.ok = v.mismatches == 0;
  if (all.first_bad >= 0) {
    v.first_bad = all.first_bad;
    const int64_t at = (all.first_bad / cols) * ld + all.first_bad % cols;
    v.first_bad_out = loadAsDouble(o.data(), t, at);
    v.first_bad_ref = loadAsDouble(r.data(), t, at);
  }
  return v;
}

// The real columns of each row, packed: what the host compares.
std::vector<unsigned char> packed(const std::vector<unsigned char>& v, DType t, int64_t rows,
                                  int64_t cols, int64_t ld) {
  const size_t es = sizeOf(t), rb = static_cast<size_t>(cols) * es;
  std::vector<unsigned char> p(static_cast<size_t>(rows) * rb);
  for (int64_t i = 0; i < rows; ++i) std::memcpy(p.data() + i * rb, v.data() + i * ld * es, rb);
  return p;
}

TEST(DeviceCompareRule, EveryThreadsPartMergedIsTheHostComparison) {
  struct Case { DType t; int64_t rows, cols, ld; bool specials; int64_t blocks, threads; };
  const Case cases[] = {
      {DType::kF32, 1, 20011, 20011, true, 7, 64},   {DType::kF16, 9, 1001, 1001, true, 5, 32},
      {DType::kBF16, 40, 513, 513, true, 13, 96},    {DType::kF64, 1, 4099, 4099, true, 3, 256},
      {DType::kBF16, 33, 301, 307, true, 8, 64},     {DType::kF32, 17, 250, 260, true, 40, 32},
      {DType::kBF16, 16, 700, 700, false, 11, 128},  {DType::kF16, 5, 129, 136, false, 2, 64},
      {DType::kBF16, 3, 50, 50, true, 100, 256}};  // more threads than elements
  uint32_t seed = 100;
  for (const Case& k : cases) {
    const std::string what = std::string(dtypeName(k.t)) + " " + std::to_string(k.rows) + "x" +
                             std::to_string(k.cols) + " ld " + std::to_string(k.ld);
    std::vector<unsigned char> o, r;
    plantedCompareCase(k.t, k.rows * k.ld, seed++, k.specials, &o, &r);
    const Tolerance tol = toleranceFor(k.t, 4096);
    const auto po = packed(o, k.t, k.rows, k.cols, k.ld), pr = packed(r, k.t, k.rows, k.cols, k.ld);
    const VerifyResult host = compareHostTrusted(po.data(), pr.data(), k.t, k.rows * k.cols, tol);
    if (k.specials) {
      EXPECT_GT(host.mismatches, 0) << what;
      EXPECT_GT(host.nans, 0) << what;
    } else {
      EXPECT_TRUE(host.ok) << what << ": " << host.summary();
      EXPECT_GT(host.max_abs_error, 0) << what;
    }
    expectSame(emulateGrid(o, r, k.t, k.rows, k.cols, k.ld, tol, k.blocks, k.threads), host, what);
  }
}

TEST(DeviceCompareRule, StorageValuesAreTheHostsForEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto u = static_cast<uint16_t>(h);
    const float hv = verify_rule::halfValue(u), want_h = halfToFloat(u);
    const float bv = verify_rule::bf16Value(u), want_b = bf16ToFloat(u);
    if (std::isnan(want_h)) {
      EXPECT_TRUE(std::isnan(hv)) << h;
      EXPECT_EQ(std::signbit(hv), std::signbit(want_h)) << h;
    } else {
      uint32_t a, b;
      std::memcpy(&a, &hv, 4);
      std::memcpy(&b, &want_h, 4);
      ASSERT_EQ(a, b) << "fp16 pattern " << h;
    }
    if (std::isnan(want_b)) {
      EXPECT_TRUE(std::isnan(bv)) << h;
    } else {
      ASSERT_EQ(bv, want_b) << "bf16 pattern " << h;
      ASSERT_EQ(std::signbit(bv), std::signbit(want_b)) << h;
    }
  }
}

TEST(DeviceCompare, KernelCompilesForHopperWithoutAFusedMultiplyAdd) {
  auto c = openNvrtcCompiler();
  if (!c.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << c.status().message());
  CompileRequest r;
  r.source = deviceCompareSource();
  r.source_name = "verify_compare.cu";
  r.entry = "ktune_verify_compare";
  r.defines = {{"THREADS", "256"}, {"KTUNE_VERIFY_DEVICE", "1"}};
  r.arch = "sm_90a";
  r.dumps = kDumpPtx;
  auto co = (*c)->compile(r);
  ASSERT_TRUE(co.ok()) << co.status().toString();
  const std::string& ptx = co->dumps["ptx"];
  EXPECT_NE(ptx.find("mul.rn.f64"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("add.rn.f64"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("fma.rn.f64"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("div.rn.f64"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("atom.global.min.u64"), std::string::npos) << ptx;
}

TEST(DeviceCompare, TheSimulatedBackendComparesOnTheHost) {
  SimBackend sim;
  DeviceInfo dev;
  dev.arch = "sm_90a";
  dev.multiprocessors = 132;
  auto c = openNvrtcCompiler();
  if (!c.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << c.status().message());
  std::vector<unsigned char> o, r;
  constexpr int64_t kN = 70000;
  plantedCompareCase(DType::kBF16, kN, 5, true, &o, &r);
  auto po = sim.alloc(o.size()), pr = sim.alloc(r.size());
  ASSERT_TRUE(po.ok() && pr.ok());
  std::memcpy(sim.hostPtr(*po), o.data(), o.size());
  std::memcpy(sim.hostPtr(*pr), r.data(), r.size());
  const Tolerance tol = toleranceFor(DType::kBF16, 4096);
  enableDeviceCompare(sim, **c, nullptr, dev);
  awaitDeviceCompare();
  EXPECT_FALSE(deviceCompareReady());  // not an NVIDIA device: no kernel, no compile
  Expected<VerifyResult> dv = Status::Internal("unset");
  EXPECT_FALSE(deviceCompareToTrusted(sim, *po, *pr, DType::kBF16, 1, kN, kN, tol, &dv));
  auto v = compareDeviceToTrusted(sim, *po, *pr, DType::kBF16, kN, tol);
  ASSERT_TRUE(v.ok());
  expectSame(*v, compareHostTrusted(o.data(), r.data(), DType::kBF16, kN, tol), "sim");
  EXPECT_FALSE(deviceCompareChecked());
  disableDeviceCompare();
}

}  // namespace
}  // namespace ktune
