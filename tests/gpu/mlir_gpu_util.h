// What the GPU tests of MLIR-written kernels share: MLIR's memref calling convention and the
// bf16 comparison with the float64 references of the C++ templates.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/backend.h"

namespace ktune::mlirgpu {

// A 1-D memref argument: base, aligned, offset, size, stride.
inline void addMemref(KernelArgs& a, DevicePtr p, int64_t n) {
  a.add(p).add(p).add(int64_t(0)).add(n).add(int64_t(1));
}

// Elements off the reference by more than bf16 rounding (2^-8, relative) plus an absolute floor
// for values near zero; NaN (unwritten, poisoned) counts.
inline int countBad(const std::vector<double>& got, const std::vector<double>& want) {
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1.6e-2 * std::fabs(want[i]) + 1e-3)) ++bad;
  return bad;
}

}  // namespace ktune::mlirgpu
