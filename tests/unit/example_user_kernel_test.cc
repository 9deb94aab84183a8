// examples/user_kernel.cc, run as a user would with no GPU: KTUNE_BACKEND=sim sends it to ktune's
// simulated backend, where it registers its own kernel family, tunes on the first call, checks
// every element against its host reference and prints the winner. A second run in the same cache
// is a database hit: same winner, no tuning run. Built only when the examples are
// (tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <regex>
#include <string>

#include "base/fs.h"
#include "base/subprocess.h"

namespace ktune {
namespace {

struct ExampleRun {
  int code = -1;
  std::string out, err;
};

ExampleRun runExample(const std::string& cache, const std::string& n) {
  auto r = runProcess({"env", "KTUNE_BACKEND=sim", "KTUNE_CACHE_DIR=" + cache, "KTUNE_VERBOSE=1",
                       KTUNE_USER_KERNEL_PATH, n},
                      "", 300000);
  ExampleRun out;
  if (!r.ok()) {
    ADD_FAILURE() << r.status().toString();
    return out;
  }
  EXPECT_FALSE(r->signaled) << "signal " << r->term_signal << "\n" << r->err;
  out.code = r->signaled ? -1 : r->exit_code;
  out.out = r->out;
  out.err = r->err;
  return out;
}

TEST(ExampleUserKernel, TunesAndComputesOnTheSimulatedBackend) {
  char tmpl[] = "/tmp/ktune-example-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string cache = std::string(tmpl) + "/cache";
  ExampleRun first = runExample(cache, "5003");
  EXPECT_EQ(first.code, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("running the same registration on the simulated backend"),
            std::string::npos)
      << first.out;
  // "key n=8192 -> BLOCK=..,VEC=..,WAVES=.. (memory), median ... ms; 0 of 5003 elements wrong"
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      first.out, m,
      std::regex(
          R"(key (\S+) -> (BLOCK=\d+,VEC=\d+,WAVES=\d+) \((\w+)\), median [0-9.]+ ms; 0 of 5003 elements wrong)")))
      << first.out << first.err;
  EXPECT_EQ(m[3].str(), "memory") << first.out;
  // KTUNE_VERBOSE=1: the tuning run's summary line; every config compiled or a duplicate.
  EXPECT_NE((first.out + first.err).find("example_scaled_add [n=8192]: 24 candidates"),
            std::string::npos)
      << first.out << first.err;
  const std::string config = m[2].str();

  // Same size bucket in a new process: the tuning database answers, with the same winner.
  ExampleRun second = runExample(cache, "5003");
  EXPECT_EQ(second.code, 0) << second.out << second.err;
  ASSERT_TRUE(std::regex_search(
      second.out, m, std::regex(R"(-> (BLOCK=\d+,VEC=\d+,WAVES=\d+) \((\w+)\), .* 0 of 5003)")))
      << second.out;
  EXPECT_EQ(m[1].str(), config);
  EXPECT_EQ(m[2].str(), "database") << second.out;  // loaded from the database on the first call
  EXPECT_EQ((second.out + second.err).find("candidates"), std::string::npos)
      << "the second process tuned again:\n"
      << second.out << second.err;

  ExampleRun bad = runExample(cache, "-1");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("usage:"), std::string::npos) << bad.err;
  (void)removeTree(tmpl);
}

}  // namespace
}  // namespace ktune
