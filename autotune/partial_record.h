// Partial results of a tuning run (internal to the engine): every finished candidate goes to its
// family's tuning journal at once, so a killed tuner resumes (autotune/journal.h). Used by the
// bench stage and the multi-device pool alike.
#pragma once

#include <atomic>
#include <string>

#include "autotune/results.h"
#include "base/status.h"

namespace ktune {
namespace detail {

class TunerEngine;
struct FamilyState;

// Appends one finished candidate to the family's tuning journal (resumable tuning).
void recordPartial(TunerEngine& e, FamilyState& fs, const std::string& key,
                   const CandidateResult& r, std::atomic<bool>* write_reported);

// Logs a failed write of the tuning journal or database once per tuning run (that is, per key):
// an unwritable database would otherwise say it for every candidate. `reported` is the run's flag.
void writeFailed(TunerEngine& e, const std::string& family, const std::string& key,
                 const char* what, const Status& st, std::atomic<bool>* reported);

}  // namespace detail
}  // namespace ktune
