#include "autotune/search.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>

#include "base/format.h"

namespace ktune {

namespace {
class Exhaustive : public SearchStrategy {
 public:
  std::string name() const override { return "exhaustive"; }
  std::vector<size_t> select(const std::vector<Config>& configs) const override {
    std::vector<size_t> idx(configs.size());
    std::iota(idx.begin(), idx.end(), 0);
    return idx;
  }
};

class Random : public SearchStrategy {
 public:
  Random(size_t n, uint64_t seed) : n_(n), seed_(seed) {}
  std::string name() const override { return "random(" + std::to_string(n_) + ")"; }
  std::vector<size_t> select(const std::vector<Config>& configs) const override {
    std::vector<size_t> idx(configs.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::mt19937_64 rng(seed_);
    // Partial Fisher-Yates with our own index draw: std::shuffle's output is not specified.
    size_t n = std::min(n_, idx.size());
    for (size_t i = 0; i < n; ++i) {
      size_t j = i + static_cast<size_t>(rng() % (idx.size() - i));
      std::swap(idx[i], idx[j]);
    }
    idx.resize(n);
    std::sort(idx.begin(), idx.end());
    return idx;
  }

 private:
  size_t n_;
  uint64_t seed_;
};

class Guided : public Exhaustive {
 public:
  std::string name() const override { return "guided"; }
  bool guided() const override { return true; }
};

std::string fmtMs(double v) { return strprintf("%.4f ms", v); }
}  // namespace

std::string describe(const DefaultComparison& c) {
  char b[256];
  if (c.baseline.empty()) {
    std::snprintf(b, sizeof(b), "vs default: %s (%d finalists, %d interleaved rounds)",
                  c.decision.c_str(), c.finalists, c.rounds);
    return b;
  }
  // The default's config whole: a cut one reads the same as its neighbours.
  if (c.finalists < 2) {  // finalists.h: nothing in the race came near the default
    std::snprintf(b, sizeof(b), ": %s (re-verified alone: no candidate's race interval reached it)",
                  c.decision.c_str());
  } else {
    std::snprintf(b, sizeof(b),
                  ": %s; best challenger %.3fx its time, 95%% interval "
                  "[%.3f, %.3f] (%d finalists, %d interleaved rounds)",
                  c.decision.c_str(), c.ratio, c.ratio_lo, c.ratio_hi, c.finalists, c.rounds);
  }
  return "vs default " + (c.baseline_source == "jit" ? "" : c.baseline_source + " ") +
         c.baseline + b;
}

std::shared_ptr<SearchStrategy> exhaustiveSearch() { return std::make_shared<Exhaustive>(); }
std::shared_ptr<SearchStrategy> guidedSearch() { return std::make_shared<Guided>(); }
std::shared_ptr<SearchStrategy> searchNamed(const std::string& name) {
  return name == "exhaustive" ? exhaustiveSearch() : guidedSearch();
}
std::shared_ptr<SearchStrategy> randomSearch(size_t max_candidates, uint64_t seed) {
  return std::make_shared<Random>(max_candidates, seed);
}

int chooseWinner(const std::vector<CandidateResult>& c) {
  int best = -1;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].status != Code::kOk || c[i].stats.runs <= 0) continue;
    if (best < 0 || c[i].stats.median_ms < c[best].stats.median_ms) best = static_cast<int>(i);
  }
  return best;
}

std::string TuneReport::tree() const {
  std::string s = family + " [" + key + "]";
  if (origin == "remote") s += " (from the shared cache)";
  s += ": " + std::to_string(candidates.size()) + " candidates";
  if (compiled || store_hits) {
    s += ", " + std::to_string(compiled) + " compiled, " + std::to_string(store_hits) +
         " store hits";
  }
  if (duplicates) s += ", " + std::to_string(duplicates) + " duplicate binaries";
  if (pruned) s += ", " + std::to_string(pruned) + " pruned";
  if (skipped_known_failed) s += ", " + std::to_string(skipped_known_failed) + " known-failed";
  if (search == "guided") {
    s += strprintf(", guided: %d raced, %d not reached, regret <= %.2f%%%s%s", reached, not_reached,
                   100.0 * regret_estimate, budget_hit ? ", budget hit" : "",
                   launch_floor ? ", at the launch floor" : "");
    if (drift > 0) s += strprintf(", drift %.1f%%", 100.0 * drift);
  }
  s += "\n";
  for (size_t i = 0; i < candidates.size(); ++i) {
    const CandidateResult& c = candidates[i];
    bool win = !winner.empty() && c.config == winner && c.source == winner_source &&
               c.status == Code::kOk;
    s += (i + 1 == candidates.size()) ? "  └─ " : "  ├─ ";
    s += win ? "* " : "  ";
    s += c.source == "jit" ? c.config : c.source + ":" + c.config;
    if (c.status == Code::kOk && c.stats.runs > 0) {
      s += "  " + fmtMs(c.stats.median_ms) + " (p20 " + fmtMs(c.stats.p20_ms) + ", p80 " +
           fmtMs(c.stats.p80_ms) + ", " + std::to_string(c.stats.runs) + " runs)";
    } else {
      s += std::string("  ") + codeName(c.status) + ": " + c.reason;
    }
    s += "\n";
  }
  if (winner.empty()) {
    s += "  no candidate passed\n";
  } else {
    s += "  winner: " + winner + " " + fmtMs(winner_stats.median_ms) + "\n";
  }
  if (vs_default.rounds > 0) s += "  " + describe(vs_default) + "\n";
  return s;
}

}  // namespace ktune
