// A tuning run's candidates as its stages pass them along (internal to the engine): what the
// stages, the finalists and the benchmarking paths (bench_stage.h, device_pool.h) share, with no
// dependency on the run itself.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "autotune/benchmarker.h"
#include "autotune/family.h"
#include "autotune/results.h"
#include "autotune/search.h"
#include "base/config.h"
#include "compiler/compiler.h"

namespace ktune {
namespace detail {

struct FamilyState;

// One candidate of a tuning run: a JIT config or a vendor candidate, and what became of it.
struct Cand {
  Config config;
  CandidateResult r;
  bool live = true;  // still in the running
  CodeObject co;
  LaunchDims dims;
  int dup_of = -1;
  bool hit = false;
  double compile_job_ms = 0;  // host wall time of its compile job (compiler and store write)
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

// A batch of candidates for the worker, and the run's state it updates.
struct IsolatedBatch {
  FamilyState& fs;
  const void* p;
  const std::string& key;
  std::vector<Cand>& cands;
  const std::vector<size_t>& todo;  // indices into cands
  double* best;                     // best median so far (updated)
  std::vector<bool>* done;          // done[i]: candidate i has its result
  int* bench_index;                 // progress counter (updated)
  int total;                        // candidates of the run (progress)
  TuneReport* rep = nullptr;        // the run's report (per-device shares of multi-device runs)
  std::atomic<bool>* write_reported;  // the run already reported a failed write (writeFailed)
  const BenchOptions* bench = nullptr;  // null: the engine's (a guided race's round sets its own)
};

}  // namespace detail
}  // namespace ktune
