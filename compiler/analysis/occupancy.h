// Occupancy from a compiler's resource report, without a GPU.
//
// AMD follows the MI300X workload-optimization guide ("Compute the occupancy of a kernel"):
//   occ_vgpr = waves per EU (SIMD) that the VGPR file allows, from the allocation-rounded count;
//   occ_lds  = floor(lds_per_cu / LDS bytes per workgroup) workgroups per CU;
//   occ      = min(floor(occ_vgpr * simds / nW), occ_lds) * nW / simds  waves per EU,
// for nW waves per workgroup. NVIDIA follows the CUDA occupancy calculator: blocks per SM limited
// by registers (per warp, rounded to the allocation unit, per SM sub-partition), shared memory
// (rounded to the allocation granularity, plus the per-block reservation), threads and blocks.
// Hardware numbers come from the per-arch tables below (documented per entry) or from the caller.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace ktune {

struct AmdArchLimits {
  std::string arch;
  int wave_size = 64;
  int simds_per_cu = 4;        // EUs per CU
  int max_waves_per_simd = 8;  // hardware wave slots per EU
  int vgprs_per_simd = 512;    // per lane; gfx90a/gfx942: unified VGPR+AGPR file
  int vgpr_granule = 8;        // allocation unit (registers per lane)
  bool unified_agpr = true;    // AGPRs come out of the same file (placed after the 4-aligned VGPRs)
  int64_t lds_per_cu = 65536;  // bytes
};

// gfx908 (MI100), gfx90a (MI200), gfx940/941/942 (MI300), gfx950 (MI350). kUnsupported otherwise.
Expected<AmdArchLimits> amdArchLimits(const std::string& arch);

struct AmdOccupancy {
  int vgpr_allocated = 0;  // per lane, after unified-file placement and granule rounding
  int occ_vgpr = 0;        // waves per EU allowed by VGPRs
  int occ_lds = 0;         // workgroups per CU allowed by LDS (large when LDS = 0)
  int workgroups_per_cu = 0;
  double waves_per_eu = 0;  // the guide's occ
  std::string limiter;      // "vgpr", "lds" or "waves"
};

// kInvalidArgument for waves_per_workgroup < 1 or negative counts; kOutOfResources when one
// workgroup cannot fit (VGPRs above the file or LDS above the CU's).
Expected<AmdOccupancy> amdOccupancy(const AmdArchLimits& limits, int vgpr, int agpr,
                                    int64_t lds_bytes, int waves_per_workgroup);

struct NvArchLimits {
  std::string arch;
  int max_threads_per_sm = 2048;
  int max_warps_per_sm = 64;
  int max_blocks_per_sm = 32;
  int regs_per_sm = 65536;
  int reg_sub_partitions = 4;  // register file split per SM sub-partition (scheduler)
  int reg_alloc_unit = 256;    // registers per warp are allocated in these units
  int max_regs_per_thread = 255;
  int64_t smem_per_sm = 0;                 // configurable maximum (bytes)
  int64_t max_smem_per_block = 0;          // opt-in maximum (bytes)
  int64_t smem_reserved_per_block = 1024;  // sm_80+: 1 KiB reserved by the system per block
  int64_t smem_granule = 128;
};

// sm_80 (A100), sm_86, sm_89, sm_90/sm_90a (H100). kUnsupported otherwise.
Expected<NvArchLimits> nvArchLimits(const std::string& arch);

struct NvOccupancy {
  int blocks_per_sm = 0;
  int by_regs = 0, by_smem = 0, by_threads = 0, by_blocks = 0;
  double occupancy = 0;  // active warps / max warps per SM
  std::string limiter;   // "registers", "shared", "threads" or "blocks"
};

// smem_bytes = static + dynamic shared memory per block. kInvalidArgument for bad counts;
// kOutOfResources when one block cannot fit (threads, registers or shared memory).
Expected<NvOccupancy> nvOccupancy(const NvArchLimits& limits, int regs_per_thread,
                                  int threads_per_block, int64_t smem_bytes);

}  // namespace ktune
