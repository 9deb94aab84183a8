// Kernels written in MLIR (templates/mlir/*.mlir): RMSNorm and SiLU·Mul as gpu.modules whose
// config (dtype, vector width, threads, rows per block) is substituted into the text, the way a
// compiler generating one module per config hands them to ktune. Compile the text with a
// CompileRequest of language Language::kMlir (compiler/compiler.h); the IR front door lowers it
// to NVVM or ROCDL. Pure text work; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace ktune::templates {

struct MlirRowwiseConfig {
  std::string dtype = "bf16";  // bf16, f16, f32
  int vec = 8;                 // elements per access: vec * sizeof(dtype) <= 16, power of two
  int threads = 256;           // per block, a multiple of the warp (32 on sm_*, 64 on gfx*)
  int rows_per_block = 1;
  std::string toString() const;  // "bf16 VEC=8 THREADS=256 ROWS_PER_BLOCK=1"
};

// "rmsnorm", "silu_mul".
std::vector<std::string> mlirKernelNames();
// The kernel's symbol: "ktune_rmsnorm_mlir", "ktune_silu_mul_mlir".
std::string mlirKernelEntry(const std::string& name);
// The module for `arch` (its vendor sets the warp size) with `c` substituted. kNotFound for an
// unknown kernel; kInvalidArgument naming the rule a config breaks.
Expected<std::string> mlirKernelSource(const std::string& name, const std::string& arch,
                                       const MlirRowwiseConfig& c);
// The file name of the module of `name` with config `c` lowered for `arch` to `ext` ("ptx"):
// "rmsnorm.sm_90a.bf16.v8.t256.r1.ptx". What dev/mlir_lower.sh writes and what the GPU test and
// bench read on a machine without mlir-opt-19.
std::string mlirKernelFileName(const std::string& name, const std::string& arch,
                               const MlirRowwiseConfig& c, const std::string& ext);
// Every valid config of the space VEC {2, 4, 8} x THREADS {64, 128, 256, 512} x
// ROWS_PER_BLOCK {1, 2, 4} for `dtype` on `arch`; the row length must be a multiple of VEC.
std::vector<MlirRowwiseConfig> mlirRowwiseConfigs(const std::string& arch,
                                                  const std::string& dtype = "bf16");

}  // namespace ktune::templates
