// ktune CUDA backend — ktune::Backend over the CUDA driver API, opened with dlopen("libcuda.so.1").
//
// The backend itself is created with openCudaBackend() (runtime/backend.h). This header exposes
// the pure helpers it is built from so they can be tested without a GPU.
//
// Design notes (why it is built this way):
// - No CUDA header is needed at build time: the few driver types, enum values and prototypes are
//   declared in cuda_backend.cc with the numeric values of CUDA 13.0's cuda.h.
// - Entry points are resolved with cuGetProcAddress_v2 (then cuGetProcAddress) asking for the ABI
//   of min(driver version, 13.0), so a newer driver cannot hand us a changed signature and an
//   older one gives its own version of each call; plain dlsym of the _v2 names is the fallback.
// - The driver connection (library, entry points, one retained primary context per device) is a
//   process-wide singleton that is never torn down: contexts are shared with any other user of
//   the runtime API in the process (e.g. PyTorch), and releasing them at exit races other
//   libraries' atexit handlers. Every CudaBackend object is a thin view of it.
// - Launch hot path: a launch checks its config against the device limits (a few compares), then
//   compares the function's context with a thread_local holding the context ktune last made
//   current on this thread; only on a mismatch does it call cuCtxSetCurrent. If other code
//   changes the current context of a thread behind ktune's back, call setDevice() again on that
//   thread (setDevice always re-binds).
// - A kernel fault (CUDA_ERROR_ILLEGAL_ADDRESS and friends) is sticky: every later call in the
//   process returns Code::kDeviceFault. Run untrusted candidates in a child process.
#pragma once

#include <string>

#include "base/status.h"

namespace ktune {

// Target architecture string for a compute capability: "sm_90a" for 9.0 (Hopper arch-specific
// features such as wgmma and setmaxnreg are only available with the "a" target), "sm_XY"
// otherwise (8.0 -> "sm_80", 12.0 -> "sm_120"). Thread-safe (pure).
std::string cudaArchName(int cc_major, int cc_minor);

// "13.0" for cuDriverGetVersion's 13000, "12.4" for 12040. Thread-safe (pure).
std::string cudaVersionString(int driver_version);

// Maps a CUresult to a ktune Code. Kernel faults (illegal address, illegal instruction,
// misaligned address, assert, launch failed, ...) -> kDeviceFault; out of memory / too many
// resources -> kOutOfResources; no device / no driver -> kUnavailable; PTX JIT failures ->
// kCompileError; image for another GPU / unsupported PTX version -> kUnsupported; not found ->
// kNotFound; invalid value/handle -> kInvalidArgument, or `fallback` when it is kLaunchError.
// Anything else -> `fallback`. Thread-safe (pure).
Code cudaResultCode(int result, Code fallback);

}  // namespace ktune
