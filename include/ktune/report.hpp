// ktune — what was tried for a key and what won: a read-only view of one tuning result.
#pragma once

#include <string>
#include <vector>

#include "ktune/export.h"

namespace ktune {

// One candidate of a tuning run (a JIT config, a vendor-library algorithm, or the default).
struct CandidateView {
  std::string config;   // "BLOCK=256,VEC=2", or a vendor algorithm id
  std::string source;   // "jit", "default", "cublaslt", ...
  std::string status;   // "ok", or the failure code ("compile_error", "wrong_result", ...)
  std::string reason;   // why it failed or was pruned; "" when it ran
  double median_ms = 0, p20_ms = 0, p80_ms = 0;  // device time (0 when it did not run)
};

// A key's tuning result. `origin` says where the selection comes from: "memory" or "database"
// (tuned earlier), "tuned" (this call tuned it), "default" (not tuned: tuning off or no
// candidate ran).
struct KTUNE_API KeyReport {
  std::string family, key;
  std::string winner;         // config string or vendor id; "" when nothing passed
  std::string winner_source;  // "jit", "default", vendor source
  std::string origin;
  double median_ms = 0, p20_ms = 0, p80_ms = 0;  // the winner's timing
  std::vector<CandidateView> candidates;          // empty when the key was not tuned here

  // The report as one JSON object (the fields above; candidates as an array of objects).
  std::string toJson() const;
};

}  // namespace ktune
