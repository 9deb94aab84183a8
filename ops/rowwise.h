// ktune tuned row-wise ops: RMSNorm (optionally with vLLM's fused residual add) and SiLU·Mul, as
// kernel families on a Engine (templates/rowwise.h kernels).
//
//   ktune::RmsNormArgs a;
//   a.dtype = DType::kBF16; a.rows = 4096; a.cols = 4096; a.x = x; a.y = y; a.weight = w;
//   KTUNE_RETURN_IF_ERROR(ktune::rmsnorm(*tuner, a, stream));   // tunes on the first call per key
//
// Families are registered on a Engine on first use, one per dtype: "rmsnorm_bf16", "rmsnorm_f16",
// "rmsnorm_f32", "silu_mul_bf16", ... Key: exact cols (or d), rows bucketed (powers of two up to
// 4096, then multiples of 4096), weight/residual flags and the common byte alignment of the
// pointers and row strides (it decides the vector width). While tuning, every candidate is
// verified against the float64 reference on up to 64 sampled rows; outputs are poisoned with NaN
// before each tuning run, and in-place inputs (residual_out == residual, y == x) are restored from
// a device backup, so an in-place call is applied exactly once.
// Inputs are validated on every call (null or misaligned pointers, sizes <= 0, strides shorter
// than a row, unsupported or mismatched dtypes) and rejected with kInvalidArgument /
// kUnsupported before anything is launched.
// RowwiseOps is the op object (as GemmOp): created on a Engine, it registers the six families and
// runs, tunes and looks up calls. The free functions below do the same through the families
// registered on the Engine they are given (registering them on first use); the Engine owns them.
// Thread safety: the functions may be called from any thread; calls on one Engine share its
// families. A Engine must outlive its calls and its RowwiseOps.
#pragma once

#include <cstdint>
#include <memory>

#include "autotune/autotuner.h"
#include "base/dtype.h"
#include "runtime/backend.h"
#include "templates/rowwise.h"

namespace ktune {

struct RmsNormArgs {
  DType dtype = DType::kBF16;  // kF32, kF16 or kBF16
  int64_t rows = 0, cols = 0;
  DevicePtr y = 0;  // output [rows, cols]; may equal x
  DevicePtr x = 0;  // input [rows, cols]
  DevicePtr weight = 0;  // [cols], or 0 for no weight
  DType weight_dtype = DType::kBF16;  // must equal dtype when weight is set
  // Fused residual add (vLLM fused_add_rms_norm): s = x + residual is written to residual_out
  // (may equal residual) and normalised. Both 0 for a plain RMSNorm.
  DevicePtr residual = 0, residual_out = 0;
  // Row strides in elements; 0 = contiguous (cols).
  int64_t x_stride = 0, y_stride = 0, residual_stride = 0, residual_out_stride = 0;
  float eps = 1e-6f;
};

struct SiluMulArgs {
  DType dtype = DType::kBF16;
  int64_t rows = 0, d = 0;
  DevicePtr out = 0;  // [rows, d]
  DevicePtr x = 0;    // [rows, 2d]: gate = x[:, :d], up = x[:, d:]
  int64_t x_stride = 0, out_stride = 0;  // elements; 0 = contiguous (2d / d)
};

// The row-wise ops of one Engine (which must outlive the object). Every method validates the args
// first (kInvalidArgument / kUnsupported naming the bad field) and runs on `stream`; tuning on
// first use per key when the Engine's options allow it, else the default config.
class RowwiseOps {
 public:
  // Registers rmsnorm_* and silu_mul_* for f32/f16/bf16 on `tuner` (or takes the ones already
  // registered there). Errors: the Engine's, e.g. a family name taken by another problem type.
  static Expected<std::unique_ptr<RowwiseOps>> create(Engine& tuner);
  Status rmsnorm(const RmsNormArgs& a, StreamHandle stream = {}) const;
  Status siluMul(const SiluMulArgs& a, StreamHandle stream = {}) const;
  // Forces a tuning run for the args' key (outputs are overwritten) and returns the report.
  Expected<TuneReport> tune(const RmsNormArgs& a, StreamHandle stream = {}) const;
  Expected<TuneReport> tune(const SiluMulArgs& a, StreamHandle stream = {}) const;
  // Which config would run, without compiling, tuning or launching.
  Expected<KeyReport> lookup(const RmsNormArgs& a) const;
  Expected<KeyReport> lookup(const SiluMulArgs& a) const;

 private:
  RowwiseOps() = default;
  Expected<Family<RmsNormArgs>> rmsFamily(const RmsNormArgs& a) const;
  Expected<Family<SiluMulArgs>> siluFamily(const SiluMulArgs& a) const;
  Family<RmsNormArgs> rms_[3];  // by templates/rowwise.h RowDType
  Family<SiluMulArgs> silu_[3];
};

// OK, or kInvalidArgument / kUnsupported naming the bad field and what to do.
Status validate(const RmsNormArgs& a);
Status validate(const SiluMulArgs& a);
// The template-level problem (dtype, sizes, strides, byte misalignments) of validated args.
rowwise::RmsNormProblem toProblem(const RmsNormArgs& a);
rowwise::SiluMulProblem toProblem(const SiluMulArgs& a);

// Runs the op on `stream`: validate, then the tuned config for the key (tuning on first use
// when the Engine's options allow it, else the default config). Errors: validation, or the
// Engine's Status when no candidate can run.
Status rmsnorm(Engine& tuner, const RmsNormArgs& a, StreamHandle stream = {});
Status siluMul(Engine& tuner, const SiluMulArgs& a, StreamHandle stream = {});

// Forces a tuning run for the args' key (on the caller's buffers; outputs are overwritten) and
// returns the report with every candidate.
Expected<TuneReport> tuneRmsnorm(Engine& tuner, const RmsNormArgs& a, StreamHandle stream = {});
Expected<TuneReport> tuneSiluMul(Engine& tuner, const SiluMulArgs& a, StreamHandle stream = {});
// Registers every row-wise family (rmsnorm_* and silu_mul_* for f32/f16/bf16) on `tuner` now,
// instead of on first use — needed before Engine::tuneFromFile can match recorded keys to them.
Status registerRowwiseOps(Engine& tuner);
// Which config would run, without compiling, tuning or launching.
Expected<KeyReport> lookupRmsnorm(Engine& tuner, const RmsNormArgs& a);
Expected<KeyReport> lookupSiluMul(Engine& tuner, const SiluMulArgs& a);

}  // namespace ktune
