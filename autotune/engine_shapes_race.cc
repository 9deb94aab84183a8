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
                                             StreamHandle s, double default_over_ms) {
  BenchOptions bo = e.engineOptions().bench;
  bo.warmup_ms = predict::kRaceWarmupMs;
  bo.rep_ms = predict::kRaceRepMs;
  bo.verify = false;  // the default and the prediction run unverified anyway; vendor picks are the library's
  pace(bo);
  std::vector<std::vector<double>> ms(set.size());
  std::vector<bool> failed(set.size(), false);
  for (int r = 0; r < predict::kRaceRounds; ++r) {
    for (size_t j = 0; j < set.size(); ++j) {
      const size_t i = r % 2 == 1 ? set.size() - 1 - j : j;  // the order reversed every other round
      if (failed[i]) continue;
      const CandidateResult c = e.benchCandidate(family, p, {set[i].config, set[i].source, ""}, bo, 0, s);
      if (c.status == Code::kOk && c.stats.median_ms > 0) ms[i].push_back(c.stats.median_ms);
      else failed[i] = true;
    }
    if (r == 0 && default_over_ms > 0 && !ms[0].empty() && ms[0][0] > default_over_ms) break;
  }
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
  const std::vector<double> ms = raceTimes(e_, fs.f.name, p, set, s, predict::kRaceMaxMs);
  (void)e_.runtime().synchronize(s);  // the problem's buffers are freed next
  for (size_t i = 0; i < set.size(); ++i)  // ran here: loaded, so a capture may run them
    if (ms[i] > 0 && isVendorSource(set[i].source))
      markVendorLoaded(fs, it.key, set[i].config);
  const size_t keep = size_t(std::find(set.begin(), set.end(), predict::RaceEntry{pr.config, pr.source}) - set.begin());
  const size_t pick = predict::racePick(ms, keep);
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
