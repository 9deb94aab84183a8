// ktune — what was tried for a key and what won: one tuning result, the same type the engine
// records (a tuning run's report extends it with how the run went; the database stores its
// candidates as they are here).
#pragma once

#include <string>
#include <vector>

#include "ktune/export.h"
#include "ktune/stats.hpp"
#include "ktune/status.hpp"

namespace ktune {

// One candidate of a tuning run (a JIT config, a vendor-library algorithm, or the default),
// measured or failed.
struct CandidateResult {
  std::string config;          // "BLOCK=256,VEC=2", or a vendor algorithm id ("cublaslt:algo=...")
  std::string source = "jit";  // "jit", "default", "cublaslt", "hipblaslt", ...
  Code status = Code::kOk;     // the failure code when it failed (compile error, wrong result, ...)
  std::string reason;          // why it failed or was pruned; "" when it ran
  BenchStats stats;            // device time (runs == 0 when it did not run)
  std::string code_object_key;
  double max_error = 0;
  std::string date;  // ISO 8601 UTC, when measured / when it failed
  int device = -1;   // device ordinal it was benchmarked on; -1 = the tuner's own device

  // It ran and passed. A guided search reports the candidates it never reached as kOk with no
  // runs: they count as neither passed nor failed.
  bool measured() const { return status == Code::kOk && stats.runs > 0; }
};

// A key's tuning result. `origin` says where the selection comes from: "memory" (tuned by this
// process), "database" or "pinned" (tuned earlier), "tuned" (this call tuned it), "remote" /
// "waited" / "pulled" (another process or machine tuned it), "default" (not tuned: tuning off or
// no candidate ran).
struct KTUNE_API KeyReport {
  std::string family, key;
  std::string winner;         // config string or vendor id; "" when nothing passed
  std::string winner_source;  // "jit", "default", vendor source
  std::string origin;
  BenchStats winner_stats;    // the winner's timing
  std::vector<CandidateResult> candidates;  // empty when the key was not tuned here

  // The report as one JSON object: the fields above, the winner's median_ms / p20_ms / p80_ms,
  // candidates as an array of objects (config, source, status name, reason, median_ms, p20_ms,
  // p80_ms).
  std::string toJson() const;
};

}  // namespace ktune
