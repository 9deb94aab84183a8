// PASS/WARN checks over an IsaReport, after the MI300X guide's advice for AMD GEMMs (overlapped
// global loads, 16-byte accesses, 128-bit LDS operand traffic, accumulators left in place, no
// scratch) and the same ideas for NVIDIA (cp.async/TMA waits that leave stages in flight,
// ldmatrix operands, mma/wgmma in the loop, no local memory).
#include <string>

#include "compiler/analysis/isa_report.h"

namespace ktune {
namespace {

std::string widths(const std::map<int, int>& m) { return widthList(m); }

int narrowerThan(const std::map<int, int>& m, int bits) {
  int n = 0;
  for (const auto& [w, c] : m)
    if (w < bits) n += c;
  return n;
}

void add(std::vector<IsaVerdict>* out, const char* check, bool pass, std::string reason) {
  out->push_back({check, pass, std::move(reason)});
}

// Overlap of the next tile's loads with the matrix ops: a wait for every outstanding load
// (vmcnt(0) / wait_group 0) that follows the loop's loads with no matrix op in between (in the
// steady state, i.e. around the back edge too) serialises memory and math.
void overlap(const IsaReport& r, const LoopStats& k, std::vector<IsaVerdict>* out) {
  const bool amd = r.kind == IsaKind::kAmdgcn;
  const char* zero = amd ? "vmcnt(0)" : "wait_group 0";
  if (k.global_loads.empty()) {
    add(out, "overlap", false, "the K loop issues no global loads (nothing to overlap: the "
                               "operands are loaded elsewhere or the loop was not found)");
    return;
  }
  if (k.vmcnt0_unoverlapped > 0) {
    add(out, "overlap", false, std::to_string(k.vmcnt0_unoverlapped) + " " + zero +
                                   " wait(s) in the K loop reach back to its loads with no " +
                                   (amd ? "MFMA" : "matrix op") +
                                   " in between: loads not overlapped");
    return;
  }
  std::string why = "next-tile loads stay in flight across the matrix ops";
  if (k.min_vmcnt >= 0) why += " (smallest " + std::string(amd ? "vmcnt " : "wait_group ") +
                               std::to_string(k.min_vmcnt) + ")";
  add(out, "overlap", true, why);
}

void ldsOperands(const IsaReport& r, const LoopStats& k, std::vector<IsaVerdict>* out) {
  if (r.kind == IsaKind::kAmdgcn) {
    const int rn = narrowerThan(k.lds_loads, 128), wn = narrowerThan(k.lds_stores, 128);
    add(out, "lds-b128", rn == 0 && wn == 0 && !k.lds_loads.empty(),
        rn + wn == 0 ? (k.lds_loads.empty() ? "no LDS reads in the K loop"
                                             : "K-loop LDS reads " + widths(k.lds_loads) +
                                                   ", writes " + widths(k.lds_stores))
                     : "K-loop LDS accesses narrower than ds_read_b128/ds_write_b128: reads " +
                           widths(k.lds_loads) + " (" + std::to_string(k.lds_read2) +
                           " ds_read2), writes " + widths(k.lds_stores) + " (" +
                           std::to_string(k.lds_write2) + " ds_write2)");
    return;
  }
  const bool mma = k.matrix.count("HGMMA") == 0 && [&] {
    for (const auto& [kind, n] : k.matrix)
      if (kind.rfind("wgmma", 0) == 0) return false;
    return true;
  }();
  if (!mma) {
    add(out, "operands", true, "wgmma reads its operands from shared memory descriptors");
    return;
  }
  add(out, "ldmatrix", k.ldmatrix > 0,
      k.ldmatrix > 0 ? std::to_string(k.ldmatrix) + " ldmatrix per K-loop iteration"
                     : "mma.sync operands not loaded with ldmatrix (shared loads " +
                           widths(k.lds_loads) + ")");
}

}  // namespace

std::vector<IsaVerdict> isaVerdicts(const IsaReport& r) {
  std::vector<IsaVerdict> out;
  const bool amd = r.kind == IsaKind::kAmdgcn;
  const LoopStats* k = r.mainLoop();
  const bool gemm = !r.matrix.empty();
  if (gemm) {
    if (!k || k->matrix_total == 0) {
      add(&out, "k-loop", false, "no loop holds a matrix op (K loop unrolled away or not found)");
    } else {
      add(&out, "k-loop", true,
          std::to_string(k->matrix_total) + " matrix ops, " + std::to_string(k->instructions) +
              " instructions per iteration; global loads " + widths(k->global_loads));
      overlap(r, *k, &out);
      ldsOperands(r, *k, &out);
      if (amd)
        add(&out, "accvgpr", k->accvgpr_moves == 0,
            k->accvgpr_moves == 0 ? "accumulators stay in place (no v_accvgpr_* in the K loop)"
                                  : std::to_string(k->accvgpr_moves) +
                                        " v_accvgpr_read/write/mov per K-loop iteration: "
                                        "accumulators copied every step");
    }
  }
  const int narrow = narrowerThan(r.global_loads, 128);
  if (!r.global_loads.empty())
    add(&out, "global-16B", narrow == 0,
        narrow == 0 ? "every global load is 16 bytes wide"
                    : std::to_string(narrow) + " global loads narrower than 16 bytes (" +
                          widths(r.global_loads) + ")");
  // Edge tiles may need a narrow fallback; the check asks that the main path is vectorised.
  const int narrow_st = narrowerThan(r.global_stores, 64);
  const int wide_st = [&] {
    int n = 0;
    for (const auto& [w, c] : r.global_stores) n += w >= 64 ? c : 0;
    return n;
  }();
  if (gemm && !r.global_stores.empty())
    add(&out, "stores", wide_st > 0,
        wide_st > 0 ? "vectorised epilogue stores (" + widths(r.global_stores) +
                          (narrow_st > 0 ? "; the narrow ones are the edge fallback)" : ")")
                    : std::to_string(narrow_st) + " scalar epilogue stores (" +
                          widths(r.global_stores) + ")");
  add(&out, "scratch", r.scratch_ops == 0,
      r.scratch_ops == 0 ? std::string("no ") + (amd ? "scratch" : "local-memory") + " traffic"
                         : std::to_string(r.scratch_ops) + (amd ? " scratch" : " local-memory") +
                               " accesses (spills or a private array)");
  return out;
}

}  // namespace ktune
