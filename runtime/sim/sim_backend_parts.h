// The simulated backend's handles' objects, shared by its files (sim_backend.cc: memory, streams,
// events, capture; sim_modules.cc: modules, functions, launches, occupancy). Not installed.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/sim/sim_backend.h"

namespace ktune {

struct SimBackend::Stream {
  double clock_ms = 0;
};
struct SimBackend::Event {
  double t_ms = 0;
  bool recorded = false;
};
struct SimBackend::Module {
  SimImage image;
};
struct SimBackend::Function {
  Module* module = nullptr;
  std::shared_ptr<SimKernel> kernel;
  int64_t max_dynamic_shared = -1;  // -1: device default per-block limit
};

}  // namespace ktune
