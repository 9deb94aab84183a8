#include "autotune/static_prune.h"

#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <memory>
#include <mutex>
#include <sstream>

#include "base/device.h"
#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/analysis/occupancy.h"
#include "compiler/hip/comgr.h"

namespace ktune {

namespace {

bool isAmd(const std::string& arch) { return Arch(arch).isAmd(); }

std::string fmt(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

// comgr is opened once per process (dlopen); nullptr when it is not installed.
const Comgr* comgr() {
  static std::shared_ptr<Comgr>* c = [] {
    auto r = Comgr::open();
    return new std::shared_ptr<Comgr>(r.ok() ? std::move(r).value() : nullptr);
  }();
  return c->get();
}

// Runs a disassembler on the binary written to a private temporary file; "" on any failure.
std::string runDisassembler(const std::vector<std::string>& argv_prefix, const std::string& binary,
                            const char* suffix) {
  std::string tmpl = "/tmp/ktune-prune-XXXXXX";
  if (!mkdtemp(tmpl.data())) return "";
  const std::string path = tmpl + "/kernel" + suffix;
  std::string out;
  if (writeFileAtomic(path, binary).ok()) {
    std::vector<std::string> argv = argv_prefix;
    argv.push_back(path);
    auto r = runProcess(argv, "", 60000);
    if (r.ok() && !r->signaled && r->exit_code == 0) out = std::move(r->out);
  }
  (void)removeTree(tmpl);
  return out;
}

std::string findTool(std::initializer_list<const char*> names) {
  for (const char* n : names) {
    std::string p = findProgram(n);
    if (!p.empty()) return p;
  }
  return "";
}

}  // namespace

std::optional<std::string> spillPruneReason(const ResourceUsage& u, bool amd) {
  if (!u.spills()) return std::nullopt;
  if (amd)
    return "spills " + std::to_string(u.vgpr_spill) + " VGPRs, " + std::to_string(u.sgpr_spill) +
           " SGPRs (scratch " + std::to_string(u.scratch_bytes) + " B)";
  return "spills " + std::to_string(u.spill_store_bytes) + " B stores, " +
         std::to_string(u.spill_load_bytes) + " B loads (stack " + std::to_string(u.stack_bytes) +
         " B)";
}

namespace {

std::optional<std::string> occupancyReason(const StaticPruneOptions& o, const CodeObject& co,
                                           const DeviceInfo& dev, const PruneLaunch& l,
                                           const std::string& arch) {
  const ResourceUsage& u = co.resources;
  const OccupancyLaunch launch{occupancyThreads(u, l.threads_per_block), l.dynamic_shared};
  const int threads = launch.threads_per_block;
  const int64_t shared = occupancySharedBytes(u, l.dynamic_shared);
  if (isAmd(arch)) {
    auto lim = amdArchLimits(arch);
    if (!lim.ok()) return std::nullopt;  // unknown arch: no basis to prune
    if (dev.shared_per_sm > 0 && dev.arch == arch) lim->lds_per_cu = dev.shared_per_sm;
    if (dev.warp_size > 0) lim->wave_size = dev.warp_size;
    const int wave = u.wave_size > 0 ? u.wave_size : lim->wave_size;
    const int waves = (threads + wave - 1) / wave;
    const std::string what = "VGPR " + std::to_string(u.vgpr) + " (AGPR " +
                             std::to_string(u.agpr) + " of them), LDS " + std::to_string(shared) + " B, " +
                             std::to_string(waves) + " waves/workgroup";
    auto occ = amdKernelOccupancy(*lim, u, launch);
    if (!occ.ok()) {
      if (occ.status().code() == Code::kOutOfResources)
        return "occupancy 0 waves/EU (" + what + ": " + occ.status().message() + ")";
      return std::nullopt;
    }
    if (occ->waves_per_eu < o.min_waves_per_eu)
      return "occupancy " + fmt(occ->waves_per_eu) + " waves/EU < " + fmt(o.min_waves_per_eu) +
             " (" + what + "; " + std::to_string(occ->vgpr_allocated) +
             " VGPRs allocated, limited by " + occ->limiter + ")";
    return std::nullopt;
  }
  auto lim = nvArchLimits(arch);
  if (!lim.ok()) return std::nullopt;
  if (dev.arch == arch) {  // the driver's numbers win over the table
    if (dev.regs_per_sm > 0) lim->regs_per_sm = dev.regs_per_sm;
    if (dev.max_threads_per_sm > 0) lim->max_threads_per_sm = dev.max_threads_per_sm;
    if (dev.max_blocks_per_sm > 0) lim->max_blocks_per_sm = dev.max_blocks_per_sm;
    if (dev.shared_per_sm > 0) lim->smem_per_sm = dev.shared_per_sm;
    if (dev.shared_per_block_optin > 0) lim->max_smem_per_block = dev.shared_per_block_optin;
  }
  const std::string what = "registers " + std::to_string(u.registers) + " x " +
                           std::to_string(threads) + " threads, shared " + std::to_string(shared) +
                           " B";
  auto occ = nvKernelOccupancy(*lim, u, launch);
  if (!occ.ok()) {
    if (occ.status().code() == Code::kOutOfResources)
      return "occupancy 0 blocks/SM (" + what + ": " + occ.status().message() + ")";
    return std::nullopt;
  }
  if (occ->blocks_per_sm < o.min_blocks_per_sm)
    return "occupancy " + std::to_string(occ->blocks_per_sm) + " blocks/SM < " +
           std::to_string(o.min_blocks_per_sm) + " (" + what + ", limited by " + occ->limiter + ")";
  if (o.min_warp_fraction > 0 && occ->occupancy + 1e-9 < o.min_warp_fraction)
    return "occupancy " + std::to_string(static_cast<int>(std::lround(occ->occupancy * 100))) +
           "% warps/SM < " +
           std::to_string(static_cast<int>(std::lround(o.min_warp_fraction * 100))) + "% (" +
           std::to_string(occ->blocks_per_sm) + " blocks/SM; " + what + ", limited by " +
           occ->limiter + ")";
  return std::nullopt;
}

}  // namespace

StaticPruneOptions staticPruneOptionsFrom(const Options& o) {
  StaticPruneOptions s;
  s.enabled = o.static_prune;
  return s;
}

bool hasMatrixInstruction(const IsaReport& r, const std::string& prefix) {
  if (prefix.empty()) return true;
  if (r.matrixCount(prefix) > 0) return true;
  if (r.kind == IsaKind::kSass) {
    if (prefix == "mma" || prefix.rfind("mma.", 0) == 0) return r.matrixCount("HMMA") > 0;
    if (prefix.rfind("wgmma", 0) == 0) return r.matrixCount("HGMMA") > 0;
  }
  return false;
}

std::string matrixPrefixForGemmKind(const std::string& kind) {
  if (kind == "mma" || kind == "skinny" || kind == "decode") return "mma";
  if (kind == "wgmma") return "wgmma";
  if (kind == "mfma") return "v_mfma";
  return "";
}

std::optional<IsaReport> isaReportOf(const CodeObject& co, bool disassemble, std::string* source) {
  // Dumps first (as analyzeCodeObject: a short text is a "not installed" line, not an ISA).
  for (auto [name, kind] : {std::pair<const char*, IsaKind>{"isa", IsaKind::kAmdgcn},
                            {"sass", IsaKind::kSass},
                            {"ptx", IsaKind::kPtx}}) {
    auto it = co.dumps.find(name);
    if (it == co.dumps.end() || it->second.size() < 200) continue;
    IsaReport r = analyzeIsa(it->second, kind);
    if (r.instructions > 0) {
      if (source) *source = name;
      return r;
    }
  }
  if (!disassemble || co.binary.empty()) return std::nullopt;
  auto accept = [&](const std::string& text, IsaKind kind,
                    const char* name) -> std::optional<IsaReport> {
    if (text.empty()) return std::nullopt;
    IsaReport r = analyzeIsa(text, kind);
    if (r.instructions == 0) return std::nullopt;
    if (source) *source = name;
    return r;
  };
  if (co.format == "hsaco" || isAmd(co.arch)) {
    if (const Comgr* c = comgr()) {
      auto text = c->disassemble(co.binary);
      if (text.ok())
        if (auto r = accept(*text, IsaKind::kAmdgcn, "comgr")) return r;
    }
    // comgr of an older ROCm does not know newer archs (ROCm 5.2 and gfx942): LLVM does.
    const std::string tool = findTool({"llvm-objdump-19", "llvm-objdump"});
    if (!tool.empty() && isAmd(co.arch))
      return accept(runDisassembler({tool, "-d", "--triple=amdgcn-amd-amdhsa", "--mcpu=" + co.arch},
                                    co.binary, ".hsaco"),
                    IsaKind::kAmdgcn, "llvm-objdump");
    return std::nullopt;
  }
  if (co.format == "cubin") {
    if (std::string t = findTool({"nvdisasm"}); !t.empty())
      if (auto r =
              accept(runDisassembler({t, "-c"}, co.binary, ".cubin"), IsaKind::kSass, "nvdisasm"))
        return r;
    if (std::string t = findTool({"cuobjdump"}); !t.empty())
      return accept(runDisassembler({t, "-sass"}, co.binary, ".cubin"), IsaKind::kSass,
                    "cuobjdump");
  }
  return std::nullopt;
}

std::optional<std::string> staticPruneReason(const StaticPruneOptions& o, const CodeObject& co,
                                             const DeviceInfo& dev, const PruneLaunch& launch,
                                             const std::string& matrix_prefix) {
  if (!o.enabled) return std::nullopt;
  const std::string arch = co.arch.empty() ? dev.arch : co.arch;
  if (auto why = spillPruneReason(co.resources, isAmd(arch))) return why;
  if (auto why = occupancyReason(o, co, dev, launch, arch)) return why;
  if (!matrix_prefix.empty()) {
    std::string src;
    auto isa = isaReportOf(co, o.disassemble, &src);
    if (isa && !hasMatrixInstruction(*isa, matrix_prefix))
      return "no " + matrix_prefix + " instruction in ISA (from " + src + ")";
  }
  return std::nullopt;
}

PruneFn makeStaticPruner(StaticPruneOptions opts, PruneLaunchFn launch) {
  return [opts = std::move(opts), launch = std::move(launch)](
             const Config& c, const CodeObject& co,
             const DeviceInfo& dev) -> std::optional<std::string> {
    if (!opts.enabled) return std::nullopt;
    PruneLaunch l;
    if (launch) l = launch(c, dev);
    const std::string prefix =
        opts.require_matrix_fn ? opts.require_matrix_fn(c) : opts.require_matrix;
    return staticPruneReason(opts, co, dev, l, prefix);
  };
}

}  // namespace ktune
