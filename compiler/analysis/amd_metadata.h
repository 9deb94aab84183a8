// AMDGPU code-object metadata (the "amdhsa.kernels" list) as plain key/value maps, read either
// from comgr or from the YAML text of an .amdgpu_metadata block (clang -S, llvm-readelf --notes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/compiler.h"

namespace ktune {

struct AmdKernelMeta {
  std::string name;                           // .name: the (mangled) kernel symbol
  std::string symbol;                         // .symbol: "<name>.kd"
  std::map<std::string, std::string> fields;  // scalar fields, keys with their leading '.'
};

// Parses the kernels of a YAML metadata document; nested lists (.args) are skipped. Returns an
// empty vector when there is no "amdhsa.kernels:" list. Never fails on odd input.
std::vector<AmdKernelMeta> parseAmdgpuMetadataYaml(const std::string& text);
// The kernel named `name` (mangled), or, when `name` is empty or absent and there is exactly one
// kernel, that one; nullptr otherwise.
const AmdKernelMeta* findAmdKernel(const std::vector<AmdKernelMeta>& kernels,
                                   const std::string& name);
// .vgpr_count, .agpr_count, .sgpr_count, .vgpr_spill_count, .sgpr_spill_count,
// .group_segment_fixed_size, .private_segment_fixed_size, .wavefront_size,
// .max_flat_workgroup_size -> ResourceUsage (missing fields stay 0).
ResourceUsage amdResources(const AmdKernelMeta& k);

// LLVM's own account of a kernel: the "; Kernel info:" comment block clang -S writes after each
// kernel (AMDGPUAsmPrinter). -1 for a line that is absent.
struct LlvmKernelInfo {
  int num_vgprs = -1, num_agprs = -1, total_vgprs = -1, num_sgprs = -1;
  int64_t lds_bytes = -1, scratch_bytes = -1;
  int occupancy = -1;  // "; Occupancy: N" waves per EU
  bool found() const { return occupancy >= 0; }
};
// The block that follows the label of kernel `name` (mangled); with an empty name the first block.
// Never fails: fields stay -1 when the assembly has no such block (comgr disassembly has none).
LlvmKernelInfo parseLlvmKernelInfo(const std::string& assembly, const std::string& name);

}  // namespace ktune
