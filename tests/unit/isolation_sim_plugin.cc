// Isolation worker plugin for the CPU tests: a simulated backend + compiler, and the test families
// (tests/unit/isolation_families.h). Loaded by ktune-worker --plugin <this .so>.
#include "tests/unit/isolation_families.h"

namespace {
std::shared_ptr<ktune::SimBackend> g_backend;
}

extern "C" ktune::Status ktune_worker_backend(std::shared_ptr<ktune::Backend>* backend,
                                              std::shared_ptr<ktune::Compiler>* compiler) {
  ktune::SimOptions o;
  o.device = ktune::isotest::isoDevice();
  // As many devices as the tuner's simulated backend (KTUNE_SIM_DEVICES, inherited from it), so a
  // worker started with --device d opens device d.
  auto env = ktune::TunerOptions::fromEnv();
  o.device_count = env.ok() ? env->sim_devices : 1;
  g_backend = std::make_shared<ktune::SimBackend>(o);
  ktune::isotest::registerIsoKernels(*g_backend);
  *backend = g_backend;
  *compiler = std::make_shared<ktune::SimCompiler>();
  return ktune::Status::Ok();
}

extern "C" ktune::Status ktune_register_families(ktune::Engine& tuner) {
  if (!g_backend) return ktune::Status::Internal("ktune_worker_backend was not called first");
  // The MODE=6 overlap gate: a folder of the tuner's cache, which every worker of a run shares.
  ktune::isotest::gateDir() = tuner.options().options.cache_dir + "/overlap_gate";
  ktune::isotest::gateDevice() = tuner.options().options.device;
  return ktune::isotest::registerIsoFamilies(tuner, g_backend.get());
}
