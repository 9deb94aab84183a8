// Static pruning (autotune/static_prune.h): each rule prunes with its reason, the switch turns it
// off, a good config is kept — on synthetic code objects (exact arithmetic) and on real NVRTC /
// hiprtc / clang compiles without dumps (the tuner's compile requests ask for none, so the matrix
// rule must work from a disassembly of the binary).
#include "autotune/static_prune.h"

#include <gtest/gtest.h>

#include <string>

#include "templates/embedded.h"
#include "templates/gemm.h"
#include "templates/rowwise.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

CodeObject nvCode(int regs, int64_t shared = 0) {
  CodeObject co;
  co.format = "cubin";
  co.arch = "sm_90a";
  co.compiler = "nvrtc";
  co.resources.registers = regs;
  co.resources.shared_bytes = shared;
  return co;
}

CodeObject amdCode(int vgpr, int agpr, int64_t lds, const std::string& arch = "gfx942") {
  CodeObject co;
  co.format = "hsaco";
  co.arch = arch;
  co.compiler = "clang";
  co.resources.vgpr = vgpr;
  co.resources.agpr = agpr;
  co.resources.shared_bytes = lds;
  co.resources.wave_size = 64;
  return co;
}

// An AMDGCN listing long enough to count as a dump, with or without an MFMA.
std::string amdIsa(bool mfma) {
  std::string s;
  for (int i = 0; i < 12; ++i)
    s += "\tglobal_load_dwordx4 v[0:3], v4, s[0:1]\n\tv_add_f32 v1, v2, v3\n";
  if (mfma) s += "\tv_mfma_f32_32x32x8_bf16 a[0:15], v[8:9], v[10:11], a[0:15]\n";
  return s + "\ts_endpgm\n";
}

std::string ptx(bool mma) {
  std::string s;
  for (int i = 0; i < 12; ++i) s += "\tld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];\n";
  if (mma)
    s += "\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,"
         "%r4}, {%r5,%r6}, {%f1,%f2,%f3,%f4};\n";
  return s + "\tret;\n";
}

const DeviceInfo kNoDevice;  // arch tables only

TEST(StaticPrune, KeepsAGoodConfig) {
  StaticPruneOptions o;
  o.require_matrix = "mma";
  CodeObject nv = nvCode(64, 16384);
  nv.dumps["ptx"] = ptx(true);
  EXPECT_EQ(staticPruneReason(o, nv, kNoDevice, {256, 0}, "mma"), std::nullopt);
  CodeObject amd = amdCode(128, 0, 32768);
  amd.dumps["isa"] = amdIsa(true);
  EXPECT_EQ(staticPruneReason(o, amd, kNoDevice, {256, 0}, "v_mfma"), std::nullopt);
}

TEST(StaticPrune, NvidiaZeroOccupancyIsPrunedWithTheArithmetic) {
  // 255 registers x 32 lanes = 8160 -> 8192 per warp (unit 256); 16 warps need 131072 > 65536.
  auto why = staticPruneReason({}, nvCode(255), kNoDevice, {512, 0}, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("occupancy 0 blocks/SM (registers 255 x 512 threads", 0), 0u) << *why;
  // The same kernel at 128 threads fits (1 block of 4 warps ... registers allow 8 warps).
  EXPECT_EQ(staticPruneReason({}, nvCode(255), kNoDevice, {128, 0}, ""), std::nullopt);
  // Shared memory beyond the SM: 0 blocks as well.
  auto smem = staticPruneReason({}, nvCode(32, 300 * 1024), kNoDevice, {128, 0}, "");
  ASSERT_TRUE(smem.has_value());
  EXPECT_EQ(smem->rfind("occupancy 0 blocks/SM", 0), 0u) << *smem;
}

TEST(StaticPrune, NvidiaWarpFractionThreshold) {
  // 128 regs -> 4096 per warp -> 16 warps/SM -> 2 blocks of 256 threads -> 16/64 = 25 %.
  StaticPruneOptions o;
  o.min_warp_fraction = 0.5;
  auto why = staticPruneReason(o, nvCode(128), kNoDevice, {256, 0}, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("occupancy 25% warps/SM < 50% (2 blocks/SM", 0), 0u) << *why;
  o.min_warp_fraction = 0.25;
  EXPECT_EQ(staticPruneReason(o, nvCode(128), kNoDevice, {256, 0}, ""), std::nullopt);
  // min blocks per SM: 3 wanted, registers allow 2.
  o.min_blocks_per_sm = 3;
  why = staticPruneReason(o, nvCode(128), kNoDevice, {256, 0}, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("occupancy 2 blocks/SM < 3", 0), 0u) << *why;
  EXPECT_NE(why->find("limited by registers"), std::string::npos) << *why;
}

TEST(StaticPrune, DeviceNumbersOverrideTheTable) {
  DeviceInfo d;
  d.arch = "sm_90a";
  d.regs_per_sm = 32768;  // half the table's file: 128 regs x 256 threads -> 1 block
  StaticPruneOptions o;
  o.min_blocks_per_sm = 2;
  EXPECT_EQ(staticPruneReason(o, nvCode(128), kNoDevice, {256, 0}, ""), std::nullopt);
  auto why = staticPruneReason(o, nvCode(128), d, {256, 0}, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("occupancy 1 blocks/SM < 2", 0), 0u) << *why;
}

TEST(StaticPrune, AmdOccupancyFollowsTheGuide) {
  // gfx942: .vgpr_count 512 (256 VGPR + 256 AGPR of the unified file, already summed) -> 1
  // wave/EU; 4 waves per workgroup on 4 SIMDs -> 1 workgroup/CU -> occ = 1 wave/EU: kept at the
  // default threshold, pruned at 2.
  EXPECT_EQ(staticPruneReason({}, amdCode(512, 256, 0), kNoDevice, {256, 0}, ""), std::nullopt);
  StaticPruneOptions o;
  o.min_waves_per_eu = 2;
  auto why = staticPruneReason(o, amdCode(512, 256, 0), kNoDevice, {256, 0}, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("occupancy 1 waves/EU < 2 (VGPR 512 (AGPR 256 of them)", 0), 0u) << *why;
  EXPECT_NE(why->find("512 VGPRs allocated, limited by vgpr"), std::string::npos) << *why;
  // LDS above the CU's 64 KiB: the workgroup cannot fit -> 0.
  why = staticPruneReason({}, amdCode(64, 0, 96 * 1024), kNoDevice, {256, 0}, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("occupancy 0 waves/EU", 0), 0u) << *why;
  // 256 threads of 64 lanes, 3 workgroups of 40 KiB LDS do not fit: 1 workgroup = 4 waves on 4
  // EUs = 1 wave/EU. With 1024 threads (16 waves) it is 4 waves/EU.
  EXPECT_EQ(staticPruneReason(o, amdCode(64, 0, 40 * 1024), kNoDevice, {1024, 0}, ""),
            std::nullopt);
}

TEST(StaticPrune, SpillsArePrunedWithBytes) {
  CodeObject nv = nvCode(255);
  nv.resources.spill_store_bytes = 48;
  nv.resources.spill_load_bytes = 40;
  nv.resources.stack_bytes = 48;
  auto why = staticPruneReason({}, nv, kNoDevice, {128, 0}, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "spills 48 B stores, 40 B loads (stack 48 B)");
  CodeObject amd = amdCode(512, 0, 0);
  amd.resources.vgpr_spill = 12;
  amd.resources.scratch_bytes = 48;
  why = staticPruneReason({}, amd, kNoDevice, {256, 0}, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "spills 12 VGPRs, 0 SGPRs (scratch 48 B)");
  // The engine applies the same rule to every family: one implementation, one text.
  EXPECT_EQ(spillPruneReason(nv.resources, false), "spills 48 B stores, 40 B loads (stack 48 B)");
  EXPECT_EQ(spillPruneReason(amd.resources, true), "spills 12 VGPRs, 0 SGPRs (scratch 48 B)");
  EXPECT_EQ(spillPruneReason(nvCode(255).resources, false), std::nullopt);
  StaticPruneOptions o;
  o.enabled = false;
  EXPECT_EQ(staticPruneReason(o, nv, kNoDevice, {128, 0}, ""), std::nullopt);
}

TEST(StaticPrune, MissingMatrixInstructionIsPruned) {
  CodeObject amd = amdCode(64, 0, 0);
  amd.dumps["isa"] = amdIsa(false);
  auto why = staticPruneReason({}, amd, kNoDevice, {256, 0}, "v_mfma");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "no v_mfma instruction in ISA (from isa)");
  CodeObject nv = nvCode(64);
  nv.dumps["ptx"] = ptx(true);
  why = staticPruneReason({}, nv, kNoDevice, {128, 0}, "wgmma");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "no wgmma instruction in ISA (from ptx)");
  EXPECT_EQ(staticPruneReason({}, nv, kNoDevice, {128, 0}, "mma"), std::nullopt);
  // No ISA at all (no dump, nothing to disassemble): unknown is not a reason.
  EXPECT_EQ(staticPruneReason({}, nvCode(64), kNoDevice, {128, 0}, "mma"), std::nullopt);
}

TEST(StaticPrune, SassMnemonicsMatchPtxPrefixes) {
  IsaReport r;
  r.kind = IsaKind::kSass;
  r.matrix["HMMA.16816.F32.BF16"] = 4;
  EXPECT_TRUE(hasMatrixInstruction(r, "mma"));
  EXPECT_FALSE(hasMatrixInstruction(r, "wgmma"));
  r.matrix["HGMMA.64x128x16.F32.BF16"] = 2;
  EXPECT_TRUE(hasMatrixInstruction(r, "wgmma"));
  EXPECT_TRUE(hasMatrixInstruction(r, ""));
  EXPECT_EQ(matrixPrefixForGemmKind("mma"), "mma");
  EXPECT_EQ(matrixPrefixForGemmKind("skinny"), "mma");
  EXPECT_EQ(matrixPrefixForGemmKind("wgmma"), "wgmma");
  EXPECT_EQ(matrixPrefixForGemmKind("mfma"), "v_mfma");
  EXPECT_EQ(matrixPrefixForGemmKind("other"), "");
}

TEST(StaticPrune, SwitchTurnsEveryRuleOff) {
  Options env;
  env.static_prune = false;
  StaticPruneOptions o = staticPruneOptionsFrom(env);
  EXPECT_FALSE(o.enabled);
  CodeObject bad = nvCode(255);
  bad.resources.spill_store_bytes = 64;
  bad.dumps["ptx"] = ptx(false);
  EXPECT_EQ(staticPruneReason(o, bad, kNoDevice, {1024, 0}, "mma"), std::nullopt);
  auto off = makeStaticPruner(o, nullptr);
  EXPECT_EQ(off(Config{}, bad, kNoDevice), std::nullopt);
  env.static_prune = true;
  auto on = makeStaticPruner(staticPruneOptionsFrom(env), nullptr);
  EXPECT_TRUE(on(Config{}, bad, kNoDevice).has_value());
}

TEST(StaticPrune, CallbackUsesLaunchAndPerConfigMatrix) {
  StaticPruneOptions o;
  o.require_matrix_fn = [](const Config& c) { return matrixPrefixForGemmKind(c.getStr("KIND")); };
  auto prune = makeStaticPruner(o, [](const Config& c, const DeviceInfo&) {
    return PruneLaunch{static_cast<int>(c.getInt("THREADS", 128)), 0};
  });
  CodeObject nv = nvCode(255);
  nv.dumps["ptx"] = ptx(true);
  Config mma{{"KIND", std::string("mma")}, {"THREADS", int64_t{128}}};
  Config wg{{"KIND", std::string("wgmma")}, {"THREADS", int64_t{128}}};
  Config big{{"KIND", std::string("mma")}, {"THREADS", int64_t{512}}};
  EXPECT_EQ(prune(mma, nv, kNoDevice), std::nullopt);
  EXPECT_EQ(prune(wg, nv, kNoDevice).value_or(""), "no wgmma instruction in ISA (from ptx)");
  EXPECT_EQ(prune(big, nv, kNoDevice).value_or("").rfind("occupancy 0 blocks/SM", 0), 0u);
}

// ---- real compiles, no dumps requested (as the tuner compiles) --------------------------------

CompileRequest rmsRequest(const std::string& arch) {
  auto lim = rowwise::limitsForArch(arch);
  const Config c = rowwise::rmsNormDefaultConfig(rowwise::RowDType::kBF16, *lim);
  rowwise::RmsNormProblem p;
  p.rows = 64;
  p.cols = 4096;
  p.has_weight = true;
  CompileRequest r;
  r.source = std::string(rowwise::rmsNormSource());
  r.source_name = rowwise::kRmsNormSource;
  r.entry = rowwise::kRmsNormEntry;
  r.defines = rowwise::rmsNormDefines(c, p);
  r.arch = arch;
  return r;
}

CompileRequest mfmaRequest(const std::string& arch) {
  using namespace gemm;
  const auto s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096);
  const Config c = curatedConfigs(KernelKind::kMfma, s).front();
  CompileRequest r;
  r.source = std::string(kernelSource(KernelKind::kMfma));
  r.source_name = sourceFile(KernelKind::kMfma);
  r.entry = entryName(KernelKind::kMfma);
  r.defines = defines(KernelKind::kMfma, c, s);
  r.arch = arch;
  return r;
}

void checkAmd(const std::string& arch) {
  auto cc = compilerForArch(arch);
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("no AMD compiler for " << arch << ": " << cc.status().toString());
  auto gemm = (*cc)->compile(mfmaRequest(arch));
  ASSERT_TRUE(gemm.ok()) << gemm.status().toString();
  auto rms = (*cc)->compile(rmsRequest(arch));
  ASSERT_TRUE(rms.ok()) << rms.status().toString();
  ASSERT_TRUE(gemm->dumps.empty());
  std::string src;
  auto isa = isaReportOf(*gemm, true, &src);
  // comgr (hiprtc) and llvm-objdump-19 (clang path) come with the compilers: a compiler that
  // works and a code object that cannot be disassembled is a bug, not a missing tool.
  ASSERT_TRUE(isa) << "no disassembly of the " << arch << " GEMM code object";
  EXPECT_TRUE(hasMatrixInstruction(*isa, "v_mfma")) << src;
  EXPECT_EQ(isaReportOf(*gemm, false, nullptr), std::nullopt);
  StaticPruneOptions o;
  EXPECT_EQ(staticPruneReason(o, *gemm, kNoDevice, {256, 0}, "v_mfma"), std::nullopt)
      << "GEMM kernel " << arch;
  // The row kernel has no MFMA: asked for one, it is pruned (proves the rule reads real ISA).
  auto why = staticPruneReason(o, *rms, kNoDevice, {256, 0}, "v_mfma");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("no v_mfma instruction in ISA (from ", 0), 0u) << *why;
  EXPECT_EQ(staticPruneReason(o, *rms, kNoDevice, {256, 0}, ""), std::nullopt);
  // Its occupancy at 1024 threads is still fine; switch off -> kept even with the matrix rule.
  o.enabled = false;
  EXPECT_EQ(staticPruneReason(o, *rms, kNoDevice, {256, 0}, "v_mfma"), std::nullopt);
}

TEST(StaticPruneReal, Gfx90aHiprtcWithoutDumps) { checkAmd("gfx90a"); }
TEST(StaticPruneReal, Gfx942ClangWithoutDumps) { checkAmd("gfx942"); }

TEST(StaticPruneReal, NvrtcOccupancyAndSpillsFromPtxas) {
  auto cc = openNvrtcCompiler();
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("no NVRTC: " << cc.status().toString());
  // A kernel whose live values exceed a 32-register cap: ptxas spills.
  CompileRequest r;
  r.source = R"(
extern "C" __global__ void spilly(const float* __restrict__ x, float* __restrict__ y, int n) {
  float acc[48];
#pragma unroll
  for (int i = 0; i < 48; ++i) acc[i] = x[threadIdx.x + i * 64];
  for (int k = 0; k < n; ++k) {
#pragma unroll
    for (int i = 0; i < 48; ++i) acc[i] = acc[i] * acc[(i + 7) % 48] + x[k];
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < 48; ++i) s += acc[i];
  y[threadIdx.x] = s;
})";
  r.source_name = "spilly.cu";
  r.entry = "spilly";
  r.arch = "sm_90a";
  auto free_regs = (*cc)->compile(r);
  ASSERT_TRUE(free_regs.ok()) << free_regs.status().toString();
  EXPECT_FALSE(free_regs->resources.spills());
  EXPECT_EQ(staticPruneReason({}, *free_regs, kNoDevice, {256, 0}, ""), std::nullopt);
  // 1024 threads x > 64 registers cannot be resident: occupancy 0.
  if (free_regs->resources.registers > 64) {
    auto why = staticPruneReason({}, *free_regs, kNoDevice, {1024, 0}, "");
    ASSERT_TRUE(why.has_value());
    EXPECT_EQ(why->rfind("occupancy 0 blocks/SM (registers " +
                             std::to_string(free_regs->resources.registers) + " x 1024 threads",
                         0),
              0u)
        << *why;
  }
  r.options = {"--maxrregcount=32"};
  auto capped = (*cc)->compile(r);
  ASSERT_TRUE(capped.ok()) << capped.status().toString();
  ASSERT_TRUE(capped->resources.spills()) << capped->log;
  auto why = staticPruneReason({}, *capped, kNoDevice, {256, 0}, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(
      why->rfind("spills " + std::to_string(capped->resources.spill_store_bytes) + " B stores", 0),
      0u)
      << *why;
  StaticPruneOptions off;
  off.enabled = false;
  EXPECT_EQ(staticPruneReason(off, *capped, kNoDevice, {256, 0}, ""), std::nullopt);
}

}  // namespace
}  // namespace ktune
