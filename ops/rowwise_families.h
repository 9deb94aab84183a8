// Internal to the row-wise ops (ops/rowwise*.cc): the families on a Engine and the
// argument helpers shared by validation (rowwise_op.cc) and the families' hooks (rowwise.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/rowwise.h"

namespace ktune::rowwise_ops {

Expected<rowwise::RowDType> rowType(DType t, const char* op);
int dtypeIndex(rowwise::RowDType t);
// kInvalidArgument unless p is non-null and aligned to its element size.
Status checkPtr(DevicePtr p, size_t esize, const char* op, const char* what);
// Bytes a [rows, cols] view with row stride `stride` (elements) spans.
size_t spanBytes(int64_t rows, int64_t cols, int64_t stride, size_t esize);
bool overlaps(DevicePtr a, size_t an, DevicePtr b, size_t bn);
// The Engine's rmsnorm_<dtype> / silu_mul_<dtype> family, registered on first use.
Expected<Family<RmsNormArgs>> rmsFamilyOf(Engine& t, rowwise::RowDType dt);
Expected<Family<SiluMulArgs>> siluFamilyOf(Engine& t, rowwise::RowDType dt);

}  // namespace ktune::rowwise_ops
