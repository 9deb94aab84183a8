// What a kernel's instructions say about its memory and matrix paths: counts of global and
// LDS/shared accesses by width, matrix instructions by kind, waits (total and in innermost loops),
// and scratch/local traffic. Reads AMDGCN assembly (clang -S or comgr), PTX and SASS (nvdisasm /
// cuobjdump). Pure text analysis: thread-safe, no GPU, never fails (unknown lines are ignored).
#pragma once

#include <map>
#include <string>

namespace ktune {

enum class IsaKind { kAmdgcn, kPtx, kSass };

struct IsaReport {
  IsaKind kind = IsaKind::kAmdgcn;
  // width in bits -> count (e.g. 128 -> 3 for global_load_dwordx4 / LDG.E.128 / ld.global.v4.u32)
  std::map<int, int> global_loads, global_stores, lds_loads, lds_stores;
  // matrix instruction kind (mnemonic up to the shape) -> count, e.g. "v_mfma_f32_32x32x8_bf16",
  // "mma.sync.aligned.m16n8k16", "HMMA.16816", "wgmma.mma_async.sync.aligned.m64n128k16", "HGMMA"
  std::map<std::string, int> matrix;
  int waitcnt_total = 0;    // s_waitcnt* (AMD); cp.async.wait*/DEPBAR (NVIDIA)
  int waitcnt_in_loop = 0;  // of those, inside innermost loops
  int loops = 0;            // backward branches
  int innermost_loops = 0;
  int scratch_ops = 0;     // scratch_*/buffer accesses to scratch, ld/st.local, LDL/STL
  int spill_comments = 0;  // LLVM "Spill"/"Reload" annotations
  int instructions = 0;

  int globalLoads(int bits) const;                   // count at exactly `bits` width (0 when none)
  int matrixCount(const std::string& prefix) const;  // summed over kinds starting with prefix
  std::string toJson() const;                        // one JSON object
  std::string text() const;                          // a few human-readable lines
};

// `text` is the assembly; `kind` says which dialect.
IsaReport analyzeIsa(const std::string& text, IsaKind kind);

}  // namespace ktune
