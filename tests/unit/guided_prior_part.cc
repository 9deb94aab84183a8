// The guided search's prior (key distance, history scores, the order) and the race's rules
// (regret and intervals, the first wave, a run far above the best on the simulated backend), each
// without a tuning run. Part of guided_search_test.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "autotune/benchmarker.h"
#include "autotune/finalists.h"
#include "autotune/guided.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"

namespace ktune {
namespace {

TEST(GuidedPrior, KeyDistanceIsLogScaleAndCategoriesAreFar) {
  EXPECT_DOUBLE_EQ(guided::keyDistance("M=128,N=4096,layout=NT", "M=128,N=4096,layout=NT"), 0);
  // M 127 -> 255: log2(128) -> log2(256), one unit.
  EXPECT_NEAR(guided::keyDistance("M=127,N=4096", "M=255,N=4096"), 1.0, 1e-12);
  EXPECT_GE(guided::keyDistance("M=128,layout=NT", "M=128,layout=NN"), guided::kCategoryDistance);
  EXPECT_GE(guided::keyDistance("M=128", "M=128,N=4"), guided::kCategoryDistance);
  // Nearer in M is nearer.
  EXPECT_LT(guided::keyDistance("M=16,N=4096", "M=32,N=4096"),
            guided::keyDistance("M=16,N=4096", "M=4096,N=4096"));
}

TEST(GuidedPrior, HistoryScoresComeFromTheNearestTunedKeys) {
  auto cand = [](const std::string& cfg, double ms) {
    CandidateResult c;
    c.config = cfg;
    c.stats.runs = 10;
    c.stats.median_ms = ms;
    return c;
  };
  DbEntry near, far;
  near.key = "M=32,N=4096";
  near.winner = "a";
  near.candidates = {cand("a", 1.0), cand("b", 2.0)};
  far.key = "M=4096,N=4096";
  far.winner = "b";
  far.candidates = {cand("a", 4.0), cand("b", 1.0)};
  int used = 0;
  auto h = guided::historyScores({near, far}, "M=16,N=4096", 1, 100, &used);
  EXPECT_EQ(used, 1);  // one neighbour asked for: the nearest
  EXPECT_DOUBLE_EQ(h["a"], 1.0);
  EXPECT_DOUBLE_EQ(h["b"], 0.5);
  auto none = guided::historyScores({near, far}, "M=16,N=4096", 4, 0.5, &used);
  EXPECT_TRUE(none.empty());  // every tuned key too far
}

TEST(GuidedPrior, OrderPutsTheDefaultThenGoodHistoryThenStaticScore) {
  std::vector<guided::PriorItem> it(4);
  it[0].static_score = 0.9;
  it[1].static_score = 0.1;
  it[1].history = 0.95;
  it[2].static_score = 0.5;
  it[2].is_default = true;
  it[3].static_score = 1.0;
  EXPECT_EQ(guided::priorOrder(it), (std::vector<size_t>{2, 1, 3, 0}));
  // A grid of 133 blocks on 132 SMs keeps them about half idle in its second wave.
  LaunchDims d;
  d.grid = Dim3{133, 1, 1};
  EXPECT_NEAR(guided::waveEfficiency(d, 132), 133.0 / 264.0, 1e-12);
  d.grid = Dim3{132, 1, 1};
  EXPECT_DOUBLE_EQ(guided::waveEfficiency(d, 132), 1.0);
}

TEST(GuidedRace, RegretAndIntervals) {
  // Calibrated on the most optimistic measured item (1.1 ms x 0.5 = 0.55): an unmeasured score
  // of 0.55 predicts 1.0 ms, 10% faster than the 1.1 ms leader.
  EXPECT_NEAR(guided::regretEstimate({{1.1, 0.5, ""}, {2.0, 0.5, ""}}, {{0.55, ""}}, 1.1), 0.1, 1e-9);
  // Per group: a fast kernel of another kind does not make this kind's rest look fast.
  EXPECT_DOUBLE_EQ(guided::regretEstimate({{1.0, 1.0, "KIND=a"}, {0.2, 1.0, "KIND=b"}},
                                          {{0.9, "KIND=a"}}, 0.2), 0);
  EXPECT_EQ(guided::groupOf(Config{{"BLOCK_M", int64_t(64)}, {"KIND", std::string("tma")}}), "KIND=tma");
  EXPECT_NEAR(guided::tileFactor(64, 128), (64.0 / 96) / (128.0 / 160), 1e-12);
  EXPECT_DOUBLE_EQ(guided::tileFactor(0, 128), 1);
  EXPECT_DOUBLE_EQ(guided::regretEstimate({{1.0, 1.0, ""}}, {{0.5, ""}}, 1.0), 0);  // 2 ms
  EXPECT_DOUBLE_EQ(guided::regretEstimate({{1.0, 1.0, ""}}, {}, 1.0), 0);           // none left
  BenchStats a, b;
  a.runs = b.runs = 100;
  a.median_ms = 1.0;
  a.p20_ms = a.p80_ms = 1.0;
  b = a;
  b.median_ms = b.p20_ms = b.p80_ms = 1.01;
  EXPECT_FALSE(guided::canBeat(b, a));  // exact timings 1% apart: out
  b.p20_ms = 0.9;
  b.p80_ms = 1.1;
  b.runs = 4;
  EXPECT_TRUE(guided::canBeat(b, a));  // a wide interval still reaches the leader
  EXPECT_DOUBLE_EQ(medianRelHalfWidth({1, 1, 1, 1, 1}), 0);
  EXPECT_DOUBLE_EQ(medianRelHalfWidth({1, 2}), 1);
}

// A first timed run far above the best ends the candidate at once: before, a config 10x slower
// than the best ran the first call and the whole estimate (1 + 5 runs) before the first check.
// The lazy pool's first wave: min_n at once, and on a machine with idle compile threads the
// window's next compiles beside them instead of a second wave after them (a Hopper GEMM compile is
// ~0.5-1 s of NVRTC: the second wave was a whole compile time of a cold tuning).
TEST(GuidedRace, FirstWaveFillsIdleCompileThreads) {
  EXPECT_EQ(guided::firstWave(74, 12, 4, 15), 15u);  // 16 cores less one: 15 at once, not 12
  EXPECT_EQ(guided::firstWave(74, 12, 4, 63), 16u);  // never more than min_n + window
  EXPECT_EQ(guided::firstWave(74, 12, 4, 2), 12u);   // a 2-core machine: as before
  EXPECT_EQ(guided::firstWave(74, 12, 4, 0), 12u);
  EXPECT_EQ(guided::firstWave(10, 10, 4, 32), 10u);  // never more than the jobs
  EXPECT_EQ(guided::firstWave(14, 12, 4, 32), 14u);
}

TEST(GuidedRace, OneRunFarAboveTheBestEndsTheCandidate) {
  SimOptions o;
  o.device.arch = "sm_90a";
  auto b = std::make_shared<SimBackend>(o);
  b->registerKernel("slow", SimKernel{nullptr, [](const SimLaunch&) { return 1.0; }, nullptr});
  CompileRequest r;
  r.entry = "slow";
  r.arch = "sm_90a";
  auto co = SimCompiler().compile(r);
  ASSERT_TRUE(co.ok()) << co.status().toString();
  auto f = *b->getFunction(*b->loadModule(co->binary), "slow");
  KernelArgs a;
  Benchmarker bench(*b, o.device);
  BenchOptions bo;
  bo.best_ms = 0.1;
  const int64_t before = b->launchCount("slow");
  auto s = bench.measure({}, [&] { return b->launch(f, {1}, {32}, 0, a.data()); }, bo);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(isSlowerThanBest(s.status())) << s.status().toString();
  // The first call, the first timed run and the two that confirm it (a lone slow first run does
  // not reject: benchmarker_test's AFirstRunOutlierIsTimedAgainBeforeItRejects).
  EXPECT_EQ(b->launchCount("slow") - before, 4);
  EXPECT_NE(s.status().message().find("after 3 runs"), std::string::npos) << s.status().toString();
}

}  // namespace
}  // namespace ktune
