#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compiler/analysis/isa_report.h"
#include "compiler/analysis/report.h"
#include "compiler/compiler.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

TEST(IsaReport, Amdgcn) {
  const std::string s = R"(
mfma_step:
	global_load_dwordx4 v[0:3], v4, s[0:1]
	global_load_dword v5, v4, s[2:3]
	s_waitcnt vmcnt(0)
	ds_write_b128 v6, v[0:3]
.LBB0_1:                                ; =>This Inner Loop Header: Depth=1
	ds_read_b128 v[8:11], v6
	s_waitcnt lgkmcnt(0)
	v_mfma_f32_32x32x8_bf16 a[0:15], v[8:9], v[10:11], a[0:15]
	v_mfma_f32_32x32x8_bf16 a[0:15], v[8:9], v[10:11], a[0:15]
	scratch_store_dword off, v1, s33 ; 4-byte Folded Spill
	s_cbranch_scc1 .LBB0_1
; %bb.2:
	global_store_dwordx4 v4, v[0:3], s[4:5]
	s_waitcnt vmcnt(0)
	s_endpgm
)";
  IsaReport r = analyzeIsa(s, IsaKind::kAmdgcn);
  EXPECT_EQ(r.globalLoads(128), 1);
  EXPECT_EQ(r.globalLoads(32), 1);
  EXPECT_EQ(r.global_stores.at(128), 1);
  EXPECT_EQ(r.lds_loads.at(128), 1);
  EXPECT_EQ(r.lds_stores.at(128), 1);
  EXPECT_EQ(r.matrix.at("v_mfma_f32_32x32x8_bf16"), 2);
  EXPECT_EQ(r.matrixCount("v_mfma_f32_32x32x8"), 2);
  EXPECT_EQ(r.matrixCount("v_mfma_f32_16x16x16"), 0);
  EXPECT_EQ(r.waitcnt_total, 3);
  EXPECT_EQ(r.waitcnt_in_loop, 1);
  EXPECT_EQ(r.loops, 1);
  EXPECT_EQ(r.innermost_loops, 1);
  EXPECT_EQ(r.scratch_ops, 1);
  EXPECT_EQ(r.spill_comments, 1);
  auto j = nlohmann::json::parse(r.toJson());
  EXPECT_EQ(j["global_loads"]["128"], 1);
  EXPECT_EQ(j["kind"], "amdgcn");
  EXPECT_NE(r.text().find("v_mfma_f32_32x32x8_bf16 x2"), std::string::npos);
}

TEST(IsaReport, NestedLoopsCountInnermostOnly) {
  const std::string s = R"(
.LBB0_1:
	s_waitcnt vmcnt(0)
.LBB0_2:
	s_waitcnt lgkmcnt(0)
	s_waitcnt lgkmcnt(1)
	s_cbranch_vccnz .LBB0_2
	s_cbranch_scc0 .LBB0_1
	s_branch .LBB0_9
)";
  IsaReport r = analyzeIsa(s, IsaKind::kAmdgcn);
  EXPECT_EQ(r.loops, 2);
  EXPECT_EQ(r.innermost_loops, 1);
  EXPECT_EQ(r.waitcnt_total, 3);
  EXPECT_EQ(r.waitcnt_in_loop, 2);
}

TEST(IsaReport, PtxAndSass) {
  const std::string ptx = R"(
.visible .entry k(
)
{
$L__BB0_1:
	ld.global.nc.v4.u32 	{%r8, %r9, %r10, %r11}, [%rd5];
	cp.async.cg.shared.global [%r1], [%rd2], 16;
	cp.async.wait_group 1;
	ld.shared.v2.f32 {%f1, %f2}, [%r3];
	mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,%r4}, {%r5,%r6}, {%f1,%f2,%f3,%f4};
	@%p1 bra 	$L__BB0_1;
	st.global.b16 [%rd1], %rs1;
	wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {...};
	ret;
}
)";
  IsaReport p = analyzeIsa(ptx, IsaKind::kPtx);
  EXPECT_EQ(p.globalLoads(128), 2);  // ld.global.v4 and cp.async 16
  EXPECT_EQ(p.lds_loads.at(64), 1);
  EXPECT_EQ(p.global_stores.at(16), 1);
  EXPECT_EQ(p.matrix.at("mma.sync.aligned.m16n8k16"), 1);
  EXPECT_EQ(p.matrix.at("wgmma.mma_async.sync.aligned.m64n128k16"), 1);
  EXPECT_EQ(p.loops, 1);
  EXPECT_EQ(p.waitcnt_in_loop, 1);

  const std::string sass = R"(
        /*0080*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
.L_x_1:
        /*0090*/                   LDS.128 R8, [R0] ;
        /*00a0*/                   HMMA.16816.F32.BF16 R12, R4, R8, R12 ;
        /*00b0*/                   DEPBAR.LE SB0, 0x1 ;
        /*00c0*/              @P0 BRA `(.L_x_1) ;
        /*00d0*/                   STG.E.U16 desc[UR4][R2.64], R5 ;
        /*00e0*/                   STL [R1], R3 ;
        /*00f0*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;
)";
  IsaReport q = analyzeIsa(sass, IsaKind::kSass);
  EXPECT_EQ(q.globalLoads(128), 1);
  EXPECT_EQ(q.lds_loads.at(128), 1);
  EXPECT_EQ(q.global_stores.at(16), 1);
  EXPECT_EQ(q.matrix.at("HMMA.16816"), 1);
  EXPECT_EQ(q.matrix.at("HGMMA"), 1);
  EXPECT_EQ(q.loops, 1);
  EXPECT_EQ(q.waitcnt_in_loop, 1);
  EXPECT_EQ(q.scratch_ops, 1);
}

TEST(KernelReport, MergesResourcesOccupancyAndIsa) {
  CodeObject co;
  co.arch = "gfx942";
  co.compiler = "clang";
  co.lowered_entry = "gemm";
  co.resources.vgpr = 170;
  co.resources.shared_bytes = 16384;
  co.resources.wave_size = 64;
  co.resources.max_threads_per_block = 256;
  co.dumps["isa"] = std::string(200, ' ') +
                    "\n\tglobal_load_dwordx4 v[0:3], v4, s[0:1]\n"
                    "\tv_mfma_f32_16x16x16_bf16 v[0:3], v[4:5], v[6:7], v[0:3]\n";
  KernelReport r = analyzeCodeObject(co);
  ASSERT_TRUE(r.has_occupancy) << r.occupancy_note;
  EXPECT_EQ(r.amd.vgpr_allocated, 176);
  EXPECT_EQ(r.amd.occ_vgpr, 2);
  EXPECT_EQ(r.amd.occ_lds, 4);
  EXPECT_EQ(r.threads_per_block, 256);
  ASSERT_TRUE(r.has_isa);
  EXPECT_EQ(r.isa.matrixCount("v_mfma_f32_16x16x16"), 1);
  auto j = nlohmann::json::parse(r.toJson());
  EXPECT_EQ(j["occupancy"]["occ_vgpr"], 2);
  EXPECT_EQ(j["resources"]["vgpr"], 170);
  EXPECT_NE(r.text().find("limited by vgpr"), std::string::npos) << r.text();

  CodeObject nv;
  nv.arch = "sm_90a";
  nv.compiler = "nvrtc";
  nv.entry = "k";
  nv.resources.registers = 128;
  nv.dumps["sass"] = "nvdisasm not installed";
  KernelReport n = analyzeCodeObject(nv, 256);
  ASSERT_TRUE(n.has_occupancy);
  EXPECT_EQ(n.nv.blocks_per_sm, 2);
  EXPECT_FALSE(n.has_isa);
  CodeObject unknown = nv;
  unknown.arch = "sm_75";
  EXPECT_FALSE(analyzeCodeObject(unknown, 128).has_occupancy);
}

// End to end on real compiler output, when clang-19 is there (it is in CI).
TEST(KernelReport, RealGfx942Kernel) {
  auto c = openLlvmAmdgpuCompiler();
  if (!c.ok()) KTUNE_SKIP_WITHOUT_TOOL("clang unavailable: " << c.status().message());
  CompileRequest req;
  req.source = R"(
#include "prelude.cuh"
KTUNE_KERNEL void KTUNE_LAUNCH_BOUNDS(256, 0) k(const ktune::bf16_t* a, float* c, int n) {
  ktune::floatx16_t acc = {};
  for (int i = 0; i < n; ++i) {
    ktune::Vec<ktune::bf16_t, 8> v = ktune::load_vec<8>(a + 8 * (ktune::tid_x() + 256 * i));
    ktune::bf16x4_t x = {(short)v[0].bits, (short)v[1].bits, (short)v[2].bits, (short)v[3].bits};
    ktune::bf16x4_t y = {(short)v[4].bits, (short)v[5].bits, (short)v[6].bits, (short)v[7].bits};
    acc = ktune::mfma_32x32x8_bf16(x, y, acc);
  }
  for (int i = 0; i < 16; ++i) c[ktune::tid_x() * 16 + i] = acc[i];
})";
  req.entry = "k";
  req.arch = "gfx942";
  req.dumps = kDumpIsa;
  auto co = (*c)->compile(req);
  ASSERT_TRUE(co.ok()) << co.status().toString();
  KernelReport r = analyzeCodeObject(*co);
  ASSERT_TRUE(r.has_isa);
  EXPECT_GE(r.isa.matrixCount("v_mfma_f32_32x32x8"), 1);
  EXPECT_GE(r.isa.globalLoads(128), 1);
  EXPECT_GE(r.isa.loops, 1);
  EXPECT_GE(r.isa.waitcnt_in_loop, 1);
  EXPECT_TRUE(r.has_occupancy) << r.occupancy_note;
}

}  // namespace
}  // namespace ktune

namespace ktune {
namespace {
// comgr's disassembly of an executable has no labels: a backward branch is a negative word offset
// and addresses are in comments. The loop and the waits inside it must still be found.
TEST(IsaReportComgr, NumericBackwardBranchIsALoop) {
  const char* text =
      "\ts_load_dwordx2 s[0:1], s[4:5], 0x0                          // 000000001000: C0060002 00000000\n"
      "\tglobal_load_dwordx4 v[0:3], v4, s[0:1]                      // 000000001008: DC5C8000 00000004\n"
      "\ts_waitcnt vmcnt(0)                                          // 000000001010: BF8C0F70\n"
      "\tv_mfma_f32_32x32x8bf16_1k a[0:15], v[0:1], v[2:3], a[0:15] // 000000001014: D3E98000 04020500\n"
      "\ts_cbranch_scc1 65530                                        // 00000000101C: BF85FFFA <k+0x8>\n"
      "\ts_endpgm                                                    // 000000001020: BF810000\n";
  IsaReport r = analyzeIsa(text, IsaKind::kAmdgcn);
  EXPECT_EQ(r.loops, 1);
  EXPECT_EQ(r.innermost_loops, 1);
  EXPECT_EQ(r.waitcnt_in_loop, 1);
  EXPECT_EQ(r.matrixCount("v_mfma_f32_32x32x8"), 1);
}
}  // namespace
}  // namespace ktune
