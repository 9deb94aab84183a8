// The simulated GPU behind `KTUNE_BACKEND=sim` for the CLI: a SimBackend describing an H100-like
// device (arch sm_90a) and a SimCompiler, with the built-in kernels (RMSNorm, SiLU·Mul, every GEMM
// kind) registered as host implementations that compute the real result from the templates'
// float64 references, and a deterministic cost model (bytes over bandwidth for the row-wise
// kernels, FLOPs over peak with wave quantisation and tile efficiency for GEMM). `ktune tune` then
// tunes, verifies, records and reports exactly as on a GPU, reproducibly, so every CLI path runs
// in CI. The device's name says it is simulated; nothing it measures is a real timing.
#pragma once

#include <memory>

#include "compiler/compiler.h"
#include "runtime/backend.h"

namespace ktune::cli {

struct SimGpu {
  std::shared_ptr<Backend> backend;
  std::shared_ptr<Compiler> compiler;
};

// `devices` identical devices (KTUNE_SIM_DEVICES), each with its own simulated clock.
SimGpu openSimGpu(int devices = 1);

}  // namespace ktune::cli

namespace ktune {
struct SimLaunch;
namespace cli {
// The host implementations of ktune_rmsnorm and ktune_silu_mul on the simulated backend (the
// templates' float64 references, driven by the compiled-in defines); tests reuse them.
Status simRmsNorm(const SimLaunch& l);
Status simSiluMul(const SimLaunch& l);
// The host implementation of every GEMM kernel (the float64 reference, driven by the defines and
// the GEMM family's argument list); tests reuse it for simulated AMD devices and vendor libraries.
Status simGemm(const SimLaunch& l);
}  // namespace cli

}  // namespace ktune::cli
