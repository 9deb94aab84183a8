// The race of background mode (autotune/engine_shapes.h, autotune/predict.h: raceSet): before an
// unseen key's full tuning, the tuning thread times the default, the prediction and the vendor's
// next picks for the key and publishes the fastest in place of the prediction.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "autotune/engine.h"
#include "autotune/engine_shapes.h"

namespace ktune::detail {

std::vector<double> DynamicShapes::raceTimes(TunerEngine& e, const std::string& family,
                                             const void* p, const std::vector<predict::RaceEntry>& set,
                                             StreamHandle s) {
  BenchOptions bo = e.engineOptions().bench;
  bo.verify = false;  // the default and the prediction run unverified anyway; vendor picks are the library's
  pace(bo);
  std::vector<std::vector<double>> ms(set.size());
  std::vector<bool> failed(set.size(), false);
  auto time = [&](size_t i) {
    if (failed[i]) return;
    const CandidateResult c = e.benchCandidate(family, p, {set[i].config, set[i].source, ""}, bo, 0, s);
    if (c.status == Code::kOk && c.stats.median_ms > 0) ms[i].push_back(c.stats.median_ms);
    else failed[i] = true;
  };
  // The default first, with the short plan's budgets: its time chooses the plan (predict::racePlan).
  // Under the long plan that time was only the probe: every entry is timed afresh.
  bo.warmup_ms = predict::kRaceWarmupMs;
  bo.rep_ms = predict::kRaceRepMs;
  time(0);
  const predict::RacePlan plan = predict::racePlan(ms[0].empty() ? 0.0 : ms[0][0]);
  size_t skip = 1;  // round 0's entries already timed
  if (plan.rep_ms != bo.rep_ms || plan.warmup_ms != bo.warmup_ms) ms[0].clear(), skip = 0;
  bo.warmup_ms = plan.warmup_ms;
  bo.rep_ms = plan.rep_ms;
  for (int r = 0; r < plan.rounds; ++r)
    for (size_t j = r == 0 ? skip : 0; j < set.size(); ++j)
      time(r % 2 == 1 ? set.size() - 1 - j : j);  // the order reversed every other round
  std::vector<double> out(set.size(), 0.0);
  for (size_t i = 0; i < set.size(); ++i) {
    if (failed[i] || ms[i].empty()) continue;
    double lg = 0;
    for (double x : ms[i]) lg += std::log(x);
    out[i] = std::exp(lg / double(ms[i].size()));
  }
  return out;
}

void DynamicShapes::raceOne(const Item& it, StreamHandle s) {
  FamilyState& fs = *it.fs;
  auto prob = fs.f.make_problem(it.args_json);
  if (!prob.ok()) return;  // tuneOne says why
  const void* p = prob->get();
  KeyBuilder kb;
  fs.f.key(p, kb);
  if (kb.toString() != it.key) return;
  const predict::Prediction pr = predictFor(fs, p, it.key);
  const auto [def, def_source] = defaultOf(fs.f, p);
  std::vector<predict::RaceEntry> vendor;
  if (fs.f.vendor_candidates)
    for (const auto& v : fs.f.vendor_candidates(p)) vendor.push_back({v.id, v.source});
  const auto set = predict::raceSet({def, def_source}, {pr.config, pr.source}, vendor);
  if (set.size() < 2) return;
  const std::vector<double> ms = raceTimes(e_, fs.f.name, p, set, s);
  (void)e_.runtime().synchronize(s);  // the problem's buffers are freed next
  const size_t pick = predict::racePick(ms);
  if (pick >= set.size()) return;
  auto sel = selectKnown(fs, p, set[pick].config, set[pick].source, "raced", false);
  if (!sel.ok()) return;
  if (e_.options().verbose)
    e_.log() << "ktune: " << fs.f.name << " [" << it.key << "]: raced " << set.size()
             << " configs; runs " << set[pick].config << "\n";
  std::unique_lock<std::shared_mutex> l(fs.mu);
  auto cur = fs.map.find(kb);
  if (cur == fs.map.end()) return;
  const std::string& o = cur->second->origin;
  if (o != "predicted" && o != "default" && o != "provisional") return;  // measured since
  cur->second = sel->get();
  fs.owned.push_back(std::move(sel).value());
  fs.epoch.fetch_add(1, std::memory_order_release);
  l.unlock();
  std::lock_guard<std::mutex> g(mu_);
  ++raced_;
}

}  // namespace ktune::detail
