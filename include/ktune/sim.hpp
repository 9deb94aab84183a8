// ktune — kernels of the simulated backend (backend "sim"): a CPU stand-in used to test code that
// embeds ktune without a GPU. A simulated "kernel" is a host function registered under the entry
// name of a family; a launch calls it with the launch dimensions, the compiled-in knob values
// and the arguments, and the simulated device time of the launch is what `cost` returns (the
// tuner's timings are then exact and reproducible).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "ktune/export.h"
#include "ktune/status.hpp"
#include "ktune/types.hpp"

namespace ktune {

// What a simulated kernel sees at a launch. Valid only during the call.
class KTUNE_API SimLaunchView {
 public:
  // Grid and block dimensions (index 0..2 = x, y, z) and the dynamic shared bytes.
  unsigned grid(int i) const;
  unsigned block(int i) const;
  size_t sharedBytes() const;
  // Integer value of the knob compiled into the code object (-D NAME=value), or `fallback`.
  int64_t knob(const std::string& name, int64_t fallback = 0) const;
  // Raw bytes of argument i (the kernel's parameter order; i must be below the signature's
  // argument count).
  const void* arg(size_t i) const;
  // Host memory behind a simulated device address (interior pointers allowed), or nullptr.
  void* hostPtr(DevicePtr p) const;
  // Bytes from p to the end of its allocation (what hostPtr(p) may be read for); 0 if none.
  size_t bytesAvailable(DevicePtr p) const;

  struct Impl;
  explicit SimLaunchView(const Impl* impl) : impl_(impl) {}

 private:
  const Impl* impl_;
};

struct SimKernelFns {
  // The kernel's effect on memory (may be empty). A non-OK Status fails the launch
  // (e.g. Status::DeviceFault to simulate a faulting config).
  std::function<Status(const SimLaunchView&)> run;
  // Simulated device milliseconds of this launch (empty: 0.01 ms).
  std::function<double(const SimLaunchView&)> cost;
};

}  // namespace ktune
