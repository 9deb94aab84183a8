// What a tuning run measured of one candidate (the public ktune::CandidateResult, ktune/report.hpp:
// the record the tuning database, its journal, the isolation worker's protocol and the reports all
// hold) and how the engine reads it.
#pragma once

#include <string>

#include "base/status.h"
#include "ktune/report.hpp"

namespace ktune {

// Whether a winner's or candidate's source names a vendor library ("cublaslt", ...) rather than a
// JIT config ("jit"; "default" for the family's default config).
inline bool isVendorSource(const std::string& source) {
  return source != "jit" && source != "default";
}

// A candidate stopped early as slower than the best so far (early rejection): measured, not
// failed. It is stored with Code::kTimeout and a reason starting "slower than best" (the
// Benchmarker's status), which older databases hold too; tables and reports show it apart from
// the failures, as "slower than best ...".
inline bool rejectedAsSlower(const CandidateResult& c) {
  return c.status == Code::kTimeout && c.reason.rfind("slower than best", 0) == 0;
}

}  // namespace ktune
