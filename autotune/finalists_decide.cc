// The finalists' decision from their interleaved rounds (finalists.h): the round order, the
// paired ratios and their intervals, when the rounds stop, who leaves them and who wins. Pure
// functions of the times; the stage that runs the rounds is finalists.cc.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "autotune/finalists.h"

namespace ktune {

std::vector<size_t> finalistOrder(size_t n, int round) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  if (n > 1) std::rotate(order.begin(), order.begin() + static_cast<long>(size_t(round) % n), order.end());
  return order;
}

double studentT95(int dof) {
  static const double kT[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
                              2.228,  2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101,
                              2.093,  2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052,
                              2.048,  2.045, 2.042};
  if (dof < 1) return 0;
  if (dof <= 30) return kT[dof - 1];
  return 1.96;
}

std::vector<double> adjacentTimes(const std::vector<double>& b, const std::vector<double>& t) {
  double logs = 0;
  int n = 0;
  for (double x : b)
    if (x > 0) logs += std::log(x), ++n;
  std::vector<double> out{n > 0 ? std::exp(logs / n) : -1.0};
  for (size_t i = 0; i < t.size(); ++i) {
    const double before = i < b.size() ? b[i] : -1, after = i + 1 < b.size() ? b[i + 1] : -1;
    double near = -1;
    if (before > 0 && after > 0) near = std::sqrt(before * after);
    else if (before > 0 || after > 0) near = std::max(before, after);
    out.push_back(t[i] >= 0 && near > 0 && n > 0 ? t[i] * out[0] / near : t[i]);
  }
  return out;
}

int firstAdjacentRound(const std::string& pairing, bool long_runs, double drift, int planned) {
  if (pairing == "adjacent") return 0;
  if (pairing == "drift" && long_runs && drift > kRaceDrift) return planned;
  return std::numeric_limits<int>::max();
}

namespace {

double medianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool complete(const std::vector<double>& t) {
  return !t.empty() && std::all_of(t.begin(), t.end(), [](double x) { return x >= 0; });
}

// A time for the log ratio: a zero time (a call that does no device work) is a tiny one.
double positive(double ms) { return std::max(ms, 1e-9); }

// The per-round log ratios of `a`'s times to `b`'s (the rounds both have).
std::vector<double> logRatios(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> l;
  for (size_t r = 0; r < a.size() && r < b.size(); ++r)
    l.push_back(std::log(positive(a[r]) / positive(b[r])));
  return l;
}

// Their mean and sample standard deviation (0 with fewer than two).
struct MeanSd {
  double mean = 0, sd = 0;
};
MeanSd meanSd(const std::vector<double>& l) {
  MeanSd m;
  if (l.empty()) return m;
  const double n = static_cast<double>(l.size());
  m.mean = std::accumulate(l.begin(), l.end(), 0.0) / n;
  double ss = 0;
  for (double x : l) ss += (x - m.mean) * (x - m.mean);
  m.sd = l.size() < 2 ? 0 : std::sqrt(ss / (n - 1));
  return m;
}

// Paired comparison of finalist `a` with the baseline `b`: the geometric mean of the per-round
// time ratios and its 95% t interval (log scale, so the interval is symmetric in ratio terms).
struct Paired {
  double ratio = 1, lo = 1, hi = 1;
};
Paired paired(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> l = logRatios(a, b);
  Paired p;
  if (l.empty()) return p;
  const auto [mean, sd] = meanSd(l);
  // One round gives no spread: the interval is unbounded then (never a confident win).
  const double half = l.size() < 2 ? HUGE_VAL
                                   : studentT95(static_cast<int>(l.size()) - 1) * sd /
                                         std::sqrt(static_cast<double>(l.size()));
  p.ratio = std::exp(mean);
  p.lo = std::exp(mean - half);
  p.hi = std::exp(mean + half);
  return p;
}

// Expected loss (log scale) of keeping `w` over `a` from their paired rounds: E[max(0, -X)] for
// X = log(a / w) taken as normal around the rounds' mean, its standard error widened by the t
// quantile's excess over the normal's for few rounds.
double expectedLoss(const std::vector<double>& a, const std::vector<double>& w) {
  const std::vector<double> l = logRatios(a, w);
  if (l.size() < 2) return HUGE_VAL;
  const int n = static_cast<int>(l.size());
  const auto [mean, sd] = meanSd(l);
  const double se = sd / std::sqrt(static_cast<double>(n)) * studentT95(n - 1) / 1.96;
  if (se <= 0) return std::max(0.0, -mean);
  const double z = mean / se;
  const double pdf = 0.3989422804014327 * std::exp(-0.5 * z * z);  // 1 / sqrt(2 pi)
  return se * pdf - mean * 0.5 * std::erfc(z / std::sqrt(2.0));
}

// Chance that per-round log ratios `l` (a challenger's to the default) still put its mean below
// 1 - margin after `planned` rounds when the rounds left continue their trend (winChance's mirror:
// a gain just past the margin after a few rounds is not yet the decision the planned rounds give).
double holdChance(const std::vector<double>& l, double margin, int planned) {
  const int n = static_cast<int>(l.size()), left = planned - n;
  if (n < 2 || left <= 0) return 1;
  const MeanSd m = meanSd(l);
  const double mean = m.mean;
  // The spread of a few rounds is itself uncertain: widened by the t quantile's excess, as in
  // expectedLoss (unwidened, 2 of 150 simulated sub-margin near-ties stopped on a win at round 3).
  const double sd = m.sd * studentT95(n - 1) / 1.96;
  const double rest = (planned * std::log(1 - margin) - n * mean) / left;  // the mean left to stay
  if (sd <= 0) return mean < rest ? 1 : 0;
  const double z = (rest - mean) / (sd / std::sqrt(double(left)));
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

}  // namespace

bool finalistsDecided(const std::vector<std::vector<double>>& times, int baseline, double margin,
                      int planned) {
  if (times.empty() || static_cast<int>(times.front().size()) < kMinFinalistRounds) return false;
  if (baseline < 0 || baseline >= static_cast<int>(times.size()) || !complete(times[baseline]))
    return false;
  DefaultComparison c;
  const int w = decideFinalists(times, baseline, margin, &c);
  if (w < 0 || w == baseline) return false;
  if (holdChance(logRatios(times[w], times[baseline]), margin, planned) < 1 - kFinalistWinChance)
    return false;
  for (size_t i = 0; i < times.size(); ++i) {
    if (static_cast<int>(i) == baseline || static_cast<int>(i) == w || !complete(times[i]))
      continue;
    if (expectedLoss(times[i], times[w]) > kFinalistLoss) return false;
  }
  return true;
}

bool finalistsSettled(const std::vector<std::vector<double>>& times, int baseline, double margin) {
  if (times.empty()) return true;
  if (static_cast<int>(times.front().size()) < kMinFinalistRounds) return false;
  const bool have_base =
      baseline >= 0 && baseline < static_cast<int>(times.size()) && complete(times[baseline]);
  // The reference: the best challenger by its paired ratio to the default, or without a default
  // the fastest median.
  int ref = -1;
  Paired ref_p;
  double ref_med = 0;
  bool all_kept = true;
  for (size_t i = 0; i < times.size(); ++i) {
    if (static_cast<int>(i) == baseline || !complete(times[i])) continue;
    if (have_base) {
      const Paired p = paired(times[i], times[baseline]);
      if (p.lo < 1 - margin) all_kept = false;
      if (ref < 0 || p.ratio < ref_p.ratio) ref = static_cast<int>(i), ref_p = p;
    } else {
      const double m = medianOf(times[i]);
      if (ref < 0 || m < ref_med) ref = static_cast<int>(i), ref_med = m;
    }
  }
  if (ref < 0 || (have_base && all_kept)) return true;
  if (have_base && ref_p.hi >= 1 - margin) return false;
  // The reference wins: settled unless another could still be more than a tie faster than it.
  for (size_t i = 0; i < times.size(); ++i) {
    if (static_cast<int>(i) == baseline || static_cast<int>(i) == ref || !complete(times[i]))
      continue;
    if (paired(times[i], times[ref]).lo < 1 - kFinalistTie) return false;
  }
  return true;
}

bool finalistsWorthMoreRounds(const std::vector<std::vector<double>>& times, int baseline,
                              double margin) {
  if (baseline < 0 || baseline >= static_cast<int>(times.size()) || !complete(times[baseline]))
    return false;
  bool found = false;
  Paired best;
  for (size_t i = 0; i < times.size(); ++i) {
    if (static_cast<int>(i) == baseline || !complete(times[i])) continue;
    const Paired p = paired(times[i], times[baseline]);
    if (!found || p.ratio < best.ratio) best = p, found = true;
  }
  return found && best.ratio < 1 - margin && best.hi >= 1;
}

namespace {
// Chance that a challenger with per-round log ratios `l` wins after `planned` rounds when the
// rounds left continue its trend (their mean distributed around the mean so far, with the spread
// so far).
double winChance(const std::vector<double>& l, double margin, int planned) {
  const int n = static_cast<int>(l.size()), left = planned - n;
  if (n < 2 || left <= 0) return 1;
  const auto [mean, sd] = meanSd(l);
  // The final mean must be below both log(1 - margin) and minus the final interval's half-width.
  const double need = std::min(std::log(1 - margin),
                               -studentT95(planned - 1) * sd / std::sqrt(double(planned)));
  const double rest = (planned * need - n * mean) / left;  // the mean the rounds left must reach
  if (sd <= 0) return rest > mean ? 1 : 0;
  const double z = (rest - mean) / (sd / std::sqrt(double(left)));
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}
}  // namespace

bool finalistCanStillWin(const std::vector<std::vector<double>>& times, int baseline, size_t i,
                         double margin, int planned) {
  if (baseline < 0 || baseline >= static_cast<int>(times.size()) || !complete(times[baseline]))
    return true;
  if (static_cast<int>(i) == baseline || i >= times.size() || !complete(times[i])) return false;
  const std::vector<double> l = logRatios(times[i], times[baseline]);
  // A gain above the margin by the mean or the median of its rounds (one disturbed round moves
  // the mean only) is never given up: finalistsWorthMoreRounds may give it more rounds instead.
  const double mean = meanSd(l).mean;
  const double bar = std::log(1 - margin);
  // Rounds too spread out to say anything (kFinalistUninformed) give nobody up either.
  const Paired p = paired(times[i], times[baseline]);
  return mean < bar || medianOf(l) < bar || std::log(p.hi / p.ratio) > kFinalistUninformed ||
         winChance(l, margin, planned) >= kFinalistWinChance;
}

bool finalistsCanStillWin(const std::vector<std::vector<double>>& times, int baseline,
                          double margin, int planned) {
  if (baseline < 0 || baseline >= static_cast<int>(times.size()) || !complete(times[baseline]))
    return true;
  for (size_t i = 0; i < times.size(); ++i)
    if (finalistCanStillWin(times, baseline, i, margin, planned)) return true;
  return false;
}

std::vector<size_t> finalistsLeaving(const std::vector<std::vector<double>>& times, int baseline,
                                     double margin, int planned, const std::vector<char>& out) {
  std::vector<size_t> leaving;
  if (baseline < 0 || baseline >= static_cast<int>(times.size()) ||
      static_cast<int>(times[baseline].size()) < kMinFinalistRounds || !complete(times[baseline]))
    return leaving;
  bool another_can = false;  // finalistsCanStillWin, from the same per-challenger verdicts
  auto in = [&](size_t i) { return !(i < out.size() && out[i]) && complete(times[i]); };
  int ref = -1;  // the best challenger that stays, by its paired ratio to the default
  double ref_ratio = 0;
  for (size_t i = 0; i < times.size(); ++i) {
    if (static_cast<int>(i) == baseline) continue;
    if (!finalistCanStillWin(times, baseline, i, margin, planned)) {
      if (in(i)) leaving.push_back(i);
      continue;
    }
    another_can = true;
    if (!in(i)) continue;
    const double r = paired(times[i], times[baseline]).ratio;
    if (ref < 0 || r < ref_ratio) ref = static_cast<int>(i), ref_ratio = r;
  }
  if (!another_can) return {};
  // Clearly slower than the best challenger still in: it cannot be the winner whichever way the
  // default's comparison goes (a challenger wins only as the best by its ratio).
  for (size_t i = 0; i < times.size(); ++i) {
    if (ref < 0 || static_cast<int>(i) == baseline || static_cast<int>(i) == ref || !in(i))
      continue;
    if (std::find(leaving.begin(), leaving.end(), i) != leaving.end()) continue;
    if (paired(times[i], times[ref]).lo > 1) leaving.push_back(i);
  }
  std::sort(leaving.begin(), leaving.end());
  return leaving;
}

bool finalistsWantAnotherRound(const std::vector<std::vector<double>>& times, int baseline,
                               double margin, int planned, int extra) {
  const int done = times.empty() ? 0 : static_cast<int>(times.front().size());
  if (done == 0) return !times.empty();
  if (finalistsSettled(times, baseline, margin) ||
      finalistsDecided(times, baseline, margin, planned))
    return false;
  if (done < planned)
    return done < kMinFinalistRounds || finalistsCanStillWin(times, baseline, margin, planned);
  return done < planned + extra && finalistsWorthMoreRounds(times, baseline, margin);
}

int decideFinalists(const std::vector<std::vector<double>>& times, int baseline, double margin,
                    DefaultComparison* cmp) {
  DefaultComparison c;
  c.margin = margin;
  c.finalists = static_cast<int>(times.size());
  c.rounds = times.empty() ? 0 : static_cast<int>(times.front().size());
  const bool have_base =
      baseline >= 0 && baseline < static_cast<int>(times.size()) && complete(times[baseline]);
  int best = -1;
  double best_med = 0;
  if (!have_base) {
    for (size_t i = 0; i < times.size(); ++i) {
      if (!complete(times[i])) continue;
      const double m = medianOf(times[i]);
      if (best < 0 || m < best_med) best = static_cast<int>(i), best_med = m;
    }
    c.decision = "no default measured";
    if (best >= 0) c.winner_ms = best_med;
    *cmp = c;
    return best;
  }
  c.baseline_ms = medianOf(times[baseline]);
  // The best challenger by its paired ratio: the winner when its interval clears the margin.
  int challenger = -1;
  Paired best_p;
  for (size_t i = 0; i < times.size(); ++i) {
    if (static_cast<int>(i) == baseline || !complete(times[i])) continue;
    const Paired p = paired(times[i], times[baseline]);
    if (challenger < 0 || p.ratio < best_p.ratio) challenger = static_cast<int>(i), best_p = p;
  }
  int winner = baseline;
  if (challenger < 0 || best_p.ratio >= 1) {
    c.decision = "default is fastest";
  } else if (best_p.hi >= 1) {
    c.decision = "default kept: within noise";
  } else if (best_p.ratio >= 1 - margin) {
    c.decision = "default kept: gain below the margin";
  } else {
    c.decision = "faster than the default";
    winner = challenger;
  }
  if (challenger >= 0) {
    c.ratio = best_p.ratio;
    c.ratio_lo = best_p.lo;
    c.ratio_hi = best_p.hi;
  }
  c.winner_ms = medianOf(times[winner]);
  *cmp = c;
  return winner;
}

}  // namespace ktune
