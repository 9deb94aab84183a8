// host_cost_bench's shared pieces (bench/host_cost_bench.cc): the driver entry points it calls
// raw, the bench state, the variants, and the GEMM kernels' parameter block.
#pragma once

#include <stdlib.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"

namespace ktune::hostcost {

struct Driver {
  int (*load)(void**, const void*) = nullptr;
  int (*get)(void**, void*, const char*) = nullptr;
  int (*launch)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                void**, void**) = nullptr;
  int (*query)(void*) = nullptr;
  int (*set_attr)(void*, int, int) = nullptr;  // cuFuncSetAttribute
  // cuLaunchKernel as ktune's backend resolves it (cuGetProcAddress_v2); null when unavailable.
  int (*launch_gpa)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                    void*, void**, void**) = nullptr;
};

struct Bench {
  std::shared_ptr<Backend> be;
  std::unique_ptr<Compiler> cc;
  DeviceInfo dev;
  Driver drv;
  void* spin = nullptr;
  void* noop2 = nullptr;
  void* gemm_args = nullptr;
  std::string image;  // the code object of kRawSource (spin and noop kernels)
  EventHandle gate;
  int batch = 128;
  long long spin_ns = 4000000;
  int caught_up = 0;
};

// The GEMM kernels' parameter block (ops/gemm.cc addRunHooks), as cuLaunchKernel takes it.
struct GemmArgs {
  DevicePtr ptr[6] = {};
  int32_t mnk[3] = {2048, 2048, 2048};
  int64_t ld[3] = {2048, 2048, 2048};
  float ab[2] = {1, 0};
  TensorMap maps[3];
  int32_t c_tma = 1;
  DevicePtr scales[2] = {};  // the TMA kernel's scale_a, scale_b (null: 1)
  void* args[20];
  void bind() {
    for (int i = 0; i < 6; ++i) args[i] = &ptr[i];
    for (int i = 0; i < 3; ++i)
      args[6 + i] = &mnk[i], args[9 + i] = &ld[i], args[14 + i] = &maps[i];
    args[12] = &ab[0];
    args[13] = &ab[1];
    args[17] = &c_tma;
    args[18] = &scales[0];
    args[19] = &scales[1];
  }
};

struct Variant {
  std::string name;
  std::function<Status(int)> call;
  std::string note;
};

// A Engine of its own (cache dir under /tmp) for one op.
inline Expected<std::shared_ptr<Engine>> tunerFor(Bench& B, const std::string& tag,
                                                 int vendor_algos) {
  std::string tmpl = "/tmp/ktune-hostcost-" + tag + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back(0);
  if (!::mkdtemp(buf.data())) return Status::Internal("mkdtemp failed");
  EngineOptions o;
  o.options.cache_dir = buf.data();
  o.options.isolate = false;
  o.options.vendor_algos = vendor_algos;
  KTUNE_ASSIGN_OR_RETURN(auto t, Engine::create(B.be, o));
  return std::shared_ptr<Engine>(std::move(t));
}

inline Status ok(int driver_status, const char* what) {
  return driver_status == 0 ? Status::Ok() : Status::LaunchError(std::string(what) + " failed");
}

}  // namespace ktune::hostcost
