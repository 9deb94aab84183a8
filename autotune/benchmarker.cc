#include "autotune/benchmarker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <thread>
#include <utility>

#include "base/clock.h"
#include "base/format.h"

namespace ktune {

namespace {
constexpr const char* kSlowerPrefix = "slower than best";
// Runs that confirm a first run far beyond the best before it rejects the candidate.
constexpr int kQuickConfirmRuns = 2;

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

std::string fmtMs(double v) { return strprintf("%.4g ms", v); }

// Warm-up and measured run counts from the budgets, `est` (device ms of a run) and the host wall
// ms of a timed run (count_overhead, benchmarker.h).
// The estimate's runs count as warm-up: the warm-up budget is the device time run before the timed
// runs, the estimate's included (5 estimate runs of a 0.17 ms kernel are 0.87 ms of a race round's
// 1 ms), and at least one unflushed launch right before the timed runs remains.
std::pair<int, int> runCounts(const BenchOptions& opts, double est, double host_per_run,
                              int est_runs) {
  const double per_run = opts.count_overhead ? std::max(est, host_per_run) : est;
  // Warm-up runs have no flush between them: device time is their cost, and what warms the clocks.
  const double warm_ms = opts.warmup_ms - est * est_runs;
  int n_warm = std::max(1, static_cast<int>(warm_ms / est));
  n_warm = std::min(n_warm, std::max(opts.max_runs, 1));
  int n_rep = static_cast<int>(opts.rep_ms / per_run);
  n_rep = std::clamp(n_rep, std::max(opts.min_runs, 1), std::max(opts.max_runs, 1));
  return {n_warm, n_rep};
}
// Early rejection against the best median so far.
Status tooSlowStatus(const std::vector<double>& samples, const BenchOptions& opts,
                     BenchStats* partial) {
  if (opts.best_ms <= 0 || samples.size() < 3) return Status::Ok();
  BenchStats s = computeStats(samples);
  double k = opts.abort_factor;
  if (k <= 0) {
    double spread = s.median_ms > 0 ? (s.p80_ms - s.p20_ms) / s.median_ms : 0;
    k = std::clamp(kMinAbortFactor + 2.0 * spread, kMinAbortFactor, 1.5);
  }
  if (s.median_ms <= k * opts.best_ms) return Status::Ok();
  if (partial) *partial = s;
  char kb[16];
  std::snprintf(kb, sizeof(kb), "%.2f", k);
  return Status::Timeout(std::string(kSlowerPrefix) + ": median " + fmtMs(s.median_ms) + " > " +
                         kb + " x best " + fmtMs(opts.best_ms) + " after " +
                         std::to_string(s.runs) + " runs");
}

// Runs far beyond the best end it (see the header): the fastest of the runs so far is compared,
// so a run that is slow for reasons of its own (a cold instruction cache, a lazy module load, the
// host descheduled between the start event and the launch while compiles load every core) is
// not the one that decides; the factor leaves room for the rest.
Status quickRejectStatus(const std::vector<double>& samples, const BenchOptions& opts,
                         BenchStats* partial) {
  if (opts.best_ms <= 0 || samples.empty()) return Status::Ok();
  const double k = std::max(3.0, 2.0 * (opts.abort_factor > 0 ? opts.abort_factor : 1.5));
  const double fastest = *std::min_element(samples.begin(), samples.end());
  if (fastest <= k * opts.best_ms) return Status::Ok();
  if (partial) *partial = computeStats(samples);
  const size_t n = samples.size();
  return Status::Timeout(std::string(kSlowerPrefix) + ": " + (n == 1 ? "first run " : "fastest run ") +
                         fmtMs(fastest) + " > " + strprintf("%.2f", k) + " x best " +
                         fmtMs(opts.best_ms) + " after " + std::to_string(n) +
                         (n == 1 ? " run" : " runs"));
}


// Pacing per run (BenchOptions::pace_*): before a chunk of work that would take the stretch since
// the last pause past the slice, the host waits (the work before it has finished: every chunk
// ends synchronised) for (1 - duty) / duty times that stretch's wall time.
class RunPacer {
 public:
  explicit RunPacer(const BenchOptions& o)
      : on_(o.pace_slice_ms > 0 && o.pace_duty > 0 && o.pace_duty < 1),
        duty_(o.pace_duty),
        slice_(o.pace_slice_ms) {}
  bool on() const { return on_; }
  // Pauses if `next_ms` more would overrun the slice; returns the time paused.
  std::chrono::steady_clock::duration before(double next_ms) {
    if (!on_ || msSince(resumed_) + next_ms <= slice_) return {};
    const auto t = std::chrono::steady_clock::now();
    std::this_thread::sleep_for((t - resumed_) * ((1 - duty_) / duty_));
    resumed_ = std::chrono::steady_clock::now();
    return resumed_ - t;
  }
  // Runs per chunk, from the wall cost of one run (flush, launch and kernel).
  int perChunk(double run_ms) const {
    if (!on_ || run_ms <= 0) return std::numeric_limits<int>::max();
    return std::max(1, static_cast<int>(slice_ / run_ms));
  }

 private:
  bool on_;
  double duty_, slice_;
  std::chrono::steady_clock::time_point resumed_ = std::chrono::steady_clock::now();
};
}  // namespace

double medianRelHalfWidth(const std::vector<double>& v) {
  const size_t n = v.size();
  if (n < 3) return 1;
  const double med = quantile(v, 0.5);
  if (med <= 0) return 1;
  // Ranks n/2 -+ 0.98 sqrt(n) bound the median with about 95% confidence (binomial, normal approx.).
  const double half = 0.98 * std::sqrt(double(n));
  const double lo_rank = std::max(0.0, std::floor(double(n - 1) / 2.0 - half));
  const double hi_rank = std::min(double(n - 1), std::ceil(double(n - 1) / 2.0 + half));
  return std::max(med - v[size_t(lo_rank)], v[size_t(hi_rank)] - med) / med;
}

bool isSlowerThanBest(const Status& s) {
  return s.code() == Code::kTimeout && s.message().rfind(kSlowerPrefix, 0) == 0;
}

BenchStats computeStats(std::vector<double> v) {
  BenchStats t;
  if (v.empty()) return t;
  std::sort(v.begin(), v.end());
  t.runs = static_cast<int>(v.size());
  t.min_ms = v.front();
  t.max_ms = v.back();
  t.median_ms = quantile(v, 0.5);
  t.p20_ms = quantile(v, 0.2);
  t.p80_ms = quantile(v, 0.8);
  double sum = 0;
  for (double x : v) sum += x;
  t.mean_ms = sum / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - t.mean_ms) * (x - t.mean_ms);
  t.std_ms = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0;
  return t;
}

Benchmarker::Benchmarker(Backend& backend, DeviceInfo device, Compiler* compiler,
                         std::ostream* log)
    : backend_(backend), device_(std::move(device)), flush_(backend, compiler, device_, log) {}

Benchmarker::~Benchmarker() {
  for (EventHandle e : events_) (void)backend_.destroyEvent(e);
}

void Benchmarker::prepare(const BenchOptions& opts) {
  if (opts.flush_l2 && opts.rotate_buffers <= 0 && opts.flushKind() == FlushKind::kRead)
    (void)flush_.prepareRead();  // a failure falls back to the memset in flush()
}

Status Benchmarker::ensureEvents(size_t pairs) {
  while (events_.size() < 2 * pairs) {
    KTUNE_ASSIGN_OR_RETURN(EventHandle e, backend_.createEvent());
    events_.push_back(e);
  }
  return Status::Ok();
}

Expected<BenchStats> Benchmarker::measure(StreamHandle stream, const std::function<Status()>& fn,
                                           const BenchOptions& opts,
                                           const std::function<Status(int)>& before_run,
                                           BenchStats* partial,
                                           std::vector<double>* samples_out) {
  if (!fn) return Status::InvalidArgument("measure: no function to time");
  const int64_t flush_bytes = opts.l2_flush_bytes > 0 ? opts.l2_flush_bytes : 2 * device_.l2_bytes;
  // No flush with rotated inputs, or when the L2 size is unknown.
  const bool flush = opts.flush_l2 && opts.rotate_buffers <= 0 && flush_bytes > 0;
  last_flush_.reset();
  counts_ = Counts{};
  if (flush) prepare(opts);  // before anything runs

  std::vector<double> samples;
  int run_index = 0;
  RunPacer pacer(opts);
  // Times `n` runs, each with its own event pair, and appends the device times.
  auto timed = [&](int n) -> Status {
    KTUNE_RETURN_IF_ERROR(ensureEvents(static_cast<size_t>(n)));
    for (int i = 0; i < n; ++i, ++run_index) {
      if (before_run) KTUNE_RETURN_IF_ERROR(before_run(run_index));
      if (flush) {
        auto ran = flush_.flush(opts.flushKind(), flush_bytes, stream);
        if (!ran.ok()) return ran.status().withContext("L2 flush");
        last_flush_ = *ran;
      }
      KTUNE_RETURN_IF_ERROR(backend_.recordEvent(events_[2 * i], stream));
      KTUNE_RETURN_IF_ERROR(fn());
      KTUNE_RETURN_IF_ERROR(backend_.recordEvent(events_[2 * i + 1], stream));
    }
    KTUNE_RETURN_IF_ERROR(backend_.synchronizeEvent(events_[2 * (n - 1) + 1]));
    KTUNE_RETURN_IF_ERROR(backend_.checkError());
    for (int i = 0; i < n; ++i) {
      KTUNE_ASSIGN_OR_RETURN(float ms, backend_.elapsedMs(events_[2 * i], events_[2 * i + 1]));
      samples.push_back(ms);
    }
    return Status::Ok();
  };
  auto tooSlow = [&] { return tooSlowStatus(samples, opts, partial); };
  auto quickReject = [&] { return quickRejectStatus(samples, opts, partial); };

  // First call: surfaces launch errors before anything is timed.
  if (before_run) KTUNE_RETURN_IF_ERROR(before_run(-1));
  KTUNE_RETURN_IF_ERROR(fn());
  KTUNE_RETURN_IF_ERROR(backend_.synchronize(stream));
  KTUNE_RETURN_IF_ERROR(backend_.checkError());

  const int est_runs = std::max(1, opts.estimate_runs);
  // Host wall time of the last estimate batch, per run: what one timed run really costs (a
  // budget, not a figure: the figures stay device time).
  auto host_t0 = std::chrono::steady_clock::now();
  int host_runs = 1;
  KTUNE_RETURN_IF_ERROR(timed(1));
  int est_done = 1;
  if (!quickReject().ok()) {
    // Confirmed by kQuickConfirmRuns more before it rejects; a first run they disown is left out
    // of the estimate (it sizes the run counts).
    KTUNE_RETURN_IF_ERROR(timed(kQuickConfirmRuns));
    KTUNE_RETURN_IF_ERROR(quickReject());
    samples.erase(samples.begin());
    est_done += kQuickConfirmRuns;
    host_runs = est_done;
  }
  const double first_ms = msSince(host_t0) / est_done;
  if (est_runs > est_done) {
    const int chunk = pacer.perChunk(first_ms);
    host_t0 = std::chrono::steady_clock::now();
    host_runs = est_runs - est_done;
    for (int done = 0; done < est_runs - est_done;) {
      const int n = std::min(chunk, est_runs - est_done - done);
      host_t0 += pacer.before(n * first_ms);  // the pause is not a run's cost
      KTUNE_RETURN_IF_ERROR(timed(n));
      done += n;
    }
  }
  const double host_per_run = msSince(host_t0) / host_runs;
  KTUNE_RETURN_IF_ERROR(tooSlow());
  double est = 0;
  for (double x : samples) est += x;
  est /= static_cast<double>(samples.size());
  est = std::max(est, 1e-6);
  const auto [n_warm, n_rep] = runCounts(opts, est, host_per_run, static_cast<int>(samples.size()));
  counts_ = {est_runs, n_warm, n_rep, 0, est, host_per_run};

  const int warm_chunk = pacer.perChunk(est);
  for (int i = 0; i < n_warm; ++i) {
    if (pacer.on() && i % warm_chunk == 0) {
      KTUNE_RETURN_IF_ERROR(backend_.synchronize(stream));
      pacer.before(std::min(warm_chunk, n_warm - i) * est);
    }
    if (before_run) KTUNE_RETURN_IF_ERROR(before_run(-1));
    KTUNE_RETURN_IF_ERROR(fn());
  }
  KTUNE_RETURN_IF_ERROR(backend_.synchronize(stream));
  KTUNE_RETURN_IF_ERROR(backend_.checkError());

  samples.clear();  // the estimate ran cold; keep only warmed-up runs
  const double run_ms = std::max(est, host_per_run);
  const int batch = std::min(std::max(opts.check_every, 1), pacer.perChunk(run_ms));
  for (int done = 0; done < n_rep;) {
    int n = std::min(batch, n_rep - done);
    pacer.before(n * run_ms);
    KTUNE_RETURN_IF_ERROR(timed(n));
    done += n;
    KTUNE_RETURN_IF_ERROR(tooSlow());
    if (opts.target_ci > 0 && done >= opts.min_runs) {
      std::vector<double> sorted = samples;
      std::sort(sorted.begin(), sorted.end());
      if (medianRelHalfWidth(sorted) <= opts.target_ci) break;
    }
  }
  pacer.before(std::numeric_limits<double>::infinity());  // the last stretch's pause, too
  counts_.timed = static_cast<int>(samples.size());
  BenchStats s = computeStats(samples);
  if (partial) *partial = s;
  if (samples_out) *samples_out = std::move(samples);
  return s;
}

Expected<BenchStats> measure(Backend& backend, StreamHandle stream,
                              const std::function<Status()>& fn, const BenchOptions& opts) {
  KTUNE_ASSIGN_OR_RETURN(auto devs, backend.devices());
  DeviceInfo d = devs.empty() ? DeviceInfo{} : devs.front();
  Benchmarker b(backend, d);
  return b.measure(stream, fn, opts);
}

}  // namespace ktune
