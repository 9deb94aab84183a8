// ktune::ops — the public tuned ops over ops/ (row-wise families and the GEMM op).
#include "ktune/ops.hpp"

#include "api/internal.h"
#include "api/op_fields.h"
#include "base/dtype.h"
#include "ops/rowwise.h"

namespace ktune::ops {
namespace {

::ktune::DType engineDType(DType t) {
  switch (t) {
    case DType::kF32: return ::ktune::DType::kF32;
    case DType::kF16: return ::ktune::DType::kF16;
    case DType::kBF16: return ::ktune::DType::kBF16;
    case DType::kF8E4M3: return ::ktune::DType::kF8E4M3;
    case DType::kF8E5M2: return ::ktune::DType::kF8E5M2;
  }
  return ::ktune::DType::kF64;  // rejected by the op's validation
}

Expected<gemm::ElemType> gemmElem(DType t) {
  switch (t) {
    case DType::kF32: return gemm::ElemType::kF32;
    case DType::kF16: return gemm::ElemType::kF16;
    case DType::kBF16: return gemm::ElemType::kBF16;
    case DType::kF8E4M3: return gemm::ElemType::kF8E4M3;
    case DType::kF8E5M2: return gemm::ElemType::kF8E5M2;
  }
  return Status::InvalidArgument("gemm: unknown dtype " + std::to_string(static_cast<int>(t)));
}

Status needsGpu(Autotuner& t, const char* op) {
  if (t.impl().sim)
    return Status::Unsupported(std::string(op) +
                               ": the tuned ops run ktune's GPU kernels; the simulated backend "
                               "has none (use a cuda or hip tuner)");
  return Status::Ok();
}

RmsNormArgs toArgs(const RmsNormParams& from) {
  RmsNormArgs to;
  to.dtype = engineDType(from.dtype);
  to.weight_dtype = to.dtype;
  KTUNE_RMSNORM_FIELDS(KTUNE_COPY_FIELD)
  return to;
}

SiluMulArgs toArgs(const SiluMulParams& from) {
  SiluMulArgs to;
  to.dtype = engineDType(from.dtype);
  KTUNE_SILU_MUL_FIELDS(KTUNE_COPY_FIELD)
  return to;
}

Expected<GemmCall> toCall(const GemmParams& p) {
  KTUNE_ASSIGN_OR_RETURN(gemm::Layout layout, gemm::parseLayout(p.layout));
  KTUNE_ASSIGN_OR_RETURN(gemm::ElemType ab, gemmElem(p.ab));
  KTUNE_ASSIGN_OR_RETURN(gemm::ElemType c, gemmElem(p.c));
  KTUNE_ASSIGN_OR_RETURN(gemm::Activation act, gemm::parseActivation(p.activation));
  GemmCall call;
  call.shape = gemm::denseShape(layout, ab, c, p.m, p.n, p.k);
  if (p.lda) call.shape.lda = p.lda;
  if (p.ldb) call.shape.ldb = p.ldb;
  call.shape.act = act;
  call.shape.ldc = p.ldc ? p.ldc : gemm::outCols(call.shape);  // silu_mul: N/2 columns
  call.shape.alpha = p.alpha;
  call.shape.beta = p.beta;
  call.shape.has_bias = p.bias != 0;
  call.buf = GemmBuffers{p.a, p.b, p.out, p.bias, p.scale_a, p.scale_b};
  return call;
}

// The tuner's GEMM op, created on first use.
Expected<GemmOp*> gemmOp(Autotuner& t) {
  KTUNE_RETURN_IF_ERROR(needsGpu(t, "gemm"));
  Autotuner::Impl& impl = t.impl();
  std::lock_guard<std::mutex> l(impl.mu);
  if (!impl.gemm) {
    KTUNE_ASSIGN_OR_RETURN(impl.gemm, GemmOp::create(*impl.tuner));
  }
  return impl.gemm.get();
}

}  // namespace

Status rmsnorm(Autotuner& t, const RmsNormParams& p, StreamHandle s) {
  KTUNE_RETURN_IF_ERROR(needsGpu(t, "rmsnorm"));
  return ::ktune::rmsnorm(*t.impl().tuner, toArgs(p), s);
}

Status siluMul(Autotuner& t, const SiluMulParams& p, StreamHandle s) {
  KTUNE_RETURN_IF_ERROR(needsGpu(t, "silu_mul"));
  return ::ktune::siluMul(*t.impl().tuner, toArgs(p), s);
}

Status gemm(Autotuner& t, const GemmParams& p, StreamHandle s) {
  KTUNE_ASSIGN_OR_RETURN(GemmOp * op, gemmOp(t));
  KTUNE_ASSIGN_OR_RETURN(GemmCall call, toCall(p));
  return (*op)(call, s);
}

Expected<KeyReport> lookupRmsnorm(Autotuner& t, const RmsNormParams& p) {
  KTUNE_RETURN_IF_ERROR(needsGpu(t, "rmsnorm"));
  return ::ktune::lookupRmsnorm(*t.impl().tuner, toArgs(p));
}

Expected<KeyReport> lookupSiluMul(Autotuner& t, const SiluMulParams& p) {
  KTUNE_RETURN_IF_ERROR(needsGpu(t, "silu_mul"));
  return ::ktune::lookupSiluMul(*t.impl().tuner, toArgs(p));
}

Expected<KeyReport> lookupGemm(Autotuner& t, const GemmParams& p) {
  KTUNE_ASSIGN_OR_RETURN(GemmOp * op, gemmOp(t));
  KTUNE_ASSIGN_OR_RETURN(GemmCall call, toCall(p));
  return op->lookup(call);
}

}  // namespace ktune::ops
