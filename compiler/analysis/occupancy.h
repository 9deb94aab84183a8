// Occupancy from a compiler's resource report, without a GPU.
//
// AMD follows the MI300X workload-optimization guide ("Compute the occupancy of a kernel"):
//   occ_vgpr = waves per EU (SIMD) that the VGPR file allows, from the allocation-rounded count
//              of the kernel descriptor's .vgpr_count (on gfx90a/gfx94x that count already holds
//              the AGPRs: LLVM's TotalNumVgprs = align(VGPRs, 4) + AGPRs);
//   occ_lds  = floor(lds_per_cu / LDS bytes per workgroup) workgroups per CU;
//   occ      = min(floor(occ_vgpr * simds / nW), occ_lds) * nW / simds  waves per EU,
// for nW waves per workgroup. That is how many waves really are resident: whole workgroups only.
// LLVM's own figure (the "; Occupancy:" comment of clang -S, AMDGPUAsmPrinter) is a per-wave
// bound instead: min(occ_vgpr, occ_sgpr, ceil(min(workgroups per CU by LDS, barrier limit) * nW /
// 4)), clamped to the wave slots. Both are computed (waves_per_eu and llvm_waves_per_eu); they
// differ when nW does not divide occ_vgpr * 4 (e.g. 8 waves per workgroup at 3 waves/EU by VGPRs:
// guide 2, LLVM 3). NVIDIA follows the CUDA occupancy calculator: blocks per SM limited
// by registers (per warp, rounded to the allocation unit, per SM sub-partition), shared memory
// (rounded to the allocation granularity, plus the per-block reservation), threads and blocks.
// Hardware numbers come from the per-arch tables below (documented per entry) or from the caller.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "compiler/compiler.h"

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
  int vgpr_allocated = 0;  // per lane, after granule rounding
  int occ_vgpr = 0;        // waves per EU allowed by VGPRs
  int occ_sgpr = 0;        // waves per EU allowed by SGPRs (GCN: > 100 SGPRs cost waves)
  int occ_lds = 0;         // workgroups per CU allowed by LDS (large when LDS = 0)
  int workgroups_per_cu = 0;
  double waves_per_eu = 0;  // the guide's occ (whole workgroups; SGPR limit applied too)
  int llvm_waves_per_eu = 0;  // LLVM's "; Occupancy:" bound (see the top of this file)
  std::string limiter;        // "vgpr", "sgpr", "lds" or "waves"
};

// `vgpr` is the descriptor's .vgpr_count (what LLVM calls TotalNumVgprs): on unified-file archs it
// already includes the AGPRs, so `agpr` is not added again; on gfx908 (separate files) the larger
// of the two limits. `sgpr` is .sgpr_count (0: not known, no SGPR limit). kInvalidArgument for
// waves_per_workgroup < 1 or negative counts; kOutOfResources when one workgroup cannot fit
// (VGPRs above the file or LDS above the CU's).
Expected<AmdOccupancy> amdOccupancy(const AmdArchLimits& limits, int vgpr, int agpr,
                                    int64_t lds_bytes, int waves_per_workgroup, int sgpr = 0);
// The descriptor's .vgpr_count from raw counts of architectural VGPRs and AGPRs (as LLVM sums
// them): unified file: align(vgpr, 4) + agpr (when agpr > 0); separate files: max(vgpr, agpr).
int amdTotalVgprs(const AmdArchLimits& limits, int arch_vgpr, int agpr);

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

// The launch facts occupancy depends on besides the code object.
struct OccupancyLaunch {
  int threads_per_block = 0;   // 0: the kernel's max_threads_per_block, else 256
  int64_t dynamic_shared = 0;  // shared/LDS bytes the launch requests on top of the static part
};

// The shared memory / LDS one block or workgroup holds, which occupancy is computed from: the
// kernel's static part as its code object reports it (ResourceUsage::shared_bytes) plus the
// dynamic part the launch requests, each counted once. `dynamic_shared` is the launch's own
// request (LaunchPlan::shared_bytes, gemm::launchSharedBytes), never a template's count of the
// kernel's whole LDS: a kernel whose LDS is static (the MFMA GEMM) launches with 0. Every
// occupancy ktune reports (compile --report, explain, static ranking and pruning, the tuner)
// goes through here.
int64_t occupancySharedBytes(const ResourceUsage& u, int64_t dynamic_shared);
// The block size occupancy is computed for: `threads` when > 0, else the kernel's bound, else 256.
int occupancyThreads(const ResourceUsage& u, int threads);

// A compiled kernel's occupancy for a launch, every count from its code object (VGPRs with the
// AGPRs, SGPRs, wave size, LDS through occupancySharedBytes). The LLVM-style bound assumes the
// kernel's largest workgroup (.max_flat_workgroup_size), as LLVM's "; Occupancy:" does, and the
// same LDS. Errors as amdOccupancy / nvOccupancy.
Expected<AmdOccupancy> amdKernelOccupancy(const AmdArchLimits& limits, const ResourceUsage& u,
                                          const OccupancyLaunch& launch);
Expected<NvOccupancy> nvKernelOccupancy(const NvArchLimits& limits, const ResourceUsage& u,
                                        const OccupancyLaunch& launch);

}  // namespace ktune
