#include "autotune/finalists.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "autotune/bench_stage.h"
#include "autotune/engine_shapes.h"
#include "autotune/guided.h"
#include "autotune/search.h"
#include "autotune/run_candidate.h"
#include "base/format.h"
#include "base/timeline.h"

namespace ktune {
namespace detail {
namespace {

bool passed(const Cand& c) { return c.live && c.r.status == Code::kOk && c.r.stats.runs > 0; }

// The default may have been stopped early as slower than the best so far: it passed
// verification, and it is the bar every finalist is measured against, so it is timed again.
// A resumed default that could not be loaded again (reviveResumed) is no baseline: re-timing it
// would fail for want of a binary and record the default as a launch error.
bool usableBaseline(const Cand& c) {
  return passed(c) || (rejectedAsSlower(c.r) && (!c.resumed || c.revived));
}

// The default among the passed originals: the vendor default, else the family's default config.
int findBaseline(const FinalistRun& fr) {
  auto original = [&](size_t i) {
    const int o = fr.cands[i].dup_of;
    return o >= 0 ? static_cast<size_t>(o) : i;
  };
  for (size_t i = 0; i < fr.cands.size(); ++i)
    if (fr.cands[i].is_default && usableBaseline(fr.cands[original(i)]))
      return static_cast<int>(original(i));
  const Config& d = fr.fs.f.default_config;
  if (d.params().empty()) return -1;
  for (size_t i = 0; i < fr.cands.size(); ++i) {
    const Cand& c = fr.cands[i];
    if (c.vendor_source.empty() && c.config == d && usableBaseline(fr.cands[original(i)]))
      return static_cast<int>(original(i));
  }
  return -1;
}

// A round's measurement budget is rep_ms / (kRoundRepShare x rounds) when every finalist's race
// median is at least kLongRunMs: the decision rests on the paired ratios from round to round,
// which at 4096^3 spread ~1% a round (the clock under the power cap moves between the
// finalists' blocks), against ~0.2-0.3% for the median of a block's runs (p20-p80 ~1% of the
// median) at 14 runs or 7: half the runs move a round's ratio by a few percent of its spread and
// make each round ~1/3 shorter. Shorter kernels keep rep_ms / rounds: their rounds' spread is the
// runs' own (a few-us kernel's runs move ±3%), and halved there the row-wise regret set kept 22 of
// 24 keys within 1% against the base's 24 in the same call (bench/NOTES.md, issue 34).
constexpr double kRoundRepShare = 2;
constexpr double kLongRunMs = 0.1;

// One round's bench budget: a slice of the run's, at least a few runs each. Every round times its
// finalists alike and without checks: the checks (a read-back, or the device comparison's kernel,
// with the stream synchronised around it) changed the GPU's power state in the round they were
// in, and the first round, which held them, read the finalists in its first positions (the
// default's, every time) 1-4% faster or slower than the later rounds did, by the check's length
// (bench/NOTES.md, issue 34). The winner is checked after the rounds
// (checkOptions); `check`: a sole finalist's one round, which has nothing to be compared with, checks
// it (before its runs, after the second, after the last). Every finalist's cost is known from the
// race: two estimate runs.
BenchOptions roundOptions(const TunerEngine& e, bool check, bool long_runs = false) {
  BenchOptions bo = e.engineOptions().bench;
  const int rounds = std::max(1, e.engineOptions().finalist_rounds);
  bo.warmup_ms = std::max(bo.warmup_ms / rounds, 0.0);
  bo.rep_ms = std::max(bo.rep_ms / ((long_runs ? kRoundRepShare : 1) * rounds), 0.0);
  bo.min_runs = std::max(3, bo.min_runs / 2);
  bo.best_ms = 0;  // no early rejection: every finalist is timed in full (the worker keeps its
  bo.abort_factor = 1e9;  // own best across a batch, so the factor turns it off there too)
  bo.verify = check;  // without it the launch before the runs stays, as a warm-up
  bo.reverify = check;
  bo.estimate_runs = kKnownCostEstimateRuns;
  return bo;
}

// The winner's check after the rounds: its output verified before its runs, after the second and
// after the last (a kernel wrong only on later launches fails), in as few runs as the harness
// makes; the time is not used.
BenchOptions checkOptions(const TunerEngine& e) {
  BenchOptions bo = fewRuns(roundOptions(e, true), 3);
  bo.warmup_ms = 0;
  return bo;
}

void failFinalist(Cand& c, const CandidateResult& r) {
  Status st(r.status == Code::kOk ? Code::kInternal : r.status,
            "finalist re-timing: " + r.reason);
  fail(c, st);
}

// One round in this process: each finalist verified and timed in `order`.
void roundInProcess(FinalistRun& fr, const std::vector<size_t>& fin, const std::vector<size_t>& order,
                    const BenchOptions& bo, std::vector<std::vector<double>>& times, int round,
                    std::vector<BenchStats>& stats) {
  for (size_t j : order) {
    Cand& c = fr.cands[fin[j]];
    if (!c.live) continue;
    Cand t = c;
    fr.e.benchOne(fr.fs.f, fr.p, t, bo, 0, fr.s);
    if (t.r.status == Code::kOk) {
      times[j][round] = t.r.stats.median_ms;
      stats[j] = t.r.stats;
    } else {
      failFinalist(c, t.r);
    }
  }
}

// One round through the worker; false when the worker could not run it.
bool roundInWorker(FinalistRun& fr, const std::vector<size_t>& fin, const std::vector<size_t>& order,
                   const BenchOptions& bo, std::vector<std::vector<double>>& times, int round,
                   std::vector<BenchStats>& stats, std::string* why) {
  WorkerBatch b;
  b.family = fr.fs.f.name;
  b.key = fr.key;
  b.args_json = fr.fs.f.args_json(fr.p);
  b.bench = bo;
  std::vector<size_t> sent;
  for (size_t j : order) {
    const Cand& c = fr.cands[fin[j]];
    if (!c.live) continue;
    WorkerCandidate wc;
    wc.config = c.r.config;
    wc.source = c.vendor_source.empty() ? "jit" : c.vendor_source;
    wc.code_object_key = c.r.code_object_key;
    b.candidates.push_back(std::move(wc));
    sent.push_back(j);
  }
  Status st = fr.e.runInWorker(b, [&](size_t k, const CandidateResult& r) {
    const size_t j = sent[k];
    if (r.status == Code::kOk) {
      times[j][round] = r.stats.median_ms;
      stats[j] = r.stats;
    } else {
      failFinalist(fr.cands[fin[j]], r);
    }
  });
  if (!st.ok()) *why = st.toString();
  return st.ok();
}

// The finalists (indices into cands): the default first when there is one (*base >= 0), then
// up to k of the fastest passed originals whose race interval still reaches the leader's (the
// leader itself always): a candidate the race already put clearly behind cannot win the
// re-timing, so it is not re-timed. With `dense`, k grows to the challengers within the race's
// drift allowance of the leader, up to kDenseFinalists (a dense lead).
std::vector<size_t> pickFinalists(FinalistRun& fr, int k, bool dense, int* base) {
  std::vector<size_t> order_by_time;
  for (size_t i = 0; i < fr.cands.size(); ++i)
    if (passed(fr.cands[i]) && fr.cands[i].dup_of < 0) order_by_time.push_back(i);
  std::stable_sort(order_by_time.begin(), order_by_time.end(), [&](size_t a, size_t b) {
    return fr.cands[a].r.stats.median_ms < fr.cands[b].r.stats.median_ms;
  });
  *base = findBaseline(fr);
  std::vector<size_t> fin;
  if (*base >= 0) {
    fin.push_back(static_cast<size_t>(*base));
    fr.cands[*base].live = true;  // a default stopped early runs again (usableBaseline)
  }
  if (order_by_time.empty()) return fin;
  const BenchStats& lead = fr.cands[order_by_time.front()].r.stats;
  const double slack = std::max(kRaceDrift, fr.drift);
  if (dense) {
    const auto near = std::count_if(order_by_time.begin(), order_by_time.end(), [&](size_t i) {
      return static_cast<int>(i) != *base &&
             fr.cands[i].r.stats.median_ms <= lead.median_ms * (1 + slack);
    });
    k = std::max(k, std::min(kDenseFinalists, static_cast<int>(near)));
  }
  for (size_t i : order_by_time) {
    if (static_cast<int>(fin.size()) >= k + (*base >= 0 ? 1 : 0)) break;
    if (static_cast<int>(i) == *base) continue;
    if (i != order_by_time.front() &&
        !guided::canBeat(fr.cands[i].r.stats, lead, slack))
      continue;
    fin.push_back(i);
  }
  return fin;
}

// The race's ratio of finalist 1 to the default (finalist 0), at the pessimistic ends of both
// intervals; 0 when it does not separate them (see kRaceClear).
double raceSeparation(const FinalistRun& fr, const std::vector<size_t>& fin, int base,
                      double margin) {
  if (base < 0 || fin.size() != 2) return 0;
  const BenchStats& d = fr.cands[fin[0]].r.stats;
  const BenchStats& l = fr.cands[fin[1]].r.stats;
  if (!passed(fr.cands[fin[0]]) || d.median_ms <= 0 || l.median_ms <= 0) return 0;
  const double hi = l.median_ms * (1 + guided::relHalfWidth(l)) /
                    (d.median_ms * (1 - guided::relHalfWidth(d)));
  return hi < 1 - margin - kRaceClear - fr.drift ? hi : 0;
}

// One interleaved round confirmed the race's separation of the leader from the default: the
// leader wins with the round's ratio, the interval spanning the race's and the round's.
int separatedWin(const std::vector<std::vector<double>>& times, double race_hi, double margin,
                 DefaultComparison* cmp) {
  if (times[0][0] <= 0 || times[1][0] < 0) return -1;
  const double r0 = times[1][0] / times[0][0];
  if (r0 >= 1 - margin - kRaceClear / 2) return -1;
  DefaultComparison c;
  c.margin = margin;
  c.finalists = 2;
  c.rounds = 1;
  c.baseline_ms = times[0][0];
  c.winner_ms = times[1][0];
  c.ratio = r0;
  c.ratio_lo = r0 * (1 - kRaceClear / 2);
  c.ratio_hi = std::max(race_hi, r0);
  c.decision = "faster than the default";
  *cmp = c;
  return 1;
}

// KTUNE_VERBOSE=1: each finalist's median per round (us; "-" where it had none), in the
// finalists' order (the default first when there is one), so a run's log shows the paired times
// the decision came from.
void logRounds(const FinalistRun& fr, const std::vector<size_t>& fin,
               const std::vector<std::vector<double>>& times) {
  if (!fr.e.options().verbose) return;
  for (size_t j = 0; j < fin.size(); ++j) {
    const Cand& c = fr.cands[fin[j]];
    std::string line = strprintf("ktune: %s [%s]: finalist %zu %s%s%s:", fr.fs.f.name.c_str(),
                                 fr.key.c_str(), j, c.vendor_source.c_str(),
                                 c.vendor_source.empty() ? "" : " ", c.r.config.c_str());
    for (double t : times[j]) line += t >= 0 ? strprintf(" %.2f", 1e3 * t) : std::string(" -");
    fr.e.log() << line << "\n";
  }
}

DefaultComparison soleDefault(double ms, double margin) {
  DefaultComparison c;
  c.margin = margin;
  c.finalists = 1;
  c.rounds = 1;
  c.baseline_ms = c.winner_ms = ms;
  c.decision = "default is fastest";
  return c;
}

// One round, in the worker or in this process; false (with *why) when the worker could not run it.
bool runRound(FinalistRun& fr, const std::vector<size_t>& fin, const std::vector<size_t>& order,
              const BenchOptions& bo, std::vector<std::vector<double>>& times, int round,
              std::vector<BenchStats>& stats, std::string* why) {
  if (fr.isolated) return roundInWorker(fr, fin, order, bo, times, round, stats, why);
  roundInProcess(fr, fin, order, bo, times, round, stats);
  return true;
}

// One block of an adjacent round: finalist j alone; its time (-1: none, the finalist failed).
double timeBlock(FinalistRun& fr, const std::vector<size_t>& fin, size_t j, const BenchOptions& bo,
                 std::vector<BenchStats>& stats, bool* ok, std::string* why) {
  std::vector<std::vector<double>> t(fin.size(), std::vector<double>(1, -1.0));
  std::vector<BenchStats> st(fin.size());
  if (!(*ok = runRound(fr, fin, {j}, bo, t, 0, st, why))) return -1;
  if (t[j][0] >= 0) stats[j] = st[j];
  return t[j][0];
}

// A round with the default's block beside every challenger's (Options::finalist_pairing): b c1 b
// c2 ... ck b in `order`'s challenger order, each block its own batch, the times at the round's
// default clock (adjacentTimes). Without the default in `order`, a plain round.
bool adjacentRound(FinalistRun& fr, const std::vector<size_t>& fin, const std::vector<size_t>& order,
                   const BenchOptions& bo, std::vector<std::vector<double>>& times, int round,
                   std::vector<BenchStats>& stats, std::string* why) {
  std::vector<size_t> ch;
  for (size_t j : order)
    if (j != 0) ch.push_back(j);
  if (ch.size() == order.size()) return runRound(fr, fin, order, bo, times, round, stats, why);
  bool ok = true;
  std::vector<double> b{timeBlock(fr, fin, 0, bo, stats, &ok, why)}, t;
  for (size_t j : ch) {
    if (ok) t.push_back(timeBlock(fr, fin, j, bo, stats, &ok, why));
    if (ok) b.push_back(timeBlock(fr, fin, 0, bo, stats, &ok, why));
  }
  if (!ok) return false;
  const std::vector<double> at = adjacentTimes(b, t);
  times[0][round] = at[0];
  for (size_t i = 0; i < ch.size(); ++i) times[ch[i]][round] = at[i + 1];
  return true;
}

// The winner fin[w] checked after the rounds (checkOptions); one that fails is marked failed, its
// times dropped and the decision made again among the rest (checked in turn). Returns the checked
// winner's index into fin (-1: none left); false from *ok when the worker could not run a check.
int checkedWinner(FinalistRun& fr, const std::vector<size_t>& fin, int b, double margin, int w,
                  std::vector<std::vector<double>>& times, DefaultComparison* cmp, bool* ok,
                  std::string* why) {
  const BenchOptions bo = checkOptions(fr.e);
  while (w >= 0) {
    std::vector<std::vector<double>> t(fin.size(), std::vector<double>(1, -1.0));
    std::vector<BenchStats> st(fin.size());
    if (timelineOn()) timelineMark("finalists_check", strprintf("%d", w));
    if (!(*ok = runRound(fr, fin, {static_cast<size_t>(w)}, bo, t, 0, st, why))) return -1;
    if (fr.cands[fin[w]].live) return w;
    std::fill(times[w].begin(), times[w].end(), -1.0);
    w = decideFinalists(times, b, margin, cmp);
  }
  return w;
}

}  // namespace

int runFinalists(FinalistRun& fr, DefaultComparison* cmp) {
  // At the launch floor the tie's two leaders (FinalistRun::at_floor), else options' finalists,
  // more for a dense lead (kDenseFinalists).
  const int opt = fr.e.options().finalists;
  const int k = fr.at_floor ? std::min(2, opt) : opt;
  const bool dense = !fr.at_floor && opt > 1;
  const double margin = fr.e.options().finalist_margin;
  std::vector<CandidateResult> results;
  for (const Cand& c : fr.cands) results.push_back(c.r);
  const int fastest = chooseWinner(results);
  if (k <= 0 || fastest < 0) return fastest;
  int base = -1;
  const std::vector<size_t> fin = pickFinalists(fr, k, dense, &base);
  if (fin.empty()) return fastest;  // only results resumed from an interrupted run passed
  const double race_hi = raceSeparation(fr, fin, base, margin);
  // A single finalist has nothing to be compared with: one round re-verifies it. Otherwise the
  // rounds stop once the decision is settled, and the winner is checked after them.
  const bool sole = fin.size() < 2;
  int rounds = sole ? 1 : std::max(2, fr.e.engineOptions().finalist_rounds);
  // Past the planned rounds only while a gain above the margin is still undecided, at the launch
  // floor too (a few-µs key's 2-4% gain was kept "within noise" without them: FinalistRun).
  const int extra = sole ? 0 : kFinalistExtraRounds;
  const int b = base >= 0 ? 0 : -1;
  const bool long_runs = std::all_of(fin.begin(), fin.end(), [&](size_t i) {
    return fr.cands[i].r.stats.median_ms >= kLongRunMs;
  });
  const BenchOptions bo = roundOptions(fr.e, sole, long_runs);
  const int adjacent_from = sole || b != 0 ? std::numeric_limits<int>::max()
                                           : firstAdjacentRound(fr.e.options().finalist_pairing,
                                                                long_runs, fr.drift, rounds);
  std::vector<std::vector<double>> times(fin.size());
  std::vector<BenchStats> stats(fin.size());
  std::vector<char> out(fin.size(), 0);  // left the rounds (finalistsLeaving): no time after
  int w = -1;
  std::string why;
  auto failed = [&] {
    fr.e.log() << "ktune: " << fr.fs.f.name << " [" << fr.key
               << "]: re-timing the finalists in the worker failed (" << why
               << "); keeping the first measurements\n";
    cmp->decision = "re-timing failed: " + why;
    return fastest;
  };
  for (int r = 0; finalistsWantAnotherRound(times, b, margin, rounds, extra); ++r) {
    // Past the planned rounds the horizon is the extra ones' end.
    const int horizon = r < rounds ? rounds : rounds + extra;
    for (size_t j : finalistsLeaving(times, b, margin, horizon, out)) out[j] = 1;
    for (auto& t : times) t.push_back(-1.0);
    auto order = finalistOrder(fin.size(), r);
    order.erase(std::remove_if(order.begin(), order.end(), [&](size_t j) { return out[j] != 0; }),
                order.end());
    if (timelineOn()) timelineMark("finalists_round", strprintf("%d: %zu finalists", r, order.size()));
    if (!(r >= adjacent_from ? adjacentRound : runRound)(fr, fin, order, bo, times, r, stats, &why))
      return failed();
    for (size_t j = 0; j < fin.size(); ++j)
      if (!fr.cands[fin[j]].live) std::fill(times[j].begin(), times[j].end(), -1.0);
    if (r == 0 && race_hi > 0 && (w = separatedWin(times, race_hi, margin, cmp)) >= 0) break;
  }
  logRounds(fr, fin, times);
  for (size_t j = 0; j < fin.size(); ++j) {
    Cand& c = fr.cands[fin[j]];
    if (c.live && c.r.status != Code::kOk) {  // the default, stopped early before: now measured
      c.r.status = Code::kOk;
      c.r.reason.clear();
      c.r.stats = stats[j];
    }
  }
  if (sole) {
    w = fr.cands[fin[0]].live ? 0 : -1;
    // The default alone: the race put every other candidate clearly behind it.
    if (w == 0 && base >= 0) *cmp = soleDefault(times[0][0], margin);
  } else {
    if (w < 0) w = decideFinalists(times, b, margin, cmp);
    bool ok = true;
    w = checkedWinner(fr, fin, b, margin, w, times, cmp, &ok, &why);
    if (!ok) return failed();
  }
  if (w >= 0 && base >= 0) {
    cmp->baseline = fr.cands[base].r.config;
    cmp->baseline_source = fr.cands[base].r.source;
  }
  if (w >= 0) return static_cast<int>(fin[w]);
  // Every finalist failed its re-check: the plain fastest of what is left.
  results.clear();
  for (const Cand& c : fr.cands) results.push_back(c.r);
  return chooseWinner(results);
}

}  // namespace detail
}  // namespace ktune
