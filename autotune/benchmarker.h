// ktune do_bench — device-event timing of a callable, usable on its own.
//
// Method (Triton's do_bench, with TunableOp's early rejection): run once (errors surface here),
// time a few calls to estimate the cost of one run (count_overhead: the host wall time of a timed
// run when larger), derive warm-up and measured run counts from the budgets,
// warm up (the estimate's runs count toward the warm-up budget; at least one launch remains), then
// for each measured run: optional per-run hook, L2 flush of a buffer of 2x the
// device's L2 unless told otherwise (autotune/l2_flush.h: by default a read kernel, which leaves
// clean lines; a memset where no kernel can run, or when asked), event record, fn, event record.
// Statistics are over the per-run device times: median, p20, p80 (linear interpolation), min,
// max, mean, std.
// Early rejection: with best_ms > 0, a candidate whose running median exceeds k x best_ms stops
// early with isSlowerThanBest(status) == true; k comes from abort_factor or, when 0, from the
// measured spread (1.15 for tight timings up to 1.5 for noisy ones). A first timed run above
// max(3, 2k) x best_ms is timed twice more, and the candidate stops at once when the fastest of
// the three is still above: a config many times slower than the best (a decode tile on a prefill
// shape) would otherwise run the whole estimate before the first check, while one slow first run
// (a launch delayed by a loaded host, a cold start) must not drop a config that is not slow.
// Thread safety: a Benchmarker is used by one thread at a time; different Benchmarkers are
// independent. Host clocks are never used for the figures.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "autotune/database.h"
#include "autotune/l2_flush.h"
#include "compiler/compiler.h"
#include "ktune/stats.hpp"
#include "runtime/backend.h"

namespace ktune {

// The harness's options: the public do_bench settings (ktune/stats.hpp: budgets, run counts, the
// flush and how it flushes) and what only the engine's candidates use. The budgets default to a
// tuning candidate's (TunerOptions::warmup_ms / rep_ms), not to a standalone measurement's.
// estimate_runs for a candidate whose cost an earlier timing of the same binary measured (the
// guided race's later rounds, the finalists' rounds after the first): the estimate's runs are
// discarded (they size the run counts), and two still time one warm run's host cost. Five were a
// third of a 1 ms finalist's round (first call, 5 estimate runs, 1 warm-up, 3 measured).
inline constexpr int kKnownCostEstimateRuns = 2;

struct BenchOptions : BenchSettings {
  BenchOptions() {
    warmup_ms = 5.0;  // warm-up budget (device time)
    rep_ms = 20.0;    // measurement budget (device time)
  }
  explicit BenchOptions(const BenchSettings& s) : BenchSettings(s) {}
  FlushKind flushKind() const { return flush_read ? FlushKind::kRead : FlushKind::kMemset; }
  int estimate_runs = 5;    // timed calls used to estimate one call's cost
  int64_t l2_flush_bytes = 0;  // 0 = 2 x DeviceInfo.l2_bytes (no flush if that is unknown)
  // >0: the caller rotates this many input copies in its per-run hook; no L2 flush then.
  int rotate_buffers = 0;
  // Early rejection: best median so far (0 = none) and the factor k (0 = from the spread, at
  // least kMinAbortFactor).
  double best_ms = 0;
  double abort_factor = 0;
  int check_every = 10;  // runs between early-rejection checks
  // For the tuner's candidates (the Benchmarker itself ignores it): verify the output again after
  // the second timed run and after the last one, so a kernel that is only wrong on later launches
  // (state left behind by an earlier launch) fails.
  bool reverify = false;
  // For the tuner's candidates (the Benchmarker ignores it): verify the output once before timing.
  // Off only where the same binary on the same problem was verified already in this run (the
  // later rounds of a guided race, the finalists' rounds but the last).
  bool verify = true;
  // For the tuner's candidates, with verify off (the Benchmarker ignores it): > 0 verifies the
  // output after the timed runs instead, and only when the candidate's median is within this
  // factor of best_ms (or there is no best yet): a candidate that cannot win is never read back
  // (the read-back of a wide output costs tens of ms), and one that could lead is checked before
  // it sets the bar for early rejection. The finalists verify again whichever wins.
  double verify_within = 0;
  // > 0: the measured runs stop early once the 95% interval of the median (order statistics) is
  // within +-target_ci of it (a fraction; at least min_runs runs): a 1 ms kernel whose runs agree
  // to 0.2% needs a handful of runs, a noisy 10 us one many (rep_ms still caps the time).
  double target_ci = 0;
  // The run counts come from the budgets divided by the cost of one run. true: that cost is the
  // larger of the kernel's device time and the host wall time of one timed estimate run (flush,
  // event records and launch included, as Triton's do_bench times its cache clear with the
  // kernel): a 3 us kernel behind a 35 us flush gets ~1/12 of the runs a device-time count
  // gives it, for the same wall budget. false: device time only (a Engine turns it on for every
  // backend but the simulated one, whose host time is the simulator's).
  bool count_overhead = false;
  // Pacing per run (background tuning beside a caller's GPU work; the Benchmarker applies it):
  // with pace_slice_ms > 0 and pace_duty < 1, after at most pace_slice_ms of queued device time
  // (whole runs; at least one) the stream is synchronised and the host pauses for
  // (1 - pace_duty) / pace_duty times the wall time since the last pause. The samples stay
  // device times of single runs; only the gaps between them grow.
  double pace_duty = 1;
  double pace_slice_ms = 0;
};

// Early rejection's least factor: a candidate whose median passes this multiple of the best so far
// is stopped as slower (with abort_factor 0, wider for a noisy timing).
inline constexpr double kMinAbortFactor = 1.15;

// A few timed runs of a binary whose cost is known: `runs` runs, no time budget or precision
// target, no early rejection (the checks after a race, the drift anchor's re-timing). The caller
// sets the warm-up and the checks.
inline BenchOptions fewRuns(BenchOptions bo, int runs) {
  bo.rep_ms = 0;
  bo.min_runs = runs;
  bo.target_ci = 0;
  bo.abort_factor = 1e9;
  bo.estimate_runs = kKnownCostEstimateRuns;
  return bo;
}

// Half-width of the 95% interval of the median of `sorted` (ascending) from order statistics,
// relative to the median; 1 when fewer than 3 samples or a zero median.
double medianRelHalfWidth(const std::vector<double>& sorted);

// True for the Status measure() returns when a candidate was stopped as slower than the best.
bool isSlowerThanBest(const Status& s);
// Statistics of a sample (ms). Empty -> all zero.
BenchStats computeStats(std::vector<double> samples_ms);

class Benchmarker {
 public:
  // `device` gives the L2 size for the flush buffer; the buffer is allocated on first use and
  // reused until destruction. `compiler` builds the read flush kernel (null: memset flushes
  // only; L2Flush::compilerFor says which a tuner passes); `log` gets the one line a read flush
  // that falls back to a memset prints (null: std::cerr).
  Benchmarker(Backend& backend, DeviceInfo device, Compiler* compiler = nullptr,
              std::ostream* log = nullptr);
  ~Benchmarker();
  Benchmarker(const Benchmarker&) = delete;
  Benchmarker& operator=(const Benchmarker&) = delete;

  // Readies the flush `opts` asks for (compiles and loads the read kernel) ahead of the first
  // measure(), so its one-time cost lands outside any candidate's deadline; a failure falls back
  // as in measure().
  void prepare(const BenchOptions& opts);
  // The flush the last timed run was preceded by (nullopt: none yet, or flushing was off).
  std::optional<FlushKind> lastFlush() const { return last_flush_; }
  // The last measure()'s run counts (for KTUNE_TIMELINE): estimate runs, warm-ups, timed runs
  // planned and made, the estimate (device ms a run) and a timed run's host wall ms.
  struct Counts {
    int estimate = 0, warm = 0, planned = 0, timed = 0;
    double est_ms = 0, host_ms = 0;
  };
  Counts lastCounts() const { return counts_; }

  // Times fn on `stream`. before_run(i), if given, runs before the flush of run i (untimed; e.g.
  // reset an accumulator or pick rotated inputs). Returns the statistics, or the first failing
  // Status of fn/before_run/the backend, or a slower-than-best Status (see above; `partial`, if
  // given, receives the statistics measured up to the rejection; `samples`, if given, every
  // measured run's time in order).
  Expected<BenchStats> measure(StreamHandle stream, const std::function<Status()>& fn,
                                const BenchOptions& opts = {},
                                const std::function<Status(int)>& before_run = nullptr,
                                BenchStats* partial = nullptr,
                                std::vector<double>* samples_out = nullptr);

 private:
  Status ensureEvents(size_t pairs);

  Backend& backend_;
  DeviceInfo device_;
  L2Flush flush_;
  std::optional<FlushKind> last_flush_;
  Counts counts_;
  std::vector<EventHandle> events_;  // start/end pairs
};

// One-shot form of Benchmarker::measure (allocates and frees the flush buffer; memset flushes).
Expected<BenchStats> measure(Backend& backend, StreamHandle stream,
                              const std::function<Status()>& fn, const BenchOptions& opts = {});

}  // namespace ktune
