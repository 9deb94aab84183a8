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
#include "autotune/run_candidate.h"

namespace ktune {
namespace detail {

// Runs the stages above for `key` of `fs` on problem `p`. Errors: the run could not start or
// isolation was requested and the worker cannot benchmark this family (see
// TunerEngine::mayFallBack); a candidate's failure is data in the report.
Expected<TuneReport> runTuning(TunerEngine& e, FamilyState& fs, const void* p,
                               const std::string& key, StreamHandle s, WinnerBinary* winner);

// Compiles into the code-object store, and nothing else (no vendor query, no load, no benchmark,
// no record), the JIT configs a tuning run of `key` would compile first: the guided search's first
// wave in the prior's order, every live config for the exhaustive search or a space below
// kMinGuided; with `depth` > 0 the first `depth` of the guided order instead of its first wave.
// On `threads` threads (0: the compile pool's rule). Returns how many were compiled
// (store misses; a compile another thread of the process was running counts as a miss too). For a
// caller that knows its next keys (`ktune tune` over a suite or a file): their compiles run while
// the current key's benchmarks hold the GPU, and their tuning runs then find the store warm.
// Safe beside a tuning run of another key of the same family (the store runs one compile per
// object at a time: compiler/store/in_flight.h).
Expected<size_t> precompileKey(TunerEngine& e, FamilyState& fs, const void* p,
                               const std::string& key, int threads, size_t depth = 0);

}  // namespace detail
}  // namespace ktune
