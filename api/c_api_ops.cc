// The C API's tuned ops and simulated kernels (include/ktune/ktune.h), over ktune::ops and
// ktune::Autotuner::registerSimKernel.
#include <string>

#include "api/c_api_util.h"
#include "api/op_fields.h"
#include "ktune/ktune.h"
#include "ktune/ktune.hpp"

namespace {

using ktune::capi::fail;
using ktune::capi::invalid;
using ktune::capi::tunerOf;

bool dtypeOk(int32_t d) { return d >= KTUNE_DTYPE_F32 && d <= KTUNE_DTYPE_F8E5M2; }
ktune::ops::DType dt(int32_t d) { return static_cast<ktune::ops::DType>(d); }

// A row-wise op's C entry point: the argument checks, the C params copied into the C++ ones Q
// (`copy`, over the field list of api/op_fields.h), the op run.
template <class Q, class P, class Copy>
int rowOp(ktune_tuner* t, const P* p, ktune_stream s, const char* name,
          ktune::Status (*op)(ktune::Autotuner&, const Q&, ktune::StreamHandle), Copy copy) {
  if (!t || !p) return invalid(std::string(name) + ": null argument");
  if (!dtypeOk(p->dtype))
    return invalid(std::string(name) + ": dtype must be a KTUNE_DTYPE_* value");
  Q q;
  q.dtype = dt(p->dtype);
  copy(*p, q);
  ktune::Status st = op(*tunerOf(t), q, ktune::StreamHandle{s});
  return st.ok() ? KTUNE_OK : fail(st);
}

}  // namespace

extern "C" {

int ktune_rmsnorm(ktune_tuner* t, const ktune_rmsnorm_params* p, ktune_stream s) {
  return rowOp<ktune::ops::RmsNormParams>(
      t, p, s, "ktune_rmsnorm", ktune::ops::rmsnorm,
      [](const ktune_rmsnorm_params& from, ktune::ops::RmsNormParams& to) {
        KTUNE_RMSNORM_FIELDS(KTUNE_COPY_FIELD)
      });
}

int ktune_silu_mul(ktune_tuner* t, const ktune_silu_mul_params* p, ktune_stream s) {
  return rowOp<ktune::ops::SiluMulParams>(
      t, p, s, "ktune_silu_mul", ktune::ops::siluMul,
      [](const ktune_silu_mul_params& from, ktune::ops::SiluMulParams& to) {
        KTUNE_SILU_MUL_FIELDS(KTUNE_COPY_FIELD)
      });
}

int ktune_gemm(ktune_tuner* t, const ktune_gemm_params* p, ktune_stream s) {
  if (!t || !p) return invalid("ktune_gemm: null argument");
  if (!dtypeOk(p->ab_dtype) || !dtypeOk(p->c_dtype))
    return invalid("ktune_gemm: dtypes must be KTUNE_DTYPE_* values");
  ktune::ops::GemmParams q;
  if (p->layout) q.layout = p->layout;
  q.ab = dt(p->ab_dtype);
  q.c = dt(p->c_dtype);
  q.m = p->m;
  q.n = p->n;
  q.k = p->k;
  q.lda = p->lda;
  q.ldb = p->ldb;
  q.ldc = p->ldc;
  q.alpha = p->alpha;
  q.beta = p->beta;
  if (p->activation) q.activation = p->activation;
  q.a = p->a;
  q.b = p->b;
  q.out = p->c;
  q.bias = p->bias;
  q.scale_a = p->scale_a;
  q.scale_b = p->scale_b;
  ktune::Status st = ktune::ops::gemm(*tunerOf(t), q, ktune::StreamHandle{s});
  return st.ok() ? KTUNE_OK : fail(st);
}

// ---------------------------------------------------------------- simulated kernels

unsigned ktune_sim_grid(const ktune_sim_launch* l, int dim) {
  return l ? ktune::capi::viewOf(l)->grid(dim) : 0;
}
unsigned ktune_sim_block(const ktune_sim_launch* l, int dim) {
  return l ? ktune::capi::viewOf(l)->block(dim) : 0;
}
int64_t ktune_sim_knob(const ktune_sim_launch* l, const char* name, int64_t fallback) {
  return l && name ? ktune::capi::viewOf(l)->knob(name, fallback) : fallback;
}
const void* ktune_sim_arg(const ktune_sim_launch* l, size_t index) {
  return l ? ktune::capi::viewOf(l)->arg(index) : nullptr;
}
void* ktune_sim_host_ptr(const ktune_sim_launch* l, uint64_t p) {
  return l ? ktune::capi::viewOf(l)->hostPtr(p) : nullptr;
}

int ktune_sim_register_kernel(ktune_tuner* t, const char* entry, ktune_sim_run_fn run,
                              ktune_sim_cost_fn cost, void* user) {
  if (!t || !entry) return invalid("ktune_sim_register_kernel: null tuner or entry");
  ktune::SimKernelFns fns;
  if (run) {
    fns.run = [run, user](const ktune::SimLaunchView& v) {
      ktune::capi::SimLaunchC c{&v};
      int rc = run(user, ktune::capi::launchOf(&c));
      if (rc == KTUNE_OK) return ktune::Status::Ok();
      if (rc < 0 || rc > KTUNE_ERR_INTERNAL) rc = KTUNE_ERR_INTERNAL;
      return ktune::Status(static_cast<ktune::Code>(rc), "simulated kernel returned " +
                                                             std::string(ktune_status_name(rc)));
    };
  }
  if (cost) {
    fns.cost = [cost, user](const ktune::SimLaunchView& v) {
      ktune::capi::SimLaunchC c{&v};
      return cost(user, ktune::capi::launchOf(&c));
    };
  }
  return ktune::capi::check(tunerOf(t)->registerSimKernel(entry, std::move(fns)));
}

}  // extern "C"
