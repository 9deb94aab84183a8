// What a kernel's instructions say about its memory and matrix paths: counts of global and
// LDS/shared accesses by width, matrix instructions by kind, waits (total and in innermost loops),
// and scratch/local traffic. Reads AMDGCN assembly (clang -S or comgr), PTX and SASS (nvdisasm /
// cuobjdump). Pure text analysis: thread-safe, no GPU, never fails (unknown lines are ignored).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ktune {

enum class IsaKind { kAmdgcn, kPtx, kSass };

// One loop, as counted between its header label and its backward branch. LDS widths are
// per access: ds_read2_b64 is two 64-bit reads (never counted as 128-bit).
struct LoopStats {
  int first_line = 0, last_line = 0;  // instruction indices (0-based) of the loop's range
  int instructions = 0;
  std::map<int, int> global_loads, global_stores, lds_loads, lds_stores;
  int lds_read2 = 0, lds_write2 = 0;  // ds_read2*/ds_write2* instructions among those
  std::map<std::string, int> matrix;
  int matrix_total = 0;
  // AMD s_waitcnt; NVIDIA cp.async.wait_group / cp.async.bulk.wait_group / wgmma.wait_group /
  // mbarrier waits (counted as vm), DEPBAR (SASS).
  int waits = 0, vm_waits = 0, lgkm_waits = 0;
  int min_vmcnt = -1, min_lgkmcnt = -1;  // smallest count waited for (-1: none)
  // vmcnt(0) / wait_group 0 waits that, walking back through the loop body (cyclically: the
  // steady state), reach one of the loop's global loads before any matrix op: those loads are
  // waited for with nothing to overlap them.
  int vmcnt0_unoverlapped = 0;
  int accvgpr_moves = 0;               // v_accvgpr_read/write/mov (AMD)
  int ldmatrix = 0;                    // ldmatrix / LDSM (NVIDIA)
  int scratch_ops = 0;
};

// A PASS/WARN line of the ISA checks, with its reason.
struct IsaVerdict {
  std::string check;  // "k-loop", "overlap", "global-16B", "lds-b128", "accvgpr", "scratch", ...
  bool pass = true;
  std::string reason;
};

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
  std::map<std::string, int> mnemonics;  // instruction histogram (mnemonic -> count)
  std::vector<LoopStats> loop_list;  // every loop (backward branch), in program order
  int main_loop = -1;                // index into loop_list: the K loop (most matrix ops), or -1
  std::vector<IsaVerdict> verdicts;  // see isaVerdicts()

  const LoopStats* mainLoop() const { return main_loop < 0 ? nullptr : &loop_list[main_loop]; }
  bool allPass() const;              // every verdict PASS

  int globalLoads(int bits) const;                   // count at exactly `bits` width (0 when none)
  int matrixCount(const std::string& prefix) const;  // summed over kinds starting with prefix
  std::string toJson() const;                        // one JSON object
  std::string text() const;                          // a few human-readable lines
};

// `text` is the assembly; `kind` says which dialect. Fills the verdicts too.
IsaReport analyzeIsa(const std::string& text, IsaKind kind);

// "3x16b, 8x128b" (count x width), "none" when empty.
std::string widthList(const std::map<int, int>& widths);

// The checks of the MI300X guide (AMD) and their NVIDIA counterparts over a report: the K loop
// exists; its next-tile loads overlap the matrix ops (no vmcnt(0) / wait_group 0 before the first
// matrix op or right after the loads); global loads are 16 bytes wide; operands come from LDS
// with 128-bit reads and writes (ldmatrix on NVIDIA); no accumulator copies (v_accvgpr_*) in the
// loop; no scratch / local memory. Kernels without a matrix op get the memory checks only.
std::vector<IsaVerdict> isaVerdicts(const IsaReport& r);

}  // namespace ktune
