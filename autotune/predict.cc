#include "autotune/predict.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "autotune/guided.h"

namespace ktune::predict {

ParsedKey parseKey(const std::string& key) {
  ParsedKey k;
  for (const auto& [name, v] : guided::keyFields(key)) {
    char* end = nullptr;
    const long long x = v.empty() ? 0 : std::strtoll(v.c_str(), &end, 10);
    const bool num = !v.empty() && end && *end == '\0';
    k.names.push_back(name);
    k.is_num.push_back(num);
    k.num.push_back(num ? std::log2(1.0 + std::fabs(double(x))) : 0.0);
    k.str.push_back(num ? std::string() : v);
  }
  return k;
}

double distance(const ParsedKey& a, const ParsedKey& b) {
  const double cat = guided::kCategoryDistance * guided::kCategoryDistance;
  double sq = 0;
  for (size_t i = 0; i < a.names.size(); ++i) {
    size_t j = 0;
    while (j < b.names.size() && b.names[j] != a.names[i]) ++j;
    if (j == b.names.size()) {
      sq += cat;
    } else if (a.is_num[i] && b.is_num[j]) {
      const double d = a.num[i] - b.num[j];
      sq += d * d;
    } else if (a.is_num[i] != b.is_num[j] || a.str[i] != b.str[j]) {
      sq += cat;
    }
  }
  for (const auto& n : b.names)
    if (std::find(a.names.begin(), a.names.end(), n) == a.names.end()) sq += cat;
  return std::sqrt(sq);
}

int vendorRank(const std::string& id) {
  size_t at = id.rfind("idx=", 0) == 0 ? 0 : id.find(":idx=");
  if (at == std::string::npos) return -1;
  at += id[at] == ':' ? 5 : 4;
  const size_t end = id.find(':', at);
  if (end == std::string::npos || end == at || end - at > 4) return -1;
  int n = 0;
  for (size_t i = at; i < end; ++i) {
    if (id[i] < '0' || id[i] > '9') return -1;
    n = n * 10 + (id[i] - '0');
  }
  return n;
}

namespace {

bool timed(const CandidateResult& c) { return c.stats.runs > 0 && c.stats.median_ms > 0; }

// The default's median at an entry: the candidate its default comparison names; 0 when unknown.
double defaultMs(const DbEntry& e) {
  if (e.vs_default.baseline.empty()) return 0;
  for (const auto& c : e.candidates)
    if (c.config == e.vs_default.baseline && c.source == e.vs_default.baseline_source && timed(c))
      return c.stats.median_ms;
  return e.vs_default.baseline_ms > 0 && e.vs_default.ratio > 0 ? e.vs_default.baseline_ms : 0;
}

}  // namespace

std::vector<Neighbour> indexEntries(const std::vector<DbEntry>& entries) {
  std::vector<Neighbour> out;
  for (const DbEntry& e : entries) {
    if (e.winner.empty() || e.predicted || e.unverified) continue;
    double fastest = 0;
    for (const auto& c : e.candidates)
      if (c.status == Code::kOk && timed(c))
        fastest = fastest <= 0 ? c.stats.median_ms : std::min(fastest, c.stats.median_ms);
    if (fastest <= 0) continue;
    Neighbour n;
    n.key = e.key;
    n.parsed = parseKey(e.key);
    n.winner = e.winner;
    n.winner_source = e.winner_source;
    n.fastest_ms = fastest;
    for (const auto& c : e.candidates) {
      if (c.source != "jit" || !timed(c)) continue;
      // Stopped early as slower than the best: at most half as good (its median is a lower bound).
      double s = fastest / c.stats.median_ms;
      if (c.status != Code::kOk) s = std::min(s, kUnreachedScore);
      n.scores.emplace_back(c.config, std::min(1.0, s));
    }
    if (const double d = defaultMs(e); d > 0) {
      // The tuning's finalist comparison (the winner and the default re-timed interleaved) outranks
      // the default's first-pass median: the default scores at least its winner / default ratio
      // (1 where the tuning kept the default), so a config only the first pass saw beat the
      // default is no evidence against it (predict.h).
      double s = std::min(1.0, fastest / d);
      const DefaultComparison& vd = e.vs_default;
      if (vd.rounds > 0 && vd.baseline_ms > 0 && vd.ratio > 0) s = std::max(s, std::min(1.0, vd.ratio));
      n.scores.emplace_back(kDefaultClass, s);
    }
    // Sorted by config (the first of duplicates kept), for scoreAt's binary search.
    std::stable_sort(n.scores.begin(), n.scores.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    out.push_back(std::move(n));
  }
  return out;
}

namespace {

double scoreAt(const Neighbour& n, const std::string& cls, bool* known) {
  auto it = std::lower_bound(n.scores.begin(), n.scores.end(), cls,
                             [](const auto& a, const std::string& c) { return a.first < c; });
  *known = it != n.scores.end() && it->first == cls;
  return *known ? it->second : kUnreachedScore;
}

// Every field equal but one numeric field at most (same names, kinds and categories); `axis`: the
// index of the numeric field that differs, -1 when none does.
bool alongOneAxis(const ParsedKey& a, const ParsedKey& b, int* axis) {
  if (a.names != b.names || a.is_num != b.is_num || a.str != b.str) return false;
  *axis = -1;
  for (size_t i = 0; i < a.num.size(); ++i) {
    if (!a.is_num[i] || a.num[i] == b.num[i]) continue;
    if (*axis >= 0) return false;
    *axis = int(i);
  }
  return true;
}

// The bracketing rule (predict.h): the JIT config near-best (within 3% of the fastest) and faster
// than the default by kDefaultMargin at the nearest tuned key on each side of `pk` along one
// numeric field, the one with the larger geometric mean gain; empty when no config qualifies or the key has no tuned key on one side.
// The nearest tuned key below `pk` (side[0]) and above it (side[1]) along the one numeric field
// they differ in, within kMaxDistance; false when a side has none.
bool bracketing(const std::vector<Neighbour>& index, const ParsedKey& pk, const Neighbour* side[2]) {
  side[0] = side[1] = nullptr;
  double gap[2] = {0, 0};
  int axis = -1;
  for (const auto& n : index) {
    int a = -1;
    if (!alongOneAxis(pk, n.parsed, &a) || a < 0 || (axis >= 0 && a != axis)) continue;
    axis = a;  // the first along-axis key fixes the field (keys of one family share their fields)
    const double d = n.parsed.num[size_t(a)] - pk.num[size_t(a)];
    if (std::fabs(d) >= kMaxDistance) continue;
    const int s = d > 0 ? 1 : 0;
    if (!side[s] || std::fabs(d) < gap[s]) side[s] = &n, gap[s] = std::fabs(d);
  }
  return side[0] && side[1];
}

std::string bracketRule(const std::vector<Neighbour>& index, const ParsedKey& pk,
                        const std::function<bool(const std::string&)>& applicable, double* score) {
  const Neighbour* side[2];
  if (!bracketing(index, pk, side)) return "";
  std::string best;
  double best_gain = 1.0 + kDefaultMargin;
  for (const auto& [cls, s0] : side[0]->scores) {
    if (cls == kDefaultClass) continue;
    double lg = 0, sum = 0;
    bool ok = true;
    for (const Neighbour* n : side) {
      bool kc = false, kd = false;
      const double sc = scoreAt(*n, cls, &kc), sd = scoreAt(*n, kDefaultClass, &kd);
      ok = ok && kc && kd && sd > 0 && sc >= sd * (1.0 + kDefaultMargin) && sc >= 0.97;
      if (!ok) break;
      lg += 0.5 * std::log(sc / sd);
      sum += 0.5 * sc;
    }
    if (ok && std::exp(lg) > best_gain && applicable(cls)) best = cls, best_gain = std::exp(lg), *score = sum;
  }
  return best;
}

// The upper-bracket rule (predict.h): the JIT config fastest at the tuned key above `pk` among
// those that ran there within kUpperSlack of the fastest time at the tuned key below and beat the
// default above by kDefaultMargin; empty when none qualifies.
std::string upperRule(const std::vector<Neighbour>& index, const ParsedKey& pk,
                      const std::function<bool(const std::string&)>& applicable, double* score) {
  const Neighbour* side[2];
  if (!bracketing(index, pk, side) || side[0]->fastest_ms <= 0 || side[1]->fastest_ms <= 0) return "";
  const Neighbour& lo = *side[0];
  const Neighbour& hi = *side[1];
  bool kd = false;
  const double sd = scoreAt(hi, kDefaultClass, &kd);
  if (!kd || sd <= 0) return "";
  std::string best;
  double best_s = 0;
  for (const auto& [cls, s] : hi.scores) {
    if (cls == kDefaultClass || s <= kUnreachedScore || s <= best_s) continue;
    const double ms = hi.fastest_ms / s;  // its time above: no more than that at the new key
    if (ms > (1.0 + kUpperSlack) * lo.fastest_ms || s < sd * (1.0 + kDefaultMargin)) continue;
    if (!applicable(cls)) continue;
    best = cls, best_s = s, *score = std::min(1.0, lo.fastest_ms / ms);
  }
  return best;
}

}  // namespace

Prediction predict(const std::vector<Neighbour>& index, const std::string& key,
                   const std::function<bool(const std::string&)>& applicable) {
  Prediction out;
  out.source = kDefaultClass;
  const ParsedKey pk = parseKey(key);
  std::vector<std::pair<double, const Neighbour*>> near;
  for (const auto& n : index) {
    if (n.key == key) continue;
    const double d = distance(pk, n.parsed);
    if (d < kMaxDistance) near.emplace_back(d, &n);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (near.size() > kNeighbours) near.resize(kNeighbours);
  if (near.empty()) {
    out.basis = "no tuned neighbours";
    return out;
  }
  // Candidate classes: every config a neighbour measured, plus the default.
  std::set<std::string> classes{kDefaultClass};
  for (const auto& [d, n] : near)
    for (const auto& [c, s] : n->scores) classes.insert(c);
  double wsum = 0;
  for (const auto& [d, n] : near) wsum += 1.0 / (1.0 + d);
  auto score = [&](const std::string& cls) {
    double acc = 0, wk = 0;
    for (const auto& [d, n] : near) {
      bool known = false;
      const double s = scoreAt(*n, cls, &known);
      const double w = 1.0 / (1.0 + d);
      if (cls == kDefaultClass && !known) continue;  // not compared there: no evidence either way
      acc += w * s;
      wk += w;
    }
    return wk > 0 ? acc / wk : kUnreachedScore;
  };
  // The closeness weight of the neighbours where `cls` was within 3% of the fastest, as a share.
  auto agreement = [&](const std::string& cls) {
    double close = 0;
    for (const auto& [d, n] : near) {
      bool known = false;
      if (scoreAt(*n, cls, &known) >= 0.97 && known) close += 1.0 / (1.0 + d);
    }
    return close / wsum;
  };
  // The neighbours must not disagree with replacing the default: the config was measured and
  // near-best at the nearest neighbour, and no neighbour that timed both saw it slower than the
  // default.
  auto consistent = [&](const std::string& cls) {
    bool known = false;
    if (scoreAt(*near.front().second, cls, &known) < 0.97 || !known) return false;
    for (const auto& [d, n] : near) {
      bool kc = false, kd = false;
      const double sc = scoreAt(*n, cls, &kc), sd = scoreAt(*n, kDefaultClass, &kd);
      if (kc && kd && sc < sd) return false;
    }
    return true;
  };
  std::string best = kDefaultClass, rule;
  out.default_score = score(kDefaultClass);
  double best_score = out.default_score * (1.0 + kDefaultMargin);
  // applicable() last: it is the caller's launch-rule check, the costly part of a prediction on an
  // unseen key's first call, and only a config that would win needs it.
  for (const auto& cls : classes) {
    if (cls == kDefaultClass) continue;
    const double s = score(cls);
    if (s > best_score && agreement(cls) >= kMinAgreement && consistent(cls) && applicable(cls))
      best = cls, best_score = s, rule = "vote";
  }
  // Where that rule keeps the default (a farther neighbour disagreeing, too little agreement), the
  // two tuned keys bracketing the new one may still agree on a JIT config (bracketRule).
  if (best == kDefaultClass) {
    double s = 0;
    if (std::string c = bracketRule(index, pk, applicable, &s); !c.empty())
      best = c, best_score = s, rule = "bracketing keys";
    else if (c = upperRule(index, pk, applicable, &s); !c.empty())
      best = c, best_score = s, rule = "upper key";
  }
  out.source = best == kDefaultClass ? kDefaultClass : "jit";
  out.config = best == kDefaultClass ? "" : best;
  out.score = best == kDefaultClass ? out.default_score : best_score;
  out.basis = best == kDefaultClass ? "default beats the rest" : "neighbours";
  out.rule = rule;
  double close = 0;
  for (const auto& [d, n] : near) {
    bool known = false;
    Used u{n->key, n->winner, n->winner_source, d, 1.0 / (1.0 + d), scoreAt(*n, best, &known)};
    if (known && u.score >= 0.97) close += u.weight;
    out.neighbours.push_back(std::move(u));
  }
  out.confidence = (1.0 / (1.0 + near.front().first)) * (close / wsum);
  return out;
}

std::vector<RaceEntry> raceSet(const RaceEntry& dflt, const RaceEntry& predicted,
                               const std::vector<RaceEntry>& vendor) {
  std::vector<RaceEntry> out;
  auto add = [&](const RaceEntry& e) {
    if (!e.config.empty() && std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  };
  add(dflt);
  add(predicted);
  size_t taken = 0;
  for (const RaceEntry& v : vendor) {
    if (taken >= kRaceVendor) break;
    if (v == dflt) continue;
    add(v);
    ++taken;
  }
  return out;
}

size_t racePick(const std::vector<double>& ms, size_t keep) {
  size_t best = std::string::npos;
  for (size_t i = 0; i < ms.size(); ++i)
    if (ms[i] > 0 && (best == std::string::npos || ms[i] < ms[best])) best = i;
  if (best == std::string::npos || ms[0] <= 0) return best;
  if (ms[0] > kRaceMaxMs) return keep < ms.size() ? keep : 0;
  return ms[best] * (1.0 + kRaceMargin) < ms[0] ? best : 0;
}

size_t wideTilePick(int64_t m, int64_t n, int multiprocessors,
                    const std::vector<VendorTile>& ranked) {
  if (ranked.empty() || m < kWideTileMinRows || n <= 0 || multiprocessors <= 0) return 0;
  const VendorTile& d = ranked.front();
  if (d.rows <= 0 || d.cols <= 0 || d.cols >= kWideTileCols || d.split_k <= 0) return 0;
  const int64_t ctas = (n + d.cols - 1) / d.cols * ((m + d.rows - 1) / d.rows) * d.split_k;
  if (ctas * kWideTileFillDen < int64_t{multiprocessors} * kWideTileFillNum) return 0;
  auto padded = [m](const VendorTile& t) { return (m + t.rows - 1) / t.rows * t.rows; };
  for (size_t i = 1; i < ranked.size() && i <= kRaceVendor; ++i) {
    const VendorTile& t = ranked[i];
    if (t.rows <= 0 || t.cols < kWideTileCols) continue;
    // The first wide one only.
    return padded(t) * 100 <= padded(d) * (100 + kWideTilePadSlackPct) ? i : 0;
  }
  return 0;
}

std::vector<int64_t> rangePoints(int64_t lo, int64_t hi, size_t max_n) {
  std::set<int64_t> pow2, mids;
  if (lo < 1) lo = 1;
  if (hi < lo) return {};
  for (int64_t p = 1; p <= hi && p > 0; p *= 2) {
    if (p >= lo) pow2.insert(p);
    const int64_t m = p + p / 2;  // 1.5 x: between p and 2p
    if (m > p && m >= lo && m <= hi) mids.insert(m);
  }
  pow2.insert(lo);
  pow2.insert(hi);
  std::vector<int64_t> mid(mids.begin(), mids.end());
  // Thin the midpoints (every other one, from the small end) until the whole fits max_n.
  while (!mid.empty() && pow2.size() + mid.size() > max_n) {
    std::vector<int64_t> kept;
    for (size_t i = 0; i < mid.size(); ++i)
      if (i % 2 == 1) kept.push_back(mid[i]);
    if (kept.size() == mid.size()) break;
    mid = std::move(kept);
  }
  std::set<int64_t> all(pow2.begin(), pow2.end());
  all.insert(mid.begin(), mid.end());
  return {all.begin(), all.end()};
}

}  // namespace ktune::predict
