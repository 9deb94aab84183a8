#include "autotune/guided.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <utility>

namespace ktune::guided {

std::vector<std::pair<std::string, std::string>> keyFields(const std::string& key) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t i = 0;
  while (i <= key.size()) {
    size_t j = key.find(',', i);
    if (j == std::string::npos) j = key.size();
    const std::string f = key.substr(i, j - i);
    const size_t eq = f.find('=');
    if (eq != std::string::npos) out.emplace_back(f.substr(0, eq), f.substr(eq + 1));
    i = j + 1;
  }
  return out;
}

namespace {

bool integer(const std::string& s, long long* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtoll(s.c_str(), &end, 10);
  return end && *end == '\0';
}

}  // namespace

double keyDistance(const std::string& a, const std::string& b) {
  const auto fa = keyFields(a), fb = keyFields(b);
  double sq = 0;
  for (const auto& [name, va] : fa) {
    auto it = std::find_if(fb.begin(), fb.end(), [&](const auto& f) { return f.first == name; });
    if (it == fb.end()) {
      sq += kCategoryDistance * kCategoryDistance;
      continue;
    }
    long long x = 0, y = 0;
    if (integer(va, &x) && integer(it->second, &y)) {
      const double d = std::log2(1.0 + std::fabs(double(x))) - std::log2(1.0 + std::fabs(double(y)));
      sq += d * d;
    } else if (va != it->second) {
      sq += kCategoryDistance * kCategoryDistance;
    }
  }
  for (const auto& [name, vb] : fb) {
    (void)vb;
    if (std::none_of(fa.begin(), fa.end(), [&](const auto& f) { return f.first == name; }))
      sq += kCategoryDistance * kCategoryDistance;
  }
  return std::sqrt(sq);
}

std::map<std::string, double> historyScores(const std::vector<DbEntry>& entries,
                                            const std::string& key, size_t neighbours,
                                            double max_distance, int* used) {
  std::vector<std::pair<double, const DbEntry*>> near;
  for (const DbEntry& e : entries) {
    if (e.key == key || e.winner.empty()) continue;
    const double d = keyDistance(key, e.key);
    if (d <= max_distance) near.emplace_back(d, &e);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  if (near.size() > neighbours) near.resize(neighbours);
  std::map<std::string, std::pair<double, double>> acc;  // config -> (sum w*score, sum w)
  for (const auto& [d, e] : near) {
    double fastest = 0;
    for (const auto& c : e->candidates)
      if (c.status == Code::kOk && c.stats.runs > 0 && c.stats.median_ms > 0 && c.source == "jit")
        fastest = fastest <= 0 ? c.stats.median_ms : std::min(fastest, c.stats.median_ms);
    if (fastest <= 0) continue;
    const double w = 1.0 / (1.0 + d);
    for (const auto& c : e->candidates) {
      if (c.source != "jit") continue;
      double score = 0;  // failed or rejected there: a weak score, not unknown
      if (c.status == Code::kOk && c.stats.runs > 0 && c.stats.median_ms > 0)
        score = fastest / c.stats.median_ms;
      else if (c.stats.runs > 0 && c.stats.median_ms > 0)  // stopped as slower than best
        score = std::min(0.5, fastest / c.stats.median_ms);
      else if (c.status == Code::kOk)
        continue;  // not reached there: says nothing
      auto& a = acc[c.config];
      a.first += w * score;
      a.second += w;
    }
  }
  if (used) *used = static_cast<int>(near.size());
  std::map<std::string, double> out;
  for (const auto& [cfg, a] : acc)
    if (a.second > 0) out[cfg] = a.first / a.second;
  return out;
}

double waveEfficiency(const LaunchDims& dims, int sms) {
  const double blocks = double(dims.grid.x) * double(dims.grid.y) * double(dims.grid.z);
  if (sms <= 0 || blocks <= 0) return 1;
  const double waves = std::ceil(blocks / sms);
  return blocks / (waves * sms);
}

double tileIntensity(const Config& c) {
  const double bm = double(c.getInt("BLOCK_M")), bn = double(c.getInt("BLOCK_N"));
  if (bm <= 0 || bn <= 0) return 0;
  return 2.0 * bm * bn / (bm + bn);
}

double tileFactor(double i, double best) {
  if (i <= 0 || best <= 0) return 1;
  return (i / (i + kHalfIntensity)) / (best / (best + kHalfIntensity));
}

std::vector<size_t> priorOrder(const std::vector<PriorItem>& items) {
  std::vector<size_t> idx(items.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  auto tier = [&](const PriorItem& it) { return it.is_default ? 0 : it.history >= 0.9 ? 1 : 2; };
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    const PriorItem &x = items[a], &y = items[b];
    if (tier(x) != tier(y)) return tier(x) < tier(y);
    if (tier(x) == 1 && x.history != y.history) return x.history > y.history;
    if (x.static_score != y.static_score) return x.static_score > y.static_score;
    return x.history > y.history;
  });
  return idx;
}

namespace {

// The floor one tie cluster gives: the configs whose intervals reach `m`'s, when at least
// kFloorTies of them span kFloorSpread in static score (0 otherwise); *tie: its width.
double clusterFloor(const std::vector<Measured>& group, const Measured& m, double* tie) {
  size_t tied = 0;
  double s_lo = 0, s_hi = 0, w = 0;
  for (const Measured& x : group) {
    if (x.ms <= 0 || x.static_score <= 0) continue;
    if (x.ms * (1 - x.half_width) > m.ms * (1 + m.half_width) ||
        x.ms * (1 + x.half_width) < m.ms * (1 - m.half_width))
      continue;
    ++tied;
    s_lo = s_lo <= 0 ? x.static_score : std::min(s_lo, x.static_score);
    s_hi = std::max(s_hi, x.static_score);
    w = std::max(w, std::fabs(x.ms / m.ms - 1) + x.half_width + m.half_width);
  }
  const double r = s_lo > 0 ? s_hi / s_lo : 0;
  if (tied < kFloorTies || r < kFloorSpread) return 0;
  *tie = w;
  return m.ms * std::max(0.0, 1 - w / (r - 1));
}

}  // namespace

double launchFloor(const std::vector<Measured>& group, double* tie) {
  if (tie) *tie = 0;
  double best = 0;
  for (const Measured& m : group)
    if (m.ms > 0 && m.static_score > 0) best = best <= 0 ? m.ms : std::min(best, m.ms);
  if (best <= 0) return 0;
  double floor = 0, w = 0;
  for (const Measured& m : group) {
    if (m.ms <= 0 || m.static_score <= 0 || m.ms > best * (1 + kFloorNear)) continue;
    double t = 0;
    const double f = clusterFloor(group, m, &t);
    if (f > floor) floor = f, w = t;
  }
  if (floor <= 0) return 0;
  if (tie) *tie = w;
  // A config faster than the cluster's floor shows the floor lies lower, by what the model cannot
  // say: the group's best is then the estimate.
  return std::min(floor, best);
}

Regret regretWithFloor(const std::vector<Measured>& measured,
                       const std::vector<Unmeasured>& unmeasured, double leader_ms) {
  if (leader_ms <= 0 || unmeasured.empty()) return {};
  std::map<std::string, double> c;  // group -> smallest time x score
  std::map<std::string, std::vector<Measured>> groups;
  double c_any = 0;
  for (const Measured& m : measured) {
    if (m.ms <= 0 || m.static_score <= 0) continue;
    const double x = m.ms * m.static_score;
    auto [it, fresh] = c.emplace(m.group, x);
    if (!fresh) it->second = std::min(it->second, x);
    c_any = c_any <= 0 ? x : std::min(c_any, x);
    groups[m.group].push_back(m);
  }
  if (c_any <= 0) return {1, 0};  // nothing to calibrate on: anything may be faster
  // A group with nothing measured is taken as a typical one: the median of the groups' constants
  // (the most optimistic group's would let one underrated kernel keep every other kind "fast").
  std::vector<double> cs;
  for (const auto& [g, x] : c) cs.push_back(x);
  std::sort(cs.begin(), cs.end());
  c_any = cs[(cs.size() - 1) / 2];
  std::map<std::string, std::pair<double, double>> floors;  // group -> (floor ms, tie)
  for (const auto& [g, ms] : groups) {
    double tie = 0;
    const double fl = launchFloor(ms, &tie);
    if (fl > 0) floors[g] = {fl, tie};
  }
  double best_pred = 0, best_tie = 0;
  for (const Unmeasured& u : unmeasured) {
    if (u.static_score <= 0) continue;
    auto it = c.find(u.group);
    double pred = (it == c.end() ? c_any : it->second) / u.static_score, tie = 0;
    if (auto f = floors.find(u.group); f != floors.end() && f->second.first >= pred)
      pred = f->second.first, tie = f->second.second;
    if (best_pred <= 0 || pred < best_pred) best_pred = pred, best_tie = tie;
  }
  if (best_pred <= 0) return {};
  return {std::max(0.0, leader_ms / best_pred - 1.0), best_tie};
}

double regretEstimate(const std::vector<Measured>& measured,
                      const std::vector<Unmeasured>& unmeasured, double leader_ms) {
  return regretWithFloor(measured, unmeasured, leader_ms).estimate;
}

std::string groupOf(const Config& c) {
  std::string g;
  for (const auto& [name, v] : c.params())
    if (const auto* s = std::get_if<std::string>(&v)) g += (g.empty() ? "" : ",") + name + "=" + *s;
  return g;
}

std::vector<std::string> coverageClasses(const Config& c, const std::vector<std::string>& named) {
  std::vector<std::string> out{"group:" + groupOf(c)};
  std::string combo;  // the combination of the named values the config has
  int values = 0;
  for (const std::string& name : named) {
    if (!c.has(name)) continue;
    const std::string v = name + "=" + c.getStr(name);
    out.push_back("value:" + v);
    combo += (combo.empty() ? "" : ",") + v;
    ++values;
  }
  if (values >= 2) out.push_back("combo:" + combo);
  return out;
}

namespace {

constexpr const char* kCombo = "combo:";

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// "combo:A=x,B=y" -> {"A=x", "B=y"}.
std::vector<std::string> comboValues(const std::string& combo) {
  std::vector<std::string> out;
  for (const auto& [name, v] : keyFields(combo.substr(std::string(kCombo).size())))
    out.push_back(name + "=" + v);
  return out;
}

// The fastest time among the taken positions with class `cls` (0 when none was timed).
double bestOf(const Coverage& cv, const std::string& cls) {
  double best = 0;
  for (size_t p = 0; p < cv.classes.size(); ++p) {
    if (p >= cv.taken.size() || !cv.taken[p] || p >= cv.ms.size() || cv.ms[p] <= 0) continue;
    const auto& cs = cv.classes[p];
    if (std::find(cs.begin(), cs.end(), cls) != cs.end())
      best = best <= 0 ? cv.ms[p] : std::min(best, cv.ms[p]);
  }
  return best;
}

bool near(double ms, double leader_ms) { return ms > 0 && ms <= leader_ms * (1 + kCoverNear); }

// The leading combinations: the combination classes whose fastest timed position is within
// kLeadTie of the fastest one's (a first round's tie: which of them leads is chance), the fastest
// first; none when the fastest is not near the leader.
std::vector<std::string> leadingCombos(const Coverage& cv) {
  std::map<std::string, double> best;  // combination -> its fastest time
  for (size_t p = 0; p < cv.classes.size(); ++p) {
    if (p >= cv.taken.size() || !cv.taken[p] || p >= cv.ms.size() || cv.ms[p] <= 0) continue;
    for (const std::string& cls : cv.classes[p])
      if (startsWith(cls, kCombo)) {
        auto [it, fresh] = best.emplace(cls, cv.ms[p]);
        if (!fresh) it->second = std::min(it->second, cv.ms[p]);
      }
  }
  std::vector<std::pair<double, std::string>> lead;
  for (const auto& [cls, ms] : best) lead.emplace_back(ms, cls);
  std::sort(lead.begin(), lead.end());
  std::vector<std::string> out;
  if (lead.empty() || !near(lead.front().first, cv.leader_ms)) return out;
  for (const auto& [ms, cls] : lead)
    if (ms <= lead.front().first * (1 + kLeadTie)) out.push_back(cls);
  return out;
}

// Whether combinations `a` and `b` name the same parameters and differ in exactly one value.
bool oneAway(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return false;
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (keyFields(a[i]).front().first != keyFields(b[i]).front().first) return false;
    differ += a[i] != b[i] ? 1 : 0;
  }
  return differ == 1;
}

// The first untaken position of value class `value` ("value:A=x") whose other named values are
// those of the leading combination `lead` (one value away from it: the pick then covers a
// promising combination too), -1 when none has them or there is no leading combination.
long withLeadingPartners(const Coverage& cv, const std::string& lead, const std::string& value) {
  if (lead.empty()) return -1;
  const auto [name, v] = keyFields(value.substr(std::string("value:").size())).front();
  std::string want = kCombo;  // the leading combination with `name` set to v
  for (const std::string& lv : comboValues(lead)) {
    const auto field = keyFields(lv).front();
    want += (want.size() > std::string(kCombo).size() ? "," : "") +
            (field.first == name ? name + "=" + v : lv);
  }
  for (size_t p = 0; p < cv.classes.size(); ++p) {
    if (p < cv.taken.size() && cv.taken[p]) continue;
    const auto& cs = cv.classes[p];
    if (std::find(cs.begin(), cs.end(), value) != cs.end() &&
        std::find(cs.begin(), cs.end(), want) != cs.end())
      return static_cast<long>(p);
  }
  return -1;
}

}  // namespace

bool comboDue(const Coverage& cv, const std::string& combo) {
  if (cv.leader_ms <= 0 || !startsWith(combo, kCombo)) return false;
  const std::vector<std::string> vs = comboValues(combo);
  for (const std::string& lead : leadingCombos(cv))
    if (oneAway(vs, comboValues(lead))) return true;
  return std::all_of(vs.begin(), vs.end(), [&](const std::string& v) {
    return near(bestOf(cv, "value:" + v), cv.leader_ms);
  });
}

std::vector<size_t> uncovered(const Coverage& cv, bool with_groups) {
  const auto& classes = cv.classes;
  std::map<std::string, long> first;  // class -> its first untaken position, -1 once covered
  for (size_t p = 0; p < classes.size(); ++p)
    for (const std::string& cls : classes[p]) {
      if (!with_groups && startsWith(cls, "group:")) continue;
      auto [it, fresh] = first.emplace(cls, -2);
      if (it->second == -1) continue;
      if (p < cv.taken.size() && cv.taken[p]) it->second = -1;
      else if (it->second == -2) it->second = static_cast<long>(p);
    }
  const std::vector<std::string> leads = leadingCombos(cv);
  const std::string lead = leads.empty() ? std::string() : leads.front();
  std::vector<size_t> out;
  for (const auto& [cls, p] : first) {
    if (p < 0 || (startsWith(cls, kCombo) && !comboDue(cv, cls))) continue;
    const long partner = startsWith(cls, "value:") ? withLeadingPartners(cv, lead, cls) : -1;
    out.push_back(static_cast<size_t>(partner >= 0 ? partner : p));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<size_t> sameClasses(const std::vector<std::vector<std::string>>& classes,
                                const std::vector<bool>& taken, size_t p) {
  std::vector<size_t> out;
  if (p >= classes.size()) return out;
  for (size_t q = 0; q < classes.size(); ++q)
    if (q != p && !(q < taken.size() && taken[q]) && classes[q] == classes[p]) out.push_back(q);
  return out;
}

bool isTwinOf(const Config& twin, const Config& base) {
  const auto& t = twin.params();
  const auto& b = base.params();
  if (t.size() <= b.size() || t.size() > b.size() + kTwinKnobs) return false;
  return std::includes(t.begin(), t.end(), b.begin(), b.end());  // both sorted by name
}

bool owesClass(double ms, double vendor_ms, double prior_best_ms, double leader_ms) {
  if (ms <= 0 || vendor_ms <= 0 || ms > vendor_ms * (1 + kOweNear) ||
      ms > leader_ms * (1 + kOweNear))
    return false;
  return prior_best_ms <= 0 || prior_best_ms > vendor_ms * (1 + kLeadTie);
}

size_t minExplore(size_t n) {
  if (n < kMinGuided) return n;
  return std::min(n, std::max<size_t>(8, n / 6));
}

size_t patience(size_t explored) { return std::max<size_t>(4, explored / 4); }

size_t firstWave(size_t n, size_t min_n, size_t window, int threads) {
  const size_t idle = threads > 0 ? static_cast<size_t>(threads) : 1;
  return std::min(n, std::max(min_n, std::min(idle, min_n + window)));
}

double relHalfWidth(const BenchStats& s) {
  if (s.runs <= 0 || s.median_ms <= 0) return 1;
  // For a normal sample p80 - p20 = 1.68 sigma, and the median's standard error is 1.25 sigma /
  // sqrt(n): 1.96 x 1.25 / 1.68 = 1.46.
  const double hw = 1.46 * std::max(0.0, s.p80_ms - s.p20_ms) / std::sqrt(double(s.runs));
  return std::max(kIntervalFloor, hw / s.median_ms);
}

bool canBeat(const BenchStats& c, const BenchStats& l, double slack) {
  const double lo = c.median_ms * (1 - relHalfWidth(c));
  const double hi = l.median_ms * (1 + relHalfWidth(l)) * (1 + slack);
  return lo <= hi;
}

bool newLeader(const BenchStats& c, const BenchStats& l) {
  if (l.runs <= 0 || l.median_ms <= 0) return true;
  return c.median_ms < l.median_ms && !canBeat(l, c);
}

double drift(const BenchStats& first, const BenchStats& again) {
  if (first.runs <= 0 || again.runs <= 0 || first.median_ms <= 0 || again.median_ms <= 0) return 0;
  const double apart = std::fabs(std::log(again.median_ms / first.median_ms));
  return std::max(0.0, apart - relHalfWidth(first) - relHalfWidth(again));
}

double anchorFactor(const BenchStats& first, const BenchStats& again) {
  if (drift(first, again) <= 0) return 1;
  return again.median_ms / first.median_ms;
}

double interpolateFactor(double f0, double f1, size_t k, size_t m) {
  if (m == 0) return f1;
  return f0 + (f1 - f0) * (double(k) + 0.5) / double(m);
}

void scaleStats(BenchStats& s, double f) {
  if (f <= 0 || f == 1) return;
  for (double* x : {&s.median_ms, &s.p20_ms, &s.p80_ms, &s.min_ms, &s.max_ms, &s.mean_ms, &s.std_ms})
    *x /= f;
  for (double& x : s.samples_ms) x /= f;
}

BenchStats mergeStats(const BenchStats& a, const BenchStats& b) {
  if (a.runs <= 0) return b;
  if (b.runs <= 0) return a;
  BenchStats m;
  m.runs = a.runs + b.runs;
  const double wa = double(a.runs) / m.runs, wb = double(b.runs) / m.runs;
  m.median_ms = wa * a.median_ms + wb * b.median_ms;
  m.p20_ms = std::min(a.p20_ms, b.p20_ms);
  m.p80_ms = std::max(a.p80_ms, b.p80_ms);
  m.min_ms = std::min(a.min_ms, b.min_ms);
  m.max_ms = std::max(a.max_ms, b.max_ms);
  m.mean_ms = wa * a.mean_ms + wb * b.mean_ms;
  // Pooled: each part's variance about its own mean plus its mean's distance to the whole's.
  const double da = a.mean_ms - m.mean_ms, db = b.mean_ms - m.mean_ms;
  m.std_ms = std::sqrt(wa * (a.std_ms * a.std_ms + da * da) + wb * (b.std_ms * b.std_ms + db * db));
  m.samples_ms = a.samples_ms;
  m.samples_ms.insert(m.samples_ms.end(), b.samples_ms.begin(), b.samples_ms.end());
  return m;
}

}  // namespace ktune::guided
