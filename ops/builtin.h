// The built-in ops a process serves when it rebuilds problems from their args JSON instead of
// receiving the caller's buffers: the isolation worker (ktune-worker) and offline tuning.
//
//   auto ops = ktune::registerBuiltinOps(tuner);   // row-wise families + the "gemm" family
//   ...serve / tuneFromFile...                     // keep `ops` alive while the tuner is used
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "ops/gemm.h"

namespace ktune {

// What registerBuiltinOps registered. The GEMM op's family state lives in `gemm`: destroy this
// before the tuner goes (it holds a reference to it) and keep it while the tuner serves "gemm".
struct BuiltinOps {
  bool rowwise = false;            // rmsnorm_* and silu_mul_* (f32/f16/bf16) are registered
  std::unique_ptr<GemmOp> gemm;    // null when the device has no GEMM kernel
  std::vector<std::string> notes;  // why an op is not served, one line each
};

// Registers every built-in op family on `tuner` whose kernels run on its device: the row-wise
// families and the GEMM op (default OpOptions: every kernel kind of the device, cuBLASLt
// candidates when the library loads). On a simulated device nothing is registered (the built-in
// kernels need a real GPU backend) and a note says so. An op that cannot be registered is left
// out with a note; only a null tuner is an error (kInvalidArgument). Call it once per tuner,
// before serving or tuneFromFile; not concurrently with other registrations on the same tuner.
// `gemm`: the GEMM op's options (the isolation worker defers the vendor's warm-up:
// OpOptions::warm_up_later).
Expected<BuiltinOps> registerBuiltinOps(std::shared_ptr<Engine> tuner,
                                        GemmOp::OpOptions gemm = {});

}  // namespace ktune

namespace ktune {

// The check `ktune db import` runs on every imported config of a built-in family, without a
// device (TuningDatabase::ImportCheck): rmsnorm_* / silu_mul_* configs must be in the row-wise
// space of the entry's arch, gemm configs in their KIND's space, vendor configs must come from a
// vendor library the family uses. An empty function for other families (a registered family's
// entries are checked against its space when it imports them or uses a winner).
TuningDatabase::ImportCheck builtinImportCheck(const std::string& family);

}  // namespace ktune
