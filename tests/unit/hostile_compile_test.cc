// Hostile input through the public APIs: compilers given unknown archs or sources that do not
// compile (compiler/); cases skip visibly when no compiler is installed.
// Every case must give a clear Status (what was wrong, what to do), never a crash, a torn file or
// a lost entry. Runs without a GPU.
// First: it sets the diagnostics every hostile test needs before any other include.
#include "tests/unit/hostile_fixture.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

// ---- compilers -------------------------------------------------------------------------------

TEST(HostileCompile, UnknownOrMalformedArchIsAClearError) {
  for (const char* arch : {"", "sm_", "sm_1", "sm_9999", "gfx", "gfx1", "gfx9999", "x86_64",
                           "sm_90a;rm -rf /", "../sm_90"}) {
    auto c = compilerForArch(arch);
    if (c.ok()) {
      // An arch that picks a compiler must still be refused by it, before any compile happens.
      CompileRequest req;
      req.arch = arch;
      req.entry = "k";
      req.source = "extern \"C\" __global__ void k() {}";
      auto r = (*c)->compile(req);
      ASSERT_FALSE(r.ok()) << arch;
      EXPECT_NE(r.status().code(), Code::kOk);
      continue;
    }
    EXPECT_TRUE(c.status().code() == Code::kUnsupported || c.status().code() == Code::kUnavailable)
        << arch << ": " << c.status().toString();
    EXPECT_FALSE(c.status().message().empty());
  }
  auto c = compilerForArch("x86_64");
  EXPECT_HAS(c.status().message(), "unknown arch 'x86_64'");
  EXPECT_HAS(c.status().message(), "sm_90a");
}

// Every installed compiler: NVRTC (sm_90a), hiprtc (gfx90a), clang-19 (gfx942).
struct Installed {
  std::vector<std::pair<std::string, std::unique_ptr<Compiler>>> compilers;  // arch, compiler
  std::string why_none;
};
Installed installedCompilers() {
  Installed out;
  for (const char* arch : {"sm_90a", "gfx90a", "gfx942"}) {
    auto c = compilerForArch(arch);
    if (c.ok()) {
      out.compilers.emplace_back(arch, std::move(*c));
    } else {
      out.why_none += std::string(arch) + ": " + c.status().message() + "; ";
    }
  }
  return out;
}

TEST(HostileCompile, BrokenEmptyAndEntrylessSourcesAreClearErrors) {
  Installed all = installedCompilers();
  if (all.compilers.empty()) KTUNE_SKIP_WITHOUT_TOOL("no compiler: " << all.why_none);
  for (auto& [arch, compiler] : all.compilers) {
    SCOPED_TRACE(compiler->name() + " " + arch);
    CompileRequest req;
    req.arch = arch;
    req.source_name = "broken.cu";
    req.entry = "broken";
    req.source =
        "#include \"prelude.cuh\"\nKTUNE_KERNEL void broken(float* p) {\n  p[0] = undeclared_thing;\n}\n";
    auto r = compiler->compile(req);
    ASSERT_FALSE(r.ok()) << "compiled a kernel using an undeclared identifier";
    EXPECT_EQ(r.status().code(), Code::kCompileError) << r.status().toString();
    EXPECT_HAS(r.status().message(), "undeclared_thing");  // the log line
    EXPECT_HAS(r.status().message(), "broken.cu");

    req.source = "";
    req.entry = "nothing";
    r = compiler->compile(req);
    ASSERT_FALSE(r.ok()) << "an empty source has no kernel 'nothing'";
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
    EXPECT_HAS(r.status().message(), "empty source");

    req.source = "#include \"prelude.cuh\"\nKTUNE_KERNEL void present(float* p) { p[0] = 1.0f; }\n";
    req.entry = "absent";
    r = compiler->compile(req);
    ASSERT_FALSE(r.ok()) << "entry 'absent' is not in the source";
    EXPECT_HAS(r.status().message(), "absent");

    // Malformed request fields are refused before the compiler runs.
    req.entry = "present";
    req.defines = {{"BAD NAME", "1"}};
    r = compiler->compile(req);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
    req.defines = {{"OK", "1\n#include \"/etc/passwd\""}};
    r = compiler->compile(req);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
    req.defines.clear();
    req.entry = "";
    r = compiler->compile(req);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
    req.entry = "present";
    r = compiler->compile(req);
    EXPECT_TRUE(r.ok()) << "the valid kernel must still compile: " << r.status().toString();
  }
}

}  // namespace
}  // namespace ktune
