// Sampled verification: which rows are checked, and that a wrong row among them is caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "autotune/verifier.h"

namespace ktune {
namespace {

TEST(SampleRows, SmallMatricesAreCheckedWhole) {
  auto r = sampleRows(100, 256);
  ASSERT_EQ(r.size(), 100u);
  EXPECT_EQ(r.front(), 0);
  EXPECT_EQ(r.back(), 99);
}

TEST(TileBoundaryRows, BothSidesOfEveryTileBoundaryPlusRandomRows) {
  const int64_t rows = 8192, tile = 64;
  auto r = tileBoundaryRows(rows, tile, 32, 7);
  std::set<int64_t> s(r.begin(), r.end());
  EXPECT_EQ(s.size(), r.size());
  EXPECT_TRUE(std::is_sorted(r.begin(), r.end()));
  EXPECT_TRUE(s.count(0) && s.count(rows - 1));
  // Every 64-, 128- and 256-row tile has its first and last row checked: no block is skipped.
  for (int64_t t : {64, 128, 256})
    for (int64_t b = 0; b < rows; b += t) EXPECT_TRUE(s.count(b) && s.count(b + t - 1)) << t << " " << b;
  EXPECT_LE(r.size(), size_t(2 * rows / tile + 32));
  EXPECT_GT(r.size(), size_t(2 * rows / tile));  // random rows inside tiles too
  EXPECT_EQ(r, tileBoundaryRows(rows, tile, 32, 7));  // deterministic
  // Small outputs: every row.
  EXPECT_EQ(tileBoundaryRows(200, 64, 8).size(), 200u);
}

TEST(SampleRows, LargeMatricesHitEdgesAndEveryTileOffset) {
  for (int64_t rows : {257, 1000, 4096, 4097, 16384}) {
    auto r = sampleRows(rows, 256);
    EXPECT_LE(r.size(), 300u) << rows;
    std::set<int64_t> s(r.begin(), r.end());
    EXPECT_EQ(s.size(), r.size()) << "no duplicates, rows=" << rows;
    EXPECT_TRUE(s.count(0) && s.count(rows - 1)) << rows;
    for (int64_t x : r) EXPECT_TRUE(x >= 0 && x < rows);
    // Every offset within a 16-row tile is visited (an odd stride walks all residues).
    if (rows >= 4096) {
      std::set<int64_t> mod16;
      for (int64_t x : r) mod16.insert(x % 16);
      EXPECT_EQ(mod16.size(), 16u) << rows;
    }
  }
}

}  // namespace
}  // namespace ktune
