// The "bench" stage of a tuning run (internal): one candidate verified and timed in this process,
// or a batch sent to the isolation worker; each result recorded as a partial result at once.
#pragma once

#include <atomic>

#include <string>
#include <vector>

#include "autotune/tuning_run.h"

namespace ktune {
namespace detail {

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

// Benchmarks the batch through the worker; false (with *why) when the worker cannot be used, so
// the caller decides what becomes of the candidates left (those with done[i] == false).
bool benchIsolated(TunerEngine& e, IsolatedBatch& b, std::string* why);

// Appends one finished candidate to the family's tuning journal (resumable tuning).
void recordPartial(TunerEngine& e, FamilyState& fs, const std::string& key,
                   const CandidateResult& r, std::atomic<bool>* write_reported);

// Logs a failed write of the tuning journal or database once per tuning run (that is, per key):
// an unwritable database would otherwise say it for every candidate. `reported` is the run's flag.
void writeFailed(TunerEngine& e, const std::string& family, const std::string& key,
                 const char* what, const Status& st, std::atomic<bool>* reported);

}  // namespace detail
}  // namespace ktune
