// The guided search leaves out the GEMM kinds that cannot win at large prefill shapes on sm_90a
// (gemm_ops::dominatedKinds, FamilyExtras::guided_leave_out): the rule alone, and a cold tuning
// of 4096^3 on the simulated H100-like device (sm_90a, deterministic costs), guided against
// exhaustive: the same winner, no mma or skinny config compiled by the guided search (they were 6
// of its 14 compiles before), the first wave no larger than the smaller space needs on 7 threads
// and as large as before on 15, and the exhaustive search still measures them. At decode rows
// (M <= 16, a decode config live) the tma, wgmma and mma kinds are left out instead.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ops/gemm_configs.h"
#include "tests/unit/cli_fixture.h"

namespace ktune {
namespace {

using nlohmann::json;

std::vector<Config> someConfigs() {
  std::vector<Config> out;
  for (const char* s : {"BLOCK_N=256,CLUSTER_M=1,CONSUMERS=2,EPI_TMA=2,GROUP_M=16,KIND=tma,"
                        "NUM_STAGES=4,PINGPONG=0,SPLIT_K=1,WG_M=1",
                        "BLOCK_K=32,BLOCK_M=128,BLOCK_N=256,GROUP_M=8,KIND=mma,MIN_BLOCKS=0,"
                        "NUM_STAGES=4,SPLIT_K=1,WARPS_M=2,WARPS_N=4",
                        "KIND=skinny,NUM_WARPS=8,SK_DEPTH=2,SK_MT=8,SK_NT=1,SK_PF=1,SK_U=2,SPLIT_K=1",
                        "BLOCK_N=128,GROUP_M=8,KIND=wgmma,NUM_STAGES=4,SPLIT_K=1,WARPGROUPS=2"}) {
    auto c = Config::parse(s);
    EXPECT_TRUE(c.ok()) << s;
    if (c.ok()) out.push_back(*c);
  }
  return out;
}

TEST(GemmDominatedKinds, MmaAndSkinnyLeftOutWhereTheTmaKindFillsTheDevice) {
  const std::vector<Config> cs = someConfigs();
  ASSERT_EQ(cs.size(), 4u);
  // 4096 x 4096: 1024 tiles of 128 x 128 on 132 SMs, 7 waves.
  auto why = gemm_ops::dominatedKinds(cs, 4096, 4096, 132);
  ASSERT_EQ(why.size(), cs.size());
  EXPECT_EQ(why[0], "");  // tma
  EXPECT_NE(why[1].find("mma kind"), std::string::npos) << why[1];
  EXPECT_NE(why[2].find("skinny kind"), std::string::npos) << why[2];
  EXPECT_EQ(why[3], "");  // wgmma stays
  // 2048 x 2048: 256 tiles, under 4 waves: every kind stays. So at decode rows (M = 16) without a
  // decode config among the live ones.
  for (auto [m, n] : {std::pair<int64_t, int64_t>{2048, 2048}, {16, 28672}, {512, 512}})
    for (const std::string& w : gemm_ops::dominatedKinds(cs, m, n, 132)) EXPECT_EQ(w, "") << m;
  // No tma config among the live ones (another arch, or a call the tma kind refuses): none.
  const std::vector<Config> no_tma(cs.begin() + 1, cs.end());
  for (const std::string& w : gemm_ops::dominatedKinds(no_tma, 4096, 4096, 132)) EXPECT_EQ(w, "");
}

TEST(GemmDominatedKinds, LargeTileKindsLeftOutAtDecodeRows) {
  std::vector<Config> cs = someConfigs();
  auto dc = Config::parse("DC_DEPTH=2,DC_GRID=4,DC_MT=2,DC_NT=2,DC_PF=1,DC_U=2,DC_WARPS=4,DC_WG=2,"
                          "DC_XR=0,KIND=decode");
  ASSERT_TRUE(dc.ok());
  cs.push_back(*dc);
  // 16 and 1 rows: tma, mma and wgmma out; skinny and decode stay.
  for (int64_t m : {16, 1}) {
    auto why = gemm_ops::dominatedKinds(cs, m, 28672, 132);
    ASSERT_EQ(why.size(), cs.size());
    EXPECT_NE(why[0].find("tma kind: the decode kind covers"), std::string::npos) << why[0];
    EXPECT_NE(why[1].find("mma kind"), std::string::npos) << why[1];
    EXPECT_EQ(why[2], "") << m;  // skinny
    EXPECT_NE(why[3].find("wgmma kind"), std::string::npos) << why[3];
    EXPECT_EQ(why[4], "") << m;  // decode
  }
  // 32 rows (the tma kind wins some 64- and 128-row keys), the gate/up pair, no tma config (another
  // arch): every kind stays.
  for (const std::string& w : gemm_ops::dominatedKinds(cs, 32, 28672, 132)) EXPECT_EQ(w, "");
  for (const std::string& w : gemm_ops::dominatedKinds(cs, 16, 28672, 132, true)) EXPECT_EQ(w, "");
  const std::vector<Config> no_tma(cs.begin() + 1, cs.end());
  for (const std::string& w : gemm_ops::dominatedKinds(no_tma, 16, 28672, 132)) EXPECT_EQ(w, "");
}

json tuneJson(const CliRun& r) {
  json j = json::parse(r.out, nullptr, false);
  EXPECT_TRUE(j.is_object()) << r.out << r.err;
  return j;
}

std::string kindOf(const json& c) {
  const std::string s = c.value("config", "");
  const size_t p = s.find("KIND=");
  return p == std::string::npos ? "" : s.substr(p + 5, s.find(',', p) - p - 5);
}

TEST_F(Cli, TheGuidedSearchCompilesNoDominatedKindAt4096Cubed) {
  // 4096^3 NT on the simulated device with `threads` compile threads.
  auto tune4096 = [&](const std::string& dir, int threads, bool exhaustive) {
    std::vector<std::string> args = {"tune", "gemm", "--m", "4096", "--n", "4096", "--k", "4096",
                                     "--layout", "NT", "--json"};
    if (exhaustive) args.insert(args.end(), {"--search", "exhaustive"});
    CliRun r = ktune(args, dir, {"KTUNE_BACKEND=sim", "KTUNE_COMPILE_THREADS=" + std::to_string(threads)});
    EXPECT_EQ(r.code, 0) << r.err;
    return tuneJson(r);
  };
  const json e = tune4096(root_ + "/exhaustive", 7, true);
  int mma_measured = 0;
  for (const auto& c : e["candidates"])
    mma_measured += kindOf(c) == "mma" && c.value("runs", 0) > 0 ? 1 : 0;
  EXPECT_GE(mma_measured, 1);  // the exhaustive search still times them
  for (int threads : {7, 15}) {
    const json g = tune4096(root_ + "/guided" + std::to_string(threads), threads, false);
    EXPECT_EQ(g["winner"], e["winner"]) << threads;
    int left_out = 0;
    for (const auto& c : g["candidates"]) {
      const std::string k = kindOf(c), reason = c.value("reason", "");
      if (k != "mma" && k != "skinny") continue;
      EXPECT_EQ(c.value("runs", 0), 0) << c.dump();
      EXPECT_NE(reason.find("left out by the guided search"), std::string::npos) << c.dump();
      ++left_out;
    }
    EXPECT_GE(left_out, 12) << threads;  // every mma and skinny config of the space
    const int first = g["compile_jobs"]["first_wave"].get<int>();
    if (threads == 7) {
      // 7 threads: the first wave is min_n of the smaller space (8), not 14 (of which 6 were mma):
      // fewer compiles than a second round of 7 would take.
      EXPECT_EQ(first, 8);
      EXPECT_LT(g["compiled"].get<int>(), 14);
    } else {
      // 15 threads: the wave keeps the size the whole space had (15), of the kinds that can win.
      EXPECT_EQ(first, 15);
    }
    EXPECT_LT(g["compiled"].get<int>(), e["compiled"].get<int>());
  }
}

}  // namespace
}  // namespace ktune

namespace ktune {
namespace {

// A 16-row key on the simulated H100-like device: the guided search compiles no tma, wgmma or mma
// config (left out with their reason, no runs), the exhaustive search still times them, and the
// guided winner is as fast (the simulated device's cost model is bound by the weights' bytes there:
// every kind ties, and which of the tied wins is the order's).
TEST_F(Cli, TheGuidedSearchCompilesOnlyFewRowKindsAtDecodeRows) {
  auto tune = [&](const std::string& dir, bool exhaustive) {
    std::vector<std::string> args = {"tune", "gemm", "--m", "16", "--n", "28672", "--k", "4096",
                                     "--layout", "NT", "--json"};
    if (exhaustive) args.insert(args.end(), {"--search", "exhaustive"});
    CliRun r = ktune(args, dir, {"KTUNE_BACKEND=sim"});
    EXPECT_EQ(r.code, 0) << r.err;
    return tuneJson(r);
  };
  const json e = tune(root_ + "/exhaustive", true), g = tune(root_ + "/guided", false);
  EXPECT_LE(g["winner_median_ms"].get<double>(), 1.01 * e["winner_median_ms"].get<double>());
  int large_timed = 0, left_out = 0, few_row = 0;
  for (const auto& c : e["candidates"]) {
    const std::string k = kindOf(c);
    large_timed += (k == "tma" || k == "mma" || k == "wgmma") && c.value("runs", 0) > 0 ? 1 : 0;
  }
  EXPECT_GE(large_timed, 1);
  for (const auto& c : g["candidates"]) {
    const std::string k = kindOf(c);
    if (k == "decode" || k == "skinny") few_row += c.value("runs", 0) > 0 ? 1 : 0;
    if (k != "tma" && k != "mma" && k != "wgmma") continue;
    if (c.value("status", "") != "ok") continue;  // a config the shape refuses (CLUSTER_M 4)
    EXPECT_EQ(c.value("runs", 0), 0) << c.dump();
    EXPECT_NE(c.value("reason", "").find("left out by the guided search"), std::string::npos)
        << c.dump();
    ++left_out;
  }
  EXPECT_GE(left_out, 40);
  EXPECT_GE(few_row, 8);
  EXPECT_LT(g["compiled"].get<int>(), e["compiled"].get<int>());
}

}  // namespace
}  // namespace ktune
