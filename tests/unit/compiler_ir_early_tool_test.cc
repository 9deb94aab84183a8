// The IR front door's early-started tools (compiler/ir/early_tool.cc): a tool started before its
// input exists reads it whole through its FIFO (more than a pipe buffer too), a tool never fed
// exits when dropped, and a tool that fails or exits without reading reports its error instead of
// hanging. Deterministic: nothing here depends on which of the two processes gets ahead.
#include <gtest/gtest.h>

#include <string>

#include "compiler/ir/ir_util.h"

namespace ktune::ir_detail {
namespace {

CompileRequest request() {
  CompileRequest r;
  r.language = Language::kLlvmIr;
  r.arch = "sm_90a";
  r.source_name = "early_tool_test";
  return r;
}

TEST(EarlyTool, FeedsTheWholeInputThroughTheFifo) {
  auto t = EarlyTool::start({"cat", "{input}"});
  ASSERT_TRUE(t.ok()) << t.status().message();
  std::string big(1 << 20, 'x');  // 16x a pipe buffer
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = char('a' + (i / 4096) % 26);
  auto out = (*t)->run(big, request());
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, big);
  EXPECT_EQ((*t)->run("again", request()).status().code(), Code::kInternal);  // one run per tool
}

TEST(EarlyTool, EmptyInputAndUnusedToolsEnd) {
  auto t = EarlyTool::start({"cat", "{input}"});
  ASSERT_TRUE(t.ok());
  auto out = (*t)->run("", request());
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "");
  for (int i = 0; i < 3; ++i) {  // started, never fed: the destructor ends their input
    auto unused = EarlyTool::start({"cat", "{input}"});
    ASSERT_TRUE(unused.ok());
  }
}

TEST(EarlyTool, AToolThatFailsOrNeverReadsReportsItsError) {
  // Exits with an error before opening its input: run() must not wait for a reader forever.
  auto t = EarlyTool::start({"sh", "-c", "echo broken >&2; exit 3", "{input}"});
  ASSERT_TRUE(t.ok());
  auto out = (*t)->run(std::string(1 << 18, 'y'), request());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kCompileError);
  EXPECT_NE(out.status().message().find("broken"), std::string::npos) << out.status().message();
  // Opens its input, reads a little and exits: the rest of a large input is not waited on.
  auto head = EarlyTool::start({"head", "-c", "10", "{input}"});
  ASSERT_TRUE(head.ok());
  auto ten = (*head)->run(std::string(1 << 20, 'z'), request());
  ASSERT_TRUE(ten.ok()) << ten.status().message();
  EXPECT_EQ(*ten, std::string(10, 'z'));
  // A program that does not exist.
  auto missing = EarlyTool::start({"/nonexistent/ktune-tool", "{input}"});
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE((*missing)->run("x", request()).ok());
}

}  // namespace
}  // namespace ktune::ir_detail
