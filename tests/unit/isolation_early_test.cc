// The guided race's first wave timed before the vendor round (Options::early_jit,
// autotune/tuning_run_early.cc), through the real ktune-worker on the simulated device: family
// "iso_early" (isolation_families.h) races 18 configs, one of them the fastest and wrong (MODE=7),
// beside one vendor candidate. A warm run (its first wave in the store) sends the wave before the
// vendor candidate, unchecked; the checks (a superset of round 1's) come before the vendor round,
// so the wrong config fails as it did before and never wins, with finalists off (no later check).
// A second key of the same process times the vendor candidate first again (nothing to hide).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "autotune/results.h"
#include "tests/unit/isolation_test_env.h"

namespace ktune {
namespace {

using namespace isotest::env;

// The timeline's lines (EPOCH_MS PID LABEL DETAIL) from `from` on.
std::vector<std::string> timelineFrom(const std::string& path, size_t from) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  if (from >= lines.size()) return {};
  return std::vector<std::string>(lines.begin() + static_cast<long>(from), lines.end());
}

bool hasLabel(const std::string& line, const std::string& label) {
  return line.find(" " + label + " ") != std::string::npos ||
         (line.size() >= label.size() + 1 &&
          line.compare(line.size() - label.size() - 1, std::string::npos, " " + label) == 0);
}

// Index of the first line with `label` (and `detail` in it), or -1.
long firstIndex(const std::vector<std::string>& lines, const std::string& label,
                const std::string& detail = "") {
  for (size_t i = 0; i < lines.size(); ++i)
    if (hasLabel(lines[i], label) && lines[i].find(detail) != std::string::npos) return long(i);
  return -1;
}

TEST(IsolationEarlyWave, AWarmRaceTimesItsFirstWaveBeforeTheVendorAndAWrongConfigNeverWins) {
  IsoEnv env;
  const std::string tl = env.dir + "/timeline.txt";
  // Read once per process, at its first mark: this program makes none before.
  ASSERT_EQ(::setenv("KTUNE_TIMELINE", tl.c_str(), 1), 0);
  size_t seen = 0;
  std::vector<std::string> lines;
  auto tune = [&](bool early, std::vector<std::string>* lines) -> TuneReport {
    (void)removeTree(env.dir + "/db");  // a fresh database: the key is tuned again
    auto o = env.options();
    o.options.early_jit = early;
    Tuned t = make(env, "iso_early", o);
    auto p = isotest::makeIsoProblem(env.backend.get(), 4096);
    auto rep = t.fam.tune(*p);
    EXPECT_TRUE(rep.ok()) << rep.status().toString() << "\n" << env.log.str();
    // A second key in the same process: its worker's vendor library is set up already.
    auto p2 = isotest::makeIsoProblem(env.backend.get(), 8192);
    auto rep2 = t.fam.tune(*p2);
    EXPECT_TRUE(rep2.ok()) << rep2.status().toString();
    *lines = timelineFrom(tl, seen);
    seen += lines->size();
    return rep.ok() ? *rep : TuneReport{};
  };
  auto checkReport = [&lines](const TuneReport& rep, const char* what) {
    SCOPED_TRACE(::testing::Message() << what << ": the run's timeline:\n" << [&] {
      std::string all;
      for (const auto& l : lines) all += l.substr(0, 200) + "\n";
      return all;
    }());
    EXPECT_EQ(rep.search, "guided") << what;
    EXPECT_EQ(rep.winner, "BLOCK=256,MODE=0") << what;
    const CandidateResult* bad = find(rep, "BLOCK=256,MODE=7");
    ASSERT_NE(bad, nullptr) << what;
    EXPECT_NE(bad->status, Code::kOk) << what << ": the wrong config passed";
    EXPECT_FALSE(rejectedAsSlower(*bad)) << what << ": " << bad->reason;
    const CandidateResult* v = find(rep, "fake:algo=0");
    ASSERT_NE(v, nullptr) << what;
    EXPECT_EQ(v->status, Code::kOk) << what << ": " << v->reason;
  };
  // Cold: nothing in the store, the vendor candidate first as always.
  checkReport(tune(true, &lines), "cold");
  EXPECT_LT(firstIndex(lines, "race_early"), 0);
  // Warm: the first wave before the vendor round, the checks after it.
  checkReport(tune(true, &lines), "warm");
  const long early = firstIndex(lines, "race_early"), vendor = firstIndex(lines, "race_vendor");
  ASSERT_GE(early, 0) << "the warm run did not time its first wave early";
  long early_runs = 0;
  for (const auto& l : lines) early_runs += hasLabel(l, "race_early") ? 1 : 0;
  EXPECT_EQ(early_runs, 1) << "the second key timed its wave early too";
  ASSERT_GT(vendor, early);
  // The checks before the vendor round (its default then runs as when it came first).
  const long checked = firstIndex(lines, "race_early_checked");
  EXPECT_GT(checked, early);
  EXPECT_LT(checked, vendor);
  // The wrong config was the wave's bar (timed first, the fastest): the ones it stopped as slower
  // were timed again under round 1's rules once it had failed its check.
  const long again = firstIndex(lines, "race_early_again");
  EXPECT_GT(again, checked);
  EXPECT_LT(again, vendor);
  // The worker timed a JIT config before the vendor's.
  const long jit_bench = firstIndex(lines, "bench", "BLOCK=");
  const long vendor_bench = firstIndex(lines, "bench", "fake:algo=0");
  ASSERT_GE(jit_bench, 0);
  EXPECT_LT(jit_bench, vendor_bench);
  // KTUNE_EARLY_JIT=0: the vendor candidate first again.
  checkReport(tune(false, &lines), "early_jit off");
  EXPECT_LT(firstIndex(lines, "race_early"), 0);
  EXPECT_LT(firstIndex(lines, "bench", "fake:algo=0"), firstIndex(lines, "bench", "BLOCK="));
}

}  // namespace
}  // namespace ktune
