// The MLIR-written RMSNorm and SiLU·Mul (templates/mlir/) compile for sm_90a and gfx942 through
// the IR front door with their config substituted, and make only 16-byte global accesses at
// VEC * sizeof(T) == 16, like the C++ templates; bad configs are refused before compiling.
#include <gtest/gtest.h>

#include "compiler/analysis/isa_report.h"
#include "compiler/compiler.h"
#include "compiler/ir/ir_util.h"
#include "templates/mlir/mlir_kernels.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

using templates::MlirRowwiseConfig;

bool haveTools(const std::string& arch) {
  const auto& tc = ir_detail::toolchain();
  if (tc.llc.empty() || tc.opt.empty() || tc.mlir_opt.empty() || tc.mlir_translate.empty())
    return false;
  if (arch.rfind("sm_", 0) == 0) return (tc.jitlink || !tc.ptxas.empty()) && !tc.libdevice.empty();
  return !tc.llvm_mc.empty() && !tc.lld.empty() && !tc.amd_bitcode.empty();
}

struct Case {
  std::string kernel, arch;
  MlirRowwiseConfig config;
};

class MlirKernels : public ::testing::TestWithParam<Case> {};

TEST_P(MlirKernels, CompileWith16ByteAccesses) {
  const Case& c = GetParam();
  if (!haveTools(c.arch)) KTUNE_SKIP_WITHOUT_TOOL("LLVM/MLIR tools or device libraries missing");
  auto text = templates::mlirKernelSource(c.kernel, c.arch, c.config);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(text->find("{{"), std::string::npos) << "unsubstituted placeholder";
  CompileRequest req;
  req.language = Language::kMlir;
  req.source = *text;
  req.source_name = c.kernel + ".mlir";
  req.entry = templates::mlirKernelEntry(c.kernel);
  req.arch = c.arch;
  const bool nv = c.arch.rfind("sm_", 0) == 0;
  req.dumps = nv ? kDumpPtx : kDumpIsa;
  auto co = (*openIrCompiler())->compile(req);
  ASSERT_TRUE(co.ok()) << co.status().message();
  EXPECT_EQ(co->lowered_entry, req.entry);
  EXPECT_FALSE(co->resources.spills());
  const IsaReport isa = analyzeIsa(co->dumps[nv ? "ptx" : "isa"], nv ? IsaKind::kPtx : IsaKind::kAmdgcn);
  const int bits = c.config.vec * (c.config.dtype == "f32" ? 32 : 16);
  EXPECT_GT(isa.globalLoads(bits), 0) << isa.text();
  for (const auto& [width, n] : isa.global_loads)
    EXPECT_EQ(width, bits) << n << " global loads of " << width << " bits\n" << isa.text();
  for (const auto& [width, n] : isa.global_stores)
    EXPECT_EQ(width, bits) << n << " global stores of " << width << " bits\n" << isa.text();
  EXPECT_EQ(isa.scratch_ops, 0);
}

INSTANTIATE_TEST_SUITE_P(
    KernelsAndArchs, MlirKernels,
    ::testing::Values(Case{"rmsnorm", "sm_90a", {"bf16", 8, 256, 1}},
                      Case{"rmsnorm", "gfx942", {"bf16", 8, 256, 2}},
                      Case{"silu_mul", "sm_90a", {"bf16", 8, 128, 2}},
                      Case{"silu_mul", "gfx942", {"f32", 4, 256, 1}}),
    [](const auto& info) {
      return info.param.kernel + "_" + info.param.arch + "_" + info.param.config.dtype;
    });

TEST(MlirKernelSource, RefusesBadConfigs) {
  EXPECT_EQ(templates::mlirKernelSource("rmsnorm", "sm_90a", {"bf16", 16, 256, 1}).status().code(),
            Code::kInvalidArgument);  // 32-byte vectors
  EXPECT_EQ(templates::mlirKernelSource("rmsnorm", "gfx942", {"bf16", 8, 96, 1}).status().code(),
            Code::kInvalidArgument);  // not a multiple of the 64-wide wave
  EXPECT_EQ(templates::mlirKernelSource("rmsnorm", "sm_90a", {"f64", 2, 256, 1}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(templates::mlirKernelSource("gemm", "sm_90a", {}).status().code(), Code::kNotFound);
  // The space: 3 VEC x 4 THREADS x 3 ROWS_PER_BLOCK for bf16, every config accepted.
  const auto nv = templates::mlirRowwiseConfigs("silu_mul", "sm_90a");
  const auto amd = templates::mlirRowwiseConfigs("silu_mul", "gfx942");
  EXPECT_EQ(nv.size(), 36u);
  EXPECT_EQ(amd.size(), 36u);
  // RMSNorm's rows share a block: THREADS 512 x ROWS_PER_BLOCK 4 does not fit in one.
  EXPECT_EQ(templates::mlirRowwiseConfigs("rmsnorm", "sm_90a").size(), 33u);
  for (const auto& c : amd) EXPECT_TRUE(templates::mlirKernelSource("silu_mul", "gfx942", c).ok());
  // The warp size follows the vendor.
  auto a = templates::mlirKernelSource("rmsnorm", "gfx942", {});
  auto n = templates::mlirKernelSource("rmsnorm", "sm_90a", {});
  ASSERT_TRUE(a.ok() && n.ok());
  EXPECT_NE(a->find("arith.constant 64 : index"), std::string::npos);
  EXPECT_NE(n->find("arith.constant 32 : index"), std::string::npos);
}

}  // namespace
}  // namespace ktune
