// What a tuning run measured of one candidate: its do_bench statistics and result, the records
// the tuning database, its journal, the isolation worker's protocol and the reports all hold.
#pragma once

#include <string>

#include "base/status.h"
#include "ktune/stats.hpp"

namespace ktune {


// One measured or failed candidate of a tuning run.
struct CandidateResult {
  std::string config;          // Config::toString(), or a vendor algorithm id ("cublaslt:algo=...")
  std::string source = "jit";  // "jit", "cublaslt", "hipblaslt", "default"
  Code status = Code::kOk;     // failure code when it failed (compile error, wrong result, ...)
  std::string reason;          // human-readable failure reason / prune reason
  BenchStats stats;
  std::string code_object_key;
  double max_error = 0;
  std::string date;  // ISO 8601 UTC, when measured / when it failed
  int device = -1;   // device ordinal it was benchmarked on; -1 = the tuner's own device
};

// A candidate stopped early as slower than the best so far (early rejection): measured, not
// failed. It is stored with Code::kTimeout and a reason starting "slower than best" (the
// Benchmarker's status), which older databases hold too; tables and reports show it apart from
// the failures, as "slower than best ...".
inline bool rejectedAsSlower(const CandidateResult& c) {
  return c.status == Code::kTimeout && c.reason.rfind("slower than best", 0) == 0;
}

}  // namespace ktune
