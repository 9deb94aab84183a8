#include "compiler/analysis/report.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/analysis/amd_metadata.h"
#include "compiler/resources_json.h"
#include "base/device.h"

namespace ktune {
namespace {

// The occupancy into `out`, or why there is none into the report's note.
template <class Occ>
void setOccupancy(const Expected<Occ>& o, Occ* out, KernelReport* r) {
  if (o.ok()) {
    *out = *o;
    r->has_occupancy = true;
  } else {
    r->occupancy_note = o.status().message();
  }
}

}  // namespace

KernelReport analyzeCodeObject(const CodeObject& co, int threads, int64_t dynamic_shared) {
  KernelReport r;
  r.arch = co.arch;
  r.compiler = co.compiler;
  r.entry = co.lowered_entry.empty() ? co.entry : co.lowered_entry;
  r.resources = co.resources;
  r.threads_per_block = occupancyThreads(co.resources, threads);
  r.dynamic_shared = dynamic_shared;
  const OccupancyLaunch launch{r.threads_per_block, dynamic_shared};
  if (Arch(co.arch).isAmd()) {
    auto l = amdArchLimits(co.arch);
    setOccupancy(l.ok() ? amdKernelOccupancy(*l, co.resources, launch)
                        : Expected<AmdOccupancy>(l.status()),
                 &r.amd, &r);
  } else {
    auto l = nvArchLimits(co.arch);
    setOccupancy(l.ok() ? nvKernelOccupancy(*l, co.resources, launch)
                        : Expected<NvOccupancy>(l.status()),
                 &r.nv, &r);
  }
  auto use = [&](const char* name, IsaKind kind) {
    auto it = co.dumps.find(name);
    if (r.has_isa || it == co.dumps.end() || it->second.size() < 200)
      return;  // a "not installed" line
    r.isa = analyzeIsa(it->second, kind);
    r.has_isa = r.isa.instructions > 0;
    if (r.has_isa) r.isa_source = name;
  };
  use("isa", IsaKind::kAmdgcn);
  if (auto it = co.dumps.find("isa"); it != co.dumps.end())
    r.llvm_occupancy = parseLlvmKernelInfo(it->second, r.entry).occupancy;
  use("sass", IsaKind::kSass);
  use("ptx", IsaKind::kPtx);
  return r;
}

std::string KernelReport::text() const {
  std::ostringstream o;
  const auto& u = resources;
  o << entry << " [" << arch << ", " << compiler << "]\n";
  if (Arch(arch).isAmd()) {
    o << "VGPR " << u.vgpr << ", AGPR " << u.agpr << ", SGPR " << u.sgpr << ", LDS "
      << u.shared_bytes << " B";
    if (dynamic_shared > 0) o << " + " << dynamic_shared << " B dynamic";
    o << ", scratch " << u.scratch_bytes << " B, spills vgpr " << u.vgpr_spill
      << " sgpr " << u.sgpr_spill << "\n";
    if (has_occupancy) {
      o << "occupancy " << amd.waves_per_eu << " waves/EU (" << threads_per_block
        << " threads, whole workgroups; LLVM's per-wave bound " << amd.llvm_waves_per_eu
        << "), limited by " << amd.limiter << "\n";
      o << "  " << amd.vgpr_allocated << " VGPRs allocated (.vgpr_count " << u.vgpr
        << ", AGPRs included), occ_vgpr " << amd.occ_vgpr << ", occ_sgpr " << amd.occ_sgpr
        << ", occ_lds "
        << (occupancySharedBytes(u, dynamic_shared) > 0 ? std::to_string(amd.occ_lds) : "-") << ", "
        << amd.workgroups_per_cu << " workgroups/CU\n";
    }
    if (llvm_occupancy >= 0)
      o << "  LLVM's own \"; Occupancy:\" in the assembly: " << llvm_occupancy << " waves/EU\n";
  } else {
    o << "registers " << u.registers << ", shared " << u.shared_bytes << " B";
    if (dynamic_shared > 0) o << " + " << dynamic_shared << " B dynamic";
    o << ", stack "
      << u.stack_bytes << " B, spill stores " << u.spill_store_bytes << " B, loads "
      << u.spill_load_bytes << " B\n";
    if (has_occupancy)
      o << "occupancy (" << threads_per_block << " threads): " << nv.blocks_per_sm << " blocks/SM, "
        << static_cast<int>(nv.occupancy * 100 + 0.5) << "% warps, limited by " << nv.limiter
        << "\n";
  }
  if (!has_occupancy) o << "occupancy: unknown (" << occupancy_note << ")\n";
  if (has_isa)
    o << "from " << isa_source << ":\n" << isa.text();
  else
    o << "no ISA dump analysed (compile with the isa, sass or ptx dump)\n";
  return o.str();
}

std::string KernelReport::toJson() const {
  nlohmann::json j;
  j["arch"] = arch;
  j["compiler"] = compiler;
  j["entry"] = entry;
  j["resources"] = resourcesToJson(resources);
  j["threads_per_block"] = threads_per_block;
  j["dynamic_shared_bytes"] = dynamic_shared;
  if (has_occupancy && Arch(arch).isAmd())
    j["occupancy"] = occupancyToJson(amd);
  else if (has_occupancy)
    j["occupancy"] = occupancyToJson(nv);
  else
    j["occupancy_note"] = occupancy_note;
  if (llvm_occupancy >= 0) j["llvm_occupancy"] = llvm_occupancy;
  if (has_isa) {
    j["isa_source"] = isa_source;
    j["isa"] = nlohmann::json::parse(isa.toJson());
  }
  return j.dump(2);
}

}  // namespace ktune
