// `ktune predict gemm ...`: the config predicted for an untuned shape from the tuned GEMM keys
// (autotune/predict.h), and range pre-tuning's report (`ktune tune gemm --m LO..HI`).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "ops/gemm.h"
#include "autotune/predict.h"
#include "base/format.h"
#include "tools/commands.h"
#include "tools/sim_gpu.h"
#include "tools/tune_request.h"

namespace ktune::cli {

namespace {

const char* const kPredictUsage =
    "ktune predict gemm --m M --n N --k K [--dtype bf16|f16] [--layout NN|NT|TN|TT] [--json]\n"
    "  The config an untuned GEMM key runs in background tuning (KTUNE_TUNING=background) or inside\n"
    "  a stream capture: predicted from the nearest tuned keys of this device (M, N, K in log\n"
    "  space, layout and dtype as categories), with those neighbours and the confidence.\n"
    "  --record writes it to the database marked predicted (never taken for a measured winner).";

nlohmann::json predictionJson(const predict::Prediction& p, const std::string& key) {
  nlohmann::json j = {{"key", key},
                      {"config", p.config},
                      {"source", p.source},
                      {"basis", p.basis},
                      {"rule", p.rule},
                      {"confidence", p.confidence},
                      {"score", p.score},
                      {"default_score", p.default_score},
                      {"predicted_regret", p.predictedRegret()},
                      {"neighbours", nlohmann::json::array()}};
  for (const auto& n : p.neighbours)
    j["neighbours"].push_back({{"key", n.key}, {"winner", n.winner}, {"source", n.winner_source},
                               {"distance", n.distance}, {"score", n.score}});
  return j;
}

void printPrediction(const predict::Prediction& p, const std::string& key) {
  std::printf("key        %s\npredicted  %s%s\n", key.c_str(),
              p.source == "jit" ? "" : (p.source + " ").c_str(), p.config.c_str());
  std::printf("basis      %s%s%s%s; confidence %.2f; predicted regret %.1f%% (default's %.1f%%)\n",
              p.basis.c_str(), p.rule.empty() ? "" : " (", p.rule.c_str(), p.rule.empty() ? "" : ")",
              p.confidence, 100 * p.predictedRegret(),
              p.default_score > 0 ? 100 * (1 / p.default_score - 1) : 0.0);
  for (const auto& n : p.neighbours)
    std::printf("  neighbour d=%.2f  %s  winner %s  (predicted config there: %.3f of fastest)\n",
                n.distance, n.key.c_str(), n.winner.c_str(), n.score);
}

// The tuner `ktune predict` reads the database with: nothing is compiled or tuned.
Expected<std::shared_ptr<Engine>> predictTuner(const Options& o) {
  EngineOptions e;
  e.options = o;
  e.options.isolate = false;
  std::shared_ptr<Backend> backend;
  if (o.backend == "sim") {
    SimGpu g = openSimGpu(o.sim_devices);
    backend = g.backend;
    e.compiler = g.compiler;
  } else {
    KTUNE_ASSIGN_OR_RETURN(auto b, openBackend(o.backend));
    backend = std::move(b);
  }
  KTUNE_ASSIGN_OR_RETURN(auto t, Engine::create(backend, e));
  return std::shared_ptr<Engine>(std::move(t));
}

}  // namespace

std::vector<long long> rangeMs(long long lo, long long hi) {
  auto v = predict::rangePoints(lo, hi, 20);
  return {v.begin(), v.end()};
}

int reportRange(GemmOp& op, const TuneRequest& t) {
  const auto tuned = rangeMs(t.m_lo, t.m_hi);
  gemm::GemmShape base = t.gemm_cases.front().shape;
  // Every M of the range up to 8192 values; beyond, an even sample (the report is a summary).
  const long long count = t.m_hi - t.m_lo + 1, step = std::max(1LL, count / 8192);
  double log_sum = 0, worst = 0;
  long long worst_m = 0, n = 0, defaults = 0;
  for (long long m = t.m_lo; m <= t.m_hi; m += step) {
    if (std::binary_search(tuned.begin(), tuned.end(), m)) continue;
    auto s = gemm::denseShape(base.layout, base.ab, base.c, m, base.n, base.k);
    s.has_bias = base.has_bias;
    s.act = base.act;
    s.alpha = base.alpha;
    s.beta = base.beta;
    auto p = op.predict(s);
    if (!p.ok()) return fail(p.status());
    const double r = p->predictedRegret();
    log_sum += std::log1p(r);
    if (r >= worst) worst = r, worst_m = m;
    defaults += p->basis == "neighbours" ? 0 : 1;
    ++n;
  }
  const double geo = n ? std::expm1(log_sum / double(n)) : 0;
  if (t.json) {
    nlohmann::json j = {{"range", {t.m_lo, t.m_hi}}, {"tuned_m", tuned}, {"predicted", n},
                        {"predicted_default", defaults}, {"predicted_regret_geomean", geo},
                        {"predicted_regret_max", worst}, {"predicted_regret_max_m", worst_m}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::string ms;
    for (long long m : tuned) ms += (ms.empty() ? "" : ",") + std::to_string(m);
    std::printf("range M=%lld..%lld: tuned %zu (M=%s); %lld other M run predicted configs (%lld "
                "the default)\npredicted regret: geomean %.1f%%, max %.1f%% (M=%lld)\n",
                t.m_lo, t.m_hi, tuned.size(), ms.c_str(), n, defaults, 100 * geo, 100 * worst,
                worst_m);
  }
  return kExitOk;
}

int cmdPredict(const std::vector<std::string>& argv) {
  if (std::find(argv.begin(), argv.end(), "--help") != argv.end()) return help(kPredictUsage);
  std::vector<std::string> rest;
  bool record = false;
  for (const auto& a : argv) {
    if (a == "--record") record = true;
    else rest.push_back(a);
  }
  TuneRequest t;
  if (int rc = parseTuneRequest(rest, &t); rc >= 0) return rc;
  if (t.op != "gemm" || t.gemm_cases.size() != 1 || t.m_hi > 0)
    return usage("predict takes one GEMM shape", kPredictUsage);
  auto opts = Options::fromEnv();
  if (!opts.ok()) return fail(opts.status());
  auto tuner = predictTuner(*opts);
  if (!tuner.ok()) return fail(tuner.status(), "KTUNE_BACKEND=sim predicts on a simulated device");
  auto op = GemmOp::create(*tuner);
  if (!op.ok()) return fail(op.status());
  const gemm::GemmShape& s = t.gemm_cases.front().shape;
  auto p = (*op)->predict(s);
  if (!p.ok()) return fail(p.status());
  gemm::GemmShape keyed = s;
  keyed.aligned16 = true;
  const std::string key = (*tuner)->family<GemmCall>("gemm").value().key(GemmCall{keyed, {}});
  if (record) {
    DbEntry e;
    e.key = key;
    e.winner = p->config;
    e.winner_source = p->source;
    e.predicted = true;
    TuningDatabase* db = (*tuner)->database("gemm");
    if (db->lookup(key) && !db->lookup(key)->predicted)
      return fail(Status::InvalidArgument("key " + key + " is measured; a prediction never "
                                          "replaces a measured winner"));
    if (Status st = db->record(e); !st.ok()) return fail(st);
  }
  if (t.json) std::printf("%s\n", predictionJson(*p, key).dump().c_str());
  else printPrediction(*p, key);
  return kExitOk;
}

}  // namespace ktune::cli
