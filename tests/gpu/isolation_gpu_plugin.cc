// Isolation worker plugin for the GPU test and bench: the user families of
// bench/isolation_gpu_families.h on the worker's real backend.
#include "bench/isolation_gpu_families.h"

extern "C" ktune::Status ktune_register_families(ktune::Engine& tuner) {
  return ktune::isogpu::registerUserFamilies(tuner);
}
