// The tuning run's stages as one class (tuning_run.h describes them): tuning_run.cc holds
// enumerate, history, select, launch, choose and record; tuning_run_bench.cc the compile, admit
// and bench stages. Internal to autotune/.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autotune/guided.h"
#include "autotune/tuning_run.h"
#include "base/clock.h"

namespace ktune {
class CompilePool;
namespace detail {

using Clock = std::chrono::steady_clock;

// A live original (not a duplicate's copy) whose timing passed: the race's and the anchor's test.
inline bool passedOriginal(const Cand& c) {
  return c.live && c.dup_of < 0 && c.r.status == Code::kOk && c.r.stats.runs > 0;
}

// The stages of one run (see tuning_run.h); members are the run's state.
class TuningRun {
 public:
  TuningRun(TunerEngine& e, FamilyState& fs, const void* p, const std::string& key, StreamHandle s)
      : e_(e), fs_(fs), f_(fs.f), p_(p), key_(key), s_(s) {
    rep_.family = f_.name;
    rep_.key = key;
    shared_limit_ = std::max(e.deviceInfo().shared_per_block_optin, e.deviceInfo().shared_per_block);
  }
  Expected<TuneReport> run(WinnerBinary* winner);
  // precompileKey (tuning_run.h): the stages up to the prior's order, then the first wave's compiles
  // (depth 0) or the first `depth` of the order.
  size_t precompile(int threads, size_t depth);

 private:
  void enumerate();
  void loadHistory();
  void applyHistory(Cand& x, const std::string& id);
  void select();
  void checkLaunchDims();
  // The guided search only: the configs the family's guided_leave_out names are not live (never
  // compiled nor timed; their reason says why), when the race keeps kMinGuided others.
  void leaveOutDominated();
  Status compileAndBench();
  // The guided search (tuning_run_race.cc): prior order, lazy compiles, the race's rounds.
  Status compileAndRace();
  std::vector<size_t> priorOrder();
  // Whether this run races (guided search, a space of at least kMinGuided live JIT configs).
  bool races() const;
  // The race's compile pacing for n candidates in the prior's order: the pool's threads, the
  // window compiles run ahead of the race, and the first wave that starts at once.
  struct Waves {
    int threads = 1;
    size_t window = 0, first = 0;
  };
  Waves waves(size_t n) const;
  std::vector<size_t> raceVendors();
  // Round 1 of the vendor candidates; *ms: its wall time.
  Status benchVendors(const std::vector<size_t>& vendor, double* ms);
  std::vector<char> storeHits(const std::vector<size_t>& order, int threads);
  // Options::early_jit (tuning_run_early.cc): whether the first `first` positions of the order
  // (hits_) are all store hits and the run isolates with vendor candidates; then the first wave
  // is taken from the pool and timed unchecked (early_), its candidates that set a new bar are
  // checked (checkEarly: a superset of round 1's read-backs), then the vendor round. Otherwise
  // the vendor round alone.
  bool earlyJit(const std::vector<size_t>& vendor, size_t first) const;
  Status raceEarlyThenVendors(CompilePool& pool, size_t first, const std::vector<size_t>& order,
                              const std::vector<size_t>& vendor, double* vendor_ms);
  Status checkEarly(const BenchOptions& r1);
  Status retimeRejected(const std::vector<size_t>& checked, const BenchOptions& r1);
  // The race's next batch of positions: the early wave first (early_.timed set: admitted and
  // timed already), then the pool's.
  std::vector<size_t> nextBatch(CompilePool& pool);
  Status raceRounds();
  // The drift probe (guided.h: drift): the first candidate timed in round 1 timed again.
  Status probeDrift();
  // Drift tracking (guided.h: kAnchorMs; tuning_run_anchor.cc): the vendor round, round 1's
  // batches and the later rounds are timed through benchTracked; the probe is not needed then.
  Status benchTracked(std::vector<size_t> batch);
  Status pickAnchor(const std::vector<size_t>& batch, size_t* from);
  Status retimeAnchor(double* f);
  std::vector<size_t> reviveRejected(const std::vector<size_t>& chunk);
  void logAnchor() const;
  void markNotReached(const std::vector<size_t>& rest, size_t explored);
  guided::Regret regretOf(const std::vector<size_t>& rest) const;
  int leaderIndex() const;
  void compileOne(size_t j);
  void noteCompileJobs(int threads, size_t first_wave);
  void admit(size_t i, std::vector<size_t>& batch);
  std::optional<std::string> pruneReason(const Cand& c) const;
  Status bench(std::vector<size_t> batch);
  void benchInProcess(size_t i);
  Status benchThroughWorker(const std::vector<size_t>& iso_batch);
  Status settleSetAside();
  void copyDuplicates();
  void reviveResumed();
  int choose();
  void record(int w);

  TunerEngine& e_;
  FamilyState& fs_;
  const ErasedFamily& f_;
  const void* p_;
  const std::string& key_;
  StreamHandle s_;
  TuneReport rep_;
  int64_t shared_limit_ = 0;
  std::vector<Config> accepted_;
  std::vector<Cand> cands_;
  std::map<std::string, CandidateResult> known_, measured_;
  int total_ = 0;
  std::vector<size_t> to_compile_;
  bool precompiling_ = false;  // precompile(): JIT configs only (select() asks no vendor library)
  size_t left_out_ = 0;        // JIT configs leaveOutDominated() took out of the guided search
  CompilePool* pool_ = nullptr;
  double best_ = 0;
  bool has_vendor_ = false;
  std::map<std::string, size_t> seen_;                      // binary signature -> candidate
  std::vector<std::pair<size_t, std::string>> set_aside_;   // would be pruned (no vendor cand.)
  size_t survivors_ = 0;  // live JIT candidates not pruned
  double bench_ms_ = 0, overlap_ms_ = 0;
  std::vector<bool> done_;
  bool iso_off_ = true;   // isolation off or unavailable: the rest runs in-process
  bool iso_used_ = false;  // some batch of this key went through the worker
  int bench_index_ = 0;
  const BenchOptions* round_bo_ = nullptr;  // a guided round's bench options (null: the engine's)
  std::vector<double> static_score_;        // guided: per candidate, its static prior
  std::vector<char> hits_;  // guided: per position of the prior's order, a store hit
  struct Early {
    std::vector<size_t> got;    // positions of the first wave taken before the vendor round
    std::vector<size_t> batch;  // their candidates admitted and timed
    bool timed = false;         // nextBatch() handed the early wave out: not timed again
  } early_;
  struct Anchor {
    long i = -1;       // the candidate timed again between chunks (-1: none yet)
    BenchStats first;  // its first timing: the clock every tracked time is expressed at
    double f = 1;      // its latest factor (guided::anchorFactor)
    bool off = false;  // not tracked: a short kernel, several devices, or the anchor failed
    int retimes = 0;
    double min_f = 1, max_f = 1;
    double step = 0;  // the factor's largest step between re-timings (log): the key's drift
    std::vector<size_t> revived;  // stopped as slower, not at the first clock: timed again once
  } anchor_;
  long first_timed_ = -1;  // guided: the candidate round 1 timed first (the drift probe's)
  std::atomic<bool> write_reported_{false};  // a failed journal/database write was logged
  std::atomic<bool> compile_issued_{false};  // compileOne's timeline mark was made
};

}  // namespace detail
}  // namespace ktune
