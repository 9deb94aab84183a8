// The finalists stage (autotune/finalists.h): a tuning run on the simulated backend with seeded
// noisy timings, where a winner must never be a candidate that is really slower than the vendor
// default. The decision from interleaved rounds (pure functions of the times) is tested in
// finalists_decide_part.cc, part of this program.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <sstream>
#include <nlohmann/json.hpp>

#include "autotune/finalists.h"
#include "autotune/search.h"
#include "tuner_sim_env.h"

namespace ktune {
namespace {

using tunertest::Env;
using tunertest::Scale;

// A vendor "library" whose call takes `ms` of simulated device time (a memset on the stream, so
// the simulated noise applies) and computes the right result.
void addVendor(Env& env, testfamily::SpecFamily<Scale>& f, double ms, double bytes_per_ms) {
  const size_t bytes = static_cast<size_t>(ms * bytes_per_ms);
  DevicePtr scratch = *env.backend->alloc(bytes);
  f.spec.vendor_candidates = [](const Scale&) {
    return std::vector<VendorCandidate>{{"fake:idx=0", "fakeblas", true}};
  };
  f.spec.vendor_launch = [&env, scratch, bytes](const std::string&, const Scale& p,
                                           StreamHandle s) -> Status {
    std::vector<float> x(p.n);
    KTUNE_RETURN_IF_ERROR(env.backend->copyToHost(x.data(), p.x, p.n * 4));
    for (auto& v : x) v *= 2;
    KTUNE_RETURN_IF_ERROR(env.backend->copyToDevice(p.y, x.data(), p.n * 4));
    return env.backend->memset8(scratch, 0, bytes, s);
  };
}

struct NoisyRun {
  TuneReport rep;
  std::string first_pass_winner;  // the plain fastest median of the first measurements
};

// One seeded tuning run: JIT configs with the given true costs against a vendor default of
// 0.05 ms, with `noise` launch-to-launch noise (8% by default) and the given finalist margin
// (negative: the option's default).
NoisyRun tuneNoisy(uint64_t seed, const std::map<std::string, double>& costs, double noise = 0.08,
                   double margin = -1) {
  const double kBw = 1e6;
  Env env(noise, seed, kBw);
  auto f = env.family();
  f.extras.configs.clear();
  for (const auto& [cfg, ms] : costs) {
    f.extras.configs.push_back(*Config::parse(cfg));
    env.cost[cfg] = ms;
  }
  addVendor(env, f, 0.05, kBw);
  EngineOptions o = env.options();
  o.options.pipeline = false;  // benchmark in candidate order: the noise draws are reproducible
  o.options.compile_threads = 1;
  if (margin >= 0) o.options.finalist_margin = margin;
  auto t = Engine::create(env.backend, o);
  EXPECT_TRUE(t.ok()) << t.status().toString();
  auto fam = addFamily(**t, std::move(f));
  EXPECT_TRUE(fam.ok()) << fam.status().toString();
  auto rep = fam->tune(env.problem(4096));
  EXPECT_TRUE(rep.ok()) << rep.status().toString();
  NoisyRun out;
  if (!rep.ok()) return out;
  out.rep = *rep;
  int w = chooseWinner(rep->candidates);
  if (w >= 0) out.first_pass_winner = rep->candidates[w].config;
  return out;
}

double trueCost(const std::map<std::string, double>& costs, const TuneReport& r) {
  if (r.winner_source == "fakeblas") return 0.05;
  return costs.at(r.winner);
}

// The recorded winner is slower than the default by more than its interval (a false win) only as
// often as the interval allows: a 95% interval of the best of four challengers, with extra rounds
// while a gain is undecided, missed the truth in 7 of 260 seeds with the first round checking
// every finalist and in 9 of 260 with the checks after the rounds (the same noise draws land
// elsewhere: seeds 1-10 held 0 and 3 of them); at most 10% of 40 seeds.
TEST(Finalists, NoisyTimingsPickASlowerWinnerOnlyAsOftenAsTheIntervalAllows) {
  // Every JIT config is really 1-4% slower than the vendor default.
  const std::map<std::string, double> costs = {{"BLOCK=128,VEC=1", 0.0505},
                                               {"BLOCK=256,VEC=1", 0.051},
                                               {"BLOCK=256,VEC=2", 0.0505},
                                               {"BLOCK=512,VEC=1", 0.052},
                                               {"BLOCK=64,VEC=4", 0.051}};
  int fooled_first_pass = 0, false_wins = 0;
  const int kSeeds = 40;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    NoisyRun run = tuneNoisy(seed, costs);
    const TuneReport& r = run.rep;
    ASSERT_FALSE(r.winner.empty()) << r.tree();
    const DefaultComparison& c = r.vs_default;
    EXPECT_EQ(c.baseline, "fake:idx=0");
    EXPECT_EQ(c.baseline_source, "fakeblas");
    EXPECT_GE(c.rounds, 2);
    EXPECT_LE(c.ratio_lo, c.ratio_hi);
    // A JIT winner is a false win here, and its interval then misses the truth.
    const double ratio = trueCost(costs, r) / 0.05;
    const double hi = r.winner_source == "fakeblas" ? 1.0 : c.ratio_hi;
    EXPECT_EQ(ratio > hi, r.winner_source != "fakeblas") << "seed " << seed << "\n" << r.tree();
    if (r.winner_source != "fakeblas") ++false_wins;
    if (run.first_pass_winner != "fake:idx=0") ++fooled_first_pass;
  }
  EXPECT_LE(false_wins, kSeeds / 10);
  // The noise is real: the first measurements alone would have picked a slower JIT config.
  EXPECT_GT(fooled_first_pass, 0);
}

TEST(Finalists, ClearlyFasterCandidateStillWinsUnderNoise) {
  const std::map<std::string, double> costs = {{"BLOCK=128,VEC=1", 0.051},
                                               {"BLOCK=256,VEC=2", 0.040},
                                               {"BLOCK=512,VEC=1", 0.052}};
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    NoisyRun run = tuneNoisy(seed, costs);
    const TuneReport& r = run.rep;
    EXPECT_EQ(r.winner, "BLOCK=256,VEC=2") << "seed " << seed << "\n" << r.tree();
    EXPECT_EQ(r.vs_default.decision, "faster than the default");
    EXPECT_LT(r.vs_default.ratio_hi, 1.0);
    EXPECT_LE(0.8, r.vs_default.ratio_hi);  // the truth (0.8) lies within reach of the interval
  }
}

// Winner stability: a challenger really 0.6% faster than the vendor default, with timings steady
// enough (0.5% noise) that the interval alone often calls it a win. Without a margin the recorded
// winner then depends on the seed (the flip seen between runs on real GPUs); with the default 1%
// margin every seed records the default. A challenger 6% faster still wins under the margin.
TEST(Finalists, MarginKeepsTheDefaultAcrossSeedsForSubMarginGaps) {
  EXPECT_EQ(Options().finalist_margin, 0.01);
  const std::map<std::string, double> near = {{"BLOCK=256,VEC=2", 0.0497}, {"BLOCK=128,VEC=1", 0.052}};
  const std::map<std::string, double> far = {{"BLOCK=256,VEC=2", 0.047}, {"BLOCK=128,VEC=1", 0.052}};
  int challenger_without_margin = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const TuneReport with = tuneNoisy(seed, near, 0.005).rep;
    EXPECT_EQ(with.winner_source, "fakeblas") << "seed " << seed << "\n" << with.tree();
    EXPECT_EQ(with.vs_default.margin, 0.01);
    if (with.vs_default.ratio_hi < 1) {
      EXPECT_EQ(with.vs_default.decision, "default kept: gain below the margin");
    }
    const TuneReport without = tuneNoisy(seed, near, 0.005, 0).rep;
    if (without.winner == "BLOCK=256,VEC=2") ++challenger_without_margin;
    const TuneReport clear = tuneNoisy(seed, far, 0.005).rep;
    EXPECT_EQ(clear.winner, "BLOCK=256,VEC=2") << "seed " << seed << "\n" << clear.tree();
    EXPECT_EQ(clear.vs_default.decision, "faster than the default");
  }
  // The margin is what keeps the winner stable: without it some seeds record the challenger.
  EXPECT_GT(challenger_without_margin, 0);
}

// The re-timing lasts as long as the decision is uncertain (finalistsSettled) and can still
// change: a steady 6% win with 0.2% noise is settled after the minimum of rounds (the slower JIT
// config, clearly behind the leader in the race, is not re-timed at all); a 0.6% gap under 0.5%
// noise, below the margin, keeps the default and stops at the minimum once the margin is out of
// its reach (finalistsCanStillWin; before, such a near-tie ran every round) on most seeds: over
// 150 seeds 85-88% stop at the minimum, the others within three more rounds (the rate moved
// from 88% to 85% when the later rounds' estimate runs went from 5 to 2, and was 85% (127) when
// a finalists' round's timed runs were halved and the estimate's runs counted as warm-up: changes
// of the noise draws only), so 20 seeds must give at least 15 (seeds 1-12 alone gave 8 then).
TEST(Finalists, RoundsFollowTheUncertainty) {
  const std::map<std::string, double> steady = {{"BLOCK=256,VEC=2", 0.047}, {"BLOCK=128,VEC=1", 0.052}};
  const std::map<std::string, double> near = {{"BLOCK=256,VEC=2", 0.0497}, {"BLOCK=128,VEC=1", 0.052}};
  int near_at_min = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    if (seed <= 3) {
      const TuneReport r = tuneNoisy(seed, steady, 0.002).rep;
      EXPECT_EQ(r.winner, "BLOCK=256,VEC=2") << "seed " << seed << "\n" << r.tree();
      EXPECT_EQ(r.vs_default.finalists, 2) << r.tree();
      EXPECT_LE(r.vs_default.rounds, kMinFinalistRounds) << r.tree();
    }
    const TuneReport n = tuneNoisy(seed, near, 0.005).rep;
    EXPECT_EQ(n.winner_source, "fakeblas") << "seed " << seed << "\n" << n.tree();
    EXPECT_LE(n.vs_default.rounds, kMinFinalistRounds + 3) << "seed " << seed << "\n" << n.tree();
    near_at_min += n.vs_default.rounds == kMinFinalistRounds ? 1 : 0;
  }
  EXPECT_GE(near_at_min, 15);
}

// A dense lead (kDenseFinalists): five candidates within 1% of the race's leader are all
// re-timed against the default, where options.finalists (3) would leave two of them out; two
// candidates within 1% keep the usual count's room (both re-timed, nobody added).
TEST(Finalists, ADenseLeadIsReTimedWhole) {
  const std::map<std::string, double> dense = {
      {"BLOCK=64,VEC=1", 0.0480}, {"BLOCK=128,VEC=1", 0.0481}, {"BLOCK=256,VEC=1", 0.0482},
      {"BLOCK=512,VEC=1", 0.0483}, {"BLOCK=1024,VEC=1", 0.0484}, {"BLOCK=64,VEC=2", 0.0600}};
  const TuneReport r = tuneNoisy(1, dense, 0.0005).rep;
  EXPECT_EQ(r.vs_default.finalists, 6) << r.tree();  // the default and the five
  EXPECT_EQ(r.winner, "BLOCK=64,VEC=1") << r.tree();
  const std::map<std::string, double> sparse = {
      {"BLOCK=64,VEC=1", 0.0400}, {"BLOCK=128,VEC=1", 0.0401}, {"BLOCK=256,VEC=1", 0.0450},
      {"BLOCK=512,VEC=1", 0.0460}, {"BLOCK=1024,VEC=1", 0.0470}};
  const TuneReport s = tuneNoisy(1, sparse, 0.0005).rep;
  EXPECT_LE(s.vs_default.finalists, 4) << s.tree();  // options.finalists (3) and the default
}

// Vendor and JIT candidates are timed under the same conditions: with the pipeline on (compiles
// overlapping the benchmarks), every launch of the vendor candidate comes after the last compile
// finished (compiles take 40 ms each here, so a vendor candidate timed up front would overlap
// them), and in this process, where the JIT candidates ran (isolation off; the worker case is
// isolation_worker_test's VendorCandidatesGoThroughTheWorkerByDefault).
TEST(Finalists, VendorCandidatesAreTimedAfterEveryCompile) {
  const double kBw = 1e6;
  Env env(0, 1, kBw);
  env.compile_delay_ms = 40;
  auto f = env.family();
  f.extras.configs = {*Config::parse("BLOCK=128,VEC=1"), *Config::parse("BLOCK=256,VEC=2"),
               *Config::parse("BLOCK=512,VEC=1"), *Config::parse("BLOCK=64,VEC=4")};
  addVendor(env, f, 0.05, kBw);
  std::atomic<int> compiled{0}, to_compile{0}, vendor_runs{0}, during_compiles{0};
  f.spec.vendor_launch = [&, inner = f.spec.vendor_launch](const std::string& id, const Scale& p,
                                                 StreamHandle s) {
    ++vendor_runs;
    if (to_compile.load() == 0 || compiled.load() < to_compile.load()) ++during_compiles;
    return inner(id, p, s);
  };
  EngineOptions o = env.options();
  o.options.pipeline = true;
  o.options.compile_threads = 2;
  o.progress = [&](const TuneProgress& pr) {
    if (pr.phase != "compile") return;
    to_compile = pr.total;
    compiled = std::max(compiled.load(), pr.index);
  };
  auto t = Engine::create(env.backend, o);
  ASSERT_TRUE(t.ok()) << t.status().toString();
  auto fam = addFamily(**t, std::move(f));
  ASSERT_TRUE(fam.ok());
  auto rep = fam->tune(env.problem(4096));
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(to_compile.load(), 4);
  EXPECT_GT(vendor_runs.load(), 0);
  EXPECT_EQ(during_compiles.load(), 0) << "a vendor candidate was timed while JIT configs compiled";
  EXPECT_EQ((*t)->isolationStats().starts, 0);  // one process: JIT candidates were timed here too
}

// Tunes a fast BLOCK=256,VEC=2 (0.02 ms) against the family's default_config BLOCK=128,VEC=1
// (0.05 ms), on exact timings.
// The default (BLOCK=128,VEC=1, 0.05 ms) and a faster challenger (BLOCK=256,VEC=2, 0.02 ms).
testfamily::SpecFamily<Scale> fastVsDefaultFamily(Env& env) {
  auto f = env.family();
  f.extras.configs = {*Config::parse("BLOCK=256,VEC=2"), *Config::parse("BLOCK=128,VEC=1")};
  env.cost["BLOCK=256,VEC=2"] = 0.02;
  env.cost["BLOCK=128,VEC=1"] = 0.05;
  return f;
}

// Tunes key 1024 of `f` (fastVsDefaultFamily or a variant) on an engine made with `o`.
Expected<TuneReport> tuneFastVsDefault(Env& env, const EngineOptions& o,
                                       testfamily::SpecFamily<Scale> f) {
  KTUNE_ASSIGN_OR_RETURN(auto t, Engine::create(env.backend, o));
  KTUNE_ASSIGN_OR_RETURN(auto fam, addFamily(*t, std::move(f)));
  return fam.tune(env.problem(1024));
}
Expected<TuneReport> tuneFastVsDefault(Env& env) {
  return tuneFastVsDefault(env, env.options(), fastVsDefaultFamily(env));
}

TEST(Finalists, ComparisonIsRecordedInTheDatabaseAndTree) {
  Env env;
  auto rep = tuneFastVsDefault(env);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->winner, "BLOCK=256,VEC=2");
  EXPECT_EQ(rep->vs_default.baseline, "BLOCK=128,VEC=1");
  EXPECT_EQ(rep->vs_default.baseline_source, "jit");
  EXPECT_NE(rep->tree().find("vs default BLOCK=128,VEC=1: faster than the default"),
            std::string::npos)
      << rep->tree();
  std::string text = *readFile(joinPath(joinPath(env.dir, "db"), "scale.json"));
  auto j = nlohmann::json::parse(text);
  bool found = false;
  for (const auto& d : j["devices"])
    for (const auto& [k, e] : d["entries"].items()) {
      ASSERT_TRUE(e.contains("vs_default")) << e.dump();
      EXPECT_EQ(e["vs_default"]["decision"], "faster than the default");
      EXPECT_LT(e["vs_default"]["ratio_hi"].get<double>(), 1.0);
      found = true;
    }
  EXPECT_TRUE(found) << text;
}

// KTUNE_VERBOSE: one line per finalist with its median (us) in each interleaved round, the
// default first (dev/fp8_tunecmp.py reads them beside gemm_bench's times of the same configs).
TEST(Finalists, VerboseLogHasEachFinalistsRoundMedians) {
  Env env;
  std::ostringstream log;
  EngineOptions o = env.options();
  o.options.verbose = true;
  o.log = &log;
  auto rep = tuneFastVsDefault(env, o, fastVsDefaultFamily(env));
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  ASSERT_GE(rep->vs_default.rounds, 1);
  const std::string text = log.str();
  for (const char* head : {"]: finalist 0 BLOCK=128,VEC=1:", "]: finalist 1 BLOCK=256,VEC=2:"}) {
    const size_t at = text.find(head);
    ASSERT_NE(at, std::string::npos) << text;
    const std::string line = text.substr(at, text.find('\n', at) - at);
    std::string want;  // the default's 0.05 ms, the challenger's 0.02 ms, every round
    for (int r = 0; r < rep->vs_default.rounds; ++r) want += head[12] == '0' ? " 50.00" : " 20.00";
    EXPECT_EQ(line.substr(line.rfind(':') + 1), want) << line;
  }
}

TEST(Finalists, WinnerWrongOnLaterLaunchesIsRejected) {
  Env env;
  // The fastest is right for its first verification, wrong once it has run a few times.
  env.wrong_after["BLOCK=256,VEC=2"] = 3;
  auto rep = tuneFastVsDefault(env);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->winner, "BLOCK=128,VEC=1") << rep->tree();
  const CandidateResult* bad = tunertest::find(*rep, "BLOCK=256,VEC=2");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->status, Code::kWrongResult) << rep->tree();
  EXPECT_NE(bad->reason.find("finalist re-timing"), std::string::npos) << bad->reason;
}

// No finalist is checked inside the timed rounds; the winner is checked after them (before its
// runs, after the second, after the last). Checks in a round change the GPU's power state around
// the runs next to them: skipping the checks of the finalists already read back timed those
// without the pauses (every challenger read 0.84-0.89 of the default at 4096x28672x4096 in 9 of
// 9 warm LLM suites), and checking every finalist in the first round read its first positions,
// the default's, 1-4% apart from the later rounds (bench/NOTES.md, issue 34).
TEST(Finalists, NoFinalistIsCheckedInTheRoundsAndTheWinnerAfterThem) {
  Env env;
  auto f = fastVsDefaultFamily(env);
  std::map<std::string, int> checks;  // config -> verifications
  std::vector<std::string> order;     // every check in order
  auto inner = f.extras.verify;
  f.extras.verify = [&env, &checks, &order, inner](const void* vp, StreamHandle s) {
    ++checks[env.last_launched];
    order.push_back(env.last_launched);
    return inner(vp, s);
  };
  EngineOptions o = env.options();
  o.options.finalists = 2;
  auto rep = tuneFastVsDefault(env, o, std::move(f));
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->winner, "BLOCK=256,VEC=2") << rep->tree();
  ASSERT_GE(rep->vs_default.finalists, 2) << rep->tree();
  ASSERT_GE(rep->vs_default.rounds, 1) << rep->tree();
  // First measurement: one check each (verify first); the winner's check after the rounds: three.
  EXPECT_EQ(checks["BLOCK=256,VEC=2"], 4) << rep->tree();
  EXPECT_EQ(checks["BLOCK=128,VEC=1"], 1) << rep->tree();
  ASSERT_GE(order.size(), 3u);
  for (size_t i = order.size() - 3; i < order.size(); ++i) EXPECT_EQ(order[i], "BLOCK=256,VEC=2");
}

TEST(Finalists, TuningOffRunsTheVendorDefault) {
  Env env;
  auto f = env.family();
  int vendor_runs = 0;
  std::string ran;
  f.spec.vendor_candidates = [](const Scale&) {
    return std::vector<VendorCandidate>{{"fake:idx=1", "fakeblas", false},
                                        {"fake:idx=0", "fakeblas", true}};
  };
  f.spec.vendor_launch = [&](const std::string& id, const Scale&, StreamHandle) {
    ++vendor_runs;
    ran = id;
    return Status::Ok();
  };
  auto t = Engine::create(env.backend, env.options(/*tuning=*/false));
  ASSERT_TRUE(t.ok());
  auto fam = addFamily(**t, std::move(f));
  ASSERT_TRUE(fam.ok());
  ASSERT_TRUE((*fam)(env.problem(64)).ok());
  EXPECT_EQ(vendor_runs, 1);
  EXPECT_EQ(ran, "fake:idx=0");
  EXPECT_EQ(env.launches.count("BLOCK=128,VEC=1"), 0u);  // the JIT default did not run
  // Without a vendor default the JIT default runs (default_for when given).
  Env env2;
  auto g = env2.family();
  g.extras.default_for = [](const void*) { return Config{{"BLOCK", 256}, {"VEC", 2}}; };
  auto t2 = Engine::create(env2.backend, env2.options(false));
  ASSERT_TRUE(t2.ok());
  auto fam2 = addFamily(**t2, std::move(g));
  ASSERT_TRUE(fam2.ok());
  ASSERT_TRUE((*fam2)(env2.problem(64)).ok());
  EXPECT_EQ(env2.launches["BLOCK=256,VEC=2"], 1);
}

}  // namespace
}  // namespace ktune
