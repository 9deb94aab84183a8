// A static ranking of compiled configs, for tuning without the hardware (`ktune tune --no-gpu`,
// e.g. for gfx942 where no AMD GPU exists here). Nothing runs: the ranking is a model over what the
// compiler and ktune's analysis report, and is labelled "analysed, not timed" everywhere it is
// printed or recorded; it never enters a tuning database of measured winners.
//
// The model (score in (0, 1], higher = expected faster; each factor is a ratio, no hardware
// figure is assumed):
//   occupancy  min(waves/EU, 2) / 2   — the guide's GEMMs run at 1-2 waves per EU; fewer waves
//                                       leave MFMA and memory latency unhidden, more buy little;
//   verdicts   0.75 ^ (ISA WARNs)     — each failed check of compiler/analysis/isa_verdicts
//                                       (loads not overlapped, narrow loads, accvgpr copies...);
//   intensity  (GEMM) FLOPs per byte a K step loads, 2·BM·BN / ((BM+BN)·elem), relative to the
//              best config ranked — larger tiles reuse each loaded byte more;
//   fill       (GEMM, when a shape is given) useful / computed work: tile quantisation of M and N
//              and the K remainder of BLOCK_K·SPLIT_K.
// Excluded (listed with the reason, never ranked): failed compiles, register spills, configs
// without an occupancy (they do not fit).
#pragma once

#include <string>
#include <vector>

#include "base/config.h"
#include "base/status.h"
#include "compiler/analysis/report.h"
#include "templates/gemm.h"

namespace ktune {

struct StaticRankInput {
  Config config;
  Status status;        // the compile's
  KernelReport report;  // valid when status is OK
};

struct StaticRank {
  size_t index = 0;  // into the inputs
  bool excluded = false;
  std::string why;  // the exclusion reason, or the factors ("occ 1.00 ...")
  double score = 0, occupancy = 0, verdicts = 0, intensity = 1, fill = 1;
  int warns = 0;
};

// Ranked inputs first (best score first; ties: fewer VGPRs/registers, then the config string),
// then the excluded ones in input order. `shape` (may be null) gives the fill factor of GEMM
// configs. Pure; thread-safe.
std::vector<StaticRank> rankStatically(const std::vector<StaticRankInput>& in,
                                       const gemm::GemmShape* shape);

// The label every static ranking carries.
inline constexpr const char* kStaticRankingLabel = "static ranking: analysed, not timed";

}  // namespace ktune
