// The statistics behind the benchmarks' fair comparisons (bench/fair/fair_timing.h).
#include "bench/fair/fair_timing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace ktune::fair {
namespace {

TEST(FairTiming, MedianOfOddAndEvenSamples) {
  EXPECT_EQ(medianInterval({3, 1, 2}).median, 2);
  EXPECT_EQ(medianInterval({4, 1, 3, 2}).median, 2.5);
  EXPECT_EQ(medianInterval({}).n, 0);
}

TEST(FairTiming, IntervalUsesBinomialOrderStatistics) {
  // n = 10 at 95%: P(X <= 1) = 11/1024, so 2 * 11/1024 < 0.05 gives [x(2), x(9)]; P(X <= 2) =
  // 56/1024 is too much.
  std::vector<double> s;
  for (int i = 1; i <= 10; ++i) s.push_back(i);
  const Interval iv = medianInterval(s);
  EXPECT_TRUE(iv.exact);
  EXPECT_EQ(iv.lo, 2);
  EXPECT_EQ(iv.hi, 9);
  // n = 5: 2 * P(X <= 0) = 1/16 > 0.05, so no exact 95% interval: min and max instead.
  const Interval small = medianInterval({5, 1, 4, 2, 3});
  EXPECT_FALSE(small.exact);
  EXPECT_EQ(small.lo, 1);
  EXPECT_EQ(small.hi, 5);
  // n = 6: 2/64 < 0.05 gives [x(1), x(6)], exact.
  EXPECT_TRUE(medianInterval({1, 2, 3, 4, 5, 6}).exact);
}

TEST(FairTiming, IntervalNarrowsWithMoreSamplesAndCoversTheMedian) {
  std::vector<double> s;
  uint32_t x = 12345;
  for (int i = 0; i < 400; ++i) {
    x = x * 1664525u + 1013904223u;
    s.push_back(100.0 + (x >> 8) % 1000 / 100.0);  // 100 .. 110
  }
  const Interval big = medianInterval(s);
  const Interval part = medianInterval(std::vector<double>(s.begin(), s.begin() + 40));
  EXPECT_LE(big.lo, big.median);
  EXPECT_GE(big.hi, big.median);
  EXPECT_LT(big.hi - big.lo, part.hi - part.lo);
  EXPECT_LT(big.relHalfWidth(), 0.01);
}

TEST(FairTiming, RatioIntervalSkipsFailedRounds) {
  const Interval r = ratioInterval({2, 4, -1, 6}, {1, 2, 5, 3});
  EXPECT_EQ(r.n, 3);
  EXPECT_EQ(r.median, 2);
  EXPECT_EQ(r.lo, 2);
  EXPECT_EQ(r.hi, 2);
}

TEST(FairTiming, EachVariantGoesFirstInTurn) {
  EXPECT_EQ(interleavedOrder(2, 0), (std::vector<int>{0, 1}));
  EXPECT_EQ(interleavedOrder(2, 1), (std::vector<int>{1, 0}));
  EXPECT_EQ(interleavedOrder(3, 4), (std::vector<int>{1, 2, 0}));
  std::map<int, int> first;
  for (int r = 0; r < 9; ++r) {
    auto o = interleavedOrder(3, r);
    std::vector<int> sorted = o;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2}));  // every variant once per round
    ++first[o[0]];
  }
  EXPECT_EQ(first[0], 3);
  EXPECT_EQ(first[1], 3);
  EXPECT_EQ(first[2], 3);
  EXPECT_TRUE(interleavedOrder(0, 3).empty());
}

TEST(FairTiming, InterleaveRecordsSamplesPerVariantInRunOrder) {
  std::vector<int> ran;
  auto out = interleave(2, 4, [&](int v) {
    ran.push_back(v);
    return v == 1 && ran.size() == 2 ? -1.0 : double(ran.size());  // one failed sample
  });
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 1, 0, 0, 1, 1, 0}));
  EXPECT_EQ(out[0], (std::vector<double>{1, 4, 5, 8}));
  EXPECT_EQ(out[1], (std::vector<double>{3, 6, 7}));
}

TEST(FairTiming, ClocksReadOrExplainWhyNot) {
  auto c = readGpuClocks(0);
  if (c.ok()) {
    EXPECT_GT(c->sm_mhz, 0);
  } else {
    EXPECT_EQ(c.status().code(), Code::kUnavailable);
    EXPECT_NE(clocksLine(c, c).find("unavailable"), std::string::npos);
  }
  EXPECT_FALSE(readGpuClocks(-1).ok());
  GpuClocks g;
  g.sm_mhz = 1980;
  g.power_w = 312.44;
  EXPECT_NE(g.toString().find("sm 1980 MHz"), std::string::npos);
  EXPECT_NE(g.toString().find("312.4 W"), std::string::npos);
}

}  // namespace
}  // namespace ktune::fair
