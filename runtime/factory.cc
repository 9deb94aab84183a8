// openBackend(): picks a runtime backend by name. The CUDA and HIP parts are compiled only when
// their backends are (KTUNE_HAVE_CUDA_BACKEND / KTUNE_HAVE_HIP_BACKEND, set by runtime/CMakeLists);
// otherwise openCudaBackend()/openHipBackend() are defined here and say the build left them out.
#include <memory>
#include <string>

#include "runtime/backend.h"

namespace ktune {

#ifndef KTUNE_HAVE_CUDA_BACKEND
Expected<std::unique_ptr<Backend>> openCudaBackend() {
  return Status::Unavailable(
      "ktune was built without the CUDA backend (configure with -DKTUNE_WITH_CUDA=ON)");
}
#endif

#ifndef KTUNE_HAVE_HIP_BACKEND
Expected<std::unique_ptr<Backend>> openHipBackend() {
  return Status::Unavailable(
      "ktune was built without the HIP backend (configure with -DKTUNE_WITH_HIP=ON)");
}
#endif

Expected<std::unique_ptr<Backend>> openBackend(const std::string& which) {
  if (which == "cuda") return openCudaBackend();
  if (which == "hip") return openHipBackend();
  if (which == "sim") {
    return Status::InvalidArgument(
        "backend 'sim' is not opened by name: construct it directly with makeSimBackend(SimOptions) "
        "from runtime/sim/sim_backend.h, describing the device to simulate");
  }
  if (which == "auto" || which.empty()) {
    auto cuda = openCudaBackend();
    if (cuda.ok()) return cuda;
    auto hip = openHipBackend();
    if (hip.ok()) return hip;
    return Status::Unavailable("no GPU backend available: CUDA: " + cuda.status().message() +
                               "; HIP: " + hip.status().message() +
                               " (set KTUNE_BACKEND=sim for the simulated backend)");
  }
  return Status::InvalidArgument("unknown backend '" + which +
                                 "': expected one of auto, cuda, hip, sim");
}

}  // namespace ktune
