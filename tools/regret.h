// The regret harness (`ktune regret`, tests/unit/guided_search_test.cc): tunes a list of shapes
// twice in one process, once exhaustively and once with the guided search, each tuner with its own
// cache (code-object store and database, both cold at the start), and compares the winners by an
// interleaved re-timing of the two on the same buffers (ABAB, alternating who goes first), not by
// their recorded numbers. The guided tuner's database grows shape by shape, as a user's would, so
// later shapes have tuned neighbours for the prior.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autotune/search.h"
#include "base/options.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"
#include "templates/gemm.h"

namespace ktune::cli {

struct RegretShape {
  std::string op;  // "gemm", "rmsnorm", "silu_mul"
  std::string name;
  gemm::GemmShape gemm;            // op == "gemm"
  int64_t rows = 0, cols = 0;      // row-wise ops (silu_mul: cols = d)
};

struct RegretRow {
  std::string name, family, key;
  std::string exhaustive_winner, guided_winner;  // "source:config" (source "jit" omitted)
  // Guided winner's time over the exhaustive winner's from the interleaved re-timing (1 when they
  // are the same candidate), with its 95% interval.
  double ratio = 1, ratio_lo = 1, ratio_hi = 1;
  int retime_rounds = 0;  // interleaved rounds run (0: the same winner, none)
  double exhaustive_s = 0, guided_s = 0;  // tuning wall time of each
  int candidates = 0;                      // JIT candidates of the key (after constraints)
  int exhaustive_compiled = 0, guided_compiled = 0;  // compiles + store hits each made
  int guided_reached = 0;
  double regret_estimate = 0;  // the guided run's own estimate
  // Each side's finalist decision ("within noise 0.971 [0.941, 1.002] 2x6"): where the winners
  // differ, whether a side kept the default over a gain its rounds could not separate.
  std::string exhaustive_why, guided_why;
  // Where the winners differ: what the guided run made of the exhaustive winner (fateIn).
  std::string exhaustive_winner_in_guided;
  std::string error;           // non-empty: this shape failed (the others still ran)
};

struct RegretOptions {
  std::string cache_root;  // <root>/store, <root>/exhaustive, <root>/guided; empty or absent
  // One code-object store for both sides (<root>/store), each side its own database: the
  // exhaustive side tunes a shape first and compiles every config, so the guided side tunes with
  // a warm store (its time is the warm-store tuning time) and the whole set fits a shorter run.
  // false: each side its own cold store (<root>/<side>), both timings cold on their first shapes.
  bool shared_store = true;
  int rounds = 6;          // interleaved re-timing rounds when the winners differ
  // Up to this many (0: 3 x rounds), in pairs, while the ratio's 95% interval still holds both
  // sides of kRegretWithin (retimeDecided): a few-µs kernel's round moves ±3%, so `rounds` alone
  // could not tell a 2% miss from noise.
  int max_rounds = 0;
  // The exhaustive side's do_bench budgets (warm-up and measurement) scaled by this, so a set of
  // 60+ keys fits one device call; its winner still goes through its own finalists' interleaved
  // rounds, and the re-timing against the guided winner uses the full budgets. 1: as the guided
  // side (the engine's defaults).
  double exhaustive_budget = 1;
  std::shared_ptr<Compiler> compiler;  // null: the device's (the simulated GPU passes its own)
  bool sim = false;        // simulated device: the CLI's short do_bench budgets
  // Called with each row as soon as its shape is done (a long GPU run shows progress, and a run
  // cut short by a time limit keeps what it measured).
  std::function<void(const RegretRow&)> on_row;
  // > 0: no shape starts after this many seconds (a time-boxed run ends with its summary).
  double deadline_s = 0;
};

// `limit` shapes of `all` spread evenly over it (every category of a set keeps a share), in order;
// all of them when limit <= 0 or >= its size.
std::vector<RegretShape> spread(const std::vector<RegretShape>& all, size_t limit);

// All of `all` in an order whose every prefix is spread evenly over it (index order by bit
// reversal): a run cut by its deadline after any number of shapes has measured every category.
std::vector<RegretShape> spreadOrder(const std::vector<RegretShape>& all);

// A named list: "ci" (a handful of small GEMM and row-wise shapes the simulated device tunes in
// seconds), "gpu" (>= 60 GEMM shapes: the LLM suite, decode M = 1..128, odd shapes, NN/NT/TN;
// >= 20 row-wise shapes). kInvalidArgument for another name.
Expected<std::vector<RegretShape>> regretSet(const std::string& name);

// The quality bound the summary counts against: guided winner within 1% of the exhaustive one.
inline constexpr double kRegretWithin = 1.01;
// Paired ratio of the re-timing from its per-round log ratios (guided over exhaustive): the mean
// and its 95% Student interval, exponentiated.
void retimeRatio(const std::vector<double>& logs, double* ratio, double* lo, double* hi);
// Whether the re-timing may stop after these rounds: at least `min_rounds` and an even count
// (each winner first as often as last), then once the interval lies on one side of
// kRegretWithin or `max_rounds` are done.
bool retimeDecided(const std::vector<double>& logs, int min_rounds, int max_rounds);

// What run `r` made of candidate `x` (another run's winner), against r's own winner `w`: "not
// raced" (never timed: not reached, or left out), "stopped: <reason>" (its race status, e.g. slower
// than the best so far, or a failed check), or "raced 1.234 ms, 1.0123x the winner's 1.219 ms" (its
// race median; the finalists' re-timing may have judged it apart from that).
std::string fateIn(const TuneReport& r, const CandidateResult& x, const CandidateResult& w);

// Runs the harness; a shape that fails is a row with `error`. Errors: a tuner cannot be made.
Expected<std::vector<RegretRow>> runRegret(std::shared_ptr<Backend> backend, const Options& base,
                                           const std::vector<RegretShape>& shapes,
                                           const RegretOptions& o);

// Quality summary over rows without error: share within 1%, geomean ratio, worst ratio.
struct RegretSummary {
  int keys = 0, within_1pct = 0;
  double geomean = 1, worst = 1;
  double exhaustive_s = 0, guided_s = 0;
  int exhaustive_compiled = 0, guided_compiled = 0;
};
RegretSummary summarize(const std::vector<RegretRow>& rows);

}  // namespace ktune::cli
