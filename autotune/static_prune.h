// Static pruning: drop a compiled config before benchmarking when its compiler report already
// says it cannot be fast — it spills, its occupancy is below a threshold (zero: it cannot even
// launch), or the ISA lacks the matrix instruction the config exists for (the compiler fell back
// to scalar FMAs). Plugs into FamilyExtras::prune; the engine records each pruned candidate as
// "pruned: <reason>" in the tuning report and database, and never prunes every candidate.
//
//   f.prune = makeStaticPruner(staticPruneOptionsFrom(tuner.options().options), launchFn);
//
// Analysis uses what the code object has: resources always; the ISA from an "isa"/"sass"/"ptx"
// dump when the compile request asked for one, else (opt-out) by disassembling the binary
// (comgr or llvm-objdump for AMD code objects, nvdisasm/cuobjdump for cubins when installed).
// When no ISA can be had the matrix rule is skipped: "unknown" is never a reason to prune.
// Occupancy follows compiler/analysis/occupancy.h with the per-arch tables, overridden by the
// DeviceInfo fields the driver reported (registers, threads, blocks, shared memory per SM).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "base/config.h"
#include "base/options.h"
#include "compiler/analysis/isa_report.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"

namespace ktune {

struct StaticPruneOptions {
  // The one switch of static pruning (Options::static_prune, KTUNE_STATIC_PRUNE=0 turns it off):
  // false = the pruner never prunes. Spills are always a reason when it is on; the engine applies
  // the same spill rule (spillPruneReason) to every family under the same switch.
  bool enabled = true;
  // NVIDIA: resident blocks per SM for the launch's block size must be >= min_blocks_per_sm, and
  // active warps / max warps per SM >= min_warp_fraction (0 = no fraction check).
  int min_blocks_per_sm = 1;
  double min_warp_fraction = 0;
  // AMD: the MI300X guide's occupancy (waves per EU) must be >= min_waves_per_eu.
  double min_waves_per_eu = 1;
  // A matrix-instruction prefix that must appear in the ISA ("mma", "wgmma", "v_mfma"; PTX-style
  // "mma"/"wgmma" also match SASS HMMA/HGMMA). Empty = no check. require_matrix_fn, when set,
  // gives the prefix per config and overrides require_matrix.
  std::string require_matrix;
  std::function<std::string(const Config&)> require_matrix_fn;
  // When the code object carries no ISA dump, disassemble the binary for the matrix rule.
  bool disassemble = true;
};

// The launch facts occupancy depends on for a config (the prune hook sees no problem).
struct PruneLaunch {
  int threads_per_block = 0;   // 0: the kernel's max_threads_per_block, else 256
  int64_t dynamic_shared = 0;  // bytes added to the static shared/LDS at launch
};
using PruneLaunchFn = std::function<PruneLaunch(const Config&, const DeviceInfo&)>;
using PruneFn =
    std::function<std::optional<std::string>(const Config&, const CodeObject&, const DeviceInfo&)>;

// enabled = o.static_prune; everything else at its default.
StaticPruneOptions staticPruneOptionsFrom(const Options& o);

// The FamilyExtras::prune callback (autotune/family.h): nullopt to keep a config, else the reason
// without the engine's "pruned: " prefix, e.g. "occupancy 0 blocks/SM (registers 255 x 512 threads: ...)",
// "no v_mfma instruction in ISA", "spills 48 B stores, 48 B loads". `launch` may be null (then
// the kernel's own bound / 256 threads and no dynamic shared memory). Never fails; thread-safe
// (the callback may be called from several threads; disassembly tools are run per call).
PruneFn makeStaticPruner(StaticPruneOptions opts, PruneLaunchFn launch);

// One decision, for callers outside the engine (CLI, tests). `matrix_prefix` overrides
// opts.require_matrix / require_matrix_fn (which need a Config). Same contract as the callback.
std::optional<std::string> staticPruneReason(const StaticPruneOptions& opts, const CodeObject& co,
                                             const DeviceInfo& dev, const PruneLaunch& launch,
                                             const std::string& matrix_prefix);

// The ISA report of a code object: from its isa/sass/ptx dump, else (disassemble = true) from a
// disassembly of the binary. nullopt when none can be had; *source says "isa", "sass", "ptx",
// "comgr", "llvm-objdump", "nvdisasm" or "cuobjdump". Thread-safe.
std::optional<IsaReport> isaReportOf(const CodeObject& co, bool disassemble, std::string* source);

// The spill rule, shared by the pruner and the engine: nullopt when `u` shows no spills, else
// "spills 48 B stores, 40 B loads (stack 48 B)" (NVIDIA) or "spills 12 VGPRs, 0 SGPRs (scratch
// 48 B)" (AMD, `amd` true).
std::optional<std::string> spillPruneReason(const ResourceUsage& u, bool amd);

// True when `report` has a matrix instruction starting with `prefix` (PTX-style "mma"/"wgmma"
// also match SASS "HMMA"/"HGMMA"; "v_mfma" matches every MFMA shape and type).
bool hasMatrixInstruction(const IsaReport& report, const std::string& prefix);

// Matrix prefix a GEMM kernel kind must show: "mma" and "skinny" -> "mma", "wgmma" -> "wgmma",
// "mfma" -> "v_mfma"; anything else -> "" (no check).
std::string matrixPrefixForGemmKind(const std::string& kind);

}  // namespace ktune
