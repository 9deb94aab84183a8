// AMD compile paths without a GPU: hiprtc + comgr (gfx90a) and clang-19's AMDGPU backend (gfx942).
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "base/subprocess.h"
#include "compiler/analysis/amd_metadata.h"
#include "compiler/compiler.h"
#include "compiler/hip/hiprtc_compiler.h"
#include "compiler/llvm/clang_compiler.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

// One MFMA step per config: MFMA=16 -> v_mfma_f32_16x16x16*, MFMA=32 -> v_mfma_f32_32x32x8*.
const char* kMfmaKernel = R"(
#include "prelude.cuh"
KTUNE_KERNEL void KTUNE_LAUNCH_BOUNDS(256, WAVES) mfma_step(const ktune::bf16_t* __restrict__ a,
                                                           const ktune::bf16_t* __restrict__ b,
                                                           float* __restrict__ c) {
  __shared__ ktune::Vec<ktune::bf16_t, 8> tile[256];
  const unsigned t = ktune::tid_x();
  tile[t] = ktune::load_vec<8>(a + 8 * (ktune::bid_x() * 256 + t));  // 16-byte global load
  ktune::sync_threads();
  const ktune::Vec<ktune::bf16_t, 8> x = tile[(t + 1) % 256];
  const ktune::Vec<ktune::bf16_t, 8> y = ktune::load_vec<8>(b + 8 * t);
  ktune::bf16x4_t va, vb;
  for (int i = 0; i < 4; ++i) { va[i] = (short)x[i].bits; vb[i] = (short)y[i + 4].bits; }
#if MFMA == 16
  ktune::floatx4_t acc = {0, 0, 0, 0};
  acc = ktune::mfma_16x16x16_bf16(va, vb, acc);
  for (int i = 0; i < 4; ++i) c[t * 4 + i] = acc[i];
#else
  ktune::floatx16_t acc = {};
  acc = ktune::mfma_32x32x8_bf16(va, vb, acc);
  for (int i = 0; i < 16; ++i) c[t * 16 + i] = acc[i];
#endif
}
template <class T, int N>
__global__ void scale(T* x, float s) {
  x[ktune::tid_x() * N] = ktune::from_float<T>(ktune::to_float(x[ktune::tid_x() * N]) * s +
                                              ktune::warp_reduce_sum(s) + ktune::exp_fast(s));
}
)";

CompileRequest mfmaRequest(const std::string& arch, int mfma) {
  CompileRequest r;
  r.source = kMfmaKernel;
  r.source_name = "mfma.hip";
  r.entry = "mfma_step";
  r.arch = arch;
  r.defines = {{"MFMA", std::to_string(mfma)}, {"WAVES", "2"}};
  r.dumps = kDumpIsa | kDumpSource;
  return r;
}

// AGPRs the assembly touches: 1 + the highest index in an operand aN or a[N:M]; 0 when none.
int agprsUsed(const std::string& isa) {
  int n = 0;
  const std::regex operand(R"((?:^|[\s,])a(?:(\d+)|\[(\d+):(\d+)\])(?=[\s,]|$))");
  for (std::sregex_iterator it(isa.begin(), isa.end(), operand), end; it != end; ++it) {
    const std::string hi = (*it)[1].matched ? (*it)[1].str() : (*it)[3].str();
    n = std::max(n, std::stoi(hi) + 1);
  }
  return n;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

class HiprtcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = openHiprtcCompiler();
    if (!c.ok()) KTUNE_SKIP_WITHOUT_TOOL("hiprtc unavailable: " << c.status().message());
    compiler_ = std::move(c).value();
  }
  std::unique_ptr<Compiler> compiler_;
};

TEST_F(HiprtcTest, MfmaKernelForGfx90aShowsTheRequestedInstruction) {
  ASSERT_TRUE(compiler_->supportsArch("gfx90a"));
  for (int mfma : {16, 32}) {
    SCOPED_TRACE(mfma);
    auto co = compiler_->compile(mfmaRequest("gfx90a", mfma));
    ASSERT_TRUE(co.ok()) << co.status().toString();
    EXPECT_EQ(co->binary.substr(0, 4),
              "\x7f"
              "ELF");
    EXPECT_EQ(co->format, "hsaco");
    EXPECT_EQ(co->lowered_entry, "mfma_step");
    const std::string& isa = co->dumps["isa"];
    if (mfma == 16) {
      EXPECT_GT(count(isa, "v_mfma_f32_16x16x16"), 0) << isa;
      EXPECT_EQ(count(isa, "v_mfma_f32_32x32x8"), 0);
    } else {
      EXPECT_GT(count(isa, "v_mfma_f32_32x32x8"), 0) << isa;
      EXPECT_EQ(count(isa, "v_mfma_f32_16x16x16"), 0);
    }
    EXPECT_GT(count(isa, "global_load_dwordx4"), 0) << isa;
    EXPECT_GT(co->resources.vgpr, 0);
    // The reported AGPR count is the one the code uses (hiprtc keeps this kernel's accumulators
    // in VGPRs: 0; the metadata parser's non-zero case is AmdMetadata.* below).
    EXPECT_EQ(co->resources.agpr, agprsUsed(isa)) << isa;
    EXPECT_GT(co->resources.sgpr, 0);
    EXPECT_EQ(co->resources.shared_bytes, 256 * 16);
    EXPECT_EQ(co->resources.wave_size, 64);
    EXPECT_EQ(co->resources.max_threads_per_block, 256);
    EXPECT_FALSE(co->resources.spills());
  }
}

// compilerForArch picks hiprtc for the archs this ROCm knows (gfx90a) and clang-19 only for the
// rest (gfx942): the README's split, which every gfx90a result depends on.
TEST_F(HiprtcTest, CompilerForArchPicksHiprtcForGfx90aAndClangForGfx942) {
  auto c90 = compilerForArch("gfx90a");
  ASSERT_TRUE(c90.ok()) << c90.status().toString();
  EXPECT_EQ((*c90)->name(), "hiprtc");
  auto co = (*c90)->compile(mfmaRequest("gfx90a", 16));
  ASSERT_TRUE(co.ok()) << co.status().toString();
  EXPECT_EQ(co->compiler, "hiprtc");
  auto c942 = compilerForArch("gfx942");
  if (!c942.ok()) KTUNE_SKIP_WITHOUT_TOOL("no clang-19 for gfx942: " << c942.status().toString());
  EXPECT_EQ((*c942)->name(), "clang");
}

TEST_F(HiprtcTest, TemplateNameExpressionWithPreludeTypedef) {
  CompileRequest r = mfmaRequest("gfx90a", 16);
  r.entry = "scale<ktune::half_t, 4>";
  auto co = compiler_->compile(r);
  ASSERT_TRUE(co.ok()) << co.status().toString();
  EXPECT_EQ(co->lowered_entry, "_Z5scaleIDF16_Li4EEvPT_f");
}

TEST_F(HiprtcTest, CompileErrorAndUnknownArch) {
  CompileRequest r = mfmaRequest("gfx90a", 16);
  r.source = "#include \"prelude.cuh\"\nKTUNE_KERNEL void mfma_step(float* p) { p[0] = nope; }\n";
  auto co = compiler_->compile(r);
  ASSERT_FALSE(co.ok());
  EXPECT_EQ(co.status().code(), Code::kCompileError);
  EXPECT_NE(co.status().message().find("nope"), std::string::npos) << co.status().message();
  EXPECT_NE(co.status().message().find("--offload-arch=gfx90a"), std::string::npos);
  // ROCm 5.2's hiprtc aborts on gfx942: it must be refused before hiprtc sees it.
  EXPECT_FALSE(compiler_->supportsArch("gfx9999"));
  auto bad = compiler_->compile(mfmaRequest("gfx9999", 16));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kUnsupported);
  EXPECT_NE(bad.status().message().find("gfx9999"), std::string::npos);
}

// `mlir` is an MLIR module (an llvm.func named `func` in it) that mlir-opt-19 accepts.
void expectParsesAsMlir(const std::string& mlir, const std::string& func) {
  EXPECT_NE(mlir.find("module"), std::string::npos) << mlir.substr(0, 2000);
  EXPECT_NE(mlir.find("llvm.func"), std::string::npos) << mlir.substr(0, 2000);
  EXPECT_NE(mlir.find(func), std::string::npos) << mlir.substr(0, 2000);
  const std::string opt = findProgram("mlir-opt-19");
  if (opt.empty()) KTUNE_SKIP_WITHOUT_TOOL("mlir-opt-19 not installed (mlir-19-tools)");
  auto p = runProcess({opt, "-"}, mlir, 60000);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->exit_code, 0) << p->err.substr(0, 2000);
}

class ClangTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = openLlvmAmdgpuCompiler();
    if (!c.ok()) KTUNE_SKIP_WITHOUT_TOOL("clang AMDGPU path unavailable: " << c.status().message());
    compiler_ = std::move(c).value();
  }
  std::unique_ptr<Compiler> compiler_;
};

TEST_F(ClangTest, Gfx942CodeObjectIsaAndMetadata) {
  ASSERT_TRUE(compiler_->supportsArch("gfx942"));
  for (int mfma : {16, 32}) {
    SCOPED_TRACE(mfma);
    auto co = compiler_->compile(mfmaRequest("gfx942", mfma));
    ASSERT_TRUE(co.ok()) << co.status().toString();
    EXPECT_EQ(co->compiler, "clang");
    EXPECT_EQ(co->binary.substr(0, 4),
              "\x7f"
              "ELF");
    const std::string& isa = co->dumps["isa"];
    EXPECT_GT(count(isa, mfma == 16 ? "v_mfma_f32_16x16x16_bf16" : "v_mfma_f32_32x32x8_bf16"), 0);
    EXPECT_GT(count(isa, "global_load_dwordx4"), 0);
    EXPECT_GT(co->resources.vgpr, 0);
    EXPECT_GT(co->resources.sgpr, 0);
    EXPECT_EQ(co->resources.shared_bytes, 256 * 16);
    EXPECT_EQ(co->resources.wave_size, 64);
    EXPECT_EQ(co->resources.max_threads_per_block, 256);
  }
}

TEST_F(ClangTest, TemplateEntryLlvmAndMlirViews) {
  CompileRequest r = mfmaRequest("gfx942", 16);
  r.entry = "scale<ktune::bf16_t, 2>";
  r.dumps = kDumpLlvm | kDumpMlir | kDumpIsa;
  auto co = compiler_->compile(r);
  ASSERT_TRUE(co.ok()) << co.status().toString();
  EXPECT_EQ(co->lowered_entry, "_Z5scaleIN5ktune6bf16_tELi2EEvPT_f");
  EXPECT_NE(co->dumps["llvm"].find("define"), std::string::npos);
  EXPECT_NE(co->dumps["llvm"].find("amdgpu_kernel"), std::string::npos);
  // This kernel reads the work-item id (@llvm.amdgcn.workitem.id.x). mlir-translate-19 cannot
  // import AMDGPU intrinsics, so today the view is the documented failure line naming the
  // intrinsic (README; the AMD work on a working MLIR view changes this expectation to the
  // branch below). Either branch fails on an empty dump or any other error text.
  const std::string& mlir = co->dumps["mlir"];
  if (mlir.rfind("MLIR view unavailable: ", 0) == 0) {
    EXPECT_EQ(mlir.rfind("MLIR view unavailable: mlir-translate failed:\n", 0), 0u) << mlir;
    EXPECT_NE(mlir.find("unhandled intrinsic"), std::string::npos) << mlir;
    EXPECT_NE(mlir.find("@llvm.amdgcn."), std::string::npos) << mlir;
  } else {
    expectParsesAsMlir(mlir, "@_Z5scaleIN5ktune6bf16_tELi2EEvPT_f");
  }
  EXPECT_EQ(count(co->dumps["isa"], "s_getpc_b64"), 0);  // no device-library calls
}

// A kernel without target intrinsics: the MLIR view must be the LLVM-dialect module itself,
// which mlir-opt-19 parses, with the kernel as an llvm.func in the AMDGPU kernel convention.
TEST_F(ClangTest, MlirViewOfAnIntrinsicFreeKernelIsRealMlir) {
  CompileRequest r = mfmaRequest("gfx942", 16);
  r.source = "#include \"prelude.cuh\"\nKTUNE_KERNEL void plain(float* p) { p[0] = 1.0f; }\n";
  r.entry = "plain";
  r.dumps = kDumpMlir;
  auto co = compiler_->compile(r);
  ASSERT_TRUE(co.ok()) << co.status().toString();
  expectParsesAsMlir(co->dumps["mlir"], "@plain");
  EXPECT_NE(co->dumps["mlir"].find("amdgpu_kernelcc @plain"), std::string::npos);
  EXPECT_NE(co->dumps["mlir"].find("llvm.store"), std::string::npos);
}

TEST_F(ClangTest, ErrorsAreClear) {
  auto bad = compiler_->compile(mfmaRequest("gfx9999", 16));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kUnsupported);
  EXPECT_NE(bad.status().message().find("gfx9999"), std::string::npos);
  CompileRequest r = mfmaRequest("gfx942", 16);
  r.source += "\nKTUNE_KERNEL void other(float* p) { p[0] = missing_name; }\n";
  auto co = compiler_->compile(r);
  ASSERT_FALSE(co.ok());
  EXPECT_EQ(co.status().code(), Code::kCompileError);
  EXPECT_NE(co.status().message().find("missing_name"), std::string::npos);
  EXPECT_NE(co.status().message().find("mfma.hip"), std::string::npos);  // not the temp path
  EXPECT_NE(co.status().message().find("--offload-arch=gfx942"), std::string::npos);
}

TEST(CompilerForArch, PicksByArch) {
  auto amd = compilerForArch("gfx942");
  if (amd.ok()) {
    EXPECT_EQ((*amd)->name(), "clang");  // ROCm 5.2's hiprtc lacks gfx942
  }
  auto h = openHiprtcCompiler();
  if (h.ok()) {
    auto g = compilerForArch("gfx90a");
    ASSERT_TRUE(g.ok()) << g.status().toString();
    EXPECT_EQ((*g)->name(), "hiprtc");
  }
  auto u = compilerForArch("tpu_v5");
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.status().code(), Code::kUnsupported);
  auto sm = compilerForArch("sm_1");
  ASSERT_FALSE(sm.ok());
  EXPECT_NE(sm.status().message().find("sm_1"), std::string::npos);
}

TEST(AmdMetadata, ParsesYamlBlock) {
  const std::string yaml = R"(	.amdgpu_metadata
---
amdhsa.kernels:
  - .agpr_count:     4
    .args:
      - .offset:         0
        .size:           8
        .value_kind:     global_buffer
    .group_segment_fixed_size: 4096
    .max_flat_workgroup_size: 256
    .name:           k1
    .private_segment_fixed_size: 16
    .sgpr_count:     20
    .sgpr_spill_count: 0
    .symbol:         k1.kd
    .vgpr_count:     170
    .vgpr_spill_count: 3
    .wavefront_size: 64
  - .name:           k2
    .vgpr_count:     8
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
	.end_amdgpu_metadata
)";
  auto ks = parseAmdgpuMetadataYaml(yaml);
  ASSERT_EQ(ks.size(), 2u);
  const AmdKernelMeta* k = findAmdKernel(ks, "k1");
  ASSERT_NE(k, nullptr);
  ResourceUsage r = amdResources(*k);
  EXPECT_EQ(r.vgpr, 170);
  EXPECT_EQ(r.agpr, 4);
  EXPECT_EQ(r.sgpr, 20);
  EXPECT_EQ(r.vgpr_spill, 3);
  EXPECT_EQ(r.shared_bytes, 4096);
  EXPECT_EQ(r.scratch_bytes, 16);
  EXPECT_EQ(r.wave_size, 64);
  EXPECT_EQ(r.max_threads_per_block, 256);
  EXPECT_TRUE(r.spills());
  EXPECT_EQ(amdResources(*findAmdKernel(ks, "k2")).vgpr, 8);
  EXPECT_EQ(findAmdKernel(ks, "k3"), nullptr);
  EXPECT_TRUE(parseAmdgpuMetadataYaml("garbage: [").empty());
}

TEST(Unbundle, PassesElfThroughAndRejectsBadBundles) {
  auto elf = unbundleCodeObject(std::string("\x7f"
                                            "ELF rest"),
                                "gfx90a");
  ASSERT_TRUE(elf.ok());
  EXPECT_EQ(*elf, std::string("\x7f"
                              "ELF rest"));
  auto bad = unbundleCodeObject("__CLANG_OFFLOAD_BUNDLE__\x01", "gfx90a");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kCorrupt);
}

}  // namespace
}  // namespace ktune
