// ktune._ktune: the tuned ops (include/ktune/ops.hpp) on raw device addresses. python/ktune/ops.py
// checks the tensors (shapes, strides, dtypes, devices) and passes addresses, sizes and the
// current stream here.
#include <pybind11/stl.h>

#include <cstdint>
#include <string>

#include "common.h"

namespace ktune::py_ext {
namespace {

ops::DType dtypeOf(int code) {
  if (code < 0 || code > 4) check(Status::InvalidArgument("dtype code " + std::to_string(code)));
  return static_cast<ops::DType>(code);
}

template <typename P, typename Op>
void run(PyAutotuner& t, const P& p, uintptr_t stream, Op op) {
  Status st;
  {
    py::gil_scoped_release nogil;
    st = op(*t.t, p, streamOf(stream));
  }
  check(st);
}

ops::RmsNormParams rmsnormParams(int dtype, int64_t rows, int64_t cols, uint64_t y, uint64_t x,
                                 uint64_t weight, uint64_t residual, uint64_t residual_out,
                                 int64_t x_stride, int64_t y_stride, float eps) {
  ops::RmsNormParams p;
  p.dtype = dtypeOf(dtype);
  p.rows = rows; p.cols = cols; p.y = y; p.x = x; p.weight = weight;
  p.residual = residual; p.residual_out = residual_out;
  p.x_stride = x_stride; p.y_stride = y_stride; p.eps = eps;
  return p;
}

ops::SiluMulParams siluParams(int dtype, int64_t rows, int64_t d, uint64_t out, uint64_t x,
                              int64_t x_stride, int64_t out_stride) {
  ops::SiluMulParams p;
  p.dtype = dtypeOf(dtype);
  p.rows = rows; p.d = d; p.out = out; p.x = x; p.x_stride = x_stride; p.out_stride = out_stride;
  return p;
}

// gemm's parameters as a dict with GemmParams' field names (a call site is then readable).
ops::GemmParams gemmParams(const py::dict& d) {
  ops::GemmParams p;
  p.layout = d["layout"].cast<std::string>();
  p.ab = dtypeOf(d["ab"].cast<int>());
  p.c = dtypeOf(d["c"].cast<int>());
  p.m = d["m"].cast<int64_t>(); p.n = d["n"].cast<int64_t>(); p.k = d["k"].cast<int64_t>();
  p.lda = d["lda"].cast<int64_t>(); p.ldb = d["ldb"].cast<int64_t>();
  p.ldc = d["ldc"].cast<int64_t>();
  p.alpha = d["alpha"].cast<float>(); p.beta = d["beta"].cast<float>();
  p.activation = d["activation"].cast<std::string>();
  p.a = d["a"].cast<uint64_t>(); p.b = d["b"].cast<uint64_t>();
  p.out = d["out"].cast<uint64_t>(); p.bias = d["bias"].cast<uint64_t>();
  if (d.contains("scale_a")) p.scale_a = d["scale_a"].cast<uint64_t>();  // fp8 scales (0: 1.0)
  if (d.contains("scale_b")) p.scale_b = d["scale_b"].cast<uint64_t>();
  return p;
}

}  // namespace

void bindOps(py::module_& m) {
  m.def("rmsnorm", [](PyAutotuner& t, int dtype, int64_t rows, int64_t cols, uint64_t y, uint64_t x,
                      uint64_t w, uint64_t res, uint64_t res_out, int64_t xs, int64_t ys,
                      float eps, uintptr_t stream) {
    run(t, rmsnormParams(dtype, rows, cols, y, x, w, res, res_out, xs, ys, eps), stream,
        [](Autotuner& a, const ops::RmsNormParams& p, StreamHandle s) { return ops::rmsnorm(a, p, s); });
  });
  m.def("silu_mul", [](PyAutotuner& t, int dtype, int64_t rows, int64_t d, uint64_t out, uint64_t x,
                       int64_t xs, int64_t os, uintptr_t stream) {
    run(t, siluParams(dtype, rows, d, out, x, xs, os), stream,
        [](Autotuner& a, const ops::SiluMulParams& p, StreamHandle s) { return ops::siluMul(a, p, s); });
  });
  m.def("gemm", [](PyAutotuner& t, const py::dict& d, uintptr_t stream) {
    run(t, gemmParams(d), stream,
        [](Autotuner& a, const ops::GemmParams& p, StreamHandle s) { return ops::gemm(a, p, s); });
  });
  m.def("gemm_report", [](PyAutotuner& t, const py::dict& d) {
    return unwrap(ops::lookupGemm(*t.t, gemmParams(d))).toJson();
  });
  // The report of a contiguous call's key: the lookup checks its parameters as a call would, so
  // it gets stand-in addresses (256-byte aligned, like any allocator's; never dereferenced).
  constexpr uint64_t kAddr = uint64_t{1} << 20;
  m.def("rmsnorm_report", [](PyAutotuner& t, int dtype, int64_t rows, int64_t cols) {
    return unwrap(ops::lookupRmsnorm(*t.t, rmsnormParams(dtype, rows, cols, kAddr, 2 * kAddr,
                                                          3 * kAddr, 0, 0, cols, cols, 1e-6f)))
        .toJson();
  });
  m.def("silu_mul_report", [](PyAutotuner& t, int dtype, int64_t rows, int64_t d) {
    return unwrap(ops::lookupSiluMul(*t.t, siluParams(dtype, rows, d, kAddr, 2 * kAddr, 2 * d, d)))
        .toJson();
  });
}

}  // namespace ktune::py_ext
