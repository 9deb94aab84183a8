// Kernels written in MLIR (templates/mlir/*.mlir): RMSNorm and SiLU·Mul as gpu.modules whose
// config (dtype, vector width, threads, rows per block, register items) is substituted into the
// text, the way a compiler generating one module per config hands them to ktune. Compile the text with a
// CompileRequest of language Language::kMlir (compiler/compiler.h); the IR front door lowers it
// to NVVM or ROCDL. Pure text work; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/device.h"
#include "base/status.h"

namespace ktune::templates {

struct MlirRowwiseConfig {
  std::string dtype = "bf16";  // bf16, f16, f32
  int vec = 8;                 // elements per access: vec * sizeof(dtype) <= 16, power of two
  int threads = 256;           // per row, a multiple of the warp (32 on sm_*, 64 on gfx*)
  int rows_per_block = 1;      // rmsnorm: block = THREADS x ROWS_PER_BLOCK; silu_mul: a loop
  // rmsnorm only: vectors per thread held in registers between the sum and the scaling (0..8);
  // the rest of a longer row is read twice. Chosen from the row length: mlirRmsNormItems.
  int items = 0;
  std::string toString() const;  // "bf16 VEC=8 THREADS=256 ROWS_PER_BLOCK=1[ ITEMS=2]"
};

// The most vectors per thread the MLIR RMSNorm keeps in registers (as the C++ template's NITER).
constexpr int kMlirRmsNormMaxItems = 8;

// "rmsnorm", "silu_mul".
std::vector<std::string> mlirKernelNames();
// The kernel's symbol: "ktune_rmsnorm_mlir", "ktune_silu_mul_mlir".
std::string mlirKernelEntry(const std::string& name);
// The module for `arch` (its vendor sets the warp size) with `c` substituted. kNotFound for an
// unknown kernel; kInvalidArgument naming the rule a config breaks.
Expected<std::string> mlirKernelSource(const std::string& name, const std::string& arch,
                                       const MlirRowwiseConfig& c);
// The file name of the module of `name` with config `c` lowered for `arch` to `ext` ("ptx"):
// "rmsnorm.sm_90a.bf16.v8.t256.r1.i2.ptx" (".iN" only when items > 0). What dev/mlir_lower.sh
// writes and what the GPU test and bench read on a machine without mlir-opt-19.
std::string mlirKernelFileName(const std::string& name, const std::string& arch,
                               const MlirRowwiseConfig& c, const std::string& ext);
// Every valid config of kernel `name` in the space VEC {2, 4, 8} x THREADS {64, 128, 256, 512} x
// ROWS_PER_BLOCK {1, 2, 4} for `dtype` on `arch` (rmsnorm: THREADS * ROWS_PER_BLOCK <= 1024, and
// items 0: set them per row length); the row length must be a multiple of VEC.
std::vector<MlirRowwiseConfig> mlirRowwiseConfigs(const std::string& name, const std::string& arch,
                                                  const std::string& dtype = "bf16");
// The register items for rows of `d` elements: ceil(d / (VEC * THREADS)) rounded up to a power of
// two (items past the row are masked), at most kMlirRmsNormMaxItems (the rest loops). Powers of
// two keep the number of modules per config small (1, 2, 4, 8).
int mlirRmsNormItems(int64_t d, const MlirRowwiseConfig& c);
// The launch of kernel `name` with config `c` on `rows` rows of `d` elements (rmsnorm: d per row;
// silu_mul: d output columns). rmsnorm: grid ceil(rows / ROWS_PER_BLOCK), block THREADS x
// ROWS_PER_BLOCK; silu_mul: grid ceil(d / (VEC * THREADS)) x ceil(rows / ROWS_PER_BLOCK), block
// THREADS.
struct MlirLaunchShape {
  Dim3 grid, block;
};
MlirLaunchShape mlirKernelLaunch(const std::string& name, const MlirRowwiseConfig& c, int64_t rows,
                                 int64_t d);
// `c` with the items for rows of `d` elements (rmsnorm), or as it is (other kernels).
MlirRowwiseConfig mlirConfigFor(const std::string& name, int64_t d, MlirRowwiseConfig c);

}  // namespace ktune::templates
