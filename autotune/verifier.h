// ktune verifier — compares a kernel's output with a reference, with tolerances derived from the
// dtype and the reduction length, and poisons outputs with NaN so unwritten elements fail.
//
// Element check: |out - ref| <= atol + rtol * |ref|. A NaN in the output where the reference is
// not NaN is a mismatch (counted in `nans`); NaN where the reference is NaN matches.
// All functions are thread-safe (no shared state); device variants synchronise with the backend's
// copies and need the kernel to have finished (call synchronize first).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "runtime/backend.h"

namespace ktune {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

// Tolerance for outputs stored as `out` after a reduction of `reduction_len` terms accumulated in
// fp32 (kTF32: fp32 storage with TF32 inputs). With unit-scale random inputs (the tuner's
// setting): rtol = 2*eps(out) + 2*eps(compute)*sqrt(reduction_len), atol = rtol, where eps is the
// unit roundoff (f32 2^-24, tf32/f16 2^-11, bf16 2^-8). Scale atol yourself for large values.
Tolerance toleranceFor(DType out, int64_t reduction_len = 1);

struct VerifyResult {
  bool ok = true;
  int64_t checked = 0;
  int64_t mismatches = 0;  // NaNs included
  int64_t nans = 0;        // NaN/Inf in the output where the reference is finite
  double max_abs_error = 0;
  double max_rel_error = 0;
  int64_t first_bad = -1;  // index of the first mismatch
  double first_bad_out = 0, first_bad_ref = 0;
  Tolerance tol;
  // "ok: 1000 checked, max abs 1e-3, max rel 2e-3" or "3 of 1000 mismatch (1 NaN) ...".
  std::string summary() const;
  // OK, or kWrongResult with summary().
  Status toStatus() const;
};

// Host buffer `out` (n elements of type t) vs reference values.
VerifyResult compareHost(const void* out, DType t, const double* ref, int64_t n, Tolerance tol);
VerifyResult compareHost(const void* out, DType t, const float* ref, int64_t n, Tolerance tol);
// Host buffer `out` vs host buffer `trusted`, both n elements of type t: compareHost with the
// trusted values as the reference (the same result), without a per-element type switch.
VerifyResult compareHostTrusted(const void* out, const void* trusted, DType t, int64_t n,
                                Tolerance tol);
// Device buffer vs host reference (copies to host). Errors: copy failures (bad pointer, size).
Expected<VerifyResult> compareDevice(Backend& b, DevicePtr out, DType t,
                                     const std::vector<double>& ref, Tolerance tol);
// Device buffer vs the output of a trusted kernel (both device buffers of type t).
Expected<VerifyResult> compareDeviceToTrusted(Backend& b, DevicePtr out, DevicePtr trusted,
                                              DType t, int64_t n, Tolerance tol);
// Rows of a [rows x cols] matrix with row stride `ld` (elements) that a sampled comparison checks:
// all rows when rows <= max_rows; else the first and last 8 rows plus rows spread with a prime
// step (so they land on every offset inside power-of-two tiles). Deterministic.
std::vector<int64_t> sampleRows(int64_t rows, int64_t max_rows = 256);
// Rows a check of a tiled kernel's [rows x cols] output covers: rows tile*k - 1 and tile*k for
// every k (both sides of every tile boundary, for any tile size that is a multiple of `tile`), the
// first and last rows, and `random_rows` rows drawn with a seeded generator (offsets inside
// tiles); all rows when rows <= 4 * tile. Sorted, no duplicates, deterministic for a seed.
// Checking whole rows covers every column-tile boundary too.
std::vector<int64_t> tileBoundaryRows(int64_t rows, int64_t tile, int64_t random_rows,
                                      uint64_t seed = 1);
// Like compareDeviceToTrusted, on the listed rows only (each row: cols elements from row*ld).
// For large outputs the sampled check costs a few milliseconds instead of a full device->host
// copy and comparison per candidate.
// `stage` / `stage_bytes`: a device buffer of at least verifyStageBytes(t, cols, rows.size())
// the rows are gathered in (the caller's, kept between checks); without one (0), or a smaller
// one, the check allocates and frees its own.
Expected<VerifyResult> compareDeviceRowsToTrusted(Backend& b, DevicePtr out, DevicePtr trusted,
                                                  DType t, int64_t cols, int64_t ld,
                                                  const std::vector<int64_t>& rows, Tolerance tol,
                                                  DevicePtr stage = 0, size_t stage_bytes = 0);
inline size_t verifyStageBytes(DType t, int64_t cols, size_t rows) {
  return 2 * rows * static_cast<size_t>(cols) * sizeOf(t);
}

// Fills `count` elements of type t (kF32, kF16, kBF16, kF64) at `p` with a quiet NaN on `stream`.
// kUnsupported for integer types.
Status poisonNaN(Backend& b, DevicePtr p, DType t, int64_t count, StreamHandle stream = {});
// Host version.
Status poisonNaNHost(void* p, DType t, int64_t count);

}  // namespace ktune
