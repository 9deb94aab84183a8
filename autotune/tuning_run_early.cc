// The guided race's first wave timed before the vendor round (Options::early_jit): in a warm run
// (every config of the first wave in the code-object store) the isolation worker can time JIT
// configs as soon as its inputs exist, while its vendor library sets up (the library's first use
// costs ~0.1 s, the GPU idle meanwhile: bench/NOTES.md, issue 34). The wave is timed without the
// checks round 1 makes (they read the library's reference). Then, before the vendor round, every
// candidate of the wave that set a new bar in the order it was timed is checked: a superset of
// what round 1 reads back (it starts from the vendor round's best, a lower bar), and one that
// fails is failed as round 1 would have failed it. The reference is made by the first of these
// checks, so the vendor round runs as it did first (the default's kernel loaded, its reference
// there: timed after the reference's own run and lazy load, the default read 1-4% slower).
// What the race then reads (the batch, its times, the vendor round's) is what it read before;
// only the early rejection inside the wave had the wave's own best as its bar.
#include <algorithm>
#include <utility>

#include "autotune/benchmarker.h"
#include "autotune/compile_pool.h"
#include "autotune/partial_record.h"
#include "autotune/results.h"
#include "autotune/tuning_run_stages.h"
#include "base/format.h"
#include "base/timeline.h"

namespace ktune {
namespace detail {

bool TuningRun::earlyJit(const std::vector<size_t>& vendor, size_t first) const {
  // Only while the worker's vendor library has not been used (its set-up is what the wave hides):
  // a later key of the process times the vendor candidates first, as before (a suite's large keys
  // timed their wave without the vendor's bar for early rejection, for nothing).
  if (!e_.options().early_jit || iso_off_ || vendor.empty() || e_.devicePool() ||
      e_.workerVendorWarm() ||
      e_.engineOptions().isolation.vendor_in_process || first == 0 || hits_.size() < first)
    return false;
  return std::all_of(hits_.begin(), hits_.begin() + static_cast<long>(first),
                     [](char h) { return h != 0; });
}

std::vector<size_t> TuningRun::nextBatch(CompilePool& pool) {
  early_.timed = !early_.got.empty();
  return early_.timed ? std::exchange(early_.got, {}) : pool.take();
}

Status TuningRun::raceEarlyThenVendors(CompilePool& pool, size_t first,
                                       const std::vector<size_t>& order,
                                       const std::vector<size_t>& vendor, double* vendor_ms) {
  early_ = Early{};
  if (!earlyJit(vendor, std::min(first, order.size()))) {
    KTUNE_RETURN_IF_ERROR(benchVendors(vendor, vendor_ms));
    if (!iso_off_ && !vendor.empty()) e_.noteWorkerVendorWarm();
    return Status::Ok();
  }
  const size_t want = std::min(first, order.size());
  while (early_.got.size() < want) {  // store hits: each a few ms at most
    std::vector<size_t> got = pool.take();
    if (got.empty()) break;
    early_.got.insert(early_.got.end(), got.begin(), got.end());
  }
  std::stable_sort(early_.got.begin(), early_.got.end(),
                   [&](size_t a, size_t b) { return pool.slotOf(a) < pool.slotOf(b); });
  for (size_t j : early_.got) admit(order[j], early_.batch);
  const BenchOptions* r1 = round_bo_;
  BenchOptions unchecked = *r1;
  unchecked.verify = false;
  unchecked.reverify = false;
  unchecked.verify_within = 0;  // checkEarly() reads back the ones that would have been
  const double before = best_;  // the vendor round starts from the bar it always had
  timelineMark("race_early", std::to_string(early_.batch.size()));
  round_bo_ = &unchecked;
  Status st = bench(early_.batch);
  round_bo_ = r1;
  best_ = before;
  timelineMark("race_early_done");
  KTUNE_RETURN_IF_ERROR(st);
  KTUNE_RETURN_IF_ERROR(checkEarly(*r1));
  double early_best = 0;
  for (size_t i : early_.batch) {
    const Cand& c = cands_[i];
    if (c.r.status == Code::kOk && c.r.stats.runs > 0 &&
        (early_best <= 0 || c.r.stats.median_ms < early_best))
      early_best = c.r.stats.median_ms;
  }
  best_ = before;  // the vendor round starts from the bar it always had
  KTUNE_RETURN_IF_ERROR(benchVendors(vendor, vendor_ms));
  e_.noteWorkerVendorWarm();
  if (early_best > 0 && (best_ <= 0 || early_best < best_)) best_ = early_best;
  return Status::Ok();
}

// Round 1 reads back a candidate whose median is within r1.verify_within of the best so far (it
// would set the bar). Here the bar starts from the resumed results' best (best_), not the vendor
// round's: the candidates that set a new bar in the order they were timed are checked (before
// their runs, after the second and after the last), a superset of round 1's. A check's own runs
// are not its time: the early timing is kept. A failure moves the bar, so the walk is made again
// until nothing new is to be checked. best_ is left as it was.
Status TuningRun::checkEarly(const BenchOptions& r1) {
  BenchOptions ck = fewRuns(r1, 3);
  ck.verify = true;
  ck.reverify = true;
  ck.verify_within = 0;
  ck.warmup_ms = 0;
  std::vector<size_t> checked;
  const double start = best_;
  for (;;) {
    double bar = start;
    std::vector<size_t> want;
    for (size_t i : early_.batch) {
      const Cand& c = cands_[i];
      if (c.r.status != Code::kOk || c.r.stats.runs == 0) continue;
      if (bar > 0 && c.r.stats.median_ms > bar * r1.verify_within) continue;
      bar = c.r.stats.median_ms;
      if (std::find(checked.begin(), checked.end(), i) == checked.end()) want.push_back(i);
    }
    if (want.empty()) break;
    std::vector<CandidateResult> kept;
    for (size_t i : want) kept.push_back(cands_[i].r);
    const BenchOptions* prev = round_bo_;
    round_bo_ = &ck;
    const double before = best_;
    Status st = bench(want);
    round_bo_ = prev;
    best_ = before;
    KTUNE_RETURN_IF_ERROR(st);
    for (size_t k = 0; k < want.size(); ++k) {
      Cand& c = cands_[want[k]];
      checked.push_back(want[k]);
      if (c.r.status != Code::kOk) continue;  // failed its check: round 1's verdict
      c.r = kept[k];  // passed: the early timing stands
      recordPartial(e_, fs_, key_, c.r, &write_reported_);
    }
    timelineMark("race_early_checked", strprintf("%zu", want.size()));
  }
  return retimeRejected(checked, r1);
}

// A candidate of the wave that failed its check had been the wave's bar for early rejection,
// which round 1 would never have let it be: the ones it stopped as slower are timed again under
// round 1's own rules, from the bar the checked candidates set. best_ is left as it was.
Status TuningRun::retimeRejected(const std::vector<size_t>& checked, const BenchOptions& r1) {
  const bool any_failed = std::any_of(checked.begin(), checked.end(), [&](size_t i) {
    return cands_[i].r.status != Code::kOk;
  });
  if (!any_failed) return Status::Ok();
  std::vector<size_t> again;
  for (size_t i : early_.batch) {
    Cand& c = cands_[i];
    if (!rejectedAsSlower(c.r)) continue;
    c.live = true;
    c.r.status = Code::kOk;
    c.r.reason.clear();
    c.r.stats = BenchStats{};
    again.push_back(i);
  }
  if (again.empty()) return Status::Ok();
  timelineMark("race_early_again", std::to_string(again.size()));
  const double before = best_;
  for (size_t i : checked) {  // the bar the checked candidates set
    const Cand& c = cands_[i];
    if (c.r.status == Code::kOk && c.r.stats.runs > 0 && (best_ <= 0 || c.r.stats.median_ms < best_))
      best_ = c.r.stats.median_ms;
  }
  const BenchOptions* prev = round_bo_;
  round_bo_ = &r1;
  Status st = bench(again);
  round_bo_ = prev;
  best_ = before;
  return st;
}

}  // namespace detail
}  // namespace ktune
