// AMD analysis without a GPU: occupancy that agrees with LLVM (AGPRs counted once), LLVM's kernel
// info block, the K-loop finder and the ISA verdicts on hand-written AMDGCN/PTX.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <sstream>

#include "compiler/analysis/amd_metadata.h"
#include "compiler/analysis/isa_report.h"
#include "compiler/analysis/occupancy.h"
#include "tools/commands.h"

namespace ktune {
namespace {

TEST(AmdOccupancyLlvm, AgprsAreNotCountedTwice) {
  auto l = amdArchLimits("gfx942");
  ASSERT_TRUE(l.ok());
  // A descriptor with .vgpr_count 184 (120 VGPR + 64 AGPR, as LLVM's TotalNumVgprs) and 40 KiB
  // LDS: 2 waves/EU by registers, 1 workgroup by LDS -> 1 wave/EU, LLVM's "; Occupancy: 1".
  auto o = amdOccupancy(*l, 184, 64, 40960, 4, 56);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->vgpr_allocated, 184);
  EXPECT_EQ(o->occ_vgpr, 2);
  EXPECT_EQ(o->llvm_waves_per_eu, 1);
  EXPECT_DOUBLE_EQ(o->waves_per_eu, 1.0);
  // A kernel using the whole 512-entry file runs at 1 wave/EU; it is not "768 VGPRs".
  auto full = amdOccupancy(*l, 512, 256, 0, 4);
  ASSERT_TRUE(full.ok()) << full.status().toString();
  EXPECT_EQ(full->occ_vgpr, 1);
  EXPECT_EQ(full->llvm_waves_per_eu, 1);
  // Raw counts: LLVM places the AGPRs after the 4-aligned VGPRs.
  EXPECT_EQ(amdTotalVgprs(*l, 121, 64), 188);
  EXPECT_EQ(amdTotalVgprs(*l, 121, 0), 121);
  auto g908 = amdArchLimits("gfx908");
  ASSERT_TRUE(g908.ok());
  EXPECT_EQ(amdTotalVgprs(*g908, 100, 200), 200);
}

TEST(AmdOccupancyLlvm, GuideAndLlvmDifferOnlyInWorkgroupGranularity) {
  auto l = amdArchLimits("gfx90a");
  ASSERT_TRUE(l.ok());
  // 168 VGPRs -> 3 waves/EU. 8 waves per workgroup: the guide fits floor(3*4/8) = 1 workgroup
  // = 2 waves/EU; LLVM's per-wave bound says 3.
  auto o = amdOccupancy(*l, 168, 0, 0, 8);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->occ_vgpr, 3);
  EXPECT_DOUBLE_EQ(o->waves_per_eu, 2.0);
  EXPECT_EQ(o->llvm_waves_per_eu, 3);
  // LDS: 3 workgroups of 4 waves -> LLVM ceil(3*4/4) = 3; guide 3.
  auto d = amdOccupancy(*l, 64, 0, 20000, 4);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->llvm_waves_per_eu, 3);
  EXPECT_DOUBLE_EQ(d->waves_per_eu, 3.0);
  // More than 100 SGPRs cost a wave on GCN (LLVM's getOccupancyWithNumSGPRs).
  auto s = amdOccupancy(*l, 32, 0, 0, 4, 102);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->occ_sgpr, 7);
  EXPECT_EQ(s->llvm_waves_per_eu, 7);
  EXPECT_EQ(s->limiter, "sgpr");
}

TEST(AmdOccupancyLlvm, CliReproducesTheGuideExample) {
  testing::internal::CaptureStdout();
  const int rc = cli::dispatch({"occupancy", "--arch", "gfx942", "--vgpr", "170", "--lds", "0",
                                "--waves", "4"});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("170 VGPRs (.vgpr_count) -> 176 allocated"), std::string::npos) << out;
  EXPECT_NE(out.find("occupancy 2 waves/EU"), std::string::npos) << out;
  EXPECT_EQ(cli::dispatch({"occupancy", "--arch", "gfx942"}), cli::kExitUsage);
  EXPECT_EQ(cli::dispatch({"occupancy", "--arch", "gfx9999", "--vgpr", "1"}), cli::kExitFailed);
}

TEST(LlvmKernelInfo, ParsesTheCommentBlock) {
  const std::string s =
      "other:\n; Kernel info:\n; Occupancy: 8\n"
      "k:                        ; @k\n\ts_endpgm\n; Kernel info:\n; codeLenInByte = 4\n"
      "; NumSgprs: 56\n; NumVgprs: 120\n; NumAgprs: 64\n; TotalNumVgprs: 184\n; ScratchSize: 0\n"
      "; LDSByteSize: 40960 bytes/workgroup (compile time only)\n; Occupancy: 1\n\t.text\n";
  const LlvmKernelInfo i = parseLlvmKernelInfo(s, "k");
  ASSERT_TRUE(i.found());
  EXPECT_EQ(i.occupancy, 1);
  EXPECT_EQ(i.total_vgprs, 184);
  EXPECT_EQ(i.num_agprs, 64);
  EXPECT_EQ(i.num_sgprs, 56);
  EXPECT_EQ(i.lds_bytes, 40960);
  EXPECT_FALSE(parseLlvmKernelInfo(s, "absent").found());
}

// A pipelined K loop: next-tile loads issued first, MFMAs on the current tile from b128 LDS
// reads, then a partial vmcnt wait and the LDS writes; epilogue branches with backward jumps
// elsewhere must not be taken for the K loop.
const char* kGoodLoop = R"(
k:
	buffer_load_dwordx4 v[0:3], v1, s[8:11], 0 offen
.LBB0_1:
	buffer_load_dwordx4 v[4:7], v1, s[8:11], 0 offen
	buffer_load_dwordx4 v[8:11], v2, s[12:15], 0 offen
	ds_read_b128 v[12:15], v3
	ds_read_b128 v[16:19], v3 offset:1024
	s_waitcnt lgkmcnt(1)
	v_mfma_f32_32x32x8_bf16 a[0:15], v[12:13], v[16:17], a[0:15]
	s_waitcnt lgkmcnt(0)
	v_mfma_f32_32x32x8_bf16 a[0:15], v[14:15], v[18:19], a[0:15]
	s_waitcnt vmcnt(2)
	ds_write_b128 v20, v[0:3]
	s_barrier
	s_cbranch_scc1 .LBB0_1
.LBB0_2:
	v_accvgpr_read_b32 v0, a0
	s_waitcnt vmcnt(0)
	s_cbranch_execz .LBB0_2
	global_store_dwordx4 v1, v[0:3], s[4:5]
	s_endpgm
)";

TEST(IsaVerdicts, PipelinedLoopPassesEveryCheck) {
  const IsaReport r = analyzeIsa(kGoodLoop, IsaKind::kAmdgcn);
  ASSERT_NE(r.mainLoop(), nullptr);
  const LoopStats& k = *r.mainLoop();
  EXPECT_EQ(k.matrix_total, 2);
  EXPECT_EQ(k.min_vmcnt, 2);
  EXPECT_EQ(k.min_lgkmcnt, 0);
  EXPECT_EQ(k.lds_loads.at(128), 2);
  for (const auto& v : r.verdicts) EXPECT_TRUE(v.pass) << v.check << ": " << v.reason;
  EXPECT_TRUE(r.allPass());
  EXPECT_NE(r.text().find("PASS overlap"), std::string::npos) << r.text();
}

// The same loop rotated (the wait and barrier of the previous step at the header) and with its
// LDS writes placed after the backward branch, jumping back: still overlapped, writes counted.
TEST(IsaVerdicts, RotatedLoopWithTrailingBlock) {
  const std::string s = R"(
.LBB0_1:
	s_waitcnt vmcnt(0) lgkmcnt(0)
	s_barrier
	buffer_load_dwordx4 v[4:7], v1, s[8:11], 0 offen
	ds_read_b128 v[12:15], v3
	s_waitcnt lgkmcnt(0)
	v_mfma_f32_16x16x16_bf16 a[0:3], v[12:13], v[14:15], a[0:3]
	s_cbranch_vccnz .LBB0_3
	s_cbranch_scc1 .LBB0_1
.LBB0_2:
	global_store_dwordx4 v1, v[0:3], s[4:5]
	s_endpgm
.LBB0_3:
	ds_write_b128 v20, v[4:7]
	s_branch .LBB0_1
)";
  const IsaReport r = analyzeIsa(s, IsaKind::kAmdgcn);
  ASSERT_NE(r.mainLoop(), nullptr);
  EXPECT_EQ(r.mainLoop()->vmcnt0_unoverlapped, 0);
  for (const auto& v : r.verdicts) EXPECT_TRUE(v.pass) << v.check << ": " << v.reason;
}

TEST(IsaVerdicts, SerialisedLoopIsFlaggedWithReasons) {
  const std::string bad = R"(
.LBB0_1:
	global_load_dwordx4 v[4:7], v1, s[8:9]
	global_load_ushort v8, v1, s[8:9]
	s_waitcnt vmcnt(0)
	ds_write_b16 v20, v8
	ds_read2_b64 v[12:15], v3 offset1:4
	s_waitcnt lgkmcnt(0)
	v_accvgpr_write_b32 a0, v0
	v_mfma_f32_16x16x16_f16 a[0:3], v[12:13], v[14:15], a[0:3]
	v_accvgpr_read_b32 v0, a0
	scratch_store_dword off, v1, s33
	s_cbranch_scc1 .LBB0_1
	global_store_short v1, v0, s[4:5]
	s_endpgm
)";
  const IsaReport r = analyzeIsa(bad, IsaKind::kAmdgcn);
  ASSERT_NE(r.mainLoop(), nullptr);
  // ds_read2_b64 is two 64-bit reads, never a 128-bit one.
  EXPECT_EQ(r.mainLoop()->lds_loads.at(64), 2);
  EXPECT_EQ(r.mainLoop()->lds_loads.count(128), 0u);
  EXPECT_EQ(r.mainLoop()->lds_read2, 1);
  std::map<std::string, std::string> warn;
  for (const auto& v : r.verdicts)
    if (!v.pass) warn[v.check] = v.reason;
  EXPECT_NE(warn["overlap"].find("1 vmcnt(0) wait(s) in the K loop reach back to its loads"),
            std::string::npos)
      << warn["overlap"];
  EXPECT_NE(warn["lds-b128"].find("ds_read2"), std::string::npos);
  EXPECT_NE(warn["accvgpr"].find("2 v_accvgpr"), std::string::npos) << warn["accvgpr"];
  EXPECT_NE(warn["global-16B"].find("1 global loads narrower"), std::string::npos);
  EXPECT_TRUE(warn.count("scratch"));
  EXPECT_TRUE(warn.count("stores"));
  EXPECT_FALSE(r.allPass());
}

TEST(IsaVerdicts, NvidiaWaitsAndLdmatrix) {
  const std::string good = R"(
$L__BB0_1:
	cp.async.cg.shared.global [%r1], [%rd2], 16;
	cp.async.wait_group 2;
	ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];
	mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,%r4}, {%r5,%r6}, {%f1,%f2,%f3,%f4};
	@%p1 bra $L__BB0_1;
	ret;
)";
  const IsaReport r = analyzeIsa(good, IsaKind::kPtx);
  ASSERT_NE(r.mainLoop(), nullptr);
  EXPECT_EQ(r.mainLoop()->min_vmcnt, 2);
  EXPECT_EQ(r.mainLoop()->ldmatrix, 1);
  EXPECT_TRUE(r.allPass()) << r.text();
  std::string bad = good;
  bad.replace(bad.find("wait_group 2"), 12, "wait_group 0");
  bad.replace(bad.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16"), 40, "ld.shared.v4.u32");
  const IsaReport b = analyzeIsa(bad, IsaKind::kPtx);
  EXPECT_FALSE(b.allPass()) << b.text();
  EXPECT_NE(b.text().find("WARN overlap: 1 wait_group 0 wait(s)"), std::string::npos)
      << b.text();
  EXPECT_NE(b.text().find("WARN ldmatrix"), std::string::npos) << b.text();
}

}  // namespace
}  // namespace ktune

#include "templates/gemm.h"

namespace ktune {
namespace {

// The MFMA space carries the guide's knobs and drops configs before any compile: LDS above the
// CU's 64 KiB and VGPR estimates above what the workgroup's waves may hold are never enumerated.
TEST(MfmaSpace, GuideKnobsAndBudgetsBeforeCompiling) {
  using namespace gemm;
  const ConfigSpace& sp = configSpace(KernelKind::kMfma);
  const auto e = sp.enumerate("hip", 64 * 1024);
  std::set<int64_t> stages, wpe, waves, bm, bk;
  for (const Config& c : e.accepted) {
    EXPECT_LE(sharedBytes(KernelKind::kMfma, c), 64 * 1024) << c.toString();
    stages.insert(c.getInt("NUM_STAGES"));
    wpe.insert(c.getInt("WAVES_PER_EU"));
    waves.insert(c.getInt("NUM_WAVES"));
    bm.insert(c.getInt("BLOCK_M"));
    bk.insert(c.getInt("BLOCK_K"));
  }
  EXPECT_EQ(stages, (std::set<int64_t>{0, 1, 2}));
  EXPECT_EQ(wpe, (std::set<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(waves, (std::set<int64_t>{4, 8}));
  EXPECT_EQ(bm, (std::set<int64_t>{32, 64, 128, 256}));
  EXPECT_EQ(bk, (std::set<int64_t>{16, 32, 64, 128}));
  std::printf("MFMA space: %zu configs accepted, %zu dropped by constraints and the LDS budget\n",
              e.accepted.size(), e.rejected.size());
  // 256x256 tiles with 8 waves need ~272 VGPRs per lane; 8 waves allow 256: dropped.
  Config big{{"BLOCK_M", int64_t{256}}, {"BLOCK_N", int64_t{256}}, {"BLOCK_K", int64_t{64}},
             {"MATRIX_INSTR", int64_t{16}}, {"NUM_WAVES", int64_t{8}}, {"WAVES_PER_EU", int64_t{0}},
             {"NUM_STAGES", int64_t{0}}, {"GROUP_M", int64_t{8}}, {"SPLIT_K", int64_t{1}}};
  EXPECT_FALSE(sp.validate(big).ok());
  DeviceInfo dev;
  dev.vendor = Vendor::kAmd;
  dev.arch = "gfx942";
  dev.shared_per_block = 64 * 1024;
  const GemmShape nt = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096);
  const auto curated = curatedConfigs(KernelKind::kMfma, nt);
  EXPECT_GE(curated.size(), 16u);
  for (const Config& c : curated) EXPECT_TRUE(launchPlan(KernelKind::kMfma, c, nt, dev).ok()) << c.toString();
  for (Layout l : {Layout::kNN, Layout::kTN, Layout::kTT})
    EXPECT_GE(curatedConfigs(KernelKind::kMfma, denseShape(l, ElemType::kBF16, ElemType::kBF16,
                                                           4096, 4096, 4096))
                  .size(),
              2u)
        << layoutName(l);
}

}  // namespace
}  // namespace ktune

#include "templates/rowwise.h"

namespace ktune {
namespace {

TEST(AmdRowwiseDefaults, SixteenByteAccessesOnAmd) {
  using namespace rowwise;
  for (const char* arch : {"gfx90a", "gfx942"}) {
    auto lim = limitsForArch(arch);
    ASSERT_TRUE(lim.ok()) << arch;
    for (RowDType dt : {RowDType::kBF16, RowDType::kF16, RowDType::kF32}) {
      const Config s = siluMulDefaultConfig(dt, *lim);
      EXPECT_EQ(s.getInt("VEC") * static_cast<int64_t>(sizeOf(dt)), 16) << arch;
      EXPECT_TRUE(siluMulSpace(dt, *lim).validate(s, lim->backend).ok()) << arch << " " << s.toString();
      const Config r = rmsNormDefaultConfig(dt, *lim);
      EXPECT_EQ(r.getInt("VEC") * static_cast<int64_t>(sizeOf(dt)), 16) << arch;
    }
  }
  auto h100 = limitsForArch("sm_90a");
  ASSERT_TRUE(h100.ok());
  // NVIDIA: 16-byte accesses too since the split-store fix, plain loads (NOTES), in the space.
  const Config nv = siluMulDefaultConfig(RowDType::kBF16, *h100);
  EXPECT_EQ(nv.getInt("VEC"), 8);
  EXPECT_EQ(nv.getInt("LOAD_HINT", -1), 0);
  EXPECT_TRUE(siluMulSpace(RowDType::kBF16, *h100).validate(nv, h100->backend).ok());
}

}  // namespace
}  // namespace ktune

#include "tools/report.h"

namespace ktune {
namespace {

CodeObject fakeAmd(const std::string& mfma, const std::string& block_k) {
  CodeObject co;
  co.arch = "gfx942";
  co.compiler = "clang";
  co.entry = "k";
  co.options = {"-x", "hip", "-DBLOCK_K=" + block_k, "-DLAYOUT=1", "-O3"};
  co.resources.vgpr = 184;
  co.resources.agpr = 64;
  co.resources.sgpr = 56;
  co.resources.shared_bytes = 40960;
  co.resources.max_threads_per_block = 256;
  std::string isa = "k:\n";
  for (int i = 0; i < 20; ++i) isa += "\tbuffer_load_dwordx4 v[0:3], v1, s[8:11], 0 offen\n";
  isa += "\t" + mfma + " a[0:15], v[2:3], v[4:5], a[0:15]\n\ts_endpgm\n";
  co.dumps["isa"] = isa;
  return co;
}

TEST(CacheDiff, LongIdenticalLinesConfigAndHistogram) {
  const CodeObject a = fakeAmd("v_mfma_f32_32x32x8_bf16", "32"), b = fakeAmd("v_mfma_f32_16x16x16_bf16", "64");
  auto d = cli::reportDiff(a, b);
  ASSERT_TRUE(d.ok());
  // The occupancy detail line is longer than 70 characters and identical on both sides.
  bool saw_long_equal = false;
  std::istringstream in(*d);
  for (std::string l; std::getline(in, l);)
    if (l.find("VGPRs allocated") != std::string::npos) {
      saw_long_equal = true;
      EXPECT_NE(l.find(" | "), std::string::npos) << l;
      EXPECT_EQ(l.find(" * "), std::string::npos) << l;
    }
  EXPECT_TRUE(saw_long_equal) << *d;
  EXPECT_NE(d->find("BLOCK_K: 32 -> 64"), std::string::npos) << *d;
  EXPECT_EQ(d->find("LAYOUT:"), std::string::npos) << *d;
  EXPECT_NE(d->find("v_mfma_f32_32x32x8_bf16"), std::string::npos) << *d;
  EXPECT_NE(d->find("1 -> 0 (-1)"), std::string::npos) << *d;
  EXPECT_NE(d->find("0 -> 1 (+1)"), std::string::npos) << *d;
}

}  // namespace
}  // namespace ktune

#include "ops/vendor/hipblaslt.h"

namespace ktune {
namespace {

TEST(HipBlasLt, MissingLibraryIsAClearNotFound) {
  auto h = vendor::HipBlasLt::open({"/nonexistent/libhipblaslt.so"});
  if (h.ok()) GTEST_SKIP() << "hipBLASLt is installed here: " << (*h)->version();
  EXPECT_EQ(h.status().code(), Code::kUnavailable);
  EXPECT_NE(h.status().message().find("hipBLASLt not found"), std::string::npos)
      << h.status().message();
  EXPECT_NE(h.status().message().find("libhipblaslt.so.0"), std::string::npos);
  EXPECT_NE(h.status().message().find("/nonexistent/libhipblaslt.so"), std::string::npos);
}

}  // namespace
}  // namespace ktune
