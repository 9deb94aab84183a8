// ktune — the tuned ops: RMSNorm (optionally with a fused residual add), SiLU·Mul and GEMM, on
// ktune's own kernel templates. Each call validates its arguments (kInvalidArgument /
// kUnsupported naming the field), then runs the tuned config for its key, tuning on the first
// call per key. The ops run on GPU backends; on the simulated backend they return kUnsupported.
// Thread safety: calls may come from any thread; an op's families live on its Autotuner.
#pragma once

#include <cstdint>
#include <string>

#include "ktune/export.h"
#include "ktune/report.hpp"
#include "ktune/status.hpp"
#include "ktune/types.hpp"

namespace ktune {

class Autotuner;

namespace ops {

// Element types. The numbering is the C API's (KTUNE_DTYPE_*). kF8E4M3 / kF8E5M2: GEMM inputs only.
enum class DType : int32_t { kF32 = 0, kF16 = 1, kBF16 = 2, kF8E4M3 = 3, kF8E5M2 = 4 };

// y = x / rms(x) * weight over rows of `cols` elements. With residual set: s = x + residual is
// written to residual_out (may equal residual) and normalised (vLLM's fused_add_rms_norm).
struct RmsNormParams {
  DType dtype = DType::kBF16;  // of x, y, weight, residual
  int64_t rows = 0, cols = 0;
  DevicePtr y = 0, x = 0;      // y may equal x
  DevicePtr weight = 0;        // [cols] or 0 for none
  DevicePtr residual = 0, residual_out = 0;  // both 0 for a plain RMSNorm
  int64_t x_stride = 0, y_stride = 0;        // row strides in elements; 0 = cols
  float eps = 1e-6f;
};

// out = silu(x[:, :d]) * x[:, d:] over `rows` rows.
struct SiluMulParams {
  DType dtype = DType::kBF16;
  int64_t rows = 0, d = 0;
  DevicePtr out = 0, x = 0;
  int64_t x_stride = 0, out_stride = 0;  // elements; 0 = contiguous (2d / d)
};

// C = act(alpha * op(A) * op(B) + beta * C + bias), row-major; the layout's letters say whether
// A and B are stored transposed ("NT": B is N x K).
struct GemmParams {
  std::string layout = "NN";         // NN, NT, TN, TT
  DType ab = DType::kBF16;           // A and B: kF16, kBF16, kF8E4M3 or kF8E5M2 (layout NT)
  DType c = DType::kBF16;            // C and bias
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;  // 0 = dense for the layout
  float alpha = 1.0f, beta = 0.0f;
  std::string activation = "none";    // none, silu, gelu, silu_mul (gate/up pair: C has N/2 cols)
  DevicePtr a = 0, b = 0, out = 0, bias = 0;  // bias 0 = none
  // FP8 per-tensor dequantisation scales: one device float each (0 = 1.0), applied in the
  // epilogue: C = act(alpha * scale_a * scale_b * op(A) * op(B) + beta * C + bias).
  DevicePtr scale_a = 0, scale_b = 0;
};

KTUNE_API Status rmsnorm(Autotuner& tuner, const RmsNormParams& p, StreamHandle stream = {});
KTUNE_API Status siluMul(Autotuner& tuner, const SiluMulParams& p, StreamHandle stream = {});
KTUNE_API Status gemm(Autotuner& tuner, const GemmParams& p, StreamHandle stream = {});

// The family and key a call would use, for Autotuner::report().
KTUNE_API Expected<KeyReport> lookupRmsnorm(Autotuner& tuner, const RmsNormParams& p);
KTUNE_API Expected<KeyReport> lookupSiluMul(Autotuner& tuner, const SiluMulParams& p);
KTUNE_API Expected<KeyReport> lookupGemm(Autotuner& tuner, const GemmParams& p);

}  // namespace ops
}  // namespace ktune
