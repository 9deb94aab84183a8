// ktune row-wise kernel templates: RMSNorm (optionally with fused residual add), SiLU·Mul and a
// 16-byte copy (the copy-bandwidth peer). Everything needed to compile, launch and check them
// without the tuning engine: embedded source, entry name, config space, config -> -D defines,
// launch rule and float64 host references.
//
// Kernel sources: templates/kernels/{rmsnorm,silu_mul,copy}.cuh (argument order is documented
// there and repeated on the *Args functions below). All functions here are pure and
// thread-safe; none touches a device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/config.h"
#include "base/status.h"
#include "base/device.h"
#include "base/dtype.h"

namespace ktune::rowwise {

// Element types of the row-wise kernels: ktune's one DType (base/dtype.h), of which they take
// kF32, kF16 and kBF16; the kernels' DTYPE define is its value (f32 0, f16 1, bf16 2).
using RowDType = DType;
using ktune::sizeOf;
inline const char* name(RowDType t) { return dtypeName(t); }  // "f32", "f16", "bf16"
// Parses "f32"/"fp32"/"float32", "f16"/"fp16"/"half", "bf16"/"bfloat16".
Expected<RowDType> parseDType(std::string_view s);

// The device facts a config space depends on. Take them from DeviceInfo (limitsFor); for code
// that has no device (CI compile tests, the CLI), limitsForArch documents them per arch family.
struct RowwiseLimits {
  int warp_size = 32;
  int max_threads_per_block = 1024;
  std::string backend = "cuda";  // "cuda" / "hip": ConfigSpace backend tag
};
RowwiseLimits limitsFor(const DeviceInfo& dev);
// sm_*: warp 32, 1024 threads/block (all NVIDIA archs since sm_20).
// gfx9* (GCN/CDNA: gfx906/908/90a/940/941/942/950): wave 64, 1024 work-items per workgroup.
// gfx10*/gfx11*/gfx12* (RDNA): wave 32 (ktune compiles RDNA in wave32 mode), 1024.
// Unknown arch: kUnsupported.
Expected<RowwiseLimits> limitsForArch(std::string_view arch);

struct LaunchShape {
  Dim3 grid, block;
  size_t shared = 0;  // dynamic shared bytes (the row kernels use static shared only)
};

// ------------------------------------------------------------------------------------------
// RMSNorm: y = s / sqrt(mean(s^2) + eps) * w, s = x (+ r when has_residual; s is written to
// r_out rounded to dtype — vLLM's fused_add_rms_norm). Strides are in elements; 0 means
// "contiguous" (= cols).
// Kernel args (ktune_rmsnorm): y, x, w, r, r_out, rows, cols, x_stride, y_stride, r_stride,
// ro_stride (all long long), eps (float).
// ------------------------------------------------------------------------------------------
struct RmsNormProblem {
  RowDType dtype = RowDType::kBF16;
  int64_t rows = 0, cols = 0;
  int64_t x_stride = 0, y_stride = 0, r_stride = 0, ro_stride = 0;
  bool has_weight = true;
  bool has_residual = false;
  float eps = 1e-6f;
  // Byte misalignment (mod 16) of the row-0 pointers x, y, w, r, r_out, when known (the
  // defines function lowers VEC so a misaligned-but-consistent layout still vectorises).
  int x_misalign = 0, y_misalign = 0, w_misalign = 0, r_misalign = 0, ro_misalign = 0;
};

constexpr const char* kRmsNormSource = "rmsnorm.cuh";
constexpr const char* kRmsNormEntry = "ktune_rmsnorm";
// Largest NITER (vectors per thread held in registers) the defines function emits; longer rows
// take the two-pass path.
constexpr int kRmsNormMaxRegisterVectors = 8;

// Embedded kernel text (empty only if the build did not embed it).
std::string_view rmsNormSource();
// Parameters: VEC (16-byte and 8-byte accesses in elements of dtype), THREADS (1..32 warps),
// ROWS_PER_BLOCK {1,2,4}, OCC {0,1}. Constraints: THREADS % warp_size == 0,
// VEC * sizeof(dtype) <= 16, THREADS * ROWS_PER_BLOCK <= max_threads_per_block.
ConfigSpace rmsNormSpace(RowDType dtype, const RowwiseLimits& limits);
// A config that is good on most devices (used when tuning is off).
Config rmsNormDefaultConfig(RowDType dtype, const RowwiseLimits& limits);
// -D defines for the kernel: DTYPE, VEC (lowered to the problem's alignment), THREADS,
// ROWS_PER_BLOCK, OCC, NITER (= ceil(cols / (THREADS*VEC)) when <= kRmsNormMaxRegisterVectors,
// else 0), HAS_WEIGHT, HAS_RESIDUAL.
std::vector<std::pair<std::string, std::string>> rmsNormDefines(const Config& c,
                                                                const RmsNormProblem& p);
// block = (THREADS, ROWS_PER_BLOCK); grid.x = ceil(rows / ROWS_PER_BLOCK), capped at the 2^31-1
// grid limit (the kernel loops over further row groups).
LaunchShape rmsNormLaunch(const Config& c, const RmsNormProblem& p, const DeviceInfo& dev);
// Checks sizes, strides and flags (not pointers). kInvalidArgument says what is wrong.
Status validate(const RmsNormProblem& p);
// Strides as the kernel takes them (0 resolved to cols): {x, y, r, r_out}.
struct RmsNormStrides {
  int64_t x, y, r, ro;
};
RmsNormStrides kernelStrides(const RmsNormProblem& p);
// Largest power of two <= 16 dividing every byte offset the vector path depends on (row-0
// misalignments and, with more than one row, the row strides): the access width the problem
// allows. Problems with equal alignment, cols and flags compile to the same kernels.
int64_t alignmentBytes(const RmsNormProblem& p);
// Minimum bytes of device traffic: x, y (+ r, r_out) once each, w once.
int64_t rmsNormBytes(const RmsNormProblem& p);

// float64 reference over values already converted from dtype. x/r index row*stride + col with
// the problem's strides (0 = cols); y/r_out are written the same way. w may be null when
// !has_weight, r/r_out when !has_residual. The residual sum is rounded to dtype before use,
// exactly as the kernel stores it.
void rmsNormReference(const RmsNormProblem& p, const double* x, const double* w, const double* r,
                      double* y, double* r_out);

// ------------------------------------------------------------------------------------------
// SiLU·Mul: out[r, j] = silu(x[r, j]) * x[r, d + j], x: [rows, 2d], out: [rows, d].
// Kernel args (ktune_silu_mul): out, x, rows, d, x_stride, out_stride (long long).
// ------------------------------------------------------------------------------------------
struct SiluMulProblem {
  RowDType dtype = RowDType::kBF16;
  int64_t rows = 0, d = 0;
  int64_t x_stride = 0, out_stride = 0;  // elements; 0 = contiguous (2d / d)
  int x_misalign = 0, out_misalign = 0;  // byte misalignment mod 16 of row 0, when known
};

constexpr const char* kSiluMulSource = "silu_mul.cuh";
constexpr const char* kSiluMulEntry = "ktune_silu_mul";
std::string_view siluMulSource();
// Parameters: VEC (16/8-byte accesses), THREADS (4..32 warps, <= max), UNROLL {1,2,4},
// ROWS_PER_BLOCK {1,2,4}. Constraints: as RMSNorm, plus UNROLL * ROWS_PER_BLOCK <= 4 (more
// loads in flight per thread only spill).
ConfigSpace siluMulSpace(RowDType dtype, const RowwiseLimits& limits);
Config siluMulDefaultConfig(RowDType dtype, const RowwiseLimits& limits);
std::vector<std::pair<std::string, std::string>> siluMulDefines(const Config& c,
                                                                const SiluMulProblem& p);
// block = THREADS; grid.x = ceil(ceil(d/VEC) / (THREADS*UNROLL)) (>= 1),
// grid.y = min(ceil(rows / ROWS_PER_BLOCK), 65535) (the kernel loops over further rows).
LaunchShape siluMulLaunch(const Config& c, const SiluMulProblem& p, const DeviceInfo& dev);
Status validate(const SiluMulProblem& p);
// Strides as the kernel takes them (0 resolved to 2d / d): {x, out}.
struct SiluMulStrides {
  int64_t x, out;
};
SiluMulStrides kernelStrides(const SiluMulProblem& p);
// As for RMSNorm; includes the gate->up offset d * sizeof(dtype).
int64_t alignmentBytes(const SiluMulProblem& p);
int64_t siluMulBytes(const SiluMulProblem& p);  // read 2d, write d per row
// float64 reference: out = silu(x) * up, with the problem's strides.
void siluMulReference(const SiluMulProblem& p, const double* x, double* out);

// ------------------------------------------------------------------------------------------
// Copy peer: ktune_copy(dst, src, n_bytes). Moves 2 * n_bytes.
// ------------------------------------------------------------------------------------------
constexpr const char* kCopySource = "copy.cuh";
constexpr const char* kCopyEntry = "ktune_copy";
std::string_view copySource();
// THREADS {128..1024 step x2, multiples of the warp}, UNROLL {1,2,4,8}.
ConfigSpace copySpace(const RowwiseLimits& limits);
Config copyDefaultConfig(const RowwiseLimits& limits);
std::vector<std::pair<std::string, std::string>> copyDefines(const Config& c);
// grid = min(ceil(n / (16*THREADS*UNROLL)), multiprocessors * 8) (>= 1): a grid-stride copy.
LaunchShape copyLaunch(const Config& c, int64_t n_bytes, const DeviceInfo& dev);

// ------------------------------------------------------------------------------------------
// Host helpers (conversions: base/dtype.h, round-to-nearest-even as the device's).
// ------------------------------------------------------------------------------------------
// Value after a round trip through dtype.
double roundTo(RowDType t, double v);
// Packs doubles into dtype bytes (n elements) and back.
std::vector<unsigned char> pack(RowDType t, const std::vector<double>& v);
std::vector<double> unpack(RowDType t, const void* bytes, size_t n);

}  // namespace ktune::rowwise
