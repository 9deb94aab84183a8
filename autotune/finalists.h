// Stage "finalists" of a tuning run (internal): the candidates that came out fastest, and the
// family's default, are timed again after every compile has finished, interleaved in one process
// on the same buffers (finalistOrder), every round timed alike and without checks; the winner's
// output is verified again after the rounds (before, after the second and after the last run of a
// short run of its own; one that fails is dropped and the decision made again among the rest). A
// candidate replaces the default only when the 95% interval of its paired time ratio to the
// default (per round, same conditions) lies below 1 and the ratio itself is below 1 - margin
// (options.finalist_margin, 1% by default): a tuned key never records a winner that the
// measurements cannot tell apart from the default, nor one whose gain is below the margin (such
// near-ties would otherwise flip between runs).
//
// The default is the family's vendor default (a VendorCandidate with is_default, e.g. cuBLASLt's
// heuristic #0) when it passed, else the family's default_config when it was a candidate and
// passed; without either, the fastest finalist of the re-timing wins (no comparison recorded).
// Under isolation the rounds run in the worker (vendor and JIT candidates both), otherwise in
// the tuner's process (both).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "autotune/database.h"
#include "runtime/backend.h"

namespace ktune {

// Order of the finalists in round `round` (0-based): 0..n-1 rotated left by `round`, so over n
// rounds every finalist runs in every position once and, from three finalists on, never right
// after itself across a round's boundary. (The earlier order, 0..n-1 then reversed, ran the two
// ends, the default always among them, twice in a row in half their rounds and the middle ones
// always after another kernel: an asymmetry between finalists that timed one cuBLASLt pair 2-4%
// apart in two runs of one process; bench/NOTES.md, issue 34.) The first round
// has no lead-in (its last finalist timed once before it and dropped): measured, it left the first
// round's shift against the later rounds where the checks were host read-backs and was not needed
// once they compare on the device (bench/NOTES.md, issue 34).
std::vector<size_t> finalistOrder(size_t n, int round);

// Decision from the per-round medians. times[i][r]: finalist i's median in round r (ms; < 0 when
// it has no valid time in that round, which drops it); baseline: the default's index in `times`,
// or -1. Returns the winner's index into `times` (-1 when nothing has times) and fills *cmp
// (rounds, finalists, ratio and interval, decision; not the baseline's name). Deterministic.
int decideFinalists(const std::vector<std::vector<double>>& times, int baseline, double margin,
                    DefaultComparison* cmp);

// Two-sided 95% Student t quantile for `dof` degrees of freedom (1.96 beyond the table).
double studentT95(int dof);

// Adjacent pairing (Options::finalist_pairing): a round timed as b0 c1 b1 c2 ... ck bk, the
// default's blocks `b` (k + 1 of them) around the challengers' `t` (k). Returns the round's times
// with the default first: the geometric mean B of its blocks, then each challenger's time at that
// clock, t_i x B / sqrt(b_{i-1} x b_i) (one neighbour when the other has no time). A negative
// time is no time (a failed block) and stays negative; no default time leaves the challengers'
// as measured.
std::vector<double> adjacentTimes(const std::vector<double>& b, const std::vector<double>& t);

// The first round whose blocks are paired that way, for Options::finalist_pairing `pairing`: 0 for
// "adjacent"; for "drift" on a key whose race found drift (every finalist's time >= kLongRunMs:
// `long_runs`, and the race's `drift` above kRaceDrift), `planned`, the first extra round an
// undecided gain gets (finalistsWorthMoreRounds); else never (INT_MAX).
int firstAdjacentRound(const std::string& pairing, bool long_runs, double drift, int planned);

// The re-timing stops as soon as more rounds could not change the decision (at least
// kMinFinalistRounds rounds, at most options' finalist_rounds, plus kFinalistExtraRounds for an
// undecided gain above the margin: finalistsWorthMoreRounds below): every challenger's interval
// lies at or above 1 - margin (the default stays, whatever the next rounds say), or the best
// challenger's lies below it and no other could be more than kFinalistTie faster than it. With
// steady timings (long kernels) that is after the minimum; a near-tie runs every round.
inline constexpr int kMinFinalistRounds = 3;
inline constexpr double kFinalistTie = 0.005;
// times[i]: finalist i's medians of the rounds run so far (< 0: dropped); baseline as for
// decideFinalists. Without a baseline: settled when no finalist could be kFinalistTie faster than
// the fastest. Fewer than kMinFinalistRounds rounds: never settled.
bool finalistsSettled(const std::vector<std::vector<double>>& times, int baseline, double margin);

// Decided to within the tolerance (the stage stops, finalistsWantAnotherRound): from
// kMinFinalistRounds on, the rounds so far replace the default (decideFinalists: the best
// challenger's ratio below 1 - margin, its interval below 1), the rounds left to `planned`, their
// trend continued, leave its ratio below 1 - margin with at least 1 - kFinalistWinChance, and
// keeping that challenger over any other still timed costs at most kFinalistLoss in expectation
// (its paired rounds' mean and standard error, normal, the error widened by the t quantile for few
// rounds). A near-tie among challengers that all beat the default need not be resolved to the last
// tenth of a percent: at 4096^3 the JIT 128x256 config and cuBLASLt #4 lie 0-1% apart, and the
// rule "no other could be kFinalistTie faster at 95%" ran all 6 rounds of 5-7 finalists there
// (0.14-0.18 s of a 0.65 s warm run). Replayed on 42 recorded stages (dev/finalists_replay.py),
// this and the leaving rule cut the finalist-rounds 12% with the same winners (bench/NOTES.md,
// issue 34). False without a baseline or before kMinFinalistRounds rounds.
inline constexpr double kFinalistLoss = 0.002;
bool finalistsDecided(const std::vector<std::vector<double>>& times, int baseline, double margin,
                      int planned);

// A gain the margin would take (the best challenger's paired ratio to the default below
// 1 - margin) whose interval still reaches 1 after the planned rounds: on a GPU one disturbed round
// (±2-3% per round at the finalist budgets measured) is enough for that, and the default was then
// kept where another run of the same search, or the exhaustive one, recorded the challenger 2-4%
// faster (bench/NOTES.md, issue 34). Such a key gets up to kFinalistExtraRounds more rounds, until
// the decision settles; a near-tie (ratio above 1 - margin) never does, so its cost is unchanged.
inline constexpr int kFinalistExtraRounds = 6;
bool finalistsWorthMoreRounds(const std::vector<std::vector<double>>& times, int baseline,
                              double margin);
// A near-tie with the default ran every planned round (6 rounds x up to 4 finalists: ~0.25 s of a
// warm 4096-cubed key's 0.7 s engine) although the margin could no longer be met: a challenger
// can still win when the mean or the median of its per-round log ratios is below 1 - margin (one
// disturbed round moves the mean only; such a gain may get extra rounds instead), or when,
// continuing the trend of its rounds so far (their mean and spread), the chance that after
// `planned` rounds its ratio is below 1 - margin with an interval below 1 is at least
// kFinalistWinChance. Futile for every challenger: the default stays.
inline constexpr double kFinalistWinChance = 0.05;
// ...unless its rounds say nothing yet: their 95% interval is wider than ±kFinalistUninformed (a
// disturbed round among the first 3, or a few-µs kernel's ±3% rounds). The trend above then
// extrapolates the disturbance, and gave up challengers whose 3 rounds read [0.94, 1.09] or
// [0.68, 1.46] and that were 2-6% faster than the default kept (issue 34's regret runs, six of the
// ten misses of one call). Such a challenger stays for the planned rounds.
inline constexpr double kFinalistUninformed = 0.05;
bool finalistsCanStillWin(const std::vector<std::vector<double>>& times, int baseline,
                          double margin, int planned);
// One challenger's part of finalistsCanStillWin: whether challenger i (not the baseline) can still
// replace the default after `planned` rounds. False for a challenger without a time in every round
// so far; true while the baseline has not.
bool finalistCanStillWin(const std::vector<std::vector<double>>& times, int baseline, size_t i,
                         double margin, int planned);
// The challengers that leave the re-timing after the rounds in `times`: from kMinFinalistRounds on,
// those that can no longer win (finalistCanStillWin) and those whose paired interval against the
// best challenger that stays (by its ratio to the default) lies wholly above 1 (a challenger wins
// only as the best, so one clearly slower than another cannot), while another still can win
// (otherwise the stage stops there anyway). A challenger's later rounds bought nothing: the rounds
// went on for the one gain still undecided (up to 10 rounds of 4 finalists for one LLM-suite key,
// ~0.35 s), each round timing every finalist. Without a baseline, none leaves. `out`: those already
// gone (same size as times, or empty); returns the indices leaving now. `planned`: the rounds the
// stage may still reach (past its planned rounds, their end with the extra ones).
std::vector<size_t> finalistsLeaving(const std::vector<std::vector<double>>& times, int baseline,
                                     double margin, int planned, const std::vector<char>& out);
// The stage's loop rule: whether another round runs after times.front().size() rounds: not once
// settled (finalistsSettled) or decided (finalistsDecided), nor from kMinFinalistRounds on when no
// challenger can still win (finalistsCanStillWin); up to `planned`, then while
// finalistsWorthMoreRounds, up to `planned + extra`.
bool finalistsWantAnotherRound(const std::vector<std::vector<double>>& times, int baseline,
                               double margin, int planned, int extra);

// Which finalists are still uncertain after the race: a candidate enters the re-timing only when
// its race interval (guided::relHalfWidth, widened by kRaceDrift for rounds run at different
// times) reaches the leader's. And the leader is "separated" from the default when even the
// pessimistic ends of both intervals put it more than kRaceClear beyond the margin: then one
// interleaved round that agrees (its ratio below 1 - margin - kRaceClear / 2) decides.
inline constexpr double kRaceDrift = 0.01;
inline constexpr double kRaceClear = 0.05;
// A dense lead: when more candidates than options.finalists lie within kRaceDrift of the race's
// leader, every one of them is a finalist, up to kDenseFinalists challengers. Sequential race
// timings cannot rank such a cluster: a GPU at its power cap moves each timing by several percent
// from one stretch of runs to the next, and a main job's 4096^3 race put five candidates within
// 1.2% and re-timed only three of them, none the JIT config that was 2% faster than the default in
// interleaved timing at the same clock (bench/NOTES.md, issue 33's tuner against gemm_bench).
// Not at the launch floor (its tie keeps two) and not with options.finalists <= 1.
inline constexpr int kDenseFinalists = 6;

namespace detail {
class TunerEngine;
struct FamilyState;
struct Cand;

// What the stage works on: the run's candidates (results filled by the bench stage).
struct FinalistRun {
  TunerEngine& e;
  FamilyState& fs;
  const void* p;
  const std::string& key;
  StreamHandle s;
  std::vector<Cand>& cands;
  bool isolated;  // candidates of this key were benchmarked in the worker: re-time them there
  // The guided race stopped at the launch floor (guided.h): the candidates in the leader's tie are
  // a tie, so only its two leaders are re-timed against the default (one alone was, until noise
  // put a config of the tie ahead of a faster one). The rounds follow the same rules, the extra
  // ones included: without them rmsnorm 128x8192 kept its default "within noise" at 0.982 [0.960,
  // 1.004] after 6 rounds where the exhaustive search's winner ran 3.7% faster (issue 34).
  bool at_floor = false;
  // The race's drift (guided.h: drift; 0 without a race or without drift): the finalists' pick
  // allows for it beside kRaceDrift, and the race's separation of the leader must exceed it.
  // Past kRaceDrift the race skips its later rounds (sequential timings cannot rank what the
  // drift blurs) and the finalists' interleaved rounds decide among the usual number of them.
  // (Up to 8 finalists for a drifting key cost 0.4-0.6 s more on the suite's warm engine time
  // and moved no regret figure beyond the run-to-run spread: bench/NOTES.md, issue 34.)
  double drift = 0;
};

// Runs the stage (engine options: options.finalists, options.finalist_margin, finalist_rounds) and
// returns the winner's index into cands (-1: none passed), filling *cmp. A finalist that fails
// the re-timing or the re-verification is marked failed in cands. With finalists == 0 it is the
// plain fastest (chooseWinner) and *cmp stays empty.
int runFinalists(FinalistRun& fr, DefaultComparison* cmp);
}  // namespace detail

}  // namespace ktune
