// tools/tune_detach.h: `ktune tune` forks so that its caller's wall ends with the report, not
// with the GPU's teardown. The parent's exit must carry the child's status however the child
// ends: reported, exited without reporting, or killed.
#include <gtest/gtest.h>

#include <csignal>
#include <unistd.h>

#include "tools/tune_detach.h"

namespace ktune::cli {
namespace {

TEST(TuneDetachDeathTest, TheParentExitsWithTheStatusTheChildReports) {
  EXPECT_EXIT(
      {
        detachTeardown();
        reportExitStatus(7);
        ::_exit(0);  // the teardown's own status is nobody's
      },
      ::testing::ExitedWithCode(7), "");
}

TEST(TuneDetachDeathTest, AChildThatExitsWithoutReportingPassesItsStatus) {
  EXPECT_EXIT(
      {
        detachTeardown();
        ::_exit(5);
      },
      ::testing::ExitedWithCode(5), "");
}

TEST(TuneDetachDeathTest, AKilledChildKillsTheParentWithTheSameSignal) {
  EXPECT_EXIT(
      {
        detachTeardown();
        ::raise(SIGKILL);
      },
      ::testing::KilledBySignal(SIGKILL), "");
}

TEST(TuneDetach, WithoutAForkReportingDoesNothing) {
  reportExitStatus(3);  // this process never forked: no pipe, streams untouched
  EXPECT_EQ(std::fprintf(stdout, "%s", ""), 0);
}

}  // namespace
}  // namespace ktune::cli
