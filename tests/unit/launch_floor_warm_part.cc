// A warm race against its cold run (race_stop.h: owePickClasses): with the code objects in the
// store, a whole first wave comes back from the pool as one batch, where a cold run times its
// configs one by one as their compiles end; the race must not reach (and compile) configs its
// cold run did not. Part of launch_floor_test (the simulated race: launch_floor_harness.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/launch_floor_harness.h"

namespace ktune {
namespace {

using floor_test::TmpDir;
using floor_test::tuneConfigs;

std::set<std::string> reached(const TuneReport& rep) {
  std::set<std::string> out;
  for (const CandidateResult& c : rep.candidates)
    if (c.source == "jit" && c.reason.rfind("not reached", 0) != 0) out.insert(c.config);
  return out;
}

// A prefill key's shape of the race on the GPU (bench/NOTES.md, issue 34): a vendor candidate
// (3 us) leads; the first wave (18 of 88 configs on 20 compile threads) holds the default, 16
// configs of class B=1 at 3.6 us (their compiles held until two grids were launched: they end
// after the others) and one config of class B=2 at the vendor's edge (3.04 us), whose compile
// ends first. Cold, that config is timed second, before a stall's worth of the prior's order,
// and owes nothing; warm, the store hands the whole wave out at once. The rest of B=2 (10
// configs, 3.1 us) and 60 more of B=1 are ranked after the wave.
std::vector<Config> warmWaveConfigs() {
  std::vector<Config> configs;
  configs.push_back(Config{{"B", int64_t(1)}, {"GRID", int64_t(33)}, {"NS", int64_t(3500)}});
  for (int k = 1; k <= 16; ++k) {
    if (k == 9)
      configs.push_back(Config{{"B", int64_t(2)}, {"GRID", int64_t(264)}, {"NS", int64_t(3040)}});
    configs.push_back(Config{{"B", int64_t(1)}, {"GATE", int64_t(2)}, {"GRID", int64_t(132 * k)},
                             {"NS", int64_t(3600 + k)}});
  }
  for (int g = 140; g < 200; ++g)
    configs.push_back(Config{{"B", int64_t(1)}, {"GRID", int64_t(g)}, {"NS", int64_t(3700)}});
  for (int g = 34; g < 44; ++g)
    configs.push_back(Config{{"B", int64_t(2)}, {"GRID", int64_t(g)}, {"NS", int64_t(3100)}});
  return configs;
}

TEST(LaunchFloor, AWarmRaceReachesNoConfigItsColdRunDidNot) {
  TmpDir dir;
  auto cold = tuneConfigs(dir, warmWaveConfigs(), {"B"}, 0, 1, 0, 1, 3000, 20);
  ASSERT_TRUE(cold.ok()) << cold.status().toString();
  const std::set<std::string> cold_reached = reached(*cold);
  EXPECT_LE(cold_reached.size(), 22u) << cold->tree();  // the wave and what ran at the stop
  for (int run = 0; run < 2; ++run) {  // warm: the store as the cold run left it, a fresh database
    ASSERT_EQ(std::remove((dir.path + "/db.json").c_str()), 0);
    auto warm = tuneConfigs(dir, warmWaveConfigs(), {"B"}, 0, 1, 0, 1, 3000, 20);
    ASSERT_TRUE(warm.ok()) << warm.status().toString();
    EXPECT_EQ(warm->compiled, 0) << warm->tree();
    for (const std::string& c : reached(*warm))
      EXPECT_TRUE(cold_reached.count(c)) << c << " raced warm, not cold\n" << warm->tree();
    EXPECT_EQ(warm->winner, cold->winner);
  }
}

}  // namespace
}  // namespace ktune
