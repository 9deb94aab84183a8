// examples/c_compiler.c, run as a user would with no GPU (simulated backend): a toy compiler hands
// ktune one generated PTX module per config through the C API's source_fn; the config it refuses
// fails alone, the fastest simulated config wins and the result is checked. A second run in the
// same cache asks for the winner's module only (a database hit, its binary from the store). The
// PTX it wrote for every config is then compiled for sm_90a by the IR front door, with resources.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/compiler.h"
#include "compiler/ir/ir_util.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

std::string runExample(const std::string& cache, const std::string& emit) {
  auto r = runProcess({"env", "KTUNE_CACHE_DIR=" + cache, KTUNE_C_COMPILER_PATH, "sim", emit}, "",
                      300000);
  if (!r.ok()) {
    ADD_FAILURE() << r.status().toString();
    return "";
  }
  EXPECT_FALSE(r->signaled) << r->err;
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  return r->out;
}

TEST(ExampleCCompiler, GeneratedModulesAreTunedCachedAndCompile) {
  char tmpl[] = "/tmp/ktune-ccomp-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, emit = dir + "/ptx";
  ASSERT_TRUE(makeDirs(emit, 0700).ok());
  const std::string first = runExample(dir + "/cache", emit);
  EXPECT_NE(first.find("-> winner BLOCK=256,VEC=2"), std::string::npos) << first;
  EXPECT_NE(first.find("modules generated: 11; result ok"), std::string::npos) << first;
  EXPECT_NE(first.find("refused by the generator"), std::string::npos) << first;
  const std::string second = runExample(dir + "/cache", emit);
  EXPECT_NE(second.find("-> winner BLOCK=256,VEC=2"), std::string::npos) << second;
  EXPECT_NE(second.find("modules generated: 1; result ok"), std::string::npos) << second;

  auto files = listDir(emit);
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(files->size(), 11u);
  const auto& tc = ir_detail::toolchain();
  if (!tc.jitlink && tc.ptxas.empty()) {
    (void)removeTree(dir);
    KTUNE_SKIP_WITHOUT_TOOL("no nvJitLink or ptxas (CUDA toolkit) to compile the generated PTX");
  }
  auto compiler = openIrCompiler();
  ASSERT_TRUE(compiler.ok());
  for (const std::string& name : *files) {
    auto req = requestFromFile(emit + "/" + name, "sm_90a", "gen_axpy", "");
    ASSERT_TRUE(req.ok()) << req.status().toString();
    auto co = (*compiler)->compile(*req);
    ASSERT_TRUE(co.ok()) << name << ": " << co.status().toString();
    EXPECT_GT(co->resources.registers, 0) << name;
  }
  (void)removeTree(dir);
}

}  // namespace
}  // namespace ktune
