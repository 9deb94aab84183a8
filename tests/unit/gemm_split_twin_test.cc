// A tma config whose split tail splits nothing at a key is its SPLIT_K 1 twin's schedule
// (gemm::tmaSplitTailIdle, gemm_ops::idleSplitTwin, gemm_ops::guidedLeaveOut): the rule on the
// kernel's own schedule at shapes where the last round is and is not shared out; the default of
// such a key is the twin; and a cold guided tuning of 4096^3 on the simulated H100-like device
// compiles no split config there (its twins are raced instead: the default was the first wave's
// slowest compile), finds the exhaustive search's winner, while at 4096x28672x4096 (a last round of
// 20 of 132 tiles, split) the split default stays, is compiled first and timed.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ops/gemm_configs.h"
#include "tests/unit/cli_fixture.h"
#include "tests/unit/gemm_test_util.h"

namespace ktune {
namespace {

using nlohmann::json;

// The curated default (D) and its twin without the split tail (B).
constexpr const char* kD = "BLOCK_N=256,CLUSTER_M=1,CONSUMERS=2,EPI_TMA=2,GROUP_M=16,KIND=tma,"
                           "NUM_STAGES=4,PINGPONG=0,SPLIT_K=2,WG_M=1";
constexpr const char* kB = "BLOCK_N=256,CLUSTER_M=1,CONSUMERS=2,EPI_TMA=2,GROUP_M=16,KIND=tma,"
                           "NUM_STAGES=4,PINGPONG=0,SPLIT_K=1,WG_M=1";

Config parsed(const std::string& s) {
  auto c = Config::parse(s);
  EXPECT_TRUE(c.ok()) << s;
  return c.ok() ? *c : Config{};
}

DeviceInfo h100Like() {  // the shared test device, with the launch limits the schedule reads
  DeviceInfo d = gemm::testutil::sm90aDevice();
  d.warp_size = 32;
  d.max_threads_per_block = 1024;
  return d;
}

gemm::GemmShape nt(int64_t m, int64_t n, int64_t k, gemm::ElemType ab = gemm::ElemType::kBF16) {
  return gemm::denseShape(gemm::Layout::kNT, ab, gemm::ElemType::kBF16, m, n, k);
}

TEST(GemmSplitTwin, IdleWhereTheKernelsScheduleSplitsNothing) {
  const DeviceInfo dev = h100Like();
  const Config d = gemm_ops::knobsOf(parsed(kD));
  // 4096^3: 512 tiles of 128 x 256, a last round of 116 of 132 (over 60%: taken whole).
  EXPECT_TRUE(gemm::tmaSplitTailIdle(d, nt(4096, 4096, 4096), dev));
  EXPECT_TRUE(gemm::tmaSplitTailIdle(d, nt(4096, 4096, 4096, gemm::ElemType::kF8E4M3), dev));
  EXPECT_TRUE(gemm::tmaSplitTailIdle(d, nt(4096, 4096, 64), dev));  // one k-tile: nothing to split
  // Split: 3584 tiles (a last round of 20), 448 (52), 16 tiles on 32 blocks (one partial round).
  EXPECT_FALSE(gemm::tmaSplitTailIdle(d, nt(4096, 28672, 4096), dev));
  EXPECT_FALSE(gemm::tmaSplitTailIdle(d, nt(1024, 14336, 4096), dev));
  EXPECT_FALSE(gemm::tmaSplitTailIdle(d, nt(128, 4096, 4096), dev));
  // No split tail, or a device the kind refuses.
  EXPECT_FALSE(gemm::tmaSplitTailIdle(gemm_ops::knobsOf(parsed(kB)), nt(4096, 4096, 4096), dev));
  DeviceInfo ampere = dev;
  ampere.arch = "sm_80";
  EXPECT_FALSE(gemm::tmaSplitTailIdle(d, nt(4096, 4096, 4096), ampere));
}

TEST(GemmSplitTwin, TwinOnlyWhereIdleAndLeftOutOnlyBesideItsTwin) {
  const DeviceInfo dev = h100Like();
  EXPECT_EQ(gemm_ops::idleSplitTwin(parsed(kD), nt(4096, 4096, 4096), dev), parsed(kB));
  EXPECT_EQ(gemm_ops::idleSplitTwin(parsed(kD), nt(4096, 28672, 4096), dev), parsed(kD));
  const Config mma = parsed("BLOCK_K=32,BLOCK_M=128,BLOCK_N=256,GROUP_M=8,KIND=mma,MIN_BLOCKS=0,"
                            "NUM_STAGES=4,SPLIT_K=2,WARPS_M=2,WARPS_N=4");
  EXPECT_EQ(gemm_ops::idleSplitTwin(mma, nt(4096, 4096, 4096), dev), mma);  // tma kind only
  // D beside B: D left out at 4096^3 (B is raced), kept at 4096x28672x4096. A split config whose
  // twin is not among the configs stays.
  const Config lone = parsed("BLOCK_N=128,CLUSTER_M=1,CONSUMERS=2,EPI_TMA=1,GROUP_M=8,KIND=tma,"
                             "NUM_STAGES=7,PINGPONG=0,SPLIT_K=4,WG_M=1");
  const std::vector<Config> cs = {parsed(kD), parsed(kB), lone};
  auto why = gemm_ops::guidedLeaveOut(cs, nt(4096, 4096, 4096), dev);
  ASSERT_EQ(why.size(), 3u);
  EXPECT_NE(why[0].find("splits nothing at this shape"), std::string::npos) << why[0];
  EXPECT_EQ(why[1], "");
  EXPECT_EQ(why[2], "");
  for (const std::string& w : gemm_ops::guidedLeaveOut(cs, nt(4096, 28672, 4096), dev))
    EXPECT_EQ(w, "");
  // The kinds' rule still applies first: at 16 rows (a decode config live) the tma configs are
  // left out as large-tile kinds, not as twins.
  std::vector<Config> dc = cs;
  dc.push_back(parsed("DC_DEPTH=2,DC_GRID=4,DC_MT=2,DC_NT=2,DC_PF=1,DC_U=2,DC_WARPS=4,DC_WG=2,"
                      "DC_XR=0,KIND=decode"));
  why = gemm_ops::guidedLeaveOut(dc, nt(16, 4096, 4096), dev);
  for (size_t i = 0; i < 3; ++i) EXPECT_NE(why[i].find("tma kind"), std::string::npos) << why[i];
  EXPECT_EQ(why[3], "");
}

// The first `compile_issued` config of a KTUNE_TIMELINE file ("EPOCH_MS PID LABEL DETAIL").
std::string firstCompiled(const std::string& timeline) {
  std::ifstream in(timeline);
  for (std::string line; std::getline(in, line);) {
    const size_t p = line.find(" compile_issued ");
    if (p == std::string::npos) continue;
    const std::string rest = line.substr(p + 16);  // "<who> <config>"
    return rest.substr(rest.find(' ') + 1);
  }
  return "";
}

json tuneJson(const CliRun& r) {
  json j = json::parse(r.out, nullptr, false);
  EXPECT_TRUE(j.is_object()) << r.out << r.err;
  return j;
}

TEST_F(Cli, TheGuidedSearchRacesTheTwinOfAnIdleSplitTail) {
  auto tune = [&](const std::string& dir, int64_t n, bool exhaustive) {
    std::vector<std::string> args = {"tune", "gemm", "--m", "4096", "--n", std::to_string(n),
                                     "--k", "4096", "--layout", "NT", "--json"};
    if (exhaustive) args.insert(args.end(), {"--search", "exhaustive"});
    CliRun r = ktune(args, dir, {"KTUNE_BACKEND=sim", "KTUNE_COMPILE_THREADS=15",
                                 "KTUNE_TIMELINE=" + dir + ".tl"});
    EXPECT_EQ(r.code, 0) << r.err;
    return tuneJson(r);
  };
  const json e = tune(root_ + "/exhaustive", 4096, true);
  const json g = tune(root_ + "/guided", 4096, false);
  EXPECT_EQ(g["winner"], e["winner"]);
  EXPECT_EQ(firstCompiled(root_ + "/guided.tl"), kB);  // the key's default: the twin
  int twins = 0, split_timed = 0;
  for (const auto& c : g["candidates"]) {
    const std::string cfg = c.value("config", ""), reason = c.value("reason", "");
    if (cfg.find("KIND=tma") == std::string::npos || cfg.find("SPLIT_K=1") != std::string::npos)
      continue;
    if (reason.find("splits nothing at this shape") != std::string::npos) {
      EXPECT_EQ(c.value("runs", 0), 0) << c.dump();
      ++twins;
    }
    split_timed += c.value("runs", 0) > 0 ? 1 : 0;
  }
  EXPECT_GE(twins, 4);  // 4 of the first wave's 15 before
  EXPECT_EQ(split_timed, 0);
  EXPECT_EQ(g["compile_jobs"]["first_wave"].get<int>(), 15);
  EXPECT_LT(g["compiled"].get<int>(), e["compiled"].get<int>());
  // 4096x28672x4096: the split default is the key's default and compiles first.
  const json s = tune(root_ + "/split", 28672, false);
  EXPECT_EQ(firstCompiled(root_ + "/split.tl"), kD);
  int d_runs = -1;  // (configs of 64-row tiles leave a last round of 80 there: those are twins)
  for (const auto& c : s["candidates"])
    if (c.value("config", "") == kD) d_runs = c.value("runs", 0);
  EXPECT_GT(d_runs, 0);
}

}  // namespace
}  // namespace ktune
