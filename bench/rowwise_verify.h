// Verification of the row-wise kernels that rowwise_bench times, on the timed shape and buffers:
// the output is poisoned with NaN, the kernel runs once, and sampled rows (verifier's
// sampleRows: first/last rows and a prime-step spread) are compared with the float64 reference
// computed on those rows alone (the kernels are row-independent), so no full host copy of a
// 16384-row problem is needed. Returns "ok <summary>" or "FAIL <summary>".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autotune/verifier.h"
#include "base/dtype.h"
#include "runtime/backend.h"
#include "templates/rowwise.h"

namespace ktune::bench {

// n bf16 values at p, as doubles.
inline Expected<std::vector<double>> readBf16(Backend& be, DevicePtr p, int64_t n) {
  std::vector<uint16_t> h(static_cast<size_t>(n));
  KTUNE_RETURN_IF_ERROR(be.copyToHost(h.data(), p, h.size() * 2));
  std::vector<double> out(h.size());
  for (size_t i = 0; i < h.size(); ++i) out[i] = bf16ToFloat(h[i]);
  return out;
}

// Checks `rows` of an output [*, cols] at `out` against ref_of(row) (the row's reference values).
inline std::string checkRows(Backend& be, DevicePtr out, int64_t rows, int64_t cols,
                             const std::function<Expected<std::vector<double>>(int64_t)>& ref_of) {
  const Tolerance tol = toleranceFor(DType::kBF16, cols);
  int64_t checked = 0, bad = 0;
  std::string first;
  for (int64_t row : sampleRows(rows)) {
    auto ref = ref_of(row);
    std::vector<uint16_t> got(static_cast<size_t>(cols));
    Status s = ref.ok() ? be.copyToHost(got.data(), out + DevicePtr(row * cols * 2), got.size() * 2)
                        : ref.status();
    if (!s.ok()) return "FAIL " + s.toString();
    const VerifyResult v = compareHost(got.data(), DType::kBF16, ref->data(), cols, tol);
    checked += v.checked;
    if (!v.ok && bad++ == 0) first = "row " + std::to_string(row) + ": " + v.summary();
  }
  return (bad ? "FAIL " + std::to_string(bad) + " rows bad, " + first
              : "ok " + std::to_string(checked) + " values in sampled rows");
}

inline std::string verifyRmsNorm(Backend& be, const rowwise::RmsNormProblem& p, DevicePtr x,
                                 DevicePtr w, DevicePtr r, DevicePtr y,
                                 const std::function<Status()>& launch) {
  Status s = poisonNaN(be, y, DType::kBF16, p.rows * p.cols);
  if (s.ok()) s = launch();
  if (s.ok()) s = be.synchronize();
  if (!s.ok()) return "FAIL " + s.toString();
  auto wv = p.has_weight ? readBf16(be, w, p.cols) : Expected<std::vector<double>>(std::vector<double>());
  if (!wv.ok()) return "FAIL " + wv.status().toString();
  return checkRows(be, y, p.rows, p.cols, [&](int64_t row) -> Expected<std::vector<double>> {
    rowwise::RmsNormProblem one = p;
    one.rows = 1;
    one.x_stride = one.y_stride = one.r_stride = one.ro_stride = 0;
    KTUNE_ASSIGN_OR_RETURN(auto xv, readBf16(be, x + DevicePtr(row * p.cols * 2), p.cols));
    std::vector<double> rv, yv(static_cast<size_t>(p.cols)), ro(static_cast<size_t>(p.cols));
    if (p.has_residual) {
      KTUNE_ASSIGN_OR_RETURN(rv, readBf16(be, r + DevicePtr(row * p.cols * 2), p.cols));
    }
    rowwise::rmsNormReference(one, xv.data(), p.has_weight ? wv->data() : nullptr,
                              p.has_residual ? rv.data() : nullptr, yv.data(), ro.data());
    return yv;
  });
}

inline std::string verifySiluMul(Backend& be, const rowwise::SiluMulProblem& p, DevicePtr x,
                                 DevicePtr out, const std::function<Status()>& launch) {
  Status s = poisonNaN(be, out, DType::kBF16, p.rows * p.d);
  if (s.ok()) s = launch();
  if (s.ok()) s = be.synchronize();
  if (!s.ok()) return "FAIL " + s.toString();
  return checkRows(be, out, p.rows, p.d, [&](int64_t row) -> Expected<std::vector<double>> {
    rowwise::SiluMulProblem one = p;
    one.rows = 1;
    one.x_stride = one.out_stride = 0;
    KTUNE_ASSIGN_OR_RETURN(auto xv, readBf16(be, x + DevicePtr(row * 2 * p.d * 2), 2 * p.d));
    std::vector<double> o(static_cast<size_t>(p.d));
    rowwise::siluMulReference(one, xv.data(), o.data());
    return o;
  });
}

}  // namespace ktune::bench
