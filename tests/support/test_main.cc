// The main() of every ktune test program, in place of gtest_main. Its exit status is what ctest
// reads (tests/CMakeLists.txt sets SKIP_RETURN_CODE 77 and no output regex):
//   0   every test that ran passed (some may have skipped: tests/check_skips.sh counts those),
//   1   a test failed (whatever else skipped), or a child process wrote a sanitizer report,
//   2   the test environment (KTUNE_* variables) does not parse,
//   77  every test skipped and none failed: ctest shows the program as "Skipped".
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/support/child_sanitizer_logs.h"
#include "tests/support/tools.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ktune::Status env = ktune::testsupport::init();
  if (!env.ok()) {
    std::fprintf(stderr, "test environment: %s\n", env.toString().c_str());
    return 2;
  }
  ktune::testsupport::installChildSanitizerLogs();
  const int rc = RUN_ALL_TESTS();
  const std::string late = ktune::testsupport::childSanitizerLeftovers();
  if (!late.empty()) {
    std::fprintf(stderr, "child processes wrote sanitizer reports after the last test:\n%s",
                 late.c_str());
    return 1;
  }
  if (rc != 0) return 1;
  const ::testing::UnitTest& u = *::testing::UnitTest::GetInstance();
  if (u.test_to_run_count() > 0 && u.skipped_test_count() == u.test_to_run_count()) return 77;
  return 0;
}
