// Prediction from tuned neighbours (autotune/predict.h) on database entries alone: range points,
// the key distance, the vote among applicable configs, the default's margin, the bracketing keys.
// Part of shapes_test (tests/CMakeLists.txt: KTUNE_TEST_PARTS_shapes_test).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autotune/guided.h"
#include "autotune/predict.h"

namespace ktune {
namespace {

CandidateResult cand(const std::string& cfg, double ms) {
  CandidateResult c;
  c.config = cfg;
  c.stats.median_ms = ms;
  c.stats.runs = 10;
  return c;
}

DbEntry entry(const std::string& key, std::vector<CandidateResult> cands, const std::string& def) {
  DbEntry e;
  e.key = key;
  e.candidates = std::move(cands);
  double best = 1e9;
  for (const auto& c : e.candidates)
    if (c.stats.median_ms < best) best = c.stats.median_ms, e.winner = c.config;
  e.vs_default.baseline = def;
  e.vs_default.rounds = 6;
  return e;
}

TEST(Predict, RangePointsArePowersOfTwoAndMidpointsWithinTheCap) {
  auto v = predict::rangePoints(1, 8192, 20);
  ASSERT_LE(v.size(), 20u);
  EXPECT_EQ(v.front(), 1);
  EXPECT_EQ(v.back(), 8192);
  for (int64_t p = 1; p <= 8192; p *= 2) EXPECT_TRUE(std::count(v.begin(), v.end(), p)) << p;
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  EXPECT_EQ(predict::rangePoints(5, 5, 20), std::vector<int64_t>{5});
  EXPECT_TRUE(predict::rangePoints(9, 3, 20).empty());
}

TEST(Predict, DistanceIsTheGuidedSearchsKeyDistance) {
  const std::string a = "layout=NN,M=777,N=4096,K=4096", b = "layout=NT,M=64,N=4096,K=1024";
  EXPECT_DOUBLE_EQ(predict::distance(predict::parseKey(a), predict::parseKey(b)),
                   guided::keyDistance(a, b));
  EXPECT_DOUBLE_EQ(predict::distance(predict::parseKey(a), predict::parseKey("M=1")),
                   guided::keyDistance(a, "M=1"));
}

TEST(Predict, NearestNeighboursVoteAmongApplicableConfigs) {
  // Small M: A wins; large M: B wins. The default D is 30% slower everywhere.
  std::vector<DbEntry> es = {
      entry("M=16,N=512", {cand("A", 1.0), cand("B", 1.5), cand("D", 1.3)}, "D"),
      entry("M=32,N=512", {cand("A", 1.0), cand("B", 1.4), cand("D", 1.3)}, "D"),
      entry("M=2048,N=512", {cand("A", 1.6), cand("B", 1.0), cand("D", 1.3)}, "D"),
      entry("M=4096,N=512", {cand("A", 1.7), cand("B", 1.0), cand("D", 1.3)}, "D")};
  DbEntry guess = entry("M=24,N=512", {cand("B", 1.0)}, "");
  guess.predicted = true;  // never a neighbour
  es.push_back(guess);
  auto idx = predict::indexEntries(es);
  ASSERT_EQ(idx.size(), 4u);
  auto all = [](const std::string&) { return true; };
  auto p = predict::predict(idx, "M=24,N=512", all);
  EXPECT_EQ(p.config, "A");
  EXPECT_EQ(p.source, "jit");
  EXPECT_GT(p.confidence, 0.3);
  ASSERT_FALSE(p.neighbours.empty());
  EXPECT_EQ(p.neighbours.front().key, "M=32,N=512");
  EXPECT_EQ(predict::predict(idx, "M=3000,N=512", all).config, "B");
  // A not applicable to the new key: the next best that is.
  auto no_a = predict::predict(idx, "M=24,N=512", [](const std::string& c) { return c != "A"; });
  EXPECT_NE(no_a.config, "A");
  // Another category (N as a string) is too far: nothing near, the default runs.
  auto far = predict::predict(idx, "M=24,N=big", all);
  EXPECT_EQ(far.source, predict::kDefaultClass);
  EXPECT_EQ(far.basis, "no tuned neighbours");
}

TEST(Predict, TheDefaultStaysUnlessAConfigBeatsItByTheMargin) {
  std::vector<DbEntry> es = {entry("M=16", {cand("A", 1.0), cand("D", 1.01)}, "D"),
                             entry("M=64", {cand("A", 1.0), cand("D", 1.005)}, "D")};
  auto p = predict::predict(predict::indexEntries(es), "M=32", [](const std::string&) { return true; });
  EXPECT_EQ(p.source, predict::kDefaultClass);  // 1% better is within kDefaultMargin
}

// C averages far better than the default D but was near-best (within 3%) at no neighbour: with A
// and B inapplicable to the new key, the default runs (on the H100's held-out keys such
// predictions were mostly slower than the default). With A applicable, A (near-best where it
// was measured) is predicted. (M=32 lies between 24 and 64, where C beat D by 27%: the bracketing
// rule asks it to be near-best there too, so it does not pick C either.)
TEST(Predict, AConfigNearBestAtTooFewNeighboursDoesNotReplaceTheDefault) {
  std::vector<DbEntry> es = {
      entry("M=16", {cand("A", 1.0), cand("C", 1.10), cand("D", 1.40)}, "D"),
      entry("M=24", {cand("A", 1.0), cand("C", 1.10), cand("D", 1.40)}, "D"),
      entry("M=64", {cand("B", 1.0), cand("C", 1.10), cand("D", 1.40)}, "D")};
  auto idx = predict::indexEntries(es);
  auto p = predict::predict(idx, "M=32", [](const std::string& c) { return c != "A" && c != "B"; });
  EXPECT_EQ(p.source, predict::kDefaultClass) << p.config;
  auto q = predict::predict(idx, "M=32", [](const std::string& c) { return c != "B"; });
  EXPECT_EQ(q.config, "A");
}

// The neighbours must not disagree with replacing the default (issue 35's rule for "never slower
// than the default", fixed before the second held-out set was measured): A is near-best at the
// two nearest neighbours but slower than the default D at a third that timed both -> D. And a
// config the nearest neighbour never measured does not replace D either.
TEST(Predict, TheDefaultStaysWhereTheNeighboursDisagree) {
  auto all = [](const std::string&) { return true; };
  std::vector<DbEntry> es = {
      entry("M=16", {cand("A", 1.0), cand("D", 1.30)}, "D"),
      entry("M=24", {cand("A", 1.0), cand("D", 1.30)}, "D"),
      entry("M=64", {cand("A", 1.25), cand("E", 1.0), cand("D", 1.10)}, "D")};
  // M=12: no tuned key below it, so the bracketing rule has no say (its case: the next test).
  auto p = predict::predict(predict::indexEntries(es), "M=12", all);
  EXPECT_EQ(p.source, predict::kDefaultClass) << p.config;
  es[2].candidates[0].stats.median_ms = 1.05;  // A faster than D there too: A
  EXPECT_EQ(predict::predict(predict::indexEntries(es), "M=12", all).config, "A");
  std::vector<DbEntry> far = {
      entry("M=32", {cand("B", 1.0), cand("D", 1.02)}, "D"),
      entry("M=16", {cand("B", 1.0), cand("C", 1.0), cand("D", 3.0)}, "D"),
      entry("M=24", {cand("C", 1.0), cand("D", 3.0)}, "D")};
  // Nearest to M=30 is M=32, which never measured C (C averages best but is not known there).
  auto q = predict::predict(predict::indexEntries(far), "M=30",
                            [](const std::string& c) { return c != "B"; });
  EXPECT_EQ(q.source, predict::kDefaultClass) << q.config;
}

// The bracketing rule (fixed before the sixth held-out set): where the rule above keeps the default,
// the nearest tuned key on each side of the new one along the field they differ in may still agree
// on a JIT config, each seeing it faster than the default by kDefaultMargin.
TEST(Predict, TheTwoTunedKeysBracketingANewOneCanAgreeOnAConfig) {
  auto all = [](const std::string&) { return true; };
  std::vector<DbEntry> es = {
      entry("M=16,N=512", {cand("A", 1.0), cand("D", 1.30)}, "D"),
      entry("M=24,N=512", {cand("A", 1.0), cand("B", 1.01), cand("D", 1.30)}, "D"),
      entry("M=64,N=512", {cand("A", 1.25), cand("E", 1.0), cand("D", 1.10)}, "D")};
  // M=20 lies between 16 and 24, both of which saw A 30% faster than D; M=64 (farther) disagrees.
  auto p = predict::predict(predict::indexEntries(es), "M=20,N=512", all);
  EXPECT_EQ(p.config, "A");
  EXPECT_EQ(p.source, "jit");
  EXPECT_EQ(p.basis, "neighbours");
  EXPECT_GT(p.score, p.default_score);
  // A not applicable: B was timed on one side only: not this rule (B, 1% over the fastest time at
  // M=16, comes from the upper-bracket rule).
  auto noa = predict::predict(predict::indexEntries(es), "M=20,N=512",
                              [](const std::string& c) { return c != "A"; });
  EXPECT_EQ(noa.config, "B");
  EXPECT_EQ(noa.rule, "upper key");
  // Beyond the tuned range (nothing above M=100): no bracket, and M=64 disagrees: the default.
  EXPECT_EQ(predict::predict(predict::indexEntries(es), "M=100,N=512", all).source,
            predict::kDefaultClass);
  // Between 24 and 64 (A slower than D at 64): not this rule (E, as fast at 64 as anything at 24,
  // comes from the upper-bracket rule).
  EXPECT_EQ(predict::predict(predict::indexEntries(es), "M=40,N=512", all).rule, "upper key");
  // Faster by 1% only on one side: within the margin, the default.
  auto thin = es;
  thin[1].candidates[2].stats.median_ms = 1.01;
  EXPECT_EQ(predict::predict(predict::indexEntries(thin), "M=20,N=512", all).source,
            predict::kDefaultClass);
  // The key above differs in another field too (N): not a bracket (the upper-bracket rule then takes
  // M=64 as the key above).
  auto other = es;
  other[1].key = "M=24,N=1024";
  EXPECT_NE(predict::predict(predict::indexEntries(other), "M=20,N=512", all).rule, "bracketing keys");
}

// A tuned key's finalist comparison (the default re-timed interleaved against the winner) outranks
// the default's first-pass median: where the tuning kept the default, a config that only the first
// pass saw 15% faster is not evidence against the default.
TEST(Predict, AKeyWhoseTuningKeptTheDefaultDoesNotVoteAgainstIt) {
  auto all = [](const std::string&) { return true; };
  auto es = [](double ratio) {
    std::vector<DbEntry> v = {entry("M=2048,N=512", {cand("A", 1.0), cand("D", 1.15)}, "D"),
                              entry("M=4096,N=512", {cand("A", 2.0), cand("D", 2.30)}, "D")};
    for (DbEntry& e : v) {
      e.vs_default.baseline_ms = e.candidates[1].stats.median_ms;
      e.vs_default.winner_ms = e.vs_default.baseline_ms * ratio;
      e.vs_default.ratio = ratio;
    }
    return v;
  };
  // Without a finalist comparison (baseline_ms 0) the first pass decides: A, by the bracketing keys.
  auto first = es(1.0);
  for (DbEntry& e : first) e.vs_default.baseline_ms = 0;
  EXPECT_EQ(predict::predict(predict::indexEntries(first), "M=2784,N=512", all).config, "A");
  // The finalists kept the default at both (ratio 1): the default.
  auto kept = predict::predict(predict::indexEntries(es(1.0)), "M=2784,N=512", all);
  EXPECT_EQ(kept.source, predict::kDefaultClass);
  EXPECT_DOUBLE_EQ(kept.default_score, 1.0);
  // The finalists confirmed the gain (A 13% faster than the default in the interleaved rounds): A.
  EXPECT_EQ(predict::predict(predict::indexEntries(es(0.87)), "M=2784,N=512", all).config, "A");
}

// The upper-bracket rule: C won at the tuned M=16 but was never timed at M=8 (a tile the key below
// cannot use), so neither the vote nor the bracketing rule can pick it for M=12; its time at 16 is
// within kUpperSlack of the fastest time at 8 and 9% under the default's there, so M=12 runs C.
TEST(Predict, TheTunedKeyAboveChoosesAConfigWithinTheSlackOfTheFastestBelow) {
  auto all = [](const std::string&) { return true; };
  auto es = [](double c16, double d16) {
    return std::vector<DbEntry>{
        entry("M=8,N=512", {cand("A", 1.0), cand("D", 1.06)}, "D"),
        entry("M=16,N=512", {cand("C", c16), cand("A", 1.3), cand("D", d16)}, "D")};
  };
  auto p = predict::predict(predict::indexEntries(es(1.01, 1.10)), "M=12,N=512", all);
  EXPECT_EQ(p.config, "C");
  EXPECT_EQ(p.source, "jit");
  EXPECT_EQ(p.basis, "neighbours");
  EXPECT_EQ(p.rule, "upper key");
  EXPECT_NEAR(p.score, 1.0 / 1.01, 1e-9);
  // 5% over the fastest time below: the new key may be near that time, and C is not shown near it.
  EXPECT_EQ(predict::predict(predict::indexEntries(es(1.05, 1.10)), "M=12,N=512", all).source,
            predict::kDefaultClass);
  // C beat the default above by 1% only: within the margin, the default.
  EXPECT_EQ(predict::predict(predict::indexEntries(es(1.01, 1.02)), "M=12,N=512", all).source,
            predict::kDefaultClass);
  // C not applicable to the new key, or no tuned key above it: the default.
  EXPECT_EQ(predict::predict(predict::indexEntries(es(1.01, 1.10)), "M=12,N=512",
                             [](const std::string& c) { return c != "C"; }).source,
            predict::kDefaultClass);
  EXPECT_EQ(predict::predict(predict::indexEntries(es(1.01, 1.10)), "M=20,N=512", all).rule, "");
}

// The bracketing rule through the engine's database on the simulated backend: X beat the family
// default (BLOCK=128,VEC=1) at the tuned n=1024 and n=4096 and lost to it at n=16384; the unseen
// n=2048 between the first two runs X (the rule before it kept the default: a neighbour disagreed).

}  // namespace
}  // namespace ktune
