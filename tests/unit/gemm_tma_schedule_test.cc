// The TMA GEMM's persistent schedule (templates/gemm/tma/tma_schedule.cuh, namespace kt) checked on
// the host: for tile counts, K lengths, grid sizes and SPLIT_K values around the cases that matter
// (partial last rounds, a single partial round, K shorter than SPLIT_K), every (tile, k-tile) is
// covered exactly once; every split tile has one reducer, whose contributor count and slots are the
// units that really contribute; a block contributes at most once and before it reduces anything
// (the reducer's wait cannot close a cycle); the tail's ranges are balanced.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#define KTUNE_DEVICE inline
namespace kt {
#include "templates/gemm/tma/tma_schedule.cuh"
}  // namespace kt

namespace {

struct Check {
  int ntiles, ktiles, step, split;
};

void checkSchedule(const Check& c) {
  SCOPED_TRACE(testing::Message() << c.ntiles << " tiles x " << c.ktiles << " k-tiles on " << c.step
                                  << " blocks, SPLIT_K " << c.split);
  std::vector<int> covered(static_cast<size_t>(c.ntiles) * c.ktiles, 0);
  std::map<int, int> reducer_of;  // tail tile -> its reducer block
  std::map<int, std::vector<int>> contributors_of;
  long long min_range = -1, max_range = 0;
  for (int b = 0; b < c.step; ++b) {
    const kt::Sched s = kt::make_sched(c.ntiles, c.ktiles, b, c.step, c.split);
    ASSERT_LE(s.pieces, 2);
    int contributed = 0;
    if (s.workers > 0 && b < s.workers) {
      const long long len = s.hi - s.lo;
      ASSERT_GE(len, 1);
      ASSERT_LE(len, c.ktiles) << "a range longer than a tile's K";
      min_range = min_range < 0 ? len : std::min(min_range, len);
      max_range = std::max(max_range, len);
    }
    for (int j = 0; j < kt::sched_units(s); ++j) {
      const kt::Unit u = kt::sched_unit(s, j);
      ASSERT_GE(u.tile, 0);
      ASSERT_LT(u.tile, c.ntiles);
      ASSERT_LT(u.kb, u.ke);
      ASSERT_LE(u.ke, c.ktiles);
      for (int k = u.kb; k < u.ke; ++k) ++covered[static_cast<size_t>(u.tile) * c.ktiles + k];
      if (u.tail < 0) {
        ASSERT_EQ(u.kb, 0);
        ASSERT_EQ(u.ke, c.ktiles);
        ASSERT_LT(u.tile, s.whole);
        continue;
      }
      ASSERT_EQ(u.tile, s.whole + u.tail);
      if (u.split == 0) {
        ASSERT_EQ(u.kb, 0);
        ASSERT_EQ(reducer_of.count(u.tail), 0u) << "two reducers for tail tile " << u.tail;
        reducer_of[u.tail] = b;
      } else {
        ++contributed;
        ASSERT_EQ(j, s.nwhole) << "a contribution after a reduction could wait in a cycle";
        contributors_of[u.tail].push_back(b);
      }
    }
    ASSERT_LE(contributed, 1) << "block " << b << " needs two workspace slots";
  }
  for (size_t i = 0; i < covered.size(); ++i)
    ASSERT_EQ(covered[i], 1) << "tile " << i / c.ktiles << " k-tile " << i % c.ktiles;
  for (const auto& [t, r] : reducer_of) {
    const kt::Sched s = kt::make_sched(c.ntiles, c.ktiles, r, c.step, c.split);
    const int nc = kt::sched_contributors(s, t);
    const std::vector<int>& got = contributors_of[t];
    ASSERT_EQ(nc, static_cast<int>(got.size())) << "tail tile " << t;
    for (int i = 0; i < nc; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], r + 1 + i);  // its slots
    ASSERT_LE(nc, c.split) << "more than SPLIT_K ranges on tail tile " << t;
  }
  for (const auto& [t, v] : contributors_of) {
    ASSERT_EQ(reducer_of.count(t), 1u) << "tile " << t;
  }
  if (min_range > 0) {
    ASSERT_LE(max_range - min_range, 1) << "unbalanced tail";
  }
}

TEST(GemmTmaSchedule, CoversEveryKTileOnceWithOneReducerPerSplitTile) {
  const int steps[] = {1, 7, 66, 132};
  const int ktiles[] = {1, 2, 3, 5, 16, 64, 129};
  const int tiles[] = {1, 2, 13, 52, 65, 66, 67, 116, 131, 132, 133, 448, 512};
  for (int split : {1, 2, 4})
    for (int step : steps)
      for (int kt : ktiles)
        for (int n : tiles) checkSchedule({n, kt, step, split});
}

// The figures the kernel's header quotes: 448 tiles of 128x256 on 132 SMs (1024x14336x4096) split
// in two run 104 ranges of exactly half a tile; with SPLIT_K 4 all 132 blocks share the tail, so
// the last round costs 52 / 132 of a tile; 2048 tiles (8192^3) share 68 over 132 blocks; 512 tiles
// (4096^3) keep their tail of 116 whole.
TEST(GemmTmaSchedule, StreamKTailOfTheLlmShapes) {
  kt::Sched s = kt::make_sched(448, 64, 0, 132, 2);
  EXPECT_EQ(s.whole, 396);
  EXPECT_EQ(s.workers, 104);
  EXPECT_EQ(s.hi - s.lo, 32);
  s = kt::make_sched(448, 64, 131, 132, 4);
  EXPECT_EQ(s.workers, 132);
  EXPECT_LE(s.hi - s.lo, 26);  // 52 * 64 / 132 = 25.2 k-tiles instead of 64
  // 2048 tiles (8192^3): a tail of 68 of 132 tiles, 68 * 128 / 132 = 65.9 k-tiles per block.
  s = kt::make_sched(2048, 128, 5, 132, 2);
  EXPECT_EQ(s.workers, 132);
  EXPECT_EQ(kt::sched_units(s), 15 + s.pieces);
  EXPECT_LE(s.hi - s.lo, 66);
  // 512 tiles (4096^3): a tail of 116 of 132 is more than 60% of a round and stays whole.
  s = kt::make_sched(512, 64, 5, 132, 2);
  EXPECT_EQ(s.workers, 0);
  EXPECT_EQ(kt::sched_units(s), 4);
  // 480 tiles (3000x5000x1000, 16 k-tiles each): a tail of 84 of 132 (64%) stays whole too; split,
  // it ran 10% slower (bench/NOTES.md, issue 33).
  s = kt::make_sched(480, 16, 7, 132, 2);
  EXPECT_EQ(s.workers, 0);
  EXPECT_EQ(kt::sched_units(s), 4);
  // SPLIT_K 1: every tile whole.
  s = kt::make_sched(448, 64, 0, 132, 1);
  EXPECT_EQ(s.whole, 448);
  EXPECT_EQ(s.workers, 0);
  EXPECT_EQ(kt::sched_units(s), 4);
}

}  // namespace
