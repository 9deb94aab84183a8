#include "compiler/analysis/occupancy.h"

#include <algorithm>
#include <climits>

namespace ktune {
namespace {

int64_t roundUp(int64_t v, int64_t unit) { return unit <= 0 ? v : (v + unit - 1) / unit * unit; }

std::string baseArch(const std::string& arch) { return arch.substr(0, arch.find(':')); }

}  // namespace

Expected<AmdArchLimits> amdArchLimits(const std::string& arch) {
  AmdArchLimits l;
  l.arch = baseArch(arch);
  if (l.arch == "gfx90a" || l.arch == "gfx940" || l.arch == "gfx941" || l.arch == "gfx942") {
    // CDNA2/3: 512 unified VGPR+AGPR per lane, granule 8 (the MI300X guide rounds 170 -> 176), 8
    // waves per EU, 64 KiB LDS per CU.
    return l;
  }
  if (l.arch == "gfx950") {
    // CDNA4 (MI350): as CDNA3 but 160 KiB LDS per CU.
    l.lds_per_cu = 160 * 1024;
    return l;
  }
  if (l.arch == "gfx908") {
    // CDNA1 (MI100): 256 arch VGPRs + a separate 256 AGPR file, granule 4, 10 waves per EU.
    l.vgprs_per_simd = 256;
    l.vgpr_granule = 4;
    l.unified_agpr = false;
    l.max_waves_per_simd = 10;
    return l;
  }
  return Status::Unsupported("no occupancy table for AMD arch '" + arch +
                             "' (known: gfx908, gfx90a, gfx940, gfx941, gfx942, gfx950)");
}

int amdTotalVgprs(const AmdArchLimits& l, int arch_vgpr, int agpr) {
  if (!l.unified_agpr) return std::max(arch_vgpr, agpr);
  return agpr > 0 ? static_cast<int>(roundUp(arch_vgpr, 4)) + agpr : arch_vgpr;
}

Expected<AmdOccupancy> amdOccupancy(const AmdArchLimits& l, int vgpr, int agpr, int64_t lds_bytes,
                                    int waves_per_workgroup, int sgpr) {
  if (waves_per_workgroup < 1 || vgpr < 0 || agpr < 0 || lds_bytes < 0 || sgpr < 0)
    return Status::InvalidArgument(
        "occupancy needs waves_per_workgroup >= 1 and non-negative "
        "VGPR/AGPR/SGPR/LDS counts");
  AmdOccupancy o;
  // .vgpr_count already counts the AGPRs of a unified file; gfx908's separate AGPR file limits
  // on its own.
  const int regs = l.unified_agpr ? vgpr : std::max(vgpr, agpr);
  o.vgpr_allocated = static_cast<int>(roundUp(std::max(regs, 1), l.vgpr_granule));
  if (o.vgpr_allocated > l.vgprs_per_simd)
    return Status::OutOfResources(std::to_string(o.vgpr_allocated) + " VGPRs per lane exceed the " +
                                  std::to_string(l.vgprs_per_simd) + " of " + l.arch);
  // Below one granule LLVM grants every wave slot (getNumWavesPerEUWithNumVGPRs).
  o.occ_vgpr = regs < l.vgpr_granule ? l.max_waves_per_simd
                                     : std::min(l.max_waves_per_simd,
                                                l.vgprs_per_simd / o.vgpr_allocated);
  // GCN (gfx8/gfx9) SGPR limit, as LLVM's getOccupancyWithNumSGPRs: <= 80: 10, <= 88: 9,
  // <= 100: 8, else 7 waves.
  o.occ_sgpr = sgpr <= 80 ? 10 : sgpr <= 88 ? 9 : sgpr <= 100 ? 8 : 7;
  o.occ_sgpr = std::min(o.occ_sgpr, l.max_waves_per_simd);
  if (lds_bytes > l.lds_per_cu)
    return Status::OutOfResources(std::to_string(lds_bytes) + " bytes of LDS exceed the " +
                                  std::to_string(l.lds_per_cu) + " per CU of " + l.arch);
  o.occ_lds = lds_bytes == 0 ? INT_MAX : static_cast<int>(l.lds_per_cu / lds_bytes);
  const int occ_regs = std::min(o.occ_vgpr, o.occ_sgpr);
  const int by_regs = occ_regs * l.simds_per_cu / waves_per_workgroup;
  if (by_regs == 0)
    return Status::OutOfResources("a workgroup of " + std::to_string(waves_per_workgroup) +
                                  " waves does not fit in one CU at " + std::to_string(occ_regs) +
                                  " waves per EU");
  o.workgroups_per_cu = std::min(by_regs, o.occ_lds);
  o.waves_per_eu = static_cast<double>(o.workgroups_per_cu) * waves_per_workgroup / l.simds_per_cu;
  if (o.occ_lds < by_regs)
    o.limiter = "lds";
  else if (o.occ_sgpr < o.occ_vgpr)
    o.limiter = "sgpr";
  else
    o.limiter = o.occ_vgpr < l.max_waves_per_simd ? "vgpr" : "waves";
  // LLVM: workgroups per CU by LDS, capped by wave slots and the 16 barriers of a CU (one-wave
  // workgroups need no barrier), spread over the EUs rounding up.
  const int slots = l.max_waves_per_simd * l.simds_per_cu;
  const int wg_cap = waves_per_workgroup == 1 ? slots : std::min(slots / waves_per_workgroup, 16);
  const int64_t groups = std::min<int64_t>(wg_cap, o.occ_lds);
  const int by_lds = static_cast<int>(std::min<int64_t>(
      l.max_waves_per_simd,
      (groups * waves_per_workgroup + l.simds_per_cu - 1) / l.simds_per_cu));
  o.llvm_waves_per_eu = std::min({occ_regs, by_lds, l.max_waves_per_simd});
  return o;
}

Expected<NvArchLimits> nvArchLimits(const std::string& arch) {
  std::string a = arch;
  while (!a.empty() && (a.back() == 'a' || a.back() == 'f')) a.pop_back();
  NvArchLimits l;
  l.arch = arch;
  // From the CUDA programming guide's "Technical Specifications per Compute Capability".
  if (a == "sm_80") {  // A100: 164 KiB shared per SM, 163 KiB per block
    l.smem_per_sm = 164 * 1024;
    l.max_smem_per_block = 163 * 1024;
    return l;
  }
  if (a == "sm_86" || a == "sm_89") {  // GA10x / AD10x: 48 warps, 100 KiB per SM, 99 per block
    l.max_threads_per_sm = 1536;
    l.max_warps_per_sm = 48;
    l.max_blocks_per_sm = a == "sm_86" ? 16 : 24;
    l.smem_per_sm = 100 * 1024;
    l.max_smem_per_block = 99 * 1024;
    return l;
  }
  if (a == "sm_90") {  // H100: 228 KiB shared per SM, 227 KiB per block
    l.smem_per_sm = 228 * 1024;
    l.max_smem_per_block = 227 * 1024;
    return l;
  }
  return Status::Unsupported("no occupancy table for NVIDIA arch '" + arch +
                             "' (known: sm_80, sm_86, sm_89, sm_90, sm_90a)");
}

Expected<NvOccupancy> nvOccupancy(const NvArchLimits& l, int regs, int threads, int64_t smem) {
  if (threads < 1 || regs < 0 || smem < 0)
    return Status::InvalidArgument(
        "occupancy needs threads_per_block >= 1 and non-negative "
        "register/shared-memory counts");
  if (threads > 1024 || threads > l.max_threads_per_sm)
    return Status::OutOfResources(std::to_string(threads) + " threads per block exceed the limit");
  if (regs > l.max_regs_per_thread)
    return Status::OutOfResources(std::to_string(regs) + " registers per thread exceed " +
                                  std::to_string(l.max_regs_per_thread));
  if (smem > l.max_smem_per_block)
    return Status::OutOfResources(std::to_string(smem) + " bytes of shared memory exceed the " +
                                  std::to_string(l.max_smem_per_block) + " per block of " + l.arch);
  NvOccupancy o;
  const int warps = (threads + 31) / 32;
  o.by_threads = std::min(l.max_threads_per_sm / (warps * 32), l.max_warps_per_sm / warps);
  o.by_blocks = l.max_blocks_per_sm;
  if (regs == 0) {
    o.by_regs = INT_MAX;
  } else {
    const int64_t per_warp = roundUp(int64_t{regs} * 32, l.reg_alloc_unit);
    const int64_t warps_per_part = (l.regs_per_sm / l.reg_sub_partitions) / per_warp;
    o.by_regs = static_cast<int>(warps_per_part * l.reg_sub_partitions / warps);
  }
  const int64_t per_block = roundUp(smem + l.smem_reserved_per_block, l.smem_granule);
  o.by_smem = static_cast<int>(l.smem_per_sm / per_block);
  o.blocks_per_sm = std::min({o.by_threads, o.by_blocks, o.by_regs, o.by_smem});
  if (o.blocks_per_sm == 0)
    return Status::OutOfResources("one block of " + std::to_string(threads) + " threads with " +
                                  std::to_string(regs) + " registers does not fit on an SM");
  o.limiter = o.blocks_per_sm == o.by_regs      ? "registers"
              : o.blocks_per_sm == o.by_smem    ? "shared"
              : o.blocks_per_sm == o.by_threads ? "threads"
                                                : "blocks";
  o.occupancy = static_cast<double>(o.blocks_per_sm * warps) / l.max_warps_per_sm;
  return o;
}

int64_t occupancySharedBytes(const ResourceUsage& u, int64_t dynamic_shared) {
  return u.shared_bytes + dynamic_shared;
}

int occupancyThreads(const ResourceUsage& u, int threads) {
  if (threads > 0) return threads;
  return u.max_threads_per_block > 0 ? u.max_threads_per_block : 256;
}

Expected<AmdOccupancy> amdKernelOccupancy(const AmdArchLimits& l, const ResourceUsage& u,
                                          const OccupancyLaunch& launch) {
  const int wave = u.wave_size > 0 ? u.wave_size : l.wave_size;
  const int threads = occupancyThreads(u, launch.threads_per_block);
  const int64_t lds = occupancySharedBytes(u, launch.dynamic_shared);
  KTUNE_ASSIGN_OR_RETURN(AmdOccupancy o,
                         amdOccupancy(l, u.vgpr, u.agpr, lds, (threads + wave - 1) / wave, u.sgpr));
  const int max_wg = u.max_threads_per_block;
  if (max_wg > 0 && max_wg != threads) {
    auto w = amdOccupancy(l, u.vgpr, u.agpr, lds, (max_wg + wave - 1) / wave, u.sgpr);
    if (w.ok()) o.llvm_waves_per_eu = w->llvm_waves_per_eu;
  }
  return o;
}

Expected<NvOccupancy> nvKernelOccupancy(const NvArchLimits& l, const ResourceUsage& u,
                                        const OccupancyLaunch& launch) {
  return nvOccupancy(l, u.registers, occupancyThreads(u, launch.threads_per_block),
                     occupancySharedBytes(u, launch.dynamic_shared));
}

}  // namespace ktune
