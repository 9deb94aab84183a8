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
  // Neither kernel calls a math library: no device-library link, no opt -O3 (rsqrt and exp2 are
  // target intrinsics).
  EXPECT_EQ(co->compiler.find("llvm-link"), std::string::npos) << co->compiler;
  EXPECT_EQ(co->compiler.find("+opt+"), std::string::npos) << co->compiler;
  if (c.kernel == "rmsnorm" && nv) {
    // The register path loads each of its ITEMS vectors of x (and w) once, in straight-line
    // code; the loops for a longer row add one x load (sum of squares) and one x and w load
    // (scaling). The two-pass kernel had three loads whatever the row length.
    EXPECT_EQ(isa.globalLoads(bits), 2 * c.config.items + 3) << isa.text();
    EXPECT_EQ(isa.global_stores.count(bits) ? isa.global_stores.at(bits) : 0, c.config.items + 1)
        << isa.text();
  }
}

INSTANTIATE_TEST_SUITE_P(
    KernelsAndArchs, MlirKernels,
    ::testing::Values(Case{"rmsnorm", "sm_90a", {"bf16", 8, 256, 1, 2}},
                      Case{"rmsnorm", "sm_90a", {"bf16", 4, 64, 4, 8}},
                      Case{"rmsnorm", "gfx942", {"bf16", 8, 256, 2, 4}},
                      Case{"rmsnorm", "sm_90a", {"f16", 8, 128, 1, 4}},
                      Case{"rmsnorm", "gfx942", {"f32", 4, 128, 1, 2}},
                      Case{"silu_mul", "sm_90a", {"bf16", 4, 128, 1}},
                      Case{"silu_mul", "sm_90a", {"bf16", 8, 128, 2}},
                      Case{"silu_mul", "gfx942", {"f32", 4, 256, 1}}),
    [](const auto& info) {
      return info.param.kernel + "_" + info.param.arch + "_" + info.param.config.dtype + "_v" +
             std::to_string(info.param.config.vec) + "_i" + std::to_string(info.param.config.items);
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

TEST(MlirKernelSource, RmsNormItemsFollowTheRowAndAreWrittenOut) {
  using templates::mlirRmsNormItems;
  EXPECT_EQ(mlirRmsNormItems(4096, {"bf16", 8, 256, 1}), 2);   // exactly 2 vectors per thread
  EXPECT_EQ(mlirRmsNormItems(4096, {"bf16", 8, 64, 1}), 8);
  EXPECT_EQ(mlirRmsNormItems(4160, {"bf16", 8, 128, 1}), 8);   // 5 rounded up, the rest masked
  EXPECT_EQ(mlirRmsNormItems(8192, {"bf16", 2, 64, 1}), 8);    // 64 needed: 8, the rest loops
  EXPECT_EQ(mlirRmsNormItems(8, {"bf16", 8, 512, 1}), 1);
  EXPECT_EQ(templates::mlirConfigFor("silu_mul", 4096, {}).items, 0);
  EXPECT_EQ(templates::mlirConfigFor("rmsnorm", 4096, {}).items, 2);
  // ITEMS=3: items 0..2 written out, every marker and placeholder gone.
  auto t = templates::mlirKernelSource("rmsnorm", "sm_90a", {"bf16", 8, 128, 2, 3});
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_NE(t->find("%xv_2, %wv_2 = scf.if"), std::string::npos);
  EXPECT_EQ(t->find("%xv_3"), std::string::npos);
  EXPECT_NE(t->find("arith.constant 256 : index"), std::string::npos);  // item 2's offset
  EXPECT_EQ(t->find("    // FOR_EACH"), std::string::npos);  // marker lines dropped
  EXPECT_EQ(t->find("{{"), std::string::npos);
  EXPECT_NE(t->find("memref<2x4xf32"), std::string::npos);  // partial sums per row and warp
  EXPECT_EQ(templates::mlirKernelFileName("rmsnorm", "sm_90a", {"bf16", 8, 128, 2, 4}, "ptx"),
            "rmsnorm.sm_90a.bf16.v8.t128.r2.i4.ptx");
  // A block holds the rows side by side; SiLU·Mul has no items.
  EXPECT_EQ(templates::mlirKernelSource("rmsnorm", "sm_90a", {"bf16", 8, 512, 4}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(templates::mlirKernelSource("silu_mul", "sm_90a", {"bf16", 8, 256, 1, 2}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(templates::mlirKernelSource("rmsnorm", "sm_90a", {"bf16", 8, 256, 1, 16}).status().code(),
            Code::kInvalidArgument);
  const auto rs = templates::mlirKernelLaunch("rmsnorm", {"bf16", 8, 128, 4}, 37, 4096);
  EXPECT_EQ(rs.grid.x, 10u);
  EXPECT_EQ(rs.block.x, 128u);
  EXPECT_EQ(rs.block.y, 4u);
  const auto ss = templates::mlirKernelLaunch("silu_mul", {"bf16", 8, 128, 4}, 37, 4096);
  EXPECT_EQ(ss.grid.x, 4u);
  EXPECT_EQ(ss.grid.y, 10u);
  EXPECT_EQ(ss.block.y, 1u);
}

}  // namespace
}  // namespace ktune
