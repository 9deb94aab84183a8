// ktune — the C++ API. One include for everything public:
//   Status / Expected (errors as values), TunerOptions (every knob, fromEnv()), Autotuner (a
//   device, store and databases), TypedKernel / TypedKernelSpec<P> (families over your own
//   problem type, typed callbacks), Kernel / KernelSpec (families registered from data),
//   KeyReport (what was tried for a key), ops:: (tuned RMSNorm, SiLU·Mul, GEMM), simulated
//   kernels for tests without a GPU, version().
// No header here needs nlohmann/json, CUDA or ROCm headers. The C API is <ktune/ktune.h>.
#pragma once

#include "ktune/kernel.hpp"
#include "ktune/ops.hpp"
#include "ktune/options.hpp"
#include "ktune/report.hpp"
#include "ktune/sim.hpp"
#include "ktune/status.hpp"
#include "ktune/tuner.hpp"
#include "ktune/typed.hpp"
#include "ktune/types.hpp"
#include "ktune/version.hpp"
