// The state behind the public handles (include/ktune/tuner.hpp, kernel.hpp, sim.hpp): the engine
// objects they delegate to. Shared by the files of api/ only.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/data_family.h"
#include "autotune/autotuner.h"
#include "ops/gemm.h"
#include "ktune/report.hpp"
#include "ktune/sim.hpp"
#include "ktune/tuner.hpp"
#include "ktune/typed.hpp"
#include "runtime/sim/sim_backend.h"

namespace ktune {

namespace api {
// The engine's problem type for every family registered through the public API (typed.hpp, and
// data families on top of it): the caller's problem behind a pointer, valid during the call.
struct TypedProblem {
  const void* p = nullptr;
};
// Checks `spec` and registers it on the tuner's engine (typed.cc): the one path from the public
// registration to the engine.
Expected<Family<TypedProblem>> addFamily(Autotuner& tuner, ErasedKernelSpec spec);
}  // namespace api

struct Autotuner::Impl {
  std::shared_ptr<Backend> backend;
  std::shared_ptr<SimBackend> sim;  // set on the simulated backend
  std::shared_ptr<Engine> tuner;
  std::mutex mu;                    // guards gemm's creation
  std::unique_ptr<GemmOp> gemm;
  ~Impl() { gemm.reset(); }         // the op holds a reference to the tuner's family
};

struct ErasedKernel::Impl {
  Family<api::TypedProblem> family;
};

struct Kernel::Impl {
  std::shared_ptr<const api::DataFamily> data;
  Family<api::TypedProblem> family;  // over api::DataProblem objects
  unsigned plan_slot = 0;  // which of the calling thread's launch plans this kernel uses (tuner.cc)
};

struct SimLaunchView::Impl {
  const SimLaunch* launch = nullptr;
};

}  // namespace ktune
