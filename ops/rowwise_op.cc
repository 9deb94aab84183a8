// The row-wise ops' surface: argument validation, the free functions and RowwiseOps, on the
// families of ops/rowwise.cc.
#include <string>

#include "ops/rowwise_families.h"

namespace ktune {

namespace rw = rowwise;
using rowwise_ops::dtypeIndex;
using rowwise_ops::checkPtr;
using rowwise_ops::overlaps;
using rowwise_ops::rowType;
using rowwise_ops::spanBytes;

namespace {

Expected<Family<RmsNormArgs>> rmsFamily(Engine& t, const RmsNormArgs& a) {
  KTUNE_RETURN_IF_ERROR(validate(a));
  KTUNE_ASSIGN_OR_RETURN(auto dt, rowType(a.dtype, "rmsnorm"));
  return rowwise_ops::rmsFamilyOf(t, dt);
}

Expected<Family<SiluMulArgs>> siluFamily(Engine& t, const SiluMulArgs& a) {
  KTUNE_RETURN_IF_ERROR(validate(a));
  KTUNE_ASSIGN_OR_RETURN(auto dt, rowType(a.dtype, "silu_mul"));
  return rowwise_ops::siluFamilyOf(t, dt);
}

}  // namespace


// ---------------------------------------------------------------------------------------------
// Validation and conversion
// ---------------------------------------------------------------------------------------------
Status validate(const RmsNormArgs& a) {
  KTUNE_ASSIGN_OR_RETURN(auto dt, rowType(a.dtype, "rmsnorm"));
  const size_t es = rw::sizeOf(dt);
  KTUNE_RETURN_IF_ERROR(checkPtr(a.x, es, "rmsnorm", "x"));
  KTUNE_RETURN_IF_ERROR(checkPtr(a.y, es, "rmsnorm", "y"));
  if (a.weight) {
    if (a.weight_dtype != a.dtype)
      return Status::InvalidArgument(std::string("rmsnorm: weight dtype ") +
                                     dtypeName(a.weight_dtype) + " differs from x dtype " +
                                     dtypeName(a.dtype) + " (convert the weight once, up front)");
    KTUNE_RETURN_IF_ERROR(checkPtr(a.weight, es, "rmsnorm", "weight"));
  }
  if ((a.residual == 0) != (a.residual_out == 0))
    return Status::InvalidArgument(
        "rmsnorm: residual and residual_out must both be set (fused add; residual_out may equal "
        "residual) or both be 0");
  if (a.residual) {
    KTUNE_RETURN_IF_ERROR(checkPtr(a.residual, es, "rmsnorm", "residual"));
    KTUNE_RETURN_IF_ERROR(checkPtr(a.residual_out, es, "rmsnorm", "residual_out"));
  }
  return rw::validate(toProblem(a));
}

Status validate(const SiluMulArgs& a) {
  KTUNE_ASSIGN_OR_RETURN(auto dt, rowType(a.dtype, "silu_mul"));
  const size_t es = rw::sizeOf(dt);
  KTUNE_RETURN_IF_ERROR(checkPtr(a.x, es, "silu_mul", "x"));
  KTUNE_RETURN_IF_ERROR(checkPtr(a.out, es, "silu_mul", "out"));
  return rw::validate(toProblem(a));
}

namespace {

// The kernel problem P of the args: their dtype (bf16 for one the kernels lack, which validate()
// reports) and rows; the caller copies the op's own fields.
template <class P, class A>
P problemOf(const A& a, const char* op) {
  P p;
  auto dt = rowType(a.dtype, op);
  p.dtype = dt.ok() ? *dt : rw::RowDType::kBF16;
  p.rows = a.rows;
  return p;
}

}  // namespace

rw::RmsNormProblem toProblem(const RmsNormArgs& a) {
  auto p = problemOf<rw::RmsNormProblem>(a, "rmsnorm");
  p.cols = a.cols;
  p.x_stride = a.x_stride;
  p.y_stride = a.y_stride;
  p.r_stride = a.residual_stride;
  p.ro_stride = a.residual_out_stride;
  p.has_weight = a.weight != 0;
  p.has_residual = a.residual != 0;
  p.eps = a.eps;
  p.x_misalign = int(a.x % 16);
  p.y_misalign = int(a.y % 16);
  p.w_misalign = int(a.weight % 16);
  p.r_misalign = int(a.residual % 16);
  p.ro_misalign = int(a.residual_out % 16);
  return p;
}

rw::SiluMulProblem toProblem(const SiluMulArgs& a) {
  auto p = problemOf<rw::SiluMulProblem>(a, "silu_mul");
  p.d = a.d;
  p.x_stride = a.x_stride;
  p.out_stride = a.out_stride;
  p.x_misalign = int(a.x % 16);
  p.out_misalign = int(a.out % 16);
  return p;
}

// ---------------------------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------------------------
Status rmsnorm(Engine& tuner, const RmsNormArgs& a, StreamHandle stream) {
  KTUNE_ASSIGN_OR_RETURN(auto f, rmsFamily(tuner, a));
  return f(a, stream);
}

Status siluMul(Engine& tuner, const SiluMulArgs& a, StreamHandle stream) {
  KTUNE_ASSIGN_OR_RETURN(auto f, siluFamily(tuner, a));
  return f(a, stream);
}

Expected<TuneReport> tuneRmsnorm(Engine& tuner, const RmsNormArgs& a, StreamHandle stream) {
  KTUNE_ASSIGN_OR_RETURN(auto f, rmsFamily(tuner, a));
  return f.tune(a, stream);
}

Expected<TuneReport> tuneSiluMul(Engine& tuner, const SiluMulArgs& a, StreamHandle stream) {
  KTUNE_ASSIGN_OR_RETURN(auto f, siluFamily(tuner, a));
  return f.tune(a, stream);
}

Expected<KeyReport> lookupRmsnorm(Engine& tuner, const RmsNormArgs& a) {
  KTUNE_ASSIGN_OR_RETURN(auto f, rmsFamily(tuner, a));
  return f.lookup(a);
}

Expected<KeyReport> lookupSiluMul(Engine& tuner, const SiluMulArgs& a) {
  KTUNE_ASSIGN_OR_RETURN(auto f, siluFamily(tuner, a));
  return f.lookup(a);
}

Status registerRowwiseOps(Engine& tuner) { return RowwiseOps::create(tuner).status(); }

// ---------------------------------------------------------------------------------------------
// The op object
// ---------------------------------------------------------------------------------------------
Expected<std::unique_ptr<RowwiseOps>> RowwiseOps::create(Engine& tuner) {
  std::unique_ptr<RowwiseOps> ops(new RowwiseOps());
  for (auto dt : {rw::RowDType::kF32, rw::RowDType::kF16, rw::RowDType::kBF16}) {
    const int i = dtypeIndex(dt);
    KTUNE_ASSIGN_OR_RETURN(ops->rms_[i], rowwise_ops::rmsFamilyOf(tuner, dt));
    KTUNE_ASSIGN_OR_RETURN(ops->silu_[i], rowwise_ops::siluFamilyOf(tuner, dt));
  }
  return ops;
}

Expected<Family<RmsNormArgs>> RowwiseOps::rmsFamily(const RmsNormArgs& a) const {
  KTUNE_RETURN_IF_ERROR(validate(a));
  KTUNE_ASSIGN_OR_RETURN(auto dt, rowType(a.dtype, "rmsnorm"));
  return rms_[dtypeIndex(dt)];
}

Expected<Family<SiluMulArgs>> RowwiseOps::siluFamily(const SiluMulArgs& a) const {
  KTUNE_RETURN_IF_ERROR(validate(a));
  KTUNE_ASSIGN_OR_RETURN(auto dt, rowType(a.dtype, "silu_mul"));
  return silu_[dtypeIndex(dt)];
}

Status RowwiseOps::rmsnorm(const RmsNormArgs& a, StreamHandle stream) const {
  KTUNE_ASSIGN_OR_RETURN(auto f, rmsFamily(a));
  return f(a, stream);
}

Status RowwiseOps::siluMul(const SiluMulArgs& a, StreamHandle stream) const {
  KTUNE_ASSIGN_OR_RETURN(auto f, siluFamily(a));
  return f(a, stream);
}

Expected<TuneReport> RowwiseOps::tune(const RmsNormArgs& a, StreamHandle stream) const {
  KTUNE_ASSIGN_OR_RETURN(auto f, rmsFamily(a));
  return f.tune(a, stream);
}

Expected<TuneReport> RowwiseOps::tune(const SiluMulArgs& a, StreamHandle stream) const {
  KTUNE_ASSIGN_OR_RETURN(auto f, siluFamily(a));
  return f.tune(a, stream);
}

Expected<KeyReport> RowwiseOps::lookup(const RmsNormArgs& a) const {
  KTUNE_ASSIGN_OR_RETURN(auto f, rmsFamily(a));
  return f.lookup(a);
}

Expected<KeyReport> RowwiseOps::lookup(const SiluMulArgs& a) const {
  KTUNE_ASSIGN_OR_RETURN(auto f, siluFamily(a));
  return f.lookup(a);
}

}  // namespace ktune
