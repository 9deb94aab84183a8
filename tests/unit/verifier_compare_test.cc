// compareHostTrusted (the typed comparison the GEMM checks read back through) gives exactly what
// compareHost gives with the trusted values as doubles: counts, maxima, the first mismatch, for
// every element type, special values included, and for large arrays compared in pieces. The
// sampled-row check gathers runs of consecutive rows in one copy and uses a caller's staging buffer.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "autotune/verifier.h"
#include "base/dtype.h"
#include "runtime/sim/sim_backend.h"
#include "tests/support/verify_expect.h"

namespace ktune {
namespace {

std::vector<unsigned char> encode(const std::vector<double>& v, DType t) {
  std::vector<unsigned char> out(v.size() * sizeOf(t));
  for (size_t i = 0; i < v.size(); ++i) storeFromDouble(out.data(), t, int64_t(i), v[i]);
  return out;
}

void expectSame(const VerifyResult& a, const VerifyResult& b, const std::string& what) {
  testsupport::expectSameVerifyResult(a, b, what);
}

// The reference path: the trusted values converted to doubles, then compareHost.
VerifyResult viaDoubles(const std::vector<unsigned char>& out, const std::vector<unsigned char>& ref,
                        DType t, int64_t n, Tolerance tol) {
  std::vector<double> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[size_t(i)] = loadAsDouble(ref.data(), t, i);
  return compareHost(out.data(), t, r.data(), n, tol);
}

// n values near `scale` with small errors in `out`, a few large ones, and special values in both.
void makeCase(int64_t n, double scale, uint32_t seed, std::vector<double>* out,
              std::vector<double>* ref) {
  std::mt19937 g(seed);
  std::normal_distribution<double> d(0, scale);
  std::uniform_real_distribution<double> u(0, 1);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  out->resize(size_t(n));
  ref->resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    const double e = d(g);
    double o = e * (1 + 1e-3 * (u(g) - 0.5));
    const double x = u(g);
    if (x < 0.002) o = e * 1.5 + 1;             // a mismatch
    else if (x < 0.003) o = nan;                // NaN where the reference is finite
    else if (x < 0.004) o = -inf;
    (*out)[size_t(i)] = o;
    (*ref)[size_t(i)] = e;
  }
  if (n > 10) {
    (*ref)[3] = nan, (*out)[3] = nan;     // both NaN: fine
    (*ref)[4] = nan, (*out)[4] = 1;       // a value where NaN was expected
    (*ref)[5] = inf, (*out)[5] = inf;     // equal infinities
    (*ref)[6] = -inf, (*out)[6] = inf;    // opposite ones
    (*ref)[7] = 0, (*out)[7] = 0;
    (*ref)[8] = 1e-30, (*out)[8] = 2e-30; // below atol: no relative error recorded
  }
}

TEST(CompareHostTrusted, SameResultAsTheDoublePathForEveryType) {
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kTF32, DType::kI32,
                  DType::kI8, DType::kU8, DType::kF8E4M3, DType::kF8E5M2}) {
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(37), int64_t(5000)}) {
      std::vector<double> o, r;
      makeCase(n, isFloating(t) ? 3.0 : 20.0, uint32_t(n + 7), &o, &r);
      const auto eo = encode(o, t), er = encode(r, t);
      const Tolerance tol = toleranceFor(t, 256);
      expectSame(compareHostTrusted(eo.data(), er.data(), t, n, tol),
                 viaDoubles(eo, er, t, n, tol), std::string(dtypeName(t)) + " n=" +
                                                    std::to_string(n));
    }
  }
}

TEST(CompareHostTrusted, AllRightOutputsPass) {
  std::vector<double> v(4096);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i)) * 100;
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    const auto e = encode(v, t);
    const VerifyResult r = compareHostTrusted(e.data(), e.data(), t, int64_t(v.size()),
                                              toleranceFor(t, 64));
    EXPECT_TRUE(r.ok) << dtypeName(t);
    EXPECT_EQ(r.max_abs_error, 0) << dtypeName(t);
  }
}

// Large arrays are compared in pieces (on threads where the machine has them): the merged result
// is the single pass's, also when the only mismatches lie in a later piece.
TEST(CompareHostTrusted, PiecesMergeToTheSinglePassResult) {
  const int64_t n = (int64_t(1) << 20) + 12345;
  for (DType t : {DType::kBF16, DType::kF32}) {
    std::vector<double> o, r;
    makeCase(n, 10.0, 99, &o, &r);
    auto eo = encode(o, t), er = encode(r, t);
    const Tolerance tol = toleranceFor(t, 4096);
    expectSame(compareHostTrusted(eo.data(), er.data(), t, n, tol), viaDoubles(eo, er, t, n, tol),
               std::string(dtypeName(t)) + " mixed");
    // Only the last quarter is wrong: the first mismatch's index is absolute.
    for (int64_t i = 0; i < n; ++i)
      if (i < n * 3 / 4) o[size_t(i)] = r[size_t(i)];
    eo = encode(o, t);
    const VerifyResult late = compareHostTrusted(eo.data(), er.data(), t, n, tol);
    expectSame(late, viaDoubles(eo, er, t, n, tol), std::string(dtypeName(t)) + " late");
    EXPECT_GE(late.first_bad, n * 3 / 4);
    EXPECT_FALSE(late.ok);
  }
}

// Rows gathered on the simulated device: with and without the caller's staging buffer, rows
// unpadded (runs of consecutive rows coalesced) and padded (row by row), the same result as the
// host comparison of the same rows, a wrong element inside a coalesced run found where it is.
TEST(CompareDeviceRows, CoalescedRunsAndAStagingBufferGiveTheSameResult) {
  SimBackend b;
  const int64_t rows = 300, cols = 40;
  const std::vector<int64_t> pick = {0, 1, 2, 63, 64, 65, 127, 128, 200, 298, 299};
  for (int64_t ld : {cols, cols + 8}) {
    std::vector<double> o(size_t(rows * ld)), r(size_t(rows * ld));
    for (int64_t i = 0; i < rows * ld; ++i) r[size_t(i)] = std::cos(double(i)) * 4, o[size_t(i)] = r[size_t(i)];
    o[size_t(64 * ld + 7)] += 1;  // inside the run 63..65
    o[size_t(299 * ld + 39)] = std::nan("");
    const auto eo = encode(o, DType::kBF16), er = encode(r, DType::kBF16);
    auto po = b.alloc(eo.size()), pr = b.alloc(er.size());
    ASSERT_TRUE(po.ok() && pr.ok());
    ASSERT_TRUE(b.copyToDevice(*po, eo.data(), eo.size()).ok());
    ASSERT_TRUE(b.copyToDevice(*pr, er.data(), er.size()).ok());
    // The host comparison of the picked rows' real columns.
    std::vector<double> ho, hr;
    for (int64_t row : pick)
      for (int64_t c = 0; c < cols; ++c) {
        ho.push_back(loadAsDouble(eo.data(), DType::kBF16, row * ld + c));
        hr.push_back(loadAsDouble(er.data(), DType::kBF16, row * ld + c));
      }
    const Tolerance tol = toleranceFor(DType::kBF16, 64);
    const auto ref = viaDoubles(encode(ho, DType::kBF16), encode(hr, DType::kBF16), DType::kBF16,
                                int64_t(ho.size()), tol);
    ASSERT_FALSE(ref.ok);
    EXPECT_EQ(ref.first_bad, 4 * cols + 7);  // row 64 is the 5th picked
    const size_t need = verifyStageBytes(DType::kBF16, cols, pick.size());
    auto stage = b.alloc(need);
    ASSERT_TRUE(stage.ok());
    for (size_t given : {size_t(0), need, need - 1}) {
      auto v = compareDeviceRowsToTrusted(b, *po, *pr, DType::kBF16, cols, ld, pick, tol,
                                          given ? *stage : 0, given);
      ASSERT_TRUE(v.ok()) << v.status().toString();
      expectSame(*v, ref, "ld " + std::to_string(ld) + " stage " + std::to_string(given));
    }
    (void)b.free(*stage);
    (void)b.free(*po);
    (void)b.free(*pr);
  }
}

}  // namespace
}  // namespace ktune
