// The guided search (autotune/guided.h, docs/search.md): its prior and race rules (the pure ones
// in guided_prior_part.cc, part of this program), and on the CLI's simulated H100-like device (deterministic cost model) the regret harness's quality checks
// against an exhaustive search of the same keys, with fewer configs compiled. Also the bench-stage
// fixes found with it: one timed run far above the best ends a candidate, and the finalists'
// re-timing lasts only as long as the race left the decision uncertain.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "autotune/autotuner.h"
#include "autotune/benchmarker.h"
#include "autotune/finalists.h"
#include "autotune/guided.h"
#include "base/fs.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"
#include "tests/unit/spec_family.h"
#include "tools/regret.h"
#include "tools/sim_gpu.h"

namespace ktune {
namespace {

struct TmpDir {
  std::string path;
  TmpDir() {
    char t[] = "/tmp/ktune-guided-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TmpDir() { (void)removeTree(path); }
};

struct Nothing {
  int64_t n = 1;
};

// The finalists' re-timing is as long as the uncertainty the race left (autotune/finalists.h).
// Exact simulated timings, COST = device microseconds: the race separates COST=20 from the default
// COST=22 (10%) and puts COST=21 behind the leader, so only the default and the leader are
// re-timed, in one round that verifies both (before, after the second timed run, after the last):
// 3 first-round verifications + 2 x 3 = 9. Before, 3 finalists x 6 rounds ran (12 verifications).
// With two tied leaders the rounds run until the decision is settled: the minimum of 3.
struct FinCost {
  TmpDir dir;
  std::shared_ptr<SimBackend> sim;
  std::atomic<int> verified{0};
  int compile_threads = 0;  // options.compile_threads (0: the machine's)
  std::string db;           // options.database_path (empty: the default)
  bool precompile_first = false;  // Family::precompile twice before the tuning run
  size_t precompiled = 0, precompiled_again = 0;
  size_t precompile_depth = 0;  // Family::precompile's depth (0: the first wave)
  bool tuned_after_precompile = true;  // lookup() before the tuning run found the key tuned
  Expected<TuneReport> tune(const std::vector<int64_t>& costs) {
    SimOptions so;
    so.device.arch = "sm_90a";
    sim = std::make_shared<SimBackend>(so);
    sim->registerKernel("fin_cost", SimKernel{nullptr, [](const SimLaunch& l) {
                                                return double(l.define("COST") % 1000) * 1e-3;
                                              }, nullptr});
    EngineOptions eo;
    eo.options.cache_dir = dir.path;
    eo.options.warmup_ms = 0.05;
    eo.options.rep_ms = 0.2;
    eo.options.finalists = 3;
    eo.options.compile_threads = compile_threads;
    if (!db.empty()) eo.options.database_path = db;
    eo.compiler = std::make_shared<SimCompiler>();
    KTUNE_ASSIGN_OR_RETURN(auto t, Engine::create(sim, eo));
    testfamily::SpecFamily<Nothing> fam;
    auto& [f, x] = fam;
    f.name = "fin_cost";
    f.source = "// simulated";
    f.entry = "fin_cost";
    for (int64_t c : costs) x.configs.push_back(Config{{"COST", c}});
    x.default_config = x.configs.back();
    f.key = [](const Nothing& p, KeyFields& k) { k.add("n", p.n); };
    f.launch = [](const Knobs&, const Nothing&, const DeviceFacts&) { return Launch::linear(1, 64); };
    f.args = [](const Nothing& p, ArgPack& a) { a.add(p.n); };
    x.verify = [this](const void*, StreamHandle) -> Expected<VerifyResult> {
      ++verified;
      return VerifyResult{};
    };
    KTUNE_ASSIGN_OR_RETURN(auto added, addFamily(*t, std::move(fam)));
    if (precompile_first) {
      KTUNE_ASSIGN_OR_RETURN(precompiled, added.precompile(Nothing{}, 0, precompile_depth));
      KTUNE_ASSIGN_OR_RETURN(precompiled_again, added.precompile(Nothing{}, 0, precompile_depth));
      KTUNE_ASSIGN_OR_RETURN(auto before, added.lookup(Nothing{}));
      tuned_after_precompile = before.origin == "memory" || before.origin == "database";
    }
    return added.tune(Nothing{});
  }
};

TEST(GuidedBenchStage, FinalistsStopOnceTheRaceSeparatesTheLeader) {
  FinCost fc;
  auto rep = fc.tune({20, 21, 22});
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->winner, "COST=20") << rep->tree();
  EXPECT_EQ(rep->vs_default.decision, "faster than the default");
  EXPECT_EQ(rep->vs_default.finalists, 2);
  EXPECT_EQ(rep->vs_default.rounds, 1);
  EXPECT_NEAR(rep->vs_default.ratio, 20.0 / 22.0, 1e-3);
  // Each candidate checked once in the race; no check in the round; the winner's three after it.
  EXPECT_EQ(fc.verified.load(), 3 + 3) << rep->tree();
}

// The report says what the compile stage was made of: each store miss's job time (compiler and
// store write) beside the compiler's own, the pool's threads and first wave; a warm store, none.
TEST(GuidedBenchStage, ReportsTheCompileJobs) {
  FinCost fc;
  auto rep = fc.tune({20, 21, 22});
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  const TuneReport::CompileJobs& cj = rep->compile_jobs;
  EXPECT_EQ(cj.jobs, rep->compiled);
  EXPECT_EQ(cj.jobs, 3);
  EXPECT_GE(cj.threads, 1);
  EXPECT_GE(cj.first_wave, 1);
  EXPECT_GT(cj.job_ms_max, 0);
  EXPECT_GE(cj.job_ms_sum, cj.job_ms_max);
  EXPECT_GE(cj.job_ms_sum, cj.compiler_ms_sum);
  EXPECT_GE(cj.compiler_ms_sum, cj.compiler_ms_max);
  auto again = fc.tune({20, 21, 22, 23});  // same store: three hits, one new compile
  ASSERT_TRUE(again.ok()) << again.status().toString();
  EXPECT_EQ(again->store_hits, 3);
  EXPECT_EQ(again->compile_jobs.jobs, 1);
}

// A warm store, a fresh database: the race times the store's hits first and compiles nothing it
// does not want (regression: the pool's window started compiles past the hits before the race
// had judged them, and the warm run waited for them).
TEST(GuidedBenchStage, AWarmStoreCompilesNothingTheRaceDoesNotWant) {
  FinCost fc;
  fc.compile_threads = 16;
  // Prior order: the default (the last config), then list order. Each config of the first wave
  // (12 of 40) is faster than the one before, the fastest last, so the race always goes on past
  // the first wave: the warm run meets store hits beyond it, then misses.
  std::vector<int64_t> costs;
  for (int64_t i = 0; i < 40; ++i) costs.push_back(i < 10 ? 40 - i : i == 10 ? 20 : 50 + i);
  fc.db = fc.dir.path + "/cold_db.json";
  auto cold = fc.tune(costs);
  ASSERT_TRUE(cold.ok()) << cold.status().toString();
  ASSERT_GT(cold->compiled, 12) << cold->tree();  // past the first wave
  ASSERT_LT(cold->compiled, 40);
  for (int pass = 0; pass < 3; ++pass) {
    fc.db = fc.dir.path + "/warm_db" + std::to_string(pass) + ".json";
    auto warm = fc.tune(costs);
    ASSERT_TRUE(warm.ok()) << warm.status().toString();
    EXPECT_EQ(warm->compiled, 0) << warm->tree();
    // At most the cold run's objects: that run also raced the compiles running when it stopped.
    EXPECT_GT(warm->store_hits, 0);
    EXPECT_LE(warm->store_hits, cold->compiled);
    EXPECT_EQ(warm->winner, "COST=20");
  }
}

// With 16 compile threads a 40-config space (min_n 8, window 4) starts 12 compiles at once, and
// the race still finds the fastest.
TEST(GuidedBenchStage, TheFirstWaveUsesTheIdleThreads) {
  FinCost fc;
  fc.compile_threads = 16;
  std::vector<int64_t> costs;
  for (int64_t c = 20; c < 60; ++c) costs.push_back(c);
  auto rep = fc.tune(costs);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->search, "guided");
  EXPECT_EQ(rep->compile_jobs.threads, 16);
  EXPECT_EQ(rep->compile_jobs.first_wave, 12);
  EXPECT_GE(rep->compiled, 12);
  EXPECT_LT(rep->compiled, 40);
  EXPECT_EQ(rep->winner, "COST=20") << rep->tree();
}

// Family::precompile compiles the configs the key's tuning run compiles first (its first wave, 12
// of 40 here) into the store and nothing else: nothing is recorded, a second precompile finds them
// all there, and the tuning run then takes them as store hits (`ktune tune` runs it for a suite's
// next keys while the current one tunes). Every candidate the race reaches up to the twelfth is a
// hit; how many it reaches (11 or 12 here, at least its minimum of 8) depends on how the store
// reads fall into its batches, which a loaded machine changes (one run under ASan beside another
// test reached 11).
TEST(GuidedBenchStage, PrecompileWarmsTheStoreWithTheFirstWave) {
  FinCost fc;
  fc.compile_threads = 16;
  fc.precompile_first = true;
  std::vector<int64_t> costs;
  for (int64_t c = 20; c < 60; ++c) costs.push_back(c);
  auto rep = fc.tune(costs);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(fc.precompiled, 12u);
  EXPECT_EQ(fc.precompiled_again, 0u);
  EXPECT_FALSE(fc.tuned_after_precompile);
  EXPECT_EQ(rep->compile_jobs.first_wave, 12);
  EXPECT_GE(rep->reached, 8) << rep->tree();
  EXPECT_EQ(rep->store_hits, std::min(rep->reached, 12)) << rep->tree();
  EXPECT_EQ(rep->winner, "COST=20") << rep->tree();
}

// With a depth, Family::precompile compiles the first `depth` configs of the guided order instead
// of the first wave (every live one when the space has fewer): the look-ahead's pass over a suite's
// few-row keys, whose races reach most of their space. The tuning run then compiles nothing it
// reaches within that depth.
TEST(GuidedBenchStage, PrecompileToADepth) {
  for (size_t depth : {30u, 64u}) {
    FinCost fc;
    fc.compile_threads = 16;
    fc.precompile_first = true;
    fc.precompile_depth = depth;
    std::vector<int64_t> costs;
    for (int64_t c = 20; c < 60; ++c) costs.push_back(c);
    auto rep = fc.tune(costs);
    ASSERT_TRUE(rep.ok()) << rep.status().toString();
    EXPECT_EQ(fc.precompiled, std::min<size_t>(depth, 40)) << depth;
    EXPECT_EQ(fc.precompiled_again, 0u) << depth;
    EXPECT_FALSE(fc.tuned_after_precompile);
    EXPECT_GE(rep->reached, 8) << rep->tree();
    EXPECT_LE(rep->reached, int(std::min<size_t>(depth, 40))) << rep->tree();
    EXPECT_EQ(rep->compiled, 0) << rep->tree();
    EXPECT_EQ(rep->store_hits, rep->reached) << rep->tree();
    EXPECT_EQ(rep->winner, "COST=20") << rep->tree();
  }
}

TEST(GuidedBenchStage, FinalistsRunUntilTheDecisionIsSettled) {
  FinCost ties;  // COST=1020 runs like COST=20: a tie with the leader, both 10% below the default
  auto rep = ties.tune({20, 1020, 22});
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->vs_default.finalists, 3) << rep->tree();
  EXPECT_EQ(rep->vs_default.rounds, kMinFinalistRounds);
  EXPECT_EQ(rep->vs_default.decision, "faster than the default");
  FinCost alone;  // the default is the leader, the rest clearly behind: one round re-verifies it
  rep = alone.tune({30, 25, 20});
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->winner, "COST=20") << rep->tree();
  EXPECT_EQ(rep->vs_default.finalists, 1);
  EXPECT_EQ(rep->vs_default.rounds, 1);
  EXPECT_EQ(rep->vs_default.decision, "default is fastest");
  EXPECT_NE(rep->tree().find("re-verified alone"), std::string::npos) << rep->tree();
}

TEST(GuidedRace, FinalistsSettledRule) {
  const double m = 0.01;
  // Fewer than the minimum rounds: never settled.
  EXPECT_FALSE(finalistsSettled({{1, 1}, {2, 2}}, 0, m));
  // Every challenger steadily slower than the default, or within the margin: the default stays.
  EXPECT_TRUE(finalistsSettled({{1, 1, 1}, {1.1, 1.1, 1.1}, {0.999, 1.001, 1.0}}, 0, m));
  // A steady 5% win, the other challenger steadily behind it: settled.
  EXPECT_TRUE(finalistsSettled({{1, 1, 1}, {0.95, 0.95, 0.95}, {1.02, 1.02, 1.02}}, 0, m));
  // A win whose interval still reaches 1 - margin: not yet.
  EXPECT_FALSE(finalistsSettled({{1, 1, 1}, {0.95, 1.0, 0.96}}, 0, m));
  // Two challengers that could still swap by more than a tie: not yet.
  EXPECT_FALSE(finalistsSettled({{1, 1, 1}, {0.95, 0.95, 0.95}, {0.96, 0.94, 0.955}}, 0, m));
  // A dropped finalist (a failed re-check) does not hold the decision up.
  EXPECT_TRUE(finalistsSettled({{1, 1, 1}, {0.9, 0.9, 0.9}, {-1, 0.5, 0.5}}, 0, m));
  // No default: the fastest, when nothing else can be more than a tie faster.
  EXPECT_TRUE(finalistsSettled({{1, 1, 1}, {1.2, 1.2, 1.2}}, -1, m));
  EXPECT_FALSE(finalistsSettled({{1, 1.1, 0.9}, {1.0, 0.9, 1.1}}, -1, m));
}

// The race's first round reads an output back only when the candidate leads (its median at most
// the best so far): a 24-config space verifies a few, not all of them. A wrong candidate faster
// than every other is still caught before it sets the bar, and does not win.
TEST(GuidedBenchStage, FirstRoundReadsBackOnlyCandidatesThatCanLead) {
  TmpDir dir;
  SimOptions so;
  so.device.arch = "sm_90a";
  auto sim = std::make_shared<SimBackend>(so);
  std::atomic<int64_t> last_cost{0};
  sim->registerKernel("lazy_cost", SimKernel{nullptr, [&](const SimLaunch& l) {
                                               last_cost = l.define("COST");
                                               return double(l.define("COST")) * 1e-3;
                                             }, nullptr});
  EngineOptions eo;
  eo.options.cache_dir = dir.path;
  eo.options.warmup_ms = 0.05;
  eo.options.rep_ms = 0.2;
  eo.options.finalists = 0;  // the plain fastest: every verification below is the race's
  eo.options.search = "guided";
  eo.compiler = std::make_shared<SimCompiler>();
  auto t = Engine::create(sim, eo);
  ASSERT_TRUE(t.ok()) << t.status().toString();
  testfamily::SpecFamily<Nothing> lazy;
  auto& [f, x] = lazy;
  f.name = "lazy_cost";
  f.source = "// simulated";
  f.entry = "lazy_cost";
  x.configs.push_back(Config{{"COST", int64_t(10)}});  // fastest, and wrong
  for (int64_t c = 20; c < 44; ++c) x.configs.push_back(Config{{"COST", c}});
  x.default_config = x.configs.back();
  f.key = [](const Nothing& p, KeyFields& k) { k.add("n", p.n); };
  f.launch = [](const Knobs&, const Nothing&, const DeviceFacts&) { return Launch::linear(1, 64); };
  f.args = [](const Nothing& p, ArgPack& a) { a.add(p.n); };
  std::atomic<int> verified{0};
  x.verify = [&](const void*, StreamHandle) -> Expected<VerifyResult> {
    ++verified;
    VerifyResult v;
    if (last_cost.load() == 10) {
      v.ok = false;
      v.checked = v.mismatches = 1;
    }
    return v;
  };
  auto fam = addFamily(**t, std::move(lazy));
  ASSERT_TRUE(fam.ok()) << fam.status().toString();
  auto rep = fam->tune(Nothing{});
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->search, "guided");
  EXPECT_EQ(rep->winner, "COST=20") << rep->tree();
  ASSERT_FALSE(rep->rounds.empty());
  // At least the race's minimum (8 of 25); how many more depends on how far the compiles ran
  // ahead when the race stopped (a loaded machine raced 9 once, an idle one all 25).
  EXPECT_GE(rep->rounds[0].benchmarked, static_cast<int>(guided::minExplore(25)));
  // The default (43, first in the prior's order, no best yet), 10 (caught), 20 (the new leader),
  // and whichever of 21.. finished compiling before 20 and led for a while; the others, close but
  // not leading, are not read back.
  EXPECT_LE(verified.load(), 5) << rep->tree();
  bool wrong_failed = false;
  for (const auto& c : rep->candidates)
    if (c.config == "COST=10") wrong_failed = c.status == Code::kWrongResult;
  EXPECT_TRUE(wrong_failed) << rep->tree();
}

// `ktune regret --limit N` takes N shapes spread over the set, so a time-boxed GPU run keeps every
// category (the set lists prefill, then decode, odd and layout shapes).
TEST(GuidedRegret, LimitSpreadsOverTheSet) {
  auto set = cli::regretSet("gpu");
  ASSERT_TRUE(set.ok());
  int gemm = 0, rows = 0;
  for (const auto& s : *set) (s.op == "gemm" ? gemm : rows) += 1;
  EXPECT_GE(gemm, 60);
  EXPECT_GE(rows, 20);
  const auto some = cli::spread(*set, 8);
  ASSERT_EQ(some.size(), 8u);
  EXPECT_EQ(some.front().name, set->front().name);
  bool decode = false, odd = false, layout = false;
  for (const auto& s : cli::spread(std::vector<cli::RegretShape>(set->begin(), set->begin() + gemm), 6)) {
    decode |= s.name.rfind("decode", 0) == 0;
    odd |= s.name.rfind("odd", 0) == 0;
    layout |= s.name.rfind("layout", 0) == 0;
  }
  EXPECT_TRUE(decode && odd && layout);
  EXPECT_EQ(cli::spread(*set, 0).size(), set->size());
  // A deadline run's order: every shape once, and a short prefix already has every category.
  const auto ordered = cli::spreadOrder(std::vector<cli::RegretShape>(set->begin(), set->begin() + gemm));
  ASSERT_EQ(ordered.size(), size_t(gemm));
  std::set<std::string> names;
  for (const auto& s : ordered) names.insert(s.name);
  EXPECT_EQ(names.size(), size_t(gemm));
  bool p = false, d = false, o = false, l = false;
  for (size_t i = 0; i < 8; ++i) {
    const std::string& n = ordered[i].name;
    p |= n.rfind("llm prefill", 0) == 0;
    d |= n.rfind("decode", 0) == 0;
    o |= n.rfind("odd", 0) == 0;
    l |= n.rfind("layout", 0) == 0;
  }
  EXPECT_TRUE(p && d && o && l);
}

// The re-timing of two winners runs its minimum, then more rounds in pairs while its interval
// still holds both sides of 1.01: a few-µs kernel's rounds move ±3% each, and 4 rounds at 1.0229
// [0.99, 1.06] cannot say whether the guided winner missed by 2% or not at all.
TEST(GuidedRegret, RetimingRunsUntilTheOnePercentQuestionIsDecided) {
  const double d = 0.03;  // a round's log ratio moves about this much
  std::vector<double> logs = {std::log(1.02) + d, std::log(1.02) - d, std::log(1.02) + d,
                              std::log(1.02) - d};
  double r = 0, lo = 0, hi = 0;
  cli::retimeRatio(logs, &r, &lo, &hi);
  EXPECT_NEAR(r, 1.02, 1e-9);
  EXPECT_LT(lo, cli::kRegretWithin);
  EXPECT_GT(hi, cli::kRegretWithin);
  EXPECT_FALSE(cli::retimeDecided(logs, 4, 12));  // undecided: more rounds
  EXPECT_TRUE(cli::retimeDecided(logs, 4, 4));    // at the most
  logs.push_back(std::log(1.02));
  EXPECT_FALSE(cli::retimeDecided(logs, 4, 12));  // odd: each winner first as often as last
  EXPECT_FALSE(cli::retimeDecided({0.0, 0.0}, 4, 12));  // below the minimum
  // Steady rounds decide at the minimum, on either side of 1.01.
  EXPECT_TRUE(cli::retimeDecided({0.0, 0.0, 0.001, -0.001}, 4, 12));
  const double miss = std::log(1.03);
  EXPECT_TRUE(cli::retimeDecided({miss, miss + 0.001, miss - 0.001, miss}, 4, 12));
}

// Where the winners differ, the harness says what the guided run made of the exhaustive winner:
// stopped in the race (with its reason), raced (its median against the guided winner's), or never
// raced.
TEST(GuidedRegret, SaysWhatTheGuidedRunMadeOfTheExhaustiveWinner) {
  auto cand = [](const std::string& cfg, const std::string& src, Code st, double ms) {
    CandidateResult c;
    c.config = cfg;
    c.source = src;
    c.status = st;
    c.stats.median_ms = ms;
    c.stats.runs = ms > 0 ? 10 : 0;
    return c;
  };
  const CandidateResult w = cand("BLOCK_N=128", "jit", Code::kOk, 1.0);
  TuneReport r;
  r.candidates = {w, cand("idx=5", "cublaslt", Code::kOk, 1.05)};
  EXPECT_EQ(cli::fateIn(r, cand("idx=5", "cublaslt", Code::kOk, 0.95), w),
            "raced 1.05 ms, 1.0500x the winner's 1 ms");
  r.candidates[1].status = Code::kTimeout;
  r.candidates[1].reason = "slower than best (3 runs)";
  EXPECT_EQ(cli::fateIn(r, cand("idx=5", "cublaslt", Code::kOk, 0.95), w),
            "stopped: slower than best (3 runs)");
  // The same config from another source, or one the run never timed, was not raced.
  EXPECT_EQ(cli::fateIn(r, cand("idx=5", "jit", Code::kOk, 0.95), w), "not raced");
  r.candidates.push_back(cand("BLOCK_N=64", "jit", Code::kOk, 0));
  EXPECT_EQ(cli::fateIn(r, cand("BLOCK_N=64", "jit", Code::kOk, 0.9), w), "not raced");
}

// The regret harness on the simulated device: every key's guided winner within 1% of the
// exhaustive winner (the cost model is exact, so the re-timing ratio is exact too), and the guided
// search compiles fewer configs than the exhaustive one.
TEST(GuidedRegret, SameQualityAsExhaustiveWithFewerCompiles) {
  TmpDir dir;
  cli::SimGpu g = cli::openSimGpu(1);
  Options base;
  cli::RegretOptions ro;
  ro.cache_root = dir.path;
  ro.compiler = g.compiler;
  ro.sim = true;
  ro.rounds = 2;
  auto set = cli::regretSet("ci");
  ASSERT_TRUE(set.ok());
  // A CI-size sample of the set (one NT and one NN GEMM, one row-wise op); `ktune regret --set ci`
  // runs all of it.
  std::vector<cli::RegretShape> sample;
  for (const auto& s : *set)
    if (s.name == "ci 512x512x4096 NT" || s.name == "ci 384x640x4096 NN" || s.op == "rmsnorm")
      sample.push_back(s);
  ASSERT_EQ(sample.size(), 3u);
  auto rows = cli::runRegret(g.backend, base, sample, ro);
  ASSERT_TRUE(rows.ok()) << rows.status().toString();
  int gemm_keys = 0;
  for (const auto& r : *rows) {
    ASSERT_TRUE(r.error.empty()) << r.name << ": " << r.error;
    EXPECT_LE(r.ratio, 1.01) << r.name << ": " << r.exhaustive_winner << " | " << r.guided_winner;
    // Each side's finalist decision, printed where the winners differ.
    EXPECT_FALSE(r.exhaustive_why.empty() || r.guided_why.empty()) << r.name;
    if (r.family == "gemm") {
      ++gemm_keys;
      EXPECT_LT(r.guided_compiled, r.exhaustive_compiled) << r.name;
    }
  }
  EXPECT_EQ(gemm_keys, 2);
  const cli::RegretSummary s = cli::summarize(*rows);
  EXPECT_EQ(s.keys, static_cast<int>(rows->size()));
  EXPECT_LE(s.geomean, 1.005);
  EXPECT_LE(s.worst, 1.03);
  EXPECT_LT(s.guided_compiled, s.exhaustive_compiled);
}

}  // namespace
}  // namespace ktune
