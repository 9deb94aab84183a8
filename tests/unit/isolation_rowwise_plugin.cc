// Isolation worker plugin for isolation_rowwise_test: the simulated GPU of `KTUNE_BACKEND=sim`
// (tools/sim_gpu.h: host implementations of the row-wise kernels, a deterministic cost) as the
// worker's backend and compiler, and the built-in row-wise ops registered on it exactly as
// registerBuiltinOps does on a GPU (registerRowwiseOps), which it skips on a simulated device.
#include "ops/rowwise.h"
#include "tools/sim_gpu.h"

extern "C" ktune::Status ktune_worker_backend(std::shared_ptr<ktune::Backend>* backend,
                                              std::shared_ptr<ktune::Compiler>* compiler) {
  ktune::cli::SimGpu gpu = ktune::cli::openSimGpu();
  *backend = gpu.backend;
  *compiler = gpu.compiler;
  return ktune::Status::Ok();
}

extern "C" ktune::Status ktune_register_families(ktune::Engine& tuner) {
  return ktune::registerRowwiseOps(tuner);
}
