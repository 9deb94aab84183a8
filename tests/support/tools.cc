#include "tests/support/tools.h"

namespace ktune::testsupport {
namespace {
Options& settings() {
  static Options o;
  return o;
}
}  // namespace

Status init() {
  auto o = Options::fromEnv();
  if (!o.ok()) return o.status();
  settings() = std::move(o).value();
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
