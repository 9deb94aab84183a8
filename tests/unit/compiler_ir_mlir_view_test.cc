// The MLIR view of every C++ template on gfx90a, gfx942 and sm_90a (one config each: the
// template's default) is MLIR that mlir-opt-19 parses; and `ktune compile --dump mlir` exits
// non-zero when it cannot make the view it was asked for.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/compiler.h"
#include "compiler/ir/ir_util.h"
#include "compiler/llvm/clang_compiler.h"
#include "templates/catalog.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

struct ViewCase {
  std::string tmpl, arch;
};

std::vector<ViewCase> everyTemplateAndArch() {
  std::vector<ViewCase> out;
  for (const auto& t : templates::catalog())
    for (const char* arch : {"gfx90a", "gfx942", "sm_90a"})
      if (templates::defaultDefines(t, arch).ok()) out.push_back({t.name, arch});
  return out;
}

// The view as the compilers make it (clang's LLVM IR of the instantiated template, imported),
// without compiling the binary too: the part that failed before is the view.
Expected<std::string> viewOf(const std::string& clang, const ViewCase& c) {
  KTUNE_ASSIGN_OR_RETURN(auto t, templates::findTemplate(c.tmpl));
  CompileRequest req;
  req.source = std::string(templates::sourceOf(t));
  req.source_name = t.source_file;
  req.entry = t.entry;
  req.arch = c.arch;
  KTUNE_ASSIGN_OR_RETURN(req.defines, templates::defaultDefines(t, c.arch));
  KTUNE_ASSIGN_OR_RETURN(std::string ir, clang_detail::emitLlvm(clang, req, 300000));
  const std::string view = clang_detail::mlirView("", ir, 300000);
  if (view.rfind(kMlirViewUnavailable, 0) == 0) return Status::CompileError(view);
  return view;
}

TEST(MlirView, EveryTemplateOnEveryArchParses) {
  const std::string clang = clang_detail::findClang("");
  const auto& tc = ir_detail::toolchain();
  if (clang.empty() || tc.mlir_translate.empty() || tc.mlir_opt.empty())
    KTUNE_SKIP_WITHOUT_TOOL("clang-19 / mlir-19-tools not installed");
  const auto cases = everyTemplateAndArch();
  ASSERT_GE(cases.size(), 13u);  // 4 AMD templates x 2 archs + 5 NVIDIA templates
  // Two at a time: the NVIDIA views (clang -x cuda with the toolkit's headers) take seconds each.
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::vector<std::string> failures;
  auto worker = [&] {
    for (size_t i; (i = next++) < cases.size();) {
      const ViewCase& c = cases[i];
      std::string why;
      auto view = viewOf(clang, c);
      if (!view.ok()) {
        why = view.status().message();
      } else {
        auto parsed = runProcess({tc.mlir_opt, "-"}, *view, 300000);
        if (!parsed.ok()) why = parsed.status().message();
        else if (parsed->exit_code != 0) why = "mlir-opt-19 rejects it: " + parsed->err;
        else if (parsed->out.find("llvm.func") == std::string::npos) why = "no llvm.func in it";
      }
      if (!why.empty()) {
        std::lock_guard<std::mutex> l(mu);
        failures.push_back(c.tmpl + " " + c.arch + ": " + why.substr(0, 2000));
      }
    }
  };
  std::thread a(worker), b(worker);
  a.join();
  b.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// A view that cannot be made is a failed command with the reason, not exit 0.
TEST(MlirView, CliExitsNonZeroWithoutTheView) {
  const auto& tc = ir_detail::toolchain();
  if (tc.llc.empty() || tc.llvm_mc.empty() || tc.lld.empty())
    KTUNE_SKIP_WITHOUT_TOOL("llvm-19 / lld-19 not installed");
  const std::string dir = "/tmp/ktune-view-test-" + std::to_string(::getpid());
  ASSERT_TRUE(makeDirs(dir).ok());
  // An AMDGCN assembly input has no MLIR view.
  const std::string asm_text = R"(
	.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
	.text
	.globl	k
	.p2align	8
	.type	k,@function
k:
	s_endpgm
	.rodata
	.p2align	6
	.amdhsa_kernel k
		.amdhsa_next_free_vgpr 1
		.amdhsa_next_free_sgpr 1
		.amdhsa_accum_offset 4
	.end_amdhsa_kernel
	.amdgpu_metadata
---
amdhsa.kernels:
  - .name:           k
    .symbol:         k.kd
    .kernarg_segment_size: 0
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count:     2
    .vgpr_count:     1
    .max_flat_workgroup_size: 256
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
amdhsa.version:
  - 1
  - 2
...
	.end_amdgpu_metadata
)";
  ASSERT_TRUE(writeFileAtomic(dir + "/k.s", asm_text).ok());
  auto ok = runProcess({KTUNE_CLI_PATH, "compile", dir + "/k.s", "--arch", "gfx942", "--no-cache"},
                       "", 120000);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->exit_code, 0) << ok->err;
  EXPECT_NE(ok->out.find("VGPR 1"), std::string::npos) << ok->out;
  auto no_view = runProcess(
      {KTUNE_CLI_PATH, "compile", dir + "/k.s", "--arch", "gfx942", "--no-cache", "--dump", "mlir"},
      "", 120000);
  ASSERT_TRUE(no_view.ok());
  EXPECT_EQ(no_view->exit_code, 3) << "a view that cannot be made is exit 3 (unavailable)";
  EXPECT_NE(no_view->err.find("MLIR view unavailable"), std::string::npos) << no_view->err;
  (void)removeTree(dir);
}

}  // namespace
}  // namespace ktune
