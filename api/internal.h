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
#include "runtime/sim/sim_backend.h"

namespace ktune {

struct Autotuner::Impl {
  std::shared_ptr<Backend> backend;
  std::shared_ptr<SimBackend> sim;  // set on the simulated backend
  std::shared_ptr<Tuner> tuner;
  std::mutex mu;                    // guards gemm's creation
  std::unique_ptr<GemmOp> gemm;
  ~Impl() { gemm.reset(); }         // the op holds a reference to the tuner's family
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
