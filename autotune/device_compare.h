// The comparison with a trusted output on the device: one kernel reads the candidate's output and
// the trusted one where both lie and hands back a few counts and maxima, instead of a gather, a
// copy to the host and a host loop (2-6 ms a GEMM check, ~60% of it the host loop). The per-element
// rule is the host verifier's, from one shared file (templates/kernels/verify_compare.cuh), and the
// result is the VerifyResult the host comparison gives for the same elements, bit for bit.
//
// Off until enableDeviceCompare. NVIDIA devices only; element types f32 (tf32), f16, bf16 and f64;
// anything else, and every comparison before the kernel is ready, stays on the host. Before its
// first use in a process the kernel must give the host comparison's results on planted cases
// (every type, NaN and infinities, padded rows); a kernel that does not is never used.
// The trusted output stays what the caller computed in this process: only the comparison moves.
// Callers try it first and fall back to verifier.h's host comparisons (GemmOp::State::verify).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autotune/verifier.h"
#include "base/status.h"
#include "runtime/backend.h"

namespace ktune {

class Compiler;
class CodeObjectStore;

// From now on deviceCompareToTrusted on backend `b` (one device) compares on the device. The
// kernel's code object comes from `store` when it holds it; otherwise it is compiled on a thread of
// its own and put there, and the comparisons until it is ready stay on the host. `compiler`,
// `store` (may be null) and `b` must outlive the setting: call disableDeviceCompare() before they
// go. Replaces an earlier setting. Thread-safe.
void enableDeviceCompare(Backend& b, Compiler& compiler, CodeObjectStore* store,
                         const DeviceInfo& device);
// Waits for a compile in flight, frees the kernel and its buffers, turns the device path off.
void disableDeviceCompare();
// Waits for a compile in flight (tests).
void awaitDeviceCompare();
// Whether the kernel is compiled or read (it may still fail its planted cases when first used).
bool deviceCompareReady();
// Whether the kernel passed its planted cases and is in use (false before its first use).
bool deviceCompareChecked();

// The [rows x cols] matrices at `out` and `trusted` (row stride `ld` elements, type t; element
// index row * cols + col) compared on the device when it is on for `b`, supports t and its kernel
// is ready and checked: true with *res the result (synchronised on `stream`; errors: the launch's
// or the read-back's); false when the caller must compare on the host. The outputs must be
// complete (the kernels that wrote them finished or ordered before `stream`'s work).
bool deviceCompareToTrusted(Backend& b, DevicePtr out, DevicePtr trusted, DType t, int64_t rows,
                            int64_t cols, int64_t ld, Tolerance tol, Expected<VerifyResult>* res,
                            StreamHandle stream = {});

// The kernel's compile request's source (tests compile it).
std::string deviceCompareSource();

// Planted cases for the kernel's check and the tests: `n` elements of type t in `out` and
// `trusted` (encoded). With `specials`: errors on both sides of toleranceFor(t, 4096), NaN and
// infinities on both sides, small values near atol; without: every error well inside it.
void plantedCompareCase(DType t, int64_t n, uint32_t seed, bool specials,
                        std::vector<unsigned char>* out, std::vector<unsigned char>* trusted);

}  // namespace ktune
