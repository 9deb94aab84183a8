// `ktune predict` and range pre-tuning on the simulated device: a range tunes its chosen M values
// and reports the predicted regret of the rest; a recorded prediction is marked in `ktune db`,
// never taken as a measured winner (tuning the key measures it) and never pushed to a remote.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/subprocess.h"
#include "tests/unit/cli_fixture.h"

namespace ktune {
namespace {

class CliPredict : public Cli {};

TEST_F(CliPredict, RangeTunesChosenMsAndAPredictionIsNeverAMeasuredWinner) {
  const std::vector<std::string> sim = {"KTUNE_BACKEND=sim"};
  auto range = ktune({"tune", "gemm", "--m", "1..8", "--n", "64", "--k", "64", "--quiet"}, "", sim);
  ASSERT_EQ(range.code, 0) << range.err;
  EXPECT_HAS(range.out, "range M=1..8: tuned 6 (M=1,2,3,4,6,8); 2 other M run predicted configs");
  auto p = ktune({"predict", "gemm", "--m", "5", "--n", "64", "--k", "64", "--json", "--record"}, "",
                 sim);
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_HAS(p.out, "\"neighbours\":[{");
  EXPECT_HAS(p.out, "M=5,");
  auto ls = ktune({"db", "ls"}, "", sim);
  EXPECT_HAS(ls.out, "7 entries (6 measured, 1 predicted)");
  auto show = ktune({"db", "show", "gemm"}, "", sim);
  EXPECT_HAS(show.out, "PREDICTED (from tuned neighbours; not measured)");
  // Recording a prediction over a measured key is refused.
  auto over = ktune({"predict", "gemm", "--m", "2", "--n", "64", "--k", "64", "--record"}, "", sim);
  EXPECT_NE(over.code, 0);
  EXPECT_HAS(over.err, "measured");
  // Tuning the predicted key measures it: the prediction is not taken as its winner.
  auto t = ktune({"tune", "gemm", "--m", "5", "--n", "64", "--k", "64", "--json"}, "", sim);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_HAS(t.out, "\"from\": \"tuned\"");
  EXPECT_HAS(ktune({"db", "ls"}, "", sim).out, "7 entries (7 measured, 0 predicted)");
}

}  // namespace
}  // namespace ktune
