// The guided search of a tuning run (autotune/guided.h has the rules, docs/search.md the story):
// the live JIT candidates in prior order, compiled lazily by a paced pool, each finished batch
// given a short first round while the next compiles run (only a candidate that can lead is read
// back); exploration stops once the regret the static prior allows for the rest is small and no
// new leader came for a while (or the budget is spent), and the compiles not started are dropped;
// then later rounds for the candidates whose interval still reaches the leader's.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>

#include "autotune/compile_pool.h"
#include "autotune/device_pool.h"
#include "autotune/finalists.h"
#include "autotune/guided.h"
#include "autotune/race_stop.h"
#include "autotune/tuning_run_stages.h"
#include "base/format.h"
#include "base/timeline.h"

namespace ktune {
namespace detail {

namespace {

// Exploration stops once the rest could be at most this much faster than the leader.
constexpr double kRegretStop = 0.005;
// Candidates whose first-round interval reaches the leader's get at most this many more rounds.
constexpr int kLaterRounds = 2;
// Compiles past the first min_n run at most this many candidates ahead of the race. A window of
// every compile thread shortened compile-bound races but raced other candidates: the batches that
// finished together filled the stall's count before a leading coverage pick's class (promoted)
// was reached, and a suite's 16x6144 key lost its winner in 3 runs of 3 (bench/NOTES.md).
constexpr size_t kWindow = 4;
// A first-round candidate is verified when its median is within this factor of the best so far:
// when it would set a new bar. One that comes close without leading is not read back here: if it
// becomes a finalist, the finalists' first round verifies it (finalists.h).
constexpr double kVerifyWithin = 1.0;

// First round: a short do_bench with a precision target and the usual early rejection.
BenchOptions firstRound(const BenchOptions& base) {
  BenchOptions bo = base;
  bo.warmup_ms = base.warmup_ms / 5;
  bo.rep_ms = base.rep_ms / 4;
  bo.min_runs = std::max(3, base.min_runs / 2);
  bo.target_ci = 0.01;
  // Read back only a candidate that can lead (benchOne): the others are out after this round.
  bo.verify = false;
  bo.verify_within = kVerifyWithin;
  return bo;
}

// Round r >= 2: twice the runs of the round before, no verification (done in round 1), no early
// rejection (the candidate already showed it can reach the leader).
BenchOptions laterRound(const BenchOptions& base, int r) {
  BenchOptions bo = base;
  const double scale = std::ldexp(1.0, r - 1);
  bo.warmup_ms = base.warmup_ms / 2;
  bo.rep_ms = base.rep_ms / 4 * scale;
  bo.min_runs = static_cast<int>(std::max(3, base.min_runs / 2) * scale);
  bo.target_ci = 0.0025;
  bo.verify = false;
  bo.abort_factor = 1e9;
  bo.estimate_runs = kKnownCostEstimateRuns;  // round 1 measured its cost
  return bo;
}

// Whether a new leader restarts the race's patience against the one that last did: any faster
// median, but at the launch floor only one faster by more than both intervals (guided::newLeader:
// there a faster median is a tie). Elsewhere as the stopping rule was measured with.
bool restartsPatience(const Cand& lead, const Cand& anchor, bool at_floor) {
  if (at_floor) return guided::newLeader(lead.r.stats, anchor.r.stats);
  return lead.r.stats.median_ms < anchor.r.stats.median_ms * (1 - 1e-9);
}

// The fastest of the `vendor` candidates that passed, ms (0: none).
double fastestOf(const std::vector<Cand>& cands, const std::vector<size_t>& vendor) {
  double best = 0;
  for (size_t i : vendor)
    if (passedOriginal(cands[i]) && (best <= 0 || cands[i].r.stats.median_ms < best))
      best = cands[i].r.stats.median_ms;
  return best;
}

// owePickClasses, with a timeline mark naming each config (a position of `order`) whose class
// became owed, its time and the vendor's.
bool oweAndMark(StopRule& s, const std::vector<size_t>& got, double leader_ms, double vendor_ms,
                size_t explored, CompilePool& pool, const std::vector<Cand>& cands,
                const std::vector<size_t>& order) {
  std::vector<size_t> by;
  const bool owes = owePickClasses(s, got, leader_ms, vendor_ms, explored, pool, &by);
  for (size_t j : by)
    timelineMark("race_owed_by", strprintf("%.4g ms (vendor %.4g) %s", s.cv.ms[j], vendor_ms,
                                           cands[order[j]].r.config.c_str()));
  return owes;
}

void logBatch(std::ostream& log, const std::string& what, size_t explored, size_t n, double leader,
              size_t since_leader, const guided::Regret& rg) {
  log << strprintf("ktune: %s: guided: %zu of %zu raced, leader %.4g ms, %zu since a new leader, "
                   "regret estimate %.2f%%%s\n",
                   what.c_str(), explored, n, leader, since_leader, 100 * rg.estimate,
                   rg.tie > 0 ? " (launch floor)" : "");
}

void sortBySlot(const CompilePool& pool, std::vector<size_t>& jobs) {
  std::sort(jobs.begin(), jobs.end(),
            [&](size_t a, size_t b) { return pool.slotOf(a) < pool.slotOf(b); });
}

// The candidates (of `order`) at the positions not taken.
std::vector<size_t> untaken(const std::vector<size_t>& order, const std::vector<bool>& taken) {
  std::vector<size_t> rest;
  for (size_t j = 0; j < order.size(); ++j)
    if (!taken[j]) rest.push_back(order[j]);
  return rest;
}

// The JIT candidate at position `pos` of `order` became the leader: its untaken twins start next
// (guided::isTwinOf), and when it is a coverage pick the rest of its class after them
// (guided::sameClasses).
void promoteAfterLeader(CompilePool& pool, const StopRule& stop, const std::vector<Cand>& cands,
                        const std::vector<size_t>& order, size_t pos) {
  const std::vector<bool>& taken = stop.cv.taken;
  if (stop.picked[pos]) pool.promote(guided::sameClasses(stop.cv.classes, taken, pos));
  const Config& leader = cands[order[pos]].config;
  std::vector<size_t> twins;
  for (size_t j = 0; j < order.size(); ++j)
    if (!taken[j] && guided::isTwinOf(cands[order[j]].config, leader)) twins.push_back(j);
  pool.promote(twins);
}

// Candidates taken after the one in slot `leader_slot` of the pool's start order (the prior's
// order, less what coverage moved ahead): the race's patience and its stall count these.
size_t takenAfter(const CompilePool& pool, const std::vector<bool>& taken, long leader_slot) {
  size_t k = 0;
  for (size_t j = 0; j < taken.size(); ++j)
    k += taken[j] && long(pool.slotOf(j)) > leader_slot ? 1 : 0;
  return k;
}

}  // namespace

// The live JIT candidates (indices into cands_) in the prior's order; fills static_score_.
std::vector<size_t> TuningRun::priorOrder() {
  std::vector<size_t> live;
  for (size_t i = 0; i < cands_.size(); ++i)
    if (cands_[i].live && cands_[i].vendor_source.empty()) live.push_back(i);
  int used = 0;
  const auto hist = guided::historyScores(fs_.db->entries(), key_, 4, 8.0, &used);
  rep_.history_neighbours = used;
  double best_tile = 0, sum_factor = 0;
  int tiled = 0;
  for (size_t i : live) best_tile = std::max(best_tile, guided::tileIntensity(cands_[i].config));
  for (size_t i : live) {
    const double t = guided::tileIntensity(cands_[i].config);
    if (t > 0) sum_factor += guided::tileFactor(t, best_tile), ++tiled;
  }
  // A config without a tile in a space of tiled ones (a GEMM's skinny kernel) is neither favoured
  // nor penalised: it gets the tiled configs' mean factor.
  const double untiled = tiled > 0 ? sum_factor / tiled : 1.0;
  Config def = f_.default_for ? f_.default_for(p_) : f_.default_config;
  static_score_.assign(cands_.size(), 0);
  std::vector<guided::PriorItem> items;
  for (size_t i : live) {
    const Cand& c = cands_[i];
    guided::PriorItem it;
    const double tile = guided::tileIntensity(c.config);
    it.static_score = guided::waveEfficiency(c.dims, e_.deviceInfo().multiprocessors) *
                      (tile > 0 ? guided::tileFactor(tile, best_tile) : untiled);
    if (auto h = hist.find(c.r.config); h != hist.end()) it.history = h->second;
    it.is_default = c.config == def || c.config == f_.default_config;
    static_score_[i] = it.static_score;
    items.push_back(it);
  }
  std::vector<size_t> order;
  for (size_t k : guided::priorOrder(items)) order.push_back(live[k]);
  return order;
}

bool TuningRun::races() const {
  size_t live_jit = 0;
  for (const Cand& c : cands_) live_jit += c.live && c.vendor_source.empty() ? 1 : 0;
  // Spaces below kMinGuided are measured in full: racing them would save little.
  return e_.engineOptions().search->guided() && live_jit >= guided::kMinGuided;
}

// The first min_n compile at once (the race takes them all), and with idle threads the next
// `window` beside them (guided::firstWave); past them, compiles run only a small window ahead of
// the race: the race may stop after any batch, and a compile that is running then must still end
// (an NVRTC compile cannot be stopped), so its wait is bounded by the window. With several
// devices the window keeps each busy.
TuningRun::Waves TuningRun::waves(size_t n) const {
  Waves w;
  w.threads = CompilePool::threadsFor(n, e_.options().compile_threads, true);
  w.window = std::max<size_t>(kWindow, 2 * e_.options().devices.size());
  w.first = guided::firstWave(n, guided::minExplore(n), w.window, w.threads);
  // Configs left out (leaveOutDominated) do not shrink the wave below what the whole space would
  // have started on these threads: a smaller wave left the leader's patience a second round of
  // compiles more often (a suite's 4096^3 key on the H200: 5 more, 2.2 s).
  if (left_out_ > 0) {
    const size_t all = n + left_out_;
    const size_t before = guided::firstWave(all, guided::minExplore(all), w.window, w.threads);
    w.first = std::max(w.first, std::min({n, before, size_t(std::max(1, w.threads))}));
  }
  return w;
}

size_t TuningRun::precompile(int threads, size_t depth) {
  precompiling_ = true;
  enumerate();
  loadHistory();
  select();
  checkLaunchDims();
  leaveOutDominated();
  std::vector<size_t> live;
  if (races()) {
    live = priorOrder();
    live.resize(std::min(live.size(), depth > 0 ? depth : waves(live.size()).first));
  } else {
    for (size_t i = 0; i < cands_.size(); ++i)
      if (cands_[i].live && cands_[i].vendor_source.empty()) live.push_back(i);
  }
  to_compile_ = live;
  const int t = threads > 0 ? threads : CompilePool::threadsFor(live.size(), e_.options().compile_threads, true);
  CompilePool::parallelFor(live.size(), t, [&](size_t j) { compileOne(j); });
  size_t compiled = 0;
  for (size_t i : live) compiled += !cands_[i].hit && cands_[i].live ? 1 : 0;
  return compiled;
}

guided::Regret TuningRun::regretOf(const std::vector<size_t>& rest) const {
  std::vector<guided::Measured> measured;
  const int lead = leaderIndex();
  const double leader = lead >= 0 ? cands_[lead].r.stats.median_ms : 0;
  for (size_t i = 0; i < cands_.size(); ++i) {
    const Cand& c = cands_[i];
    if (c.vendor_source.empty() && c.r.stats.runs > 0 && c.r.stats.median_ms > 0)
      measured.push_back({c.r.stats.median_ms, static_score_[i], guided::groupOf(c.config),
                          guided::relHalfWidth(c.r.stats)});
  }
  std::vector<guided::Unmeasured> unmeasured;
  for (size_t i : rest) unmeasured.push_back({static_score_[i], guided::groupOf(cands_[i].config)});
  return guided::regretWithFloor(measured, unmeasured, leader);
}

// The fastest candidate that passed so far (vendor, resumed or JIT), -1 when none.
int TuningRun::leaderIndex() const {
  int lead = -1;
  for (size_t i = 0; i < cands_.size(); ++i)
    if (passedOriginal(cands_[i]) &&
        (lead < 0 || cands_[i].r.stats.median_ms < cands_[lead].r.stats.median_ms))
      lead = static_cast<int>(i);
  return lead;
}

void TuningRun::markNotReached(const std::vector<size_t>& rest, size_t explored) {
  for (size_t i : rest) {
    Cand& c = cands_[i];
    c.live = false;
    c.r.status = Code::kOk;  // not a failure: never compiled nor timed (stats.runs == 0)
    c.r.reason = strprintf("not reached: the guided search stopped after %zu candidates", explored);
    done_[i] = true;
    ++rep_.not_reached;
  }
}

// Per position of `order`, whether the store holds the config's code object. The race takes a
// store hit in milliseconds, so with a warm store it reaches the hits ahead of a miss before the
// pool starts compiling that miss (CompilePool::setCheap): a miss is compiled only when the race,
// having timed the hits before it, still wants more candidates. Probed on the pool's threads
// (each probe builds the config's source and hashes it).
std::vector<char> TuningRun::storeHits(const std::vector<size_t>& order, int threads) {
  std::vector<char> hit(order.size(), 0);
  CompilePool::parallelFor(order.size(), threads, [&](size_t j) {
    hit[j] = e_.inStore(fs_, cands_[order[j]].config, p_) ? 1 : 0;
  });
  return hit;
}

// Vendor candidates first (nothing to compile, and they set a strong bar for early rejection),
// timed while the first compiles run; returns them. best_ starts from resumed results.
std::vector<size_t> TuningRun::raceVendors() {
  std::vector<size_t> vendor;
  for (size_t i = 0; i < cands_.size(); ++i) {
    if (cands_[i].resumed && cands_[i].r.status == Code::kOk && cands_[i].r.stats.runs > 0 &&
        (best_ <= 0 || cands_[i].r.stats.median_ms < best_))
      best_ = cands_[i].r.stats.median_ms;
    if (!cands_[i].vendor_source.empty() && cands_[i].live) vendor.push_back(i);
  }
  has_vendor_ = !vendor.empty();
  return vendor;
}

Status TuningRun::benchVendors(const std::vector<size_t>& vendor, double* ms) {
  const auto t0 = Clock::now();
  timelineMark("race_vendor", std::to_string(vendor.size()));
  Status st = benchTracked(vendor);
  *ms = msSince(t0);
  timelineMark("race_vendor_done", strprintf("%.1f ms", *ms));
  return st;
}

// Round 1 with lazy compiles: one pool over the prior order, paced by a window (compiles run at
// most `window` candidates ahead of the race, so a config the race never asks for is never
// compiled), each finished batch admitted and timed while the next compiles run. Exploration
// stops once the regret the prior allows for the rest is small and no new leader came for a
// while, or when the budget is spent; the pool is cancelled then.
Status TuningRun::compileAndRace() {
  const auto t0 = Clock::now();
  rep_.search = "guided";
  const std::vector<size_t> order = priorOrder();
  StopRule stop;  // per position of `order`: its coverage classes, whether raced, its time
  for (size_t i : order)
    stop.cv.classes.push_back(guided::coverageClasses(cands_[i].config, f_.race_each));
  done_.assign(cands_.size(), false);
  iso_off_ = !e_.options().isolate;
  if (e_.options().isolate && f_.args_json && f_.make_problem)
    e_.prepareWorkers(f_.name, f_.args_json(p_));
  const BenchOptions r1 = firstRound(e_.engineOptions().bench);
  round_bo_ = &r1;
  TuneReport::SearchRound first{1, 0, 0, 0};
  const std::vector<size_t> vendor = raceVendors();
  const size_t n = order.size(), min_n = guided::minExplore(n);
  const Waves wv = waves(n);  // the pool's threads, window and first wave
  const int threads = wv.threads;
  to_compile_ = order;
  CompilePool pool(n, threads, [&](size_t j) { compileOne(j); },
                   [&](size_t j, size_t finished) {
                     e_.progress({f_.name, key_, "compile", static_cast<int>(finished),
                                  static_cast<int>(n), cands_[to_compile_[j]].r.config});
                   });
  pool.setWindow(wv.window, wv.first);
  pool.setCheap(hits_ = storeHits(order, threads));
  pool_ = &pool;
  pool.start();
  double vendor_ms = 0;
  Status st = raceEarlyThenVendors(pool, wv.first, order, vendor, &vendor_ms);
  first.benchmarked += static_cast<int>(vendor.size() + early_.batch.size());
  stop.reset(n);
  std::vector<bool>& taken = stop.cv.taken;
  const double vendor_best = fastestOf(cands_, vendor);
  std::vector<long> pos_of(cands_.size(), -1);  // candidate -> its position in the prior's order
  for (size_t j = 0; j < n; ++j) pos_of[order[j]] = static_cast<long>(j);
  size_t explored = 0, since_leader = 0;
  // The leader that last restarted the patience (a tie with it does not: guided::newLeader) and
  // its slot in the pool's start order (-1: vendor or resumed).
  int anchor = leaderIndex();
  long leader_slot = -1;
  bool stopping = false, by_budget = false;
  const std::string what = f_.name + " [" + key_ + "]";  // the verbose lines' label
  for (std::vector<size_t> got; st.ok() && !(got = nextBatch(pool)).empty();) {
    sortBySlot(pool, got);  // the start order within what finished together
    std::vector<size_t> batch;
    for (size_t j : got) {
      taken[j] = true;
      if (!early_.timed) admit(order[j], batch);  // the early wave's were, and timed
    }
    explored += got.size();
    first.benchmarked += static_cast<int>(batch.size());
    st = benchTracked(batch);
    for (size_t j : got)  // early rejection keeps the runs it made
      if (cands_[order[j]].r.stats.runs > 0) stop.cv.ms[j] = cands_[order[j]].r.stats.median_ms;
    if (!st.ok()) continue;
    const guided::Regret rg = regretOf(untaken(order, taken));
    const int lead = leaderIndex();
    const double leader = lead >= 0 ? cands_[lead].r.stats.median_ms : 0;
    const bool owes = rg.tie <= 0 && oweAndMark(stop, got, leader, vendor_best, explored, pool,
                                                cands_, order);
    if (stopping && (by_budget || !owes)) continue;  // the compiles that were running, raced too
    if (stopping) pool.resume();  // one of them owes its class: the race goes on
    stopping = false;
    // Patience counts the candidates after the leader in the start order (the prior's, less what
    // coverage moved ahead), not the batches since it came: how the finished compiles happen to
    // be batched (one by one when cold, all at once from a warm store) must not change when the
    // race stops.
    rep_.regret_estimate = rg.estimate;
    if (lead >= 0 && lead != anchor &&
        (anchor < 0 || restartsPatience(cands_[lead], cands_[anchor], rg.tie > 0))) {
      anchor = lead;
      const bool jit = pos_of[lead] >= 0 && taken[pos_of[lead]];
      leader_slot = long(pool.slotOf(jit ? size_t(pos_of[lead]) : got.back()));
      if (jit) promoteAfterLeader(pool, stop, cands_, order, size_t(pos_of[lead]));
    }
    since_leader = takenAfter(pool, taken, leader_slot);
    stop.cv.leader_ms = leader;
    if (e_.options().verbose)
      logBatch(e_.log(), what, explored, n, leader, since_leader, rg);
    if (e_.options().budget_s > 0 && msSince(t0) > 1e3 * e_.options().budget_s) {
      rep_.budget_hit = explored < n;
      stopping = by_budget = true;
    } else if (stopsHere(stop, rg.estimate < std::max(kRegretStop, rg.tie), explored, min_n,
                         since_leader, pool, e_.options().verbose ? &e_.log() : nullptr, what)) {
      stopping = true;
      rep_.launch_floor = rg.tie > 0;  // at the floor the tied are a tie: no later rounds
      timelineMark("race_stop", strprintf("%zu raced, %zu started", explored, pool.started()));
    }
    // No compile starts after this; the ones running are waited for anyway, so they are raced
    // too (a round of a compiled candidate costs far less than its compile).
    if (stopping) pool.cancel();
  }
  pool.cancel();
  for (std::vector<size_t> got; !(got = pool.take()).empty();) {}  // after an error only
  pool_ = nullptr;
  rep_.compile_wall_ms = pool.wallMs();
  const size_t started = pool.started();
  noteCompileJobs(threads, wv.first);
  markNotReached(untaken(order, taken), explored);
  rep_.reached = static_cast<int>(explored);
  for (size_t j = 0; j < n; ++j)
    if (pool.wasStarted(j)) (cands_[order[j]].hit ? rep_.store_hits : rep_.compiled) += 1;
  first.compiled = static_cast<int>(started);
  KTUNE_RETURN_IF_ERROR(st);
  KTUNE_RETURN_IF_ERROR(settleSetAside());
  rep_.rounds.push_back(first);
  round_bo_ = nullptr;
  // Where a guided run's time goes, for a GPU run's log (KTUNE_VERBOSE=1).
  if (e_.options().verbose)
    e_.log() << strprintf("ktune: %s [%s]: guided: round 1 %.0f ms (vendor candidates %.0f ms, "
                          "%zu raced, %zu compiled)\n",
                          f_.name.c_str(), key_.c_str(), msSince(t0), vendor_ms, explored, started);
  timelineMark("race_round1_done");
  KTUNE_RETURN_IF_ERROR(probeDrift());
  return raceRounds();
}

// The drift probe: round 1 took its candidates one after another over the compiles' time, so the
// first one timed is timed again now (a short later-round budget) and the two timings merged.
// A difference beyond both intervals is the key's drift (guided.h): the later rounds and the
// finalists' pick then allow for it, and past kRaceDrift the later rounds give way to the
// finalists.
Status TuningRun::probeDrift() {
  if (anchor_.i >= 0) {  // tracked (until the anchor failed, if it did): the anchor's largest step
    rep_.drift = anchor_.step;
    logAnchor();
    return Status::Ok();
  }
  if (first_timed_ < 0) return Status::Ok();
  const size_t i = static_cast<size_t>(first_timed_);
  Cand& c = cands_[i];
  int timed = 0;
  for (const Cand& x : cands_) timed += passedOriginal(x) ? 1 : 0;
  if (!passedOriginal(c) || c.resumed || timed < 2) return Status::Ok();  // nothing to compare
  const BenchStats before = c.r.stats;
  const BenchOptions bo = laterRound(e_.engineOptions().bench, 1);
  round_bo_ = &bo;
  done_[i] = false;
  const Status st = bench({i});
  round_bo_ = nullptr;
  KTUNE_RETURN_IF_ERROR(st);
  if (!passedOriginal(c)) return Status::Ok();  // it failed its re-timing (recorded as such)
  rep_.drift = guided::drift(before, c.r.stats);
  if (e_.options().verbose)
    e_.log() << strprintf("ktune: %s [%s]: guided: drift probe %.4g ms then %.4g ms: drift %.2f%%\n",
                          f_.name.c_str(), key_.c_str(), before.median_ms, c.r.stats.median_ms,
                          100 * rep_.drift);
  c.r.stats = guided::mergeStats(before, c.r.stats);
  return Status::Ok();
}

// Rounds 2.. : the candidates whose interval still reaches the leader's, with more runs each.
Status TuningRun::raceRounds() {
  if (rep_.launch_floor) return Status::Ok();  // the finalists compare the leader and the default
  std::vector<size_t> in_round;
  for (size_t i = 0; i < cands_.size(); ++i)
    if (done_[i] && !cands_[i].resumed && cands_[i].dup_of < 0 && cands_[i].r.stats.runs > 0)
      in_round.push_back(i);
  for (int r = 2;; ++r) {
    const int leader = leaderIndex();
    std::vector<size_t> alive;
    for (size_t i : in_round)
      if (passedOriginal(cands_[i]) && leader >= 0 &&
          guided::canBeat(cands_[i].r.stats, cands_[leader].r.stats, rep_.drift))
        alive.push_back(i);
    rep_.rounds.back().eliminated =
        rep_.rounds.back().benchmarked - static_cast<int>(alive.size());
    if (alive.size() <= 1 || r > 1 + kLaterRounds) return Status::Ok();
    // A drifting key: rounds timed one candidate after another cannot separate what the drift
    // blurs (each candidate's round lands in its own stretch); the finalists' interleaved rounds
    // decide (FinalistRun::drift).
    if (rep_.drift > kRaceDrift) return Status::Ok();
    const BenchOptions bo = laterRound(e_.engineOptions().bench, r);
    round_bo_ = &bo;
    for (size_t i : alive) done_[i] = false;
    rep_.rounds.push_back({r, static_cast<int>(alive.size()), 0, 0});
    const auto t_round = Clock::now();
    timelineMark("race_round", strprintf("%d: %zu candidates", r, alive.size()));
    const Status st = benchTracked(alive);
    round_bo_ = nullptr;
    if (e_.options().verbose)
      e_.log() << strprintf("ktune: %s [%s]: guided: round %d %.0f ms (%zu candidates)\n",
                            f_.name.c_str(), key_.c_str(), r, msSince(t_round), alive.size());
    KTUNE_RETURN_IF_ERROR(st);
    in_round = alive;
  }
}

}  // namespace detail
}  // namespace ktune
