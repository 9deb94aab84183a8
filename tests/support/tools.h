// What ktune's tests may assume about the machine they run on (tests/README.md).
//
// A test that needs a compiler or tool (NVRTC, hiprtc/comgr, clang-19, a capability) says so with
// KTUNE_SKIP_WITHOUT_TOOL(reason): by default the test skips, visibly; with KTUNE_REQUIRE_TOOLS=1
// (CI, where .ci/run installs every such tool) it fails instead, so a broken install or a tool
// that stopped being found can never hide behind a skip. A skip for any other reason (no GPU in
// a tests/gpu program) uses GTEST_SKIP directly.
#pragma once

#include <gtest/gtest.h>

#include "base/options.h"
#include "base/status.h"

namespace ktune::testsupport {

// Reads the test settings from the environment once (test_main.cc calls it before any test).
Status init();
// KTUNE_REQUIRE_TOOLS=1: a missing tool is a failure.
bool requireTools();
// KTUNE_TEST_QUICK=1: the slowest sweeps sample their spaces; unset or 0: they cover them all.
bool quick();
// How KTUNE_SKIP_WITHOUT_TOOL ends a test: a skip, or a fatal failure under KTUNE_REQUIRE_TOOLS=1.
::testing::TestPartResult::Type toolMissingResult();
const char* toolMissingHeader();

}  // namespace ktune::testsupport

// Ends the current test (a void function: TEST body, SetUp, or a helper called like an ASSERT)
// as skipped, or as failed under KTUNE_REQUIRE_TOOLS=1. Streams like GTEST_SKIP:
//   if (!c.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << c.status().message());
// One statement with no if/else inside (gtest's own GTEST_SKIP form), so it nests without braces.
#define KTUNE_SKIP_WITHOUT_TOOL(why)                                                      \
  return GTEST_MESSAGE_AT_(__FILE__, __LINE__, ::ktune::testsupport::toolMissingHeader(), \
                           ::ktune::testsupport::toolMissingResult())                     \
         << why
