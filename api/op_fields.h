// The row-wise ops' parameters pass through three structs that name their fields alike: the C
// API's ktune_*_params, the C++ API's ktune::ops::*Params and the engine's *Args. The fields they
// share are listed here once, for the copies in c_api_ops.cc and ops.cc (dtype is converted on
// its own). Internal to api/.
#pragma once

#define KTUNE_RMSNORM_FIELDS(X) \
  X(rows) X(cols) X(y) X(x) X(weight) X(residual) X(residual_out) X(x_stride) X(y_stride) X(eps)
#define KTUNE_SILU_MUL_FIELDS(X) X(rows) X(d) X(out) X(x) X(x_stride) X(out_stride)

// For a field list: `to.f = from.f;` for each field f.
#define KTUNE_COPY_FIELD(f) to.f = from.f;
