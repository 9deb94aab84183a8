#include "tests/support/tools.h"

namespace ktune::testsupport {
namespace {
TestSettings& settings() {
  static TestSettings t;
  return t;
}
}  // namespace

Status init() {
  auto o = Options::fromEnv();  // a bad KTUNE_* value fails the whole suite at once
  if (!o.ok()) return o.status();
  auto t = testSettingsFromEnv();
  if (!t.ok()) return t.status();
  settings() = *t;
  return Status::Ok();
}

bool requireTools() { return settings().require_tools; }
bool quick() { return settings().test_quick; }

::testing::TestPartResult::Type toolMissingResult() {
  return requireTools() ? ::testing::TestPartResult::kFatalFailure
                        : ::testing::TestPartResult::kSkip;
}
const char* toolMissingHeader() {
  return requireTools() ? "KTUNE_REQUIRE_TOOLS=1, and a tool this test needs is missing"
                        : "Skipped";
}

}  // namespace ktune::testsupport
