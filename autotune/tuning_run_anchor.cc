// Drift tracking in the guided race (guided.h: kAnchorMs, anchorFactor): on a key whose first
// timed kernel runs long, the first candidate that passes is the anchor; after every
// kAnchorChunk candidates it is timed again, and the candidates timed in between get their times
// divided by the anchor's factor at their turn, so a candidate timed while the GPU ran hot is
// compared at the clock the race started with. The bar for early rejection follows the clock the
// other way (the best so far times the current factor). The anchor keeps its first timing. The
// clock under a power cap moves both ways within tens of ms (one key's factors read 0.94..1.19),
// so the interpolation is not exact: its largest step is the key's drift, which widens the
// finalists' pick (a normalized time alone once put a config 8% ahead that the rounds found level).
#include <algorithm>
#include <cmath>
#include <ostream>

#include "autotune/benchmarker.h"
#include "autotune/guided.h"
#include "autotune/results.h"
#include "autotune/tuning_run_stages.h"
#include "base/format.h"
#include "base/timeline.h"

namespace ktune {
namespace detail {

namespace {

// The anchor's re-timing: a few runs, no checks (it passed them), no early rejection.
BenchOptions anchorOptions(const BenchOptions& base) {
  BenchOptions bo = fewRuns(base, 3);
  bo.warmup_ms = base.warmup_ms / 5;
  bo.verify = false;
  bo.reverify = false;
  bo.verify_within = 0;
  return bo;
}

}  // namespace

// The first candidate of `batch` (vendor candidates first) that passes becomes the anchor, each
// timed alone until one does; a short kernel or several devices turn tracking off. *from: how
// many of `batch` were timed.
Status TuningRun::pickAnchor(const std::vector<size_t>& batch, size_t* from) {
  *from = 0;
  if (e_.devicePool()) anchor_.off = true;
  while (!anchor_.off && anchor_.i < 0 && *from < batch.size()) {
    const size_t i = batch[(*from)++];
    KTUNE_RETURN_IF_ERROR(bench({i}));
    const Cand& c = cands_[i];
    if (!passedOriginal(c)) continue;
    if (c.r.stats.median_ms < guided::kAnchorMs) {
      anchor_.off = true;
    } else {
      anchor_.i = static_cast<long>(i);
      anchor_.first = c.r.stats;
    }
  }
  return Status::Ok();
}

Status TuningRun::retimeAnchor(double* f) {
  Cand& c = cands_[static_cast<size_t>(anchor_.i)];
  const CandidateResult kept = c.r;
  const BenchOptions bo = anchorOptions(e_.engineOptions().bench);
  const BenchOptions* prev = round_bo_;
  const double bar = best_;
  round_bo_ = &bo;
  done_[static_cast<size_t>(anchor_.i)] = false;
  const Status st = bench({static_cast<size_t>(anchor_.i)});
  round_bo_ = prev;
  best_ = bar;
  const BenchStats again = c.r.stats;
  const bool ok = passedOriginal(c);
  c.r = kept;
  done_[static_cast<size_t>(anchor_.i)] = true;
  KTUNE_RETURN_IF_ERROR(st);
  if (!ok) {  // the anchor failed its re-timing: the factor stays where it was, tracking ends
    anchor_.off = true;
    return Status::Ok();
  }
  const double f0 = *f;
  *f = guided::anchorFactor(anchor_.first, again);
  anchor_.step = std::max(anchor_.step, std::fabs(std::log(*f / f0)));
  ++anchor_.retimes;
  anchor_.max_f = std::max(anchor_.max_f, *f);
  anchor_.min_f = std::min(anchor_.min_f, *f);
  timelineMark("race_anchor", strprintf("%.4f", *f));
  return Status::Ok();
}

Status TuningRun::benchTracked(std::vector<size_t> batch) {
  if (anchor_.off || batch.empty()) return bench(std::move(batch));
  std::stable_partition(batch.begin(), batch.end(),
                        [&](size_t i) { return !cands_[i].vendor_source.empty(); });
  size_t at = 0;
  if (anchor_.i < 0) KTUNE_RETURN_IF_ERROR(pickAnchor(batch, &at));
  for (; at < batch.size();) {
    const size_t n = anchor_.off ? batch.size() - at : std::min(guided::kAnchorChunk, batch.size() - at);
    const std::vector<size_t> chunk(batch.begin() + static_cast<long>(at),
                                    batch.begin() + static_cast<long>(at + n));
    at += n;
    if (anchor_.off) return bench(chunk);
    const double f0 = anchor_.f, bar = best_;
    if (best_ > 0) best_ *= f0;  // early rejection at the clock the chunk runs at
    const Status st = bench(chunk);
    best_ = bar;
    KTUNE_RETURN_IF_ERROR(st);
    double f1 = f0;
    KTUNE_RETURN_IF_ERROR(retimeAnchor(&f1));
    for (size_t k = 0; k < chunk.size(); ++k) {
      Cand& c = cands_[chunk[k]];
      if (c.r.stats.runs <= 0) continue;
      guided::scaleStats(c.r.stats, guided::interpolateFactor(f0, f1, k, chunk.size()));
      if (passedOriginal(c) && (best_ <= 0 || c.r.stats.median_ms < best_))
        best_ = c.r.stats.median_ms;
    }
    anchor_.f = f1;
    // The chunk ran at a clock only known after it: one it stopped as slower that is not (within
    // kMinAbortFactor of the best at the anchor's first clock) is timed again, once, next chunk.
    const std::vector<size_t> again = reviveRejected(chunk);
    batch.insert(batch.begin() + static_cast<long>(at), again.begin(), again.end());
  }
  return Status::Ok();
}

std::vector<size_t> TuningRun::reviveRejected(const std::vector<size_t>& chunk) {
  std::vector<size_t> again;
  for (size_t i : chunk) {
    Cand& c = cands_[i];
    if (!rejectedAsSlower(c.r) || best_ <= 0 || c.r.stats.median_ms > kMinAbortFactor * best_ ||
        std::find(anchor_.revived.begin(), anchor_.revived.end(), i) != anchor_.revived.end())
      continue;
    anchor_.revived.push_back(i);
    c.live = true;
    c.r.status = Code::kOk;
    c.r.reason.clear();
    c.r.stats = BenchStats{};
    done_[i] = false;
    again.push_back(i);
  }
  return again;
}

// KTUNE_VERBOSE=1: the tracked drift, in place of the probe's line. The largest step of the
// factor from one re-timing to the next is what the interpolation can be off by at a candidate:
// the key's drift (the finalists' pick allows for it, FinalistRun::drift).
void TuningRun::logAnchor() const {
  if (!e_.options().verbose || anchor_.i < 0) return;
  e_.log() << strprintf("ktune: %s [%s]: guided: drift tracked by %s (%.4g ms): %d re-timings, "
                        "factor %.3f..%.3f, last %.3f, largest step %.2f%%\n",
                        f_.name.c_str(), key_.c_str(),
                        cands_[static_cast<size_t>(anchor_.i)].r.config.c_str(),
                        anchor_.first.median_ms, anchor_.retimes, anchor_.min_f, anchor_.max_f,
                        anchor_.f, 100 * anchor_.step);
}

}  // namespace detail
}  // namespace ktune
