// A user's isolation-worker plugin (ktune/plugin.hpp): registers plugin_saxpy on the worker's
// Autotuner, with the simulated kernel's stand-in when the worker runs on backend "sim".
#include <ktune/plugin.hpp>

#include "saxpy_family.h"

KTUNE_PLUGIN_EXPORT ktune::Status ktune_register_kernels(ktune::Autotuner& tuner) {
  if (tuner.backendName() == "sim") {
    ktune::Status st = tuner.registerSimKernel("plugin_saxpy", saxpySim(/*in_worker=*/true));
    if (!st.ok()) return st;
  }
  return ktune::addTypedKernel(tuner, saxpySpec(&tuner)).status();
}
