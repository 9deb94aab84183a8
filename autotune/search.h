// ktune search — which candidates to try, how to pick the winner, and the report of a tuning run.
//
// The tuner enumerates a family's configs (constraints + shared pre-check), lets a
// SearchStrategy choose which of them to try (exhaustive by default), compiles, dedups, prunes,
// verifies and benchmarks them (early rejection against the best so far), and picks the fastest
// candidate that passed. Every candidate that did not win for a reason (compile error, out of
// resources, launch error, fault, wrong result, timeout, pruned, slower than best, duplicate
// binary) is a CandidateResult with a status code and a reason — data, never an abort.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autotune/database.h"
#include "base/config.h"

namespace ktune {

// Strategy interface. select() returns indices into `configs` (the accepted configs, in
// enumeration order) in the order they should be tried. Implementations must be thread-safe
// (the tuner may call select() from several threads).
class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  virtual std::string name() const = 0;
  virtual std::vector<size_t> select(const std::vector<Config>& configs) const = 0;
  // True for the guided search: the tuning run orders the selected configs by its prior, compiles
  // them lazily and races them (autotune/guided.h) instead of timing every one in full.
  virtual bool guided() const { return false; }
};

// Every config, in enumeration order.
std::shared_ptr<SearchStrategy> exhaustiveSearch();
// At most `max_candidates` configs drawn uniformly without replacement (seeded: deterministic).
std::shared_ptr<SearchStrategy> randomSearch(size_t max_candidates, uint64_t seed = 0);
// Every config selected; the tuning run orders, compiles and races them (guided() is true).
std::shared_ptr<SearchStrategy> guidedSearch();
// The strategy options.search names ("guided" or "exhaustive"; anything else: guided).
std::shared_ptr<SearchStrategy> searchNamed(const std::string& name);

// Index of the fastest candidate with status kOk and stats.runs > 0 (ties: the earlier one);
// -1 if none.
int chooseWinner(const std::vector<CandidateResult>& candidates);

// One line for a DefaultComparison: the decision, the default, the best challenger's time ratio
// and its 95% interval ("vs default cublaslt:idx=0...: default kept: within noise; ...").
std::string describe(const DefaultComparison& c);

// Progress of one tuning run, for the CLI. phase: "enumerate", "compile", "bench", "done".
struct TuneProgress {
  std::string family, key, phase;
  int index = 0, total = 0;  // candidate index (1-based) within the phase
  std::string config;
};

// The report of one tuning run: the key's result (the public ktune::KeyReport: family, key, winner,
// its stats and every candidate, rejected-before-compile included) and how the run went. origin:
// "tuned" (this run measured it) or "remote" (taken from the shared cache, nothing compiled or
// benchmarked: see Engine::fetchShared).
struct TuneReport : KeyReport {
  TuneReport() { origin = "tuned"; }
  // The finalists' interleaved re-timing against the default (rounds == 0: none was made).
  DefaultComparison vs_default;
  int enumerated = 0;     // configs before constraints
  int compiled = 0;       // compile() calls actually made (store misses)
  int store_hits = 0;
  int duplicates = 0;     // candidates whose binary equalled an earlier one
  int pruned = 0;
  int skipped_known_failed = 0;  // failed earlier (database blacklist) and not retried
  int resumed = 0;  // measured by an earlier, interrupted run of this key and reused (not re-run)
  double compile_wall_ms = 0, bench_wall_ms = 0, total_wall_ms = 0;  // host wall time
  // The compile jobs that missed the store: their count, the sum and the longest of each job's
  // wall time (compiler and store write) and of the compiler's own time (CodeObject::compile_ms),
  // the pool's threads and the jobs it started at once. With jobs > threads, job_ms_sum / threads
  // near compile_wall_ms says the compiles were CPU-bound; job_ms_max near compile_wall_ms, that
  // one compile (or one slowed by contention) was the stage.
  struct CompileJobs {
    int jobs = 0, threads = 0, first_wave = 0;
    // Compile worker processes this engine has started so far (Options::compile_processes; 0:
    // every compile in this process), and compiles they answered.
    int processes = 0, in_workers = 0;
    double job_ms_sum = 0, job_ms_max = 0, compiler_ms_sum = 0, compiler_ms_max = 0;
  };
  CompileJobs compile_jobs;
  // Part of bench_wall_ms spent while candidates were still compiling (options.pipeline).
  double bench_overlap_ms = 0;
  // Where the in-process bench phase went (host wall ms): module loads, verification runs (incl.
  // the output comparison), timing, partial-result writes. Zero for candidates benchmarked in
  // the isolation worker (their time is in bench_wall_ms only).
  double load_ms = 0, verify_ms = 0, measure_ms = 0, record_ms = 0;
  // Runs spread over several devices (Options::devices): per device, the candidates it benchmarked
  // and its busy time in ms (device time measured with events for devices driven in this process,
  // the wall time of the device's worker otherwise). Empty for a one-device run.
  struct DeviceShare {
    int device = 0;
    int candidates = 0;
    double busy_ms = 0;
  };
  std::vector<DeviceShare> devices;
  // Host wall time the devices spent on the spread candidates (several devices only): with the
  // devices working at once, the sum of their busy_ms approaches N x this.
  double devices_wall_ms = 0;
  // Host wall time of the finalists' re-timing (part of bench_wall_ms; on the tuner's own device).
  double finalists_ms = 0;

  // Which search ran ("exhaustive", "guided", "random(N)") and, for a guided run, what it did.
  std::string search = "exhaustive";
  struct SearchRound {
    int round = 0;        // 1: the first, short round of every candidate reached
    int benchmarked = 0;  // candidates timed in this round
    int eliminated = 0;   // of them, out after it (rejected early, or interval cannot beat the leader)
    int compiled = 0;     // compile jobs run for it (store hits included; round 1 only)
  };
  std::vector<SearchRound> rounds;  // guided only
  int reached = 0;      // JIT candidates the guided search took into the race (compiled or hit)
  int not_reached = 0;  // JIT candidates it never compiled (the prior ranked them too low)
  // Estimated regret: how much faster (fraction, 0.02 = 2%) the best unmeasured candidate could
  // plausibly be than the winner, from the static prior calibrated on the measured candidates.
  double regret_estimate = 0;
  bool budget_hit = false;  // options.budget_s ended the exploration
  // The race stopped at the launch floor (guided.h: launchFloor): the candidates in the leader's
  // tie were not raced further.
  bool launch_floor = false;
  // The drift probe's finding (guided.h: drift): how far the first candidate's two timings, at
  // round 1's start and end, lay apart beyond their intervals (0.03 = 3%; 0: they agreed); on a
  // key tracked by an anchor (guided.h: kAnchorMs) the anchor's largest factor step instead.
  double drift = 0;
  int history_neighbours = 0;  // tuned keys of the family the prior used

  // TunableOp-like tree: family/key, then one line per candidate with its median or its reason,
  // the winner marked with '*'.
  std::string tree() const;
};

}  // namespace ktune
