// One GEMM kernel as templates/gemm.cc sees it: a descriptor per kernel folder
// (templates/gemm/<kind>/<kind>.{cuh,cc}) holding its source, config space, shared memory,
// applicability, extra defines and launch rule (its curated configs are data, in
// templates/gemm/curated.json). gemm.cc dispatches through the
// table kernels(); adding a kernel is one folder and one line there. Internal to templates/.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "templates/gemm.h"

namespace ktune::gemm::detail {

using DefineList = std::vector<std::pair<std::string, std::string>>;

struct KernelDesc {
  KernelKind kind;
  const char* name;     // "mma": kernelKindName()
  const char* source;   // embedded main file, "gemm/mma/mma.cuh"
  const char* entry;    // extern "C" entry
  const char* backend;  // "cuda" or "hip"
  bool needs_sm90a = false;
  ConfigSpace (*build_space)() = nullptr;
  int64_t (*shared_bytes)(const Config&) = nullptr;
  // Called after validate(shape) passed: kUnsupported with the reason, or Ok.
  Status (*applicable)(const Config&, const GemmShape&) = nullptr;
  // Defines beyond the config's knobs and the common problem defines (may be null).
  void (*extra_defines)(const Config&, const GemmShape&, DefineList&) = nullptr;
  // Grid, block, counters and workspace (shared_bytes is already set and checked); may refuse.
  Status (*plan)(const Config&, const GemmShape&, const DeviceInfo&, LaunchPlan&) = nullptr;
  // True when the kernel's LDS is static (AMD): the limit is shared_per_block, not the opt-in.
  bool static_shared = false;
};

const KernelDesc& mmaKernel();
const KernelDesc& skinnyKernel();
const KernelDesc& mfmaKernel();
const KernelDesc& wgmmaKernel();
const KernelDesc& tmaKernel();
const KernelDesc& decodeKernel();

// Helpers the kernels' host files share.
inline int64_t knob(const Config& c, const char* name) { return c.getInt(name, 0); }
inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline bool transA(Layout l) { return l == Layout::kTN || l == Layout::kTT; }
inline bool transB(Layout l) { return l == Layout::kNT || l == Layout::kTT; }
// kUnsupported when SPLIT_K slices of K, each rounded up to `granule`, leave the last one empty
// (the kernels use the same formula); `suffix` ends the message (e.g. " with BLOCK_K=32").
Status checkSplitSlices(const Config& c, const GemmShape& s, int64_t granule,
                        const std::string& suffix);
// kUnsupported unless the 16-byte path is legal (fastPathOk), naming the kernel.
Status needFastPath(const GemmShape& s, const char* kernel);
// Split-K scratch of the kernels that reduce into an M x N fp32 workspace: that workspace and
// `counters` counters when SPLIT_K > 1.
void splitScratch(const Config& c, const GemmShape& s, int64_t counters, LaunchPlan& p);
// A grid of `tiles` blocks in x and SPLIT_K in z, `threads` per block, one split-K counter per
// tile (splitScratch).
void tiledPlan(const Config& c, const GemmShape& s, int64_t tiles, int64_t threads, LaunchPlan& p);

}  // namespace ktune::gemm::detail
