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
// Checks `spec` and registers it on the tuner's engine (typed.cc, Engine::addSpec): the one path
// from the public registration to the engine.
Expected<detail::FamilyState*> addFamily(Autotuner& tuner, ErasedKernelSpec spec);
// The device the simulated backend describes (tuner.cc); the isolation worker's is the same.
DeviceInfo simulatedDevice();
}  // namespace api

// Makes the public handle over an engine built elsewhere: the isolation worker (worker.cc) hands
// its plugins an Autotuner over the worker's own engine.
struct AutotunerAccess {
  static std::unique_ptr<Autotuner> wrap(std::unique_ptr<Autotuner::Impl> impl) {
    return std::unique_ptr<Autotuner>(new Autotuner(std::move(impl)));
  }
};

struct Autotuner::Impl {
  std::shared_ptr<Backend> backend;
  std::shared_ptr<SimBackend> sim;  // set on the simulated backend
  std::shared_ptr<Engine> tuner;
  std::mutex mu;                    // guards gemm's creation
  std::unique_ptr<GemmOp> gemm;
  ~Impl() { gemm.reset(); }         // the op holds a reference to the tuner's family
};

struct ErasedKernel::Impl {
  Engine* engine = nullptr;  // the Autotuner's; p of the calls is the caller's problem
  detail::FamilyState* state = nullptr;
};

struct Kernel::Impl {
  std::shared_ptr<const api::DataFamily> data;
  Family<api::DataProblem> family;
  unsigned plan_slot = 0;  // which of the calling thread's launch plans this kernel uses (tuner.cc)
};

struct SimLaunchView::Impl {
  const SimLaunch* launch = nullptr;
};

}  // namespace ktune
