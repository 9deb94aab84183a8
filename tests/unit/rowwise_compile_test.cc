// The row-wise kernel sources compile, for several configs and dtypes, with every compiler ktune
// has: NVRTC for sm_90a, hiprtc for gfx90a, clang-19 for gfx942. No GPU needed. A compiler that
// is not installed skips its test with the reason (CI has all three).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "templates/rowwise.h"
#include "tests/support/tools.h"

namespace ktune::rowwise {
namespace {

struct Case {
  std::string what;
  CompileRequest req;
};

std::vector<Case> cases(const std::string& arch) {
  const RowwiseLimits lim = *limitsForArch(arch);
  const int64_t w = lim.warp_size;
  std::vector<Case> out;
  auto add = [&](std::string what, std::string_view src, const char* entry,
                 std::vector<std::pair<std::string, std::string>> defs) {
    CompileRequest r;
    r.source = std::string(src);
    r.source_name = what;
    r.entry = entry;
    r.defines = std::move(defs);
    r.arch = arch;
    out.push_back({std::move(what), std::move(r)});
  };
  // RMSNorm: register-resident + fused residual (bf16), two-pass (fp32), no weight (fp16).
  {
    RmsNormProblem p;
    p.rows = 4096;
    p.cols = 4096;
    p.has_residual = true;
    Config c{{"VEC", 8}, {"THREADS", 8 * w}, {"ROWS_PER_BLOCK", 1}, {"OCC", 1}};
    add("rmsnorm bf16 resid", rmsNormSource(), kRmsNormEntry, rmsNormDefines(c, p));
    p.dtype = RowDType::kF32;
    p.has_residual = false;
    p.cols = 100000;
    c = Config{{"VEC", 4}, {"THREADS", 4 * w}, {"ROWS_PER_BLOCK", 2}, {"OCC", 0}};
    add("rmsnorm f32 two-pass", rmsNormSource(), kRmsNormEntry, rmsNormDefines(c, p));
    p.dtype = RowDType::kF16;
    p.has_weight = false;
    p.cols = 4097;
    c = Config{{"VEC", 4}, {"THREADS", 2 * w}, {"ROWS_PER_BLOCK", 4}, {"OCC", 0}};
    add("rmsnorm f16 noweight", rmsNormSource(), kRmsNormEntry, rmsNormDefines(c, p));
  }
  // SiLU·Mul: bf16 16-byte, f32 unrolled over rows.
  {
    SiluMulProblem p;
    p.rows = 4096;
    p.d = 14336;
    Config c{{"VEC", 8}, {"THREADS", 256}, {"UNROLL", 2}, {"ROWS_PER_BLOCK", 2}};
    add("silu_mul bf16", siluMulSource(), kSiluMulEntry, siluMulDefines(c, p));
    p.dtype = RowDType::kF32;
    c = Config{{"VEC", 4}, {"THREADS", 512}, {"UNROLL", 1}, {"ROWS_PER_BLOCK", 4}};
    add("silu_mul f32", siluMulSource(), kSiluMulEntry, siluMulDefines(c, p));
  }
  add("copy", copySource(), kCopyEntry, copyDefines(copyDefaultConfig(lim)));
  // SiLU·Mul bf16 with 8-byte vectors and x loaded with the evict_first hint (NVIDIA; a plain
  // load elsewhere).
  {
    SiluMulProblem p;
    p.rows = 4096;
    p.d = 2048;
    Config c{{"VEC", 4}, {"THREADS", 128}, {"UNROLL", 1}, {"ROWS_PER_BLOCK", 1}, {"LOAD_HINT", 1}};
    add("silu_mul bf16 load hint", siluMulSource(), kSiluMulEntry, siluMulDefines(c, p));
  }
  return out;
}

// Compiles every case; returns the code objects (test fails on any compile error).
std::vector<CodeObject> compileAll(const std::string& arch, unsigned dumps) {
  auto comp = compilerForArch(arch);
  if (!comp.ok()) return {};
  std::vector<CodeObject> objs;
  for (auto& c : cases(arch)) {
    c.req.dumps = dumps;
    auto obj = (*comp)->compile(c.req);
    EXPECT_TRUE(obj.ok()) << c.what << " for " << arch << ": " << obj.status().toString();
    if (!obj.ok()) continue;
    EXPECT_GE(obj->binary.size(), 4u);
    EXPECT_EQ(obj->binary.substr(0, 4), std::string("\x7f" "ELF", 4)) << c.what;
    EXPECT_FALSE(obj->resources.spills()) << c.what << " spills on " << arch;
    objs.push_back(std::move(*obj));
  }
  return objs;
}

#define SKIP_IF_NO_COMPILER(arch)                                                          \
  do {                                                                                     \
    auto _c = compilerForArch(arch);                                                       \
    if (!_c.ok())                                                                          \
      KTUNE_SKIP_WITHOUT_TOOL("no compiler for " << arch << ": " << _c.status().toString()); \
  } while (0)

TEST(RowwiseCompile, NvrtcSm90a) {
  SKIP_IF_NO_COMPILER("sm_90a");
  auto objs = compileAll("sm_90a", kDumpPtx);
  ASSERT_EQ(objs.size(), cases("sm_90a").size());
  for (const auto& o : objs) EXPECT_GT(o.resources.registers, 0) << o.entry;
  // The bf16 RMSNorm moves 16 bytes per access: v4 (x 32-bit) global loads in the PTX.
  auto it = objs[0].dumps.find("ptx");
  ASSERT_NE(it, objs[0].dumps.end());
  EXPECT_NE(it->second.find("ld.global.v4"), std::string::npos);
  // SiLU·Mul's output vector is one store: a Vec of bf16 copied as a struct was split into
  // 2- and 4-byte stores, which halved the kernel's bandwidth (bench/NOTES.md).
  const std::string& silu = objs[3].dumps.at("ptx");
  EXPECT_NE(silu.find("st.global.wb.v4.u32"), std::string::npos) << objs[3].entry;
  EXPECT_EQ(silu.find("st.global.v2.u16"), std::string::npos);
  const std::string& hint = objs.back().dumps.at("ptx");
  EXPECT_NE(hint.find("st.global.wb.v2.u32"), std::string::npos);
  EXPECT_NE(hint.find("createpolicy.fractional.L2::evict_first"), std::string::npos);
  EXPECT_NE(hint.find("ld.global.L2::cache_hint.v2.u32"), std::string::npos);
  EXPECT_EQ(silu.find("L2::cache_hint"), std::string::npos);  // LOAD_HINT unset: plain loads
}

TEST(RowwiseCompile, HiprtcGfx90a) {
  SKIP_IF_NO_COMPILER("gfx90a");
  auto objs = compileAll("gfx90a", kDumpIsa);
  ASSERT_EQ(objs.size(), cases("gfx90a").size());
  auto it = objs[0].dumps.find("isa");
  ASSERT_NE(it, objs[0].dumps.end());
  EXPECT_NE(it->second.find("global_load_dwordx4"), std::string::npos);
}

TEST(RowwiseCompile, ClangGfx942) {
  SKIP_IF_NO_COMPILER("gfx942");
  auto objs = compileAll("gfx942", kDumpIsa);
  ASSERT_EQ(objs.size(), cases("gfx942").size());
  auto it = objs[3].dumps.find("isa");  // silu_mul bf16
  ASSERT_NE(it, objs[3].dumps.end());
  EXPECT_NE(it->second.find("global_load_dwordx4"), std::string::npos);
  EXPECT_NE(it->second.find("global_store_dwordx4"), std::string::npos);  // one 16-byte store
}

}  // namespace
}  // namespace ktune::rowwise
