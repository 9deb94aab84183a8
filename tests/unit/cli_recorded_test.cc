// `ktune tune` with a tuning database that already holds the key (GEMM, a range of GEMM keys, the
// row-wise ops): reported from the database with no tuning run unless the run asks to measure
// again; and the start-up knobs read by Options::fromEnv (KTUNE_TUNER_CONNECTIONS, KTUNE_LT_PRELOAD).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/unit/cli_fixture.h"

namespace ktune {
namespace {

using nlohmann::json;

const std::vector<std::string> kSim = {"KTUNE_BACKEND=sim"};

// A key the database holds is reported from it by a plain `ktune tune gemm`: the same winner and
// candidates, from = "database", nothing compiled, no context awaited, no inputs, no tuning run;
// --retune, or an option that shapes the search (--kinds), measures it again; another key tunes.
TEST_F(Cli, TuneGemmReportsARecordedKeyFromTheDatabase) {
  const std::vector<std::string> args = {"tune", "gemm", "--m", "32", "--n", "48", "--k", "64",
                                         "--layout", "NT", "--json"};
  auto from = [&](std::vector<std::string> a, const std::vector<std::string>& env = kSim) {
    CliRun r = ktune(a, "", env);
    EXPECT_EQ(r.code, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out;
    return j.is_object() ? j : json::object();
  };
  const json first = from(args);
  EXPECT_EQ(first.value("from", ""), "tuned");
  ASSERT_FALSE(first.value("winner", "").empty());
  const std::string tl = root_ + "/again.tl";
  const json again = from(args, {"KTUNE_BACKEND=sim", "KTUNE_TIMELINE=" + tl});
  EXPECT_EQ(again.value("from", ""), "database");
  EXPECT_TRUE(again.value("from_database", false));
  EXPECT_EQ(again["winner"], first["winner"]);
  EXPECT_EQ(again["candidates"].size(), first["candidates"].size());
  EXPECT_EQ(again.value("compiled", -1), 0);
  const auto labels = timelineLabels(tl);
  EXPECT_GE(indexOf(labels, "gemm_op"), 0);
  for (const char* none : {"context", "buffers", "run_start", "compile_issued precompile"})
    EXPECT_EQ(indexOf(labels, none), -1) << none;
  std::vector<std::string> retune = args, kinds = args;
  retune.push_back("--retune");
  kinds.insert(kinds.end(), {"--kinds", "mma"});
  EXPECT_EQ(from(retune).value("from", ""), "tuned");
  EXPECT_EQ(from(kinds).value("from", ""), "tuned");
  std::vector<std::string> other = args;
  other[3] = "33";
  EXPECT_EQ(from(other).value("from", ""), "tuned");
  CliRun text = ktune({"tune", "gemm", "--m", "32", "--n", "48", "--k", "64", "--layout", "NT"}, "", kSim);
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_HAS(text.out, "(from the tuning database; --retune measures again)");
}

// The row-wise ops as the GEMM above: a key the database holds (its weight and residual part of
// it) is reported from it with no tuning run; --retune, KTUNE_SEARCH or another key tunes.
TEST_F(Cli, TuneRowwiseReportsARecordedKeyFromTheDatabase) {
  auto from = [&](std::vector<std::string> a, const std::vector<std::string>& env = kSim) {
    a.push_back("--json");
    CliRun r = ktune(a, "", env);
    EXPECT_EQ(r.code, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out;
    return j.is_object() ? j : json::object();
  };
  const std::vector<std::string> rms = {"tune", "rmsnorm", "--rows", "4", "--cols", "256", "--residual"};
  const std::vector<std::string> silu = {"tune", "silu_mul", "--rows", "4", "--cols", "256"};
  for (const auto& args : {rms, silu}) {
    SCOPED_TRACE(args[1]);
    const json first = from(args);
    EXPECT_EQ(first.value("from", ""), "tuned");
    const std::string tl = root_ + "/" + args[1] + ".tl";
    const json again = from(args, {"KTUNE_BACKEND=sim", "KTUNE_TIMELINE=" + tl});
    EXPECT_EQ(again.value("from", ""), "database");
    EXPECT_EQ(again["winner"], first["winner"]);
    EXPECT_EQ(again["candidates"].size(), first["candidates"].size());
    EXPECT_EQ(indexOf(timelineLabels(tl), "run_start"), -1);
    std::vector<std::string> retune = args;
    retune.push_back("--retune");
    EXPECT_EQ(from(retune).value("from", ""), "tuned");
    EXPECT_EQ(from(args, {"KTUNE_BACKEND=sim", "KTUNE_SEARCH=guided"}).value("from", ""), "tuned");
  }
  std::vector<std::string> plain = rms;
  plain.pop_back();  // no residual: another key
  EXPECT_EQ(from(plain).value("from", ""), "tuned");
  EXPECT_EQ(from(plain).value("from", ""), "database");
}

// Several keys (a range of M), one of them recorded: that one is reported from the database in
// its place, the others are tuned (the look-ahead compiles for those only); run again, every key
// comes from the database.
TEST_F(Cli, TuneGemmRangeTunesOnlyTheKeysNotRecorded) {
  auto froms = [&](const std::string& m) {
    CliRun r = ktune({"tune", "gemm", "--m", m, "--n", "48", "--k", "64", "--layout", "NT", "--json",
                      "--quiet"}, "", kSim);
    EXPECT_EQ(r.code, 0) << r.err;
    std::vector<std::string> out;
    std::istringstream in(r.out);
    for (json j; (in >> std::ws).peek() != EOF;) {
      in >> j;
      if (j.contains("from")) out.push_back(j["from"].get<std::string>());
    }
    return out;
  };
  EXPECT_EQ(froms("32"), std::vector<std::string>({"tuned"}));
  EXPECT_EQ(froms("32..64"), std::vector<std::string>({"database", "tuned", "tuned"}));
  EXPECT_EQ(froms("32..64"), std::vector<std::string>({"database", "database", "database"}));
}

// KTUNE_TUNER_CONNECTIONS / KTUNE_WORKER_CONNECTIONS (the tuning process's and its early worker's
// CUDA_DEVICE_MAX_CONNECTIONS) and KTUNE_LT_PRELOAD
// (when cuBLASLt loads), read by Options::fromEnv: a value outside their range is refused with it
// named; good ones run (an empty value is unset, as for every variable).
TEST_F(Cli, StartKnobsRefuseABadValue) {
  const std::vector<std::string> args = {"tune", "gemm", "--m", "32", "--n", "48", "--k", "64"};
  for (const std::string var : {"KTUNE_TUNER_CONNECTIONS", "KTUNE_WORKER_CONNECTIONS"}) {
    for (const char* bad : {"-1", "33", "two", "3x"}) {
      CliRun r = ktune(args, "", {"KTUNE_BACKEND=sim", var + "=" + bad});
      EXPECT_NE(r.code, 0) << var << bad;
      EXPECT_HAS(r.err, var + "='" + bad + "': expected 0 to 32");
    }
  }
  CliRun r = ktune(args, "", {"KTUNE_BACKEND=sim", "KTUNE_LT_PRELOAD=later"});
  EXPECT_NE(r.code, 0);
  EXPECT_HAS(r.err, "KTUNE_LT_PRELOAD='later': expected after or early");
  r = ktune(args, "", {"KTUNE_BACKEND=sim", "KTUNE_WORKER_CONTEXT=late"});
  EXPECT_NE(r.code, 0);
  EXPECT_HAS(r.err, "KTUNE_WORKER_CONTEXT='late': expected beside or first");
  for (const char* ok : {"KTUNE_TUNER_CONNECTIONS=0", "KTUNE_TUNER_CONNECTIONS=1", "KTUNE_TUNER_CONNECTIONS=",
                         "KTUNE_WORKER_CONNECTIONS=0", "KTUNE_WORKER_CONNECTIONS=2",
                         "KTUNE_LT_PRELOAD=early", "KTUNE_LT_PRELOAD=after", "KTUNE_WORKER_CONTEXT=first"}) {
    r = ktune(args, "", {"KTUNE_BACKEND=sim", ok});
    EXPECT_EQ(r.code, 0) << ok << "\n" << r.err;
  }
}

}  // namespace
}  // namespace ktune
