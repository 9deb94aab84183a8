// The launch-floor rule and the drift rule on their own (autotune/guided.h: launchFloor,
// regretWithFloor, newLeader, drift, mergeStats), and which raced configs owe their class
// (race_stop.h: owePickClasses), no device: part of launch_floor_test (the simulated races are in
// launch_floor_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "autotune/compile_pool.h"
#include "autotune/finalists.h"
#include "autotune/guided.h"
#include "autotune/race_stop.h"

namespace ktune {
namespace {

using guided::Measured;

constexpr double kHw = guided::kIntervalFloor;  // exact timings: the interval's floor

TEST(LaunchFloor, TiesAcrossScoresBoundTheGroup) {
  // Three configs at 3 µs whose scores span 4x: at the floor. Without it the model (time ~
  // 1 / score, calibrated on 3 µs x 0.25) promised 0.75 µs for an unmeasured score of 1.
  const std::vector<Measured> flat = {{0.003, 0.25, "", kHw}, {0.003, 0.5, "", kHw},
                                      {0.003, 1.0, "", kHw}};
  double tie = 0;
  const double fl = guided::launchFloor(flat, &tie);
  EXPECT_NEAR(tie, 2 * kHw, 1e-12);
  EXPECT_NEAR(fl, 0.003 * (1 - 2 * kHw / 3), 1e-12);
  const guided::Regret rg = guided::regretWithFloor(flat, {{1.0, ""}, {0.8, ""}}, 0.003);
  EXPECT_NEAR(rg.estimate, 0.003 / fl - 1, 1e-12);
  EXPECT_LT(rg.estimate, rg.tie);  // within the tie: the race may stop
  EXPECT_DOUBLE_EQ(rg.tie, tie);
  // A faster config than the tied cluster (a better vector width at the floor): the group's best
  // is the estimate, the regret 0.
  std::vector<Measured> lead = flat;
  lead.push_back({0.00292, 0.5, "", kHw});
  EXPECT_DOUBLE_EQ(guided::launchFloor(lead, &tie), 0.00292);
  EXPECT_DOUBLE_EQ(guided::regretWithFloor(lead, {{1.0, ""}}, 0.00292).estimate, 0);
}

TEST(LaunchFloor, ComputeBoundAndNarrowTiesAreNotAFloor) {
  double tie = 1;
  // Time ~ 1 / score (what the model describes): no tie, no floor; the model's estimate stands.
  const std::vector<Measured> bound = {{4.0, 0.25, "", kHw}, {2.0, 0.5, "", kHw},
                                       {1.0, 1.0, "", kHw}};
  EXPECT_DOUBLE_EQ(guided::launchFloor(bound, &tie), 0);
  EXPECT_DOUBLE_EQ(tie, 0);
  const guided::Regret rg = guided::regretWithFloor(bound, {{2.0, ""}}, 1.0);
  EXPECT_DOUBLE_EQ(rg.tie, 0);
  EXPECT_NEAR(rg.estimate, 1.0, 1e-12);  // 2x the best score: 2x faster by the model
  // Ties whose scores span less than kFloorSpread: the model may still be right about the rest.
  EXPECT_DOUBLE_EQ(
      guided::launchFloor({{1.0, 0.6, "", kHw}, {1.0, 0.8, "", kHw}, {1.0, 1.0, "", kHw}}), 0);
  // Two ties are not kFloorTies.
  EXPECT_DOUBLE_EQ(guided::launchFloor({{1.0, 0.25, "", kHw}, {1.0, 1.0, "", kHw}}), 0);
  // A chance tie of slow configs far behind the group's best says nothing about the floor.
  EXPECT_DOUBLE_EQ(guided::launchFloor({{0.5, 1.0, "", kHw}, {2.0, 0.25, "", kHw},
                                        {2.0, 0.5, "", kHw}, {2.0, 1.0, "", kHw}}), 0);
  // Per group: a floor in one kind does not stop the model's estimate for another.
  const std::vector<Measured> two = {{0.003, 0.25, "KIND=a", kHw}, {0.003, 0.5, "KIND=a", kHw},
                                     {0.003, 1.0, "KIND=a", kHw}, {0.004, 0.25, "KIND=b", kHw}};
  const guided::Regret other = guided::regretWithFloor(two, {{1.0, "KIND=b"}}, 0.003);
  EXPECT_DOUBLE_EQ(other.tie, 0);
  EXPECT_NEAR(other.estimate, 0.003 / 0.001 - 1, 1e-9);
}

TEST(LaunchFloor, ATieIsNotANewLeader) {
  BenchStats l;
  l.runs = 100;
  l.median_ms = l.p20_ms = l.p80_ms = 0.003;
  BenchStats c = l;
  c.median_ms = c.p20_ms = c.p80_ms = 0.003 * (1 - kHw);  // faster inside both intervals
  EXPECT_FALSE(guided::newLeader(c, l));
  c.median_ms = c.p20_ms = c.p80_ms = 0.003 * (1 - 3 * kHw);  // beyond them
  EXPECT_TRUE(guided::newLeader(c, l));
  EXPECT_TRUE(guided::newLeader(c, BenchStats{}));  // no leader yet
  c.median_ms = 0.0031;
  EXPECT_FALSE(guided::newLeader(c, l));  // slower
}

// Drift (guided.h): two timings of one binary apart by more than their intervals, and their merge.
TEST(LaunchFloor, DriftAndMergedTimings) {
  BenchStats boost, sustained;
  boost.runs = 10;
  boost.median_ms = boost.p20_ms = boost.p80_ms = boost.min_ms = boost.max_ms = boost.mean_ms = 1.209;
  sustained = boost;
  sustained.runs = 4;
  sustained.median_ms = sustained.p20_ms = sustained.p80_ms = 1.30;
  sustained.min_ms = sustained.max_ms = sustained.mean_ms = 1.30;
  // ln(1.30 / 1.209) less both intervals' floors (exact timings).
  EXPECT_NEAR(guided::drift(boost, sustained), std::log(1.30 / 1.209) - 2 * guided::kIntervalFloor,
              1e-12);
  EXPECT_DOUBLE_EQ(guided::drift(boost, boost), 0);
  // Within the intervals: no drift.
  BenchStats near = boost;
  near.median_ms = 1.209 * 1.003;
  EXPECT_DOUBLE_EQ(guided::drift(boost, near), 0);
  EXPECT_DOUBLE_EQ(guided::drift(boost, BenchStats{}), 0);
  const BenchStats m = guided::mergeStats(boost, sustained);
  EXPECT_EQ(m.runs, 14);
  EXPECT_NEAR(m.median_ms, (10 * 1.209 + 4 * 1.30) / 14, 1e-12);
  EXPECT_DOUBLE_EQ(m.p20_ms, 1.209);  // the interval spans both stretches
  EXPECT_DOUBLE_EQ(m.p80_ms, 1.30);
  EXPECT_DOUBLE_EQ(m.min_ms, 1.209);
  EXPECT_DOUBLE_EQ(m.max_ms, 1.30);
  EXPECT_GT(m.std_ms, 0.04);  // the stretches' means apart, though each was exact
  // The merged default's interval now reaches a candidate 3% slower than its boosted timing:
  // measured in a sustained stretch, it is no longer out (with the drift as the slack).
  BenchStats c = sustained;
  c.median_ms = c.p20_ms = c.p80_ms = 1.209 * 1.03;
  EXPECT_FALSE(guided::canBeat(c, boost));
  EXPECT_TRUE(guided::canBeat(c, m, guided::drift(boost, sustained)));
  EXPECT_EQ(guided::mergeStats(BenchStats{}, boost).runs, 10);
}

TEST(LaunchFloor, OwesClassOnlyAtAVendorLeadersEdge) {
  EXPECT_TRUE(guided::owesClass(0.00304, 0.003, 0.0035, 0.003));   // ties, the prior 17% behind
  EXPECT_TRUE(guided::owesClass(0.00299, 0.003, 0.0035, 0.00299));  // leads
  EXPECT_TRUE(guided::owesClass(0.00304, 0.003, 0, 0.003));        // nothing of the prior timed
  EXPECT_FALSE(guided::owesClass(0.00304, 0.003, 0.00302, 0.003));  // the prior ties the vendor
  EXPECT_TRUE(guided::owesClass(0.003114, 0.003, 0.0035, 0.003));   // 3.8% behind (kOweNear)
  EXPECT_FALSE(guided::owesClass(0.00304, 0.003, 0.00305, 0.003));  // the prior within kLeadTie
  EXPECT_FALSE(guided::owesClass(0.00318, 0.003, 0.0035, 0.003));   // 6% behind
  EXPECT_FALSE(guided::owesClass(0.00304, 0, 0.0035, 0.003));       // no vendor
  EXPECT_FALSE(guided::owesClass(0.00304, 0.003, 0.0035, 0.0028));  // 8.6% behind a JIT leader
  EXPECT_FALSE(guided::owesClass(0, 0.003, 0.0035, 0.003));         // not timed
}

// owePickClasses on a race's state: positions 0-17 of class B=1 (0 to `raced` - 1 raced at 3.6
// us), 18-20 of B=2, 21-22 of a calibration group alone (no named value); a vendor leads at 3.0 us.
detail::StopRule vendorLedRace(size_t raced) {
  detail::StopRule s;
  for (int k = 0; k < 21; ++k)
    s.cv.classes.push_back(guided::coverageClasses(
        Config{{"B", int64_t(k < 18 ? 1 : 2)}, {"GRID", int64_t(1)}, {"KIND", std::string("k")}},
        {"B"}));
  for (int k = 0; k < 2; ++k)
    s.cv.classes.push_back(guided::coverageClasses(Config{{"KIND", std::string("g")}}, {"B"}));
  s.reset(23);
  for (size_t j = 0; j < raced; ++j) {
    s.cv.taken[j] = true;
    s.cv.ms[j] = 0.0036;
  }
  return s;
}

bool owes(detail::StopRule& s, size_t j, double ms) {
  s.cv.taken[j] = true;
  s.cv.ms[j] = ms;
  CompilePool pool(23, 1, [](size_t) {});  // not started: promote() only reorders
  return detail::owePickClasses(s, {j}, std::min(ms, 0.003), 0.003, 17, pool);
}

// After a stall's worth (16) of the prior's order behind the vendor's edge, the first config to
// reach it owes its class (a config still compiling when the stop came, on the GPU); before, only
// a coverage pick does.
TEST(LaunchFloor, TheFirstConfigAtAVendorsEdgeAfterTheStallOwesItsClass) {
  detail::StopRule s = vendorLedRace(15);
  EXPECT_FALSE(owes(s, 18, 0.00304));  // 15 before it: not yet, not a pick
  s = vendorLedRace(3);
  s.picked[18] = 1;
  EXPECT_TRUE(owes(s, 18, 0.00304));  // a pick
  EXPECT_TRUE(s.owed[19] && s.owed[20] && !s.owed[17]);
  s = vendorLedRace(16);
  EXPECT_TRUE(owes(s, 18, 0.00299));  // 16 before it: the first at the edge, leading
  EXPECT_TRUE(s.owed[19] && s.owed[20] && s.trigger[18]);
  EXPECT_FALSE(owes(s, 19, 0.00301));  // already owed
}

// What finished together is not raced before one another: a warm store's whole first wave in
// one batch (17 of B=1 at 3.6 us and B=2's config at the vendor's edge) owes nothing; the same
// config one batch after 16 others does.
TEST(LaunchFloor, ABatchsConfigsAreNotCountedBeforeOneAnother) {
  detail::StopRule s = vendorLedRace(17);
  std::vector<size_t> got;
  for (size_t j = 0; j < 17; ++j) got.push_back(j);
  got.push_back(18);
  s.cv.taken[18] = true;
  s.cv.ms[18] = 0.00304;
  CompilePool pool(23, 1, [](size_t) {});
  EXPECT_FALSE(detail::owePickClasses(s, got, 0.003, 0.003, 18, pool));
  EXPECT_FALSE(s.owed[19] || s.trigger[18]);
  s = vendorLedRace(16);
  EXPECT_TRUE(owes(s, 18, 0.00304));
}

TEST(LaunchFloor, NoClassIsOwedWhereThePriorsOrderReachedTheVendorOrWithoutANamedValue) {
  detail::StopRule s = vendorLedRace(16);
  s.cv.ms[1] = 0.00302;  // a config of the prior's order tied the vendor before
  EXPECT_FALSE(owes(s, 18, 0.00299));
  s = vendorLedRace(16);
  s.picked[21] = 1;
  EXPECT_FALSE(owes(s, 21, 0.00299));  // a calibration group alone: could be most of the space
  EXPECT_FALSE(s.owed[22]);
  s = vendorLedRace(16);
  EXPECT_FALSE(owes(s, 18, 0.00320));  // 6.7% behind the vendor
}

// A class whose rest is more than a stall's worth is not owed: B=1's 18 configs, a pick at
// position 0 with the other 17 untaken; with one of them raced, the rest of 16 is.
TEST(LaunchFloor, NoClassLargerThanAStallIsOwed) {
  detail::StopRule s = vendorLedRace(0);
  s.picked[0] = 1;
  EXPECT_FALSE(owes(s, 0, 0.00304));
  EXPECT_FALSE(s.owed[1] || s.trigger[0]);
  s = vendorLedRace(0);
  s.cv.taken[17] = true;
  s.cv.ms[17] = 0.0036;
  s.picked[0] = 1;
  EXPECT_TRUE(owes(s, 0, 0.00304));
  EXPECT_TRUE(s.owed[1] && s.owed[16] && !s.owed[18]);
}

// Adjacent pairing (finalists.h: adjacentTimes): b0 c1 b1 c2 b2, the default's clock rising.
TEST(LaunchFloor, AdjacentTimesAreAtTheRoundsDefaultClock) {
  const std::vector<double> at = adjacentTimes({1.0, 1.1, 1.21}, {1.05, 1.155});
  const double b = std::cbrt(1.0 * 1.1 * 1.21);
  ASSERT_EQ(at.size(), 3u);
  EXPECT_DOUBLE_EQ(at[0], b);
  EXPECT_NEAR(at[1], 1.05 * b / std::sqrt(1.1), 1e-12);  // 1.05 at the clock of sqrt(1.0 x 1.1)
  EXPECT_NEAR(at[2], 1.155 * b / std::sqrt(1.1 * 1.21), 1e-12);
  EXPECT_NEAR(at[1] / at[0], 1.05 / std::sqrt(1.1), 1e-12);
  // A failed default block: the other neighbour alone; a failed challenger stays failed.
  const std::vector<double> gap = adjacentTimes({1.0, -1, 1.2}, {1.0, -1});
  EXPECT_NEAR(gap[1], 1.0 * std::sqrt(1.2) / 1.0, 1e-12);
  EXPECT_LT(gap[2], 0);
  // No default time: the challengers as measured.
  EXPECT_DOUBLE_EQ(adjacentTimes({-1, -1}, {0.9})[1], 0.9);
}

// Which rounds are adjacent (finalists.h: firstAdjacentRound): every one for "adjacent"; for
// "drift", the default, only the extra rounds of a key whose race found drift and whose finalists
// all run long; never for "rotated".
TEST(LaunchFloor, DriftPairsOnlyTheExtraRoundsOfADriftKey) {
  constexpr int kNever = std::numeric_limits<int>::max();
  EXPECT_EQ(firstAdjacentRound("adjacent", false, 0, 6), 0);
  EXPECT_EQ(firstAdjacentRound("drift", true, 0.05, 6), 6);
  EXPECT_EQ(firstAdjacentRound("drift", true, kRaceDrift, 6), kNever);  // no drift past 1%
  EXPECT_EQ(firstAdjacentRound("drift", false, 0.05, 6), kNever);      // a short finalist
  EXPECT_EQ(firstAdjacentRound("rotated", true, 0.05, 6), kNever);
  EXPECT_EQ(Options().finalist_pairing, "drift");
}

// Drift tracking (guided.h: anchorFactor, interpolateFactor, scaleStats).
TEST(LaunchFloor, AnchorFactorsAndScaledTimings) {
  BenchStats first;
  first.runs = 10;
  first.median_ms = first.p20_ms = first.p80_ms = first.min_ms = first.max_ms = first.mean_ms = 1.213;
  BenchStats hot = first;
  hot.median_ms = hot.p20_ms = hot.p80_ms = 1.46;
  EXPECT_DOUBLE_EQ(guided::anchorFactor(first, hot), 1.46 / 1.213);
  BenchStats near = first;
  near.median_ms = 1.213 * 1.002;  // within both intervals: noise, not drift
  EXPECT_DOUBLE_EQ(guided::anchorFactor(first, near), 1);
  EXPECT_DOUBLE_EQ(guided::anchorFactor(first, BenchStats{}), 1);
  EXPECT_DOUBLE_EQ(guided::interpolateFactor(1.0, 1.2, 0, 4), 1.025);
  EXPECT_DOUBLE_EQ(guided::interpolateFactor(1.0, 1.2, 3, 4), 1.175);
  EXPECT_DOUBLE_EQ(guided::interpolateFactor(1.0, 1.2, 0, 0), 1.2);
  BenchStats s = hot;
  s.samples_ms = {1.46, 1.50};
  guided::scaleStats(s, 1.25);
  EXPECT_DOUBLE_EQ(s.median_ms, 1.46 / 1.25);
  EXPECT_DOUBLE_EQ(s.max_ms, 1.213 / 1.25);
  EXPECT_DOUBLE_EQ(s.samples_ms[1], 1.50 / 1.25);
  EXPECT_EQ(s.runs, 10);
}

}  // namespace
}  // namespace ktune
