// One tuning run of one key, as a pipeline of small stages (internal to the engine):
//
//   enumerate  configs of the space (or the family's list), constraints and the shared-memory
//              pre-check against the device limit
//   history    earlier runs of this key: known failures are skipped (unless retry_failed), results
//              of an interrupted run are reused (resumable tuning)
//   select     the search strategy picks configs; vendor candidates are added
//   launch     launch dims and the thread-count check, before compiling
//   compile    on the compile pool; with options.pipeline candidates go on to the next stages
//              as they come out of the compilers (vendor candidates once every compile has
//              finished, where the JIT candidates run: same process, no compile load)
//   admit      resource checks from the compiler's report, dedup of identical binaries, static
//              pruning (never pruning every candidate)
//   bench      verify and time, in the isolation worker or in this process; every finished
//              candidate is recorded as a partial result at once, so a killed tuner resumes
//   choose     the fastest that passed
//   record     the winner and the candidates' results into the tuning database
//
// The caller holds the engine's benchmark lock for the whole run.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autotune/engine.h"

namespace ktune {
namespace detail {

// One candidate of a tuning run: a JIT config or a vendor candidate, and what became of it.
struct Cand {
  Config config;
  CandidateResult r;
  bool live = true;  // still in the running
  CodeObject co;
  LaunchDims dims;
  int dup_of = -1;
  bool hit = false;
  std::string vendor_source;  // non-empty: vendor candidate (r.config is its id)
  bool is_default = false;    // the vendor's default candidate (VendorCandidate::is_default)
  bool resumed = false;   // measured by an earlier, interrupted run (partial result reused)
  bool revived = false;   // resumed, and its binary loaded again so the finalists can re-time it
  bool recorded = false;  // already written to the database as a partial result
};

// Marks the candidate failed with `s` (an OK status becomes kInternal).
void fail(Cand& c, const Status& s);
// Failures that depend on the config itself, not on this run's context: worth remembering so a
// later tuning run skips them (unless retry_failed).
bool persistentFailure(const CandidateResult& r);

// Runs the stages above for `key` of `fs` on problem `p`. Errors: the run could not start or
// isolation was requested and the worker cannot benchmark this family (see
// TunerEngine::mayFallBack); a candidate's failure is data in the report.
Expected<TuneReport> runTuning(TunerEngine& e, FamilyState& fs, const void* p,
                               const std::string& key, StreamHandle s, WinnerBinary* winner);

}  // namespace detail
}  // namespace ktune
