// The guided search's prior and race decisions (internal to autotune/; docs/search.md explains
// them for users). Pure functions over plain values, so the tuning run (tuning_run_race.cc) and
// the tests use the same rules.
//
// Prior. Two sources, in this order:
//   history  the family's tuned keys in the tuning database (this validator): the nearest keys by
//            keyDistance, each candidate's time relative to that key's fastest (1 = it won there),
//            weighted by closeness. A config that won or came close on similar keys goes first.
//   static   what is known before compiling: the launch grid's waves on the device's SMs (a grid
//            of 133 blocks on 132 SMs keeps them half idle) and, for tiled configs (BLOCK_M,
//            BLOCK_N), the tile's arithmetic intensity relative to the largest tile of the space.
// Race. The first round times every candidate reached briefly (do_bench with a precision target
// and early rejection); later rounds re-time only the candidates whose 95% interval of the median
// reaches the leader's, with twice the runs each round; then the finalists' interleaved re-timing
// decides as for an exhaustive run. Exploration (compiling the next candidates in prior order)
// stops when the estimated regret of what is left is below a threshold and no new leader came
// for a while, or when the time budget is spent.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "autotune/database.h"
#include "autotune/family.h"
#include "base/config.h"

namespace ktune::guided {

// Distance between two keys ("M=128,N=4096,dtype=bf16"): Euclidean over the fields both have, in
// log2(1 + |value|) for integers; a string field that differs, or a field only one key has, adds
// kCategoryDistance (a different layout or dtype is far: its winners say little).
inline constexpr double kCategoryDistance = 4.0;
double keyDistance(const std::string& a, const std::string& b);
// A key string's fields in order: "a=1,b=x" -> {{a,"1"},{b,"x"}} (a value holding '=' or ',' is
// not expected in keys).
std::vector<std::pair<std::string, std::string>> keyFields(const std::string& key);

// History: for each config string, the closeness-weighted mean over the `neighbours` nearest
// entries (other keys, with a measured winner) of fastest-median / its median, for the configs
// measured there. Entries farther than max_distance are not used. *used: entries used.
std::map<std::string, double> historyScores(const std::vector<DbEntry>& entries,
                                            const std::string& key, size_t neighbours,
                                            double max_distance, int* used);

// Static score in (0, 1] before compiling: wave efficiency of `dims` on `sms` SMs (1 when sms or
// the grid is unknown) times `intensity` (the caller's tile intensity relative to the space's
// best, 1 for untiled configs).
double waveEfficiency(const LaunchDims& dims, int sms);
// 2·BM·BN / (BM + BN) of a tiled config (BLOCK_M, BLOCK_N); 0 when the config has no tile.
double tileIntensity(const Config& c);
// The static factor of a tile of intensity `i` against the space's largest, `best`: a saturating
// efficiency i / (i + kHalfIntensity) relative to the best's (a tile's reuse helps less and less
// as it grows: a 64x64 tile is not half as fast as a 128x128 one); 1 for an untiled config.
inline constexpr double kHalfIntensity = 32;
double tileFactor(double i, double best);

struct PriorItem {
  double history = -1;   // historyScores value, -1 when the config was not measured nearby
  double static_score = 0;
  bool is_default = false;
};
// Order of the items: the default first (it is the finalists' baseline), then configs with a
// history score >= 0.9 (best first), then the rest by static score (history breaking ties, then
// the original order). Deterministic.
std::vector<size_t> priorOrder(const std::vector<PriorItem>& items);

// Regret estimate: how much faster than `leader_ms` the best unmeasured item could plausibly be,
// as a fraction (0.05 = 5%). The static model is calibrated on the measured items: time ~ c /
// static_score with c the smallest measured time x score (the most optimistic calibration), so
// a model that underrates some configs makes the estimate larger, never smaller.
// Calibration is per group (configs sharing their string-valued parameters, e.g. a GEMM's KIND:
// different kernels have different constant factors); a group with nothing measured takes the
// median of the measured groups' constants.
struct Measured {
  double ms = 0;
  double static_score = 0;
  std::string group;
  double half_width = 0;  // relative 95% half-width of ms (relHalfWidth): its measurement floor
};
struct Unmeasured {
  double static_score = 0;
  std::string group;
};
double regretEstimate(const std::vector<Measured>& measured,
                      const std::vector<Unmeasured>& unmeasured, double leader_ms);

// Launch floor. A kernel whose time is set by its launch and ramp rather than by its work (a
// row-wise kernel over a few rows: a few µs whatever its config) breaks the model above: configs
// whose static scores differ several-fold run within each other's measurement interval, and the
// model keeps promising that the high-score configs not yet measured run several-fold faster, so
// the race never stops (82 of 96 SiLU·Mul configs raced at 32 rows). Under the model time =
// a + b / score (a >= 0 the launch floor, b >= 0 the work), such a tie bounds the work term: with
// w the tie's width (relative, measurement intervals included) and r = s_hi / s_lo the spread of
// the tied configs' scores, b (1/s_lo - 1/s_hi) <= w x best, so no config of the group runs below
// t x (1 - w / (r - 1)), t the cluster's time. A group is at its floor when at least kFloorTies
// measured configs tie (their intervals reach one config's) within kFloorNear of the group's best,
// and their scores span kFloorSpread or more (r >= 2: the bound is then within the tie itself).
// Returns that floor in ms (at most the group's best), 0 when the group (the measured configs of
// one calibration group) is not at its floor; *tie: w. A cluster of slow configs far from the best
// says nothing about the floor (compute-bound kernels have such chance ties).
inline constexpr size_t kFloorTies = 3;
inline constexpr double kFloorSpread = 2.0;
inline constexpr double kFloorNear = 0.05;
double launchFloor(const std::vector<Measured>& group, double* tie = nullptr);
// regretEstimate with the launch floor: an unmeasured config of a group at its floor is predicted
// no faster than that floor. `tie` > 0 when the best prediction is such a floor: the estimate is
// then within the tie of the group's best (a regret the measurements cannot resolve), and the race
// may stop below max(kRegretStop, tie) instead of kRegretStop: the tie is a tie.
struct Regret {
  double estimate = 0;
  double tie = 0;
};
Regret regretWithFloor(const std::vector<Measured>& measured,
                       const std::vector<Unmeasured>& unmeasured, double leader_ms);
// The calibration group of a config: its string-valued parameters ("KIND=tma").
std::string groupOf(const Config& c);

// How many candidates the race reaches at least, of n (every one below kMinGuided).
inline constexpr size_t kMinGuided = 16;
size_t minExplore(size_t n);
// Keep exploring after `since_leader` candidates without a new leader?
size_t patience(size_t explored);
// Stall: after this many candidates in a row (in the prior's order, after the leader) that did
// not beat the leader, exploration stops even while the regret estimate is above kRegretStop.
// The estimate is calibrated on the most optimistic measured config of a group, so one early
// config with a low static score and a fair time (a memory-bound GEMV's default) keeps it high
// for every config whose score is above it, and the race then compiled most of the space: 65
// compiles for a 1-row GEMM whose leader came at the 17th candidate (26 more compiles bought a
// 0.9% gain), 55 for a row-wise key whose leader came at the 14th (none).
// The stall stops a race only once every calibration group with candidates has a raced config
// (coverage below): a kind the prior ranks after 16 non-improving configs of another kind (a
// decode kernel, scored by its waves only, behind the tiled kernels) is raced at least once.
inline constexpr size_t kStallAfter = 16;
// Once a stop (the regret estimate's or the stall) has been reached, it holds: the race then ends
// as soon as the coverage it waits for is raced, with the rest of the class of a coverage pick that
// became the leader. Such a leader does not restart the count in the prior's order, which had
// already stalled: on a GPU (bench/NOTES.md) a 1-row GEMM's coverage picks brought two new leaders,
// 1.3% and 0.9% ahead of the one before (later rounds put the two fastest configs at the same 17.0
// µs), and each restart of the stall's 16 compiled 16 configs of the prior's order again (68
// compiled, 28 at the stall).

// Coverage: classes of configs the prior cannot rank against each other, raced before the race
// stops. A calibration group (groupOf: a different kernel, whose constant factor the static score
// does not know) and each value of a parameter the family names (ErasedFamily::race_each: a
// row-wise kernel's ROWS_PER_BLOCK, the GEMM decode kind's body DC_WG and blocks per SM DC_GRID,
// which the static score does not separate: their grids' waves come out the same) are always
// covered. The stall waits for both kinds of class; the regret estimate's stop waits for the named
// values only (it predicts an unmeasured group from the measured ones' constants, but cannot tell
// named values apart).
// Combinations of named values interact (covering each value once let a 1-row GEMM race the winning
// DC_GRID only with a slower body and the winning body only with another DC_GRID), but every
// combination was covered before a stop: 14 pairs at a 1-row GEMM key, 10 of them 8-141% behind the
// leader on a GPU (bench/NOTES.md; most compiles there came from the stop's restarts: kStallAfter
// above, which a pick that leads no longer triggers). So a combination is covered only while it is
// promising (comboDue): it is one named value away from a leading combination (the fastest timed
// config's, when within kCoverNear of the leader, and any within kLeadTie of that one: the body of
// the leader with every grid, the grid of the leader with every body), or every one of its values
// came within kCoverNear of the leader (the value's fastest raced config; two values that each came
// close with other partners). kCoverNear: the spread of one value's configs at the GPU's 1-row keys
// (a body's grids 0-11%, one (body, grid) pair's configs 2-20%) is what a first pick can miss its
// value's best by. A combination of values that are both clearly behind is not compiled. A value's
// pick is its first config with the leading combination's other values when there is one (it then
// covers a promising combination too), else its first. A class counts as covered once one of its
// configs was raced (timed, rejected or failed): one compile per class.
// Per position of the prior's order, its classes: "group:<groupOf>", "value:A=x" per named
// parameter the config has and, with two or more, "combo:A=x,B=y" (in the family's order).
inline constexpr double kCoverNear = 0.10;
// kLeadTie: a first round's ties (which of them leads is chance, and each change of leader among
// them started another wave of picks: the simulated SiLU·Mul key at its launch floor raced 32
// configs instead of 24).
inline constexpr double kLeadTie = 0.02;
std::vector<std::string> coverageClasses(const Config& c, const std::vector<std::string>& named);
// What the coverage rule reads of the race, per position of the prior's order.
struct Coverage {
  std::vector<std::vector<std::string>> classes;  // coverageClasses
  std::vector<bool> taken;  // raced
  std::vector<double> ms;  // its median when timed (early rejection too), else 0
  double leader_ms = 0;  // the race's leader (any source), 0 when none
};
// Whether the combination class `combo` ("combo:A=x,B=y") is promising (above).
bool comboDue(const Coverage& cv, const std::string& combo);
// Positions to race before the race may stop: for each class with no taken position, its first
// untaken position in the prior's order (its best-ranked config; a value's with the leading
// combination's partners when there is one); combinations only when due. The
// calibration groups' classes count only when `with_groups` (a stop by the stall). Sorted.
std::vector<size_t> uncovered(const Coverage& cv, bool with_groups);
// The untaken positions with the classes of position `p`, in order. When a class's first raced
// config (a coverage pick) becomes the leader, the rest of its class is raced next: the prior
// ranked the class after the others, so the race would otherwise go back to them.
std::vector<size_t> sameClasses(const std::vector<std::vector<std::string>>& classes,
                                const std::vector<bool>& taken, size_t p);
// A leader's twins: the configs that hold every parameter of the leader with its value and at
// most kTwinKnobs more (a curated twin adds probe knobs to a base config: the GEMM decode kind's
// DC_EF, DC_XH, DC_ST). When a JIT config becomes the leader its untaken twins are raced next:
// the prior ranks a twin by its own static features, and at decode 8x6144x4096 on the GPU the race
// stopped with the base leading and its twin, 3% faster (the exhaustive winner), not reached
// (bench/NOTES.md, issue 34). A family whose configs all name the same parameters has no twins.
inline constexpr size_t kTwinKnobs = 3;
bool isTwinOf(const Config& twin, const Config& base);
// Whether a coverage pick timed at `ms` owes the rest of its class (raced next, and the stop waits
// for all of it): where a vendor kernel leads and the pick comes within kOweNear of it, the first
// JIT config to reach the vendor's edge, while none of the configs the prior's own order raced
// did. A GEMM decode key's pick for its winner's class (8 configs, the winner last) ran 1% behind
// cuBLASLt's leader in round 1 of some GPU runs and 2% ahead in others, its prior-order configs
// all 16% or more behind; the class went unraced or was cut by the patience (bench/NOTES.md, issue
// 34). Any pick that tied the leader owing its class was measured and reverted: at a prefill key
// many configs of the prior's order tie cuBLASLt, and a tying pick's class made a cold race compile
// 26-28 configs instead of 18. `vendor_ms`: the fastest vendor candidate's time (0: none);
// `prior_best_ms`: the fastest time of the configs raced in the prior's order (not picks, not
// owed; 0: none timed); `leader_ms`: the race's leader. Not used at the launch floor. The pick's
// allowance is kOweNear (the prior's edge stays kLeadTie): at 64x4096x4096 the decode class's pick
// (a 14 µs kernel, p20-p80 ±5%) read 3.8% behind cuBLASLt in round 1, its class went unraced, and
// the class's DC_ST twin, 5% ahead of cuBLASLt in the exhaustive run, was lost (regret 1.051).
inline constexpr double kOweNear = 0.05;
bool owesClass(double ms, double vendor_ms, double prior_best_ms, double leader_ms);

// Compiles started at once, of n (the lazy pool's floor): the min_n the race takes anyway, and
// while compile threads would otherwise idle, up to `window` more: those are the ones the pool
// would start as soon as the race takes its first batch, and started then they form a second
// wave that costs a whole compile time (a Hopper GEMM config is ~0.5-1 s of NVRTC) after the
// first. With threads <= min_n it is min_n (the pacing of a small machine is unchanged).
size_t firstWave(size_t n, size_t min_n, size_t window, int threads);

// 95% half-width of a candidate's median from its stats (p20/p80 spread, runs), relative, with
// a floor (rounds run at different times: drift the spread does not show).
inline constexpr double kIntervalFloor = 0.002;
double relHalfWidth(const BenchStats& s);
// Whether a candidate with stats `c` can still beat the leader `l` (its interval reaches
// the leader's, the leader's upper end widened by `slack`, a fraction).
bool canBeat(const BenchStats& c, const BenchStats& l, double slack = 0);
// Drift. A GPU's clock is not one constant over a tuning run: a heavy kernel timed right after an
// idle stretch (compiles, the host's set-up) runs at its boost clock, and under a sustained load
// the power limit moves the clock by several percent from one stretch of tens of milliseconds to
// the next, each stretch's runs agreeing to within their interval (one cuBLASLt algorithm read
// 1203 to 1403 µs in the first rounds of three runs of one key). Timings taken at different times
// then differ by more than their intervals say, and the race put a candidate 3% faster than the
// default (timed first, at the boost clock) out after round 1. The race probes for it: the first
// candidate timed in round 1 is timed again at the round's end, and drift() is how far the two
// medians lie apart beyond both intervals (0 when the intervals overlap); the two timings are
// merged (mergeStats). A drifting key widens every later comparison by it (canBeat's slack, the
// finalists' pick), and past finalists.h's kRaceDrift the race's later rounds give way to the
// finalists' interleaved rounds, which pair the timings per round.
double drift(const BenchStats& first, const BenchStats& again);
// Drift tracking (the anchor). Widening by the probe's drift was not enough where a heavy key
// heats the GPU through the race: the probe saw 5.6% where a candidate timed first read 18% slower
// at the end, and round 1's early rejection (1.15x the best, the best timed cool) stopped the
// exhaustive winner as slower. So on a key whose first timed kernel runs at least
// kAnchorMs, the race times that candidate (the anchor) again after every kAnchorChunk candidates
// and expresses each candidate's times at the anchor's first timing's clock: divided by the
// anchor's factor at its turn (interpolated between the two re-timings around it), the bar for
// early rejection multiplied by the current factor; the factor's largest step between two
// re-timings is the key's drift (tuning_run_anchor.cc).
inline constexpr double kAnchorMs = 0.5;
inline constexpr size_t kAnchorChunk = 4;
// The anchor's factor from its first timing and a later one: their ratio where the medians lie
// apart beyond both intervals (as drift()), else 1 (noise is not drift).
double anchorFactor(const BenchStats& first, const BenchStats& again);
// The factor at the k-th of m candidates timed between re-timings that read f0 and f1.
double interpolateFactor(double f0, double f1, size_t k, size_t m);
// Every time of `s` divided by f (the samples too).
void scaleStats(BenchStats& s, double f);
// Two timings of one binary on one problem taken at different times, as one: runs added; the
// median the runs-weighted mean of both medians; p20 / p80 the lower / upper of both (the interval
// spans both stretches); min, max, mean and the standard deviation over both; samples appended.
BenchStats mergeStats(const BenchStats& a, const BenchStats& b);
// Whether `c` is a new leader against the leader `l` that set the race's patience: faster by
// more than both measurement intervals (l cannot beat c). At the launch floor a faster median
// inside the intervals is a tie, and a tie does not restart the patience (a launch-bound key's
// candidates tie within noise, and each noise-level "new leader" would keep its race going); the
// race applies it there only (elsewhere any faster median restarts the patience, as measured).
bool newLeader(const BenchStats& c, const BenchStats& l);

}  // namespace ktune::guided
