// The static ranking model of `ktune tune --no-gpu` (autotune/static_rank.h) on synthetic analysis
// reports: each factor moves a config the way the model documents, exclusions are listed after
// the ranked configs with their reason, and ties go to fewer registers.
#include <gtest/gtest.h>

#include "autotune/static_rank.h"

namespace ktune {
namespace {

StaticRankInput amd(const std::string& cfg, double waves, int warns = 0, int vgpr = 128) {
  StaticRankInput in;
  in.config = *Config::parse(cfg);
  in.report.arch = "gfx942";
  in.report.has_occupancy = true;
  in.report.amd.waves_per_eu = waves;
  in.report.resources.vgpr = vgpr;
  for (int i = 0; i < warns; ++i) in.report.isa.verdicts.push_back({"overlap", false, "vmcnt(0)"});
  in.report.isa.verdicts.push_back({"scratch", true, ""});
  return in;
}

size_t posOf(const std::vector<StaticRank>& r, size_t index) {
  for (size_t i = 0; i < r.size(); ++i)
    if (r[i].index == index) return i;
  return r.size();
}

TEST(StaticRank, EachFactorMovesAConfigAsDocumented) {
  const std::string t128 = "BLOCK_K=64,BLOCK_M=128,BLOCK_N=128";
  std::vector<StaticRankInput> in = {
      amd(t128, 1),                                  // 0: half the occupancy factor
      amd(t128, 2),                                  // 1: the best
      amd(t128, 4),                                  // 2: capped at 2 waves: equal to 1, more VGPRs
      amd(t128, 2, 1),                               // 3: one WARN: x0.75
      amd("BLOCK_K=64,BLOCK_M=64,BLOCK_N=64", 2),    // 4: half the intensity of 128x128
  };
  in[2].report.resources.vgpr = 200;
  const auto r = rankStatically(in, nullptr);
  ASSERT_EQ(r.size(), in.size());
  EXPECT_EQ(r[0].index, 1u);
  EXPECT_EQ(r[1].index, 2u);  // same score as 1, more VGPRs
  EXPECT_DOUBLE_EQ(r[0].score, 1.0);
  EXPECT_DOUBLE_EQ(r[1].score, 1.0);
  EXPECT_DOUBLE_EQ(r[posOf(r, 3)].score, 0.75);
  EXPECT_EQ(r[posOf(r, 3)].warns, 1);
  EXPECT_DOUBLE_EQ(r[posOf(r, 0)].score, 0.5);
  EXPECT_DOUBLE_EQ(r[posOf(r, 4)].score, 0.5);  // 2*64*64/(128*2) / (2*128*128/(256*2))
  for (size_t i = 1; i < r.size(); ++i) EXPECT_GE(r[i - 1].score, r[i].score);
}

TEST(StaticRank, FillPenalisesTileQuantisationAndTheKRemainder) {
  // M = N = 96: a 128x128 tile computes 128*128 for 96*96 useful; 32x32 tiles fit exactly.
  const auto s = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16, 96, 96, 96);
  std::vector<StaticRankInput> in = {amd("BLOCK_K=32,BLOCK_M=128,BLOCK_N=128", 2),
                                     amd("BLOCK_K=32,BLOCK_M=32,BLOCK_N=32", 2),
                                     amd("BLOCK_K=64,BLOCK_M=32,BLOCK_N=32", 2)};
  const auto r = rankStatically(in, &s);
  EXPECT_DOUBLE_EQ(r[posOf(r, 0)].fill, 96.0 * 96 / (128.0 * 128));
  EXPECT_DOUBLE_EQ(r[posOf(r, 1)].fill, 1.0);
  EXPECT_DOUBLE_EQ(r[posOf(r, 2)].fill, 96.0 / 128);  // K 96 in steps of 64
  EXPECT_DOUBLE_EQ(r[posOf(r, 1)].intensity, 0.25);
}

TEST(StaticRank, FailuresSpillsAndMisfitsAreExcludedAfterTheRanked) {
  std::vector<StaticRankInput> in = {amd("BLOCK_M=64,BLOCK_N=64,BLOCK_K=32", 2),
                                     amd("BLOCK_M=64,BLOCK_N=64,BLOCK_K=64", 2),
                                     amd("BLOCK_M=128,BLOCK_N=64,BLOCK_K=32", 2),
                                     amd("BLOCK_M=32,BLOCK_N=64,BLOCK_K=32", 1)};
  in[0].status = Status::CompileError("clang: error: LDS");
  in[1].report.resources.vgpr_spill = 4;
  in[2].report.has_occupancy = false;
  in[2].report.occupancy_note = "131072 bytes of LDS exceed the 65536";
  const auto r = rankStatically(in, nullptr);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].index, 3u);
  EXPECT_FALSE(r[0].excluded);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_TRUE(r[i].excluded);
    EXPECT_EQ(r[i].index, i - 1);  // input order
  }
  EXPECT_NE(r[1].why.find("not compiled"), std::string::npos) << r[1].why;
  EXPECT_NE(r[2].why.find("spills"), std::string::npos) << r[2].why;
  EXPECT_NE(r[3].why.find("131072"), std::string::npos) << r[3].why;
}

}  // namespace
}  // namespace ktune
