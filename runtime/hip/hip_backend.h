// ktune HIP backend — ktune::Backend over the HIP module API, opened with
// dlopen("libamdhip64.so", then ".so.6", ".so.5").
//
// The backend itself is created with openHipBackend() (runtime/backend.h). This header exposes the
// pure helpers it is built from so they can be tested without a GPU.
//
// What was verified, and what was not (read before trusting this on hardware):
// - There is no AMD GPU anywhere in this project's machines. The backend compiles, loads Debian's
//   ROCm 5.2 libamdhip64.so.5 and, with no GPU, returns kUnavailable ("HIP runtime found but no
//   AMD GPU (hipGetDeviceCount: hipErrorNoDevice ...)") in well under a millisecond after the
//   ~30 ms dlopen, printing nothing. Loading the library has no other visible side effect.
// - Nothing past device discovery has run on AMD hardware: device queries, modules, launches,
//   events and occupancy are written against the ROCm 5.2 header (/usr/include/hip) and the
//   ROCm 6.x/7.x header (ROCm/rocm-systems, projects/hip/include/hip/hip_runtime_api.h) and are
//   unexecuted.
// - hipDeviceAttribute_t: every value this backend uses is identical in ROCm 5.2 and 6.x/7.x
//   (checked enumerator by enumerator; 6.0 only renamed Name/Uuid/Arch/GcnArch/GcnArchName to
//   Unused1..5 at the same positions). hipAttributeTable() still keys the table on the runtime's
//   major version so a future renumbering is a one-line change, and refuses runtimes before 5.
// - hipDeviceProp_t's layout changed in 6.0 (hipGetDevicePropertiesR0600). The backend only needs
//   gcnArchName from it: offset 396 in the 5.x struct (offsetof on the 5.2 header), 1160 in the
//   R0600 struct (offsetof on a transcription of the 6.x header). It calls the properties function
//   on an oversized buffer, checks that the expected offset holds "gfx...", and otherwise scans
//   the buffer for a "gfx" name, so a layout surprise cannot read out of bounds or misreport.
// - A GPU memory fault on AMD normally makes the HSA runtime abort the process ("Memory access
//   fault by GPU"); checkError() cannot turn that into a Status. Isolate untrusted candidates in a
//   child process.
#pragma once

#include <string>

#include "base/status.h"

namespace ktune {

// "gfx90a" from "gfx90a:sramecc+:xnack-" (target features dropped); "" when `gcn_arch_name` does
// not start with "gfx". Thread-safe (pure).
std::string hipArchFromGcnArchName(const std::string& gcn_arch_name);

// "5.2.21153" from hipRuntimeGetVersion's 50221153 (major*10^7 + minor*10^5 + patch).
// Thread-safe (pure).
std::string hipVersionString(int runtime_version);

// hipDeviceAttribute_t values this backend queries, for one HIP runtime major version.
struct HipAttributeTable {
  int clock_rate, l2_cache_size, max_blocks_per_mp, max_block_dim_x, max_block_dim_y,
      max_block_dim_z, max_grid_dim_x, max_grid_dim_y, max_grid_dim_z, max_threads_per_block,
      max_threads_per_mp, memory_bus_width, memory_clock_rate, multiprocessor_count,
      max_registers_per_block, max_registers_per_mp, max_shared_per_block, shared_per_block_optin,
      shared_per_mp, warp_size, max_shared_per_mp_amd;
};

// The table for runtime major version `major` (5, 6, 7, ...). kUnsupported for major < 5 (ROCm
// 4.x numbered the enum differently and is not supported). Thread-safe (pure).
Expected<HipAttributeTable> hipAttributeTable(int major);

// Maps a hipError_t to a ktune Code, with the same rules as cudaResultCode (HIP reuses CUDA's
// numbers): memory faults -> kDeviceFault, no device -> kUnavailable, etc. Thread-safe (pure).
Code hipResultCode(int result, Code fallback);

}  // namespace ktune
