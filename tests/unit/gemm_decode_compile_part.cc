// The decode kind's NVRTC compiles (part of the gemm_decode_test program: KTUNE_TEST_PARTS in
// tests/CMakeLists.txt): a spread of each body's configs compiles for sm_90a to PTX holding what
// the body promises (mma.sync without spills, FP32 FMAs and no matrix instruction, bulk tensor
// copies), and the FMA and TMA-fed bodies' spaces and launch rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/compiler.h"
#include "templates/gemm.h"
#include "tests/support/tools.h"
#include "tests/unit/gemm_decode_test_util.h"
#include "tests/unit/gemm_test_util.h"

namespace ktune::gemm {
namespace {

using namespace decode_test;  // NOLINT: the shared helpers (gemm_decode_test_util.h)

// The FMA body's PTX: fp32 FMAs, no matrix instruction (the point of the body).
std::string fmaBodyCheck(const std::string& ptx) {
  if (ptx.find("fma.rn.f32") == std::string::npos) return "PTX lacks fp32 FMAs";
  if (ptx.find("mma") != std::string::npos) return "PTX has a matrix instruction";
  return "";
}

// The curated configs of the smallest and largest M tier and every 251st config of the accepted
// space (each compiled for a shape of its own tier), for sm_90a: no spills, mma.sync in the PTX.
TEST(GemmDecode, ConfigsCompileWithMmaSyncAndNoSpills) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  // (The TMA-fed body, DC_WG = 2: GemmDecode.TmaFedBodyCompilesWithBulkTensorCopies.)
  for (int64_t m : {1, 128})
    for (const Config& c : curatedConfigs(KernelKind::kDecode, nt(m, 4096, 4096)))
      if (!decodeTakesTensorMaps(KernelKind::kDecode, c) && c.getInt("DC_WG") != 3)
        jobs.emplace_back(c, nt(m, 4096, 4096));
  std::vector<Config> acc;
  for (const Config& c : configSpace(KernelKind::kDecode).enumerate("cuda", 227 * 1024).accepted)
    if (!decodeTakesTensorMaps(KernelKind::kDecode, c)) acc.push_back(c);
  for (size_t j = 0; j < acc.size(); j += 251) jobs.emplace_back(acc[j], nt(8 * acc[j].getInt("DC_MT"), 4096, 4096));
  // The gate/up epilogue (with bias and C +=) at the smallest and the largest tier.
  for (int64_t m : {1, 128}) {
    GemmShape g = nt(m, 8192, 4096);
    g.act = Activation::kSiluMul;
    g.has_bias = true;
    g.beta = 1.0f;
    g.ldc = 4096;
    jobs.emplace_back(curatedConfigs(KernelKind::kDecode, g).front(), g);
    jobs.emplace_back(m == 1 ? wgConfig(1, 4, 1, 1, 4, 2) : wgConfig(16, 8, 1, 1, 2, 1, 2), g);
  }
  compileEach(**cc, jobs, [](const Config& c, const std::string& ptx) -> std::string {
    if (c.getInt("DC_WG") == 3) return fmaBodyCheck(ptx);
    if (ptx.find(c.getInt("DC_WG") ? "wgmma.mma_async.sync.aligned.m64n"
                                   : "mma.sync.aligned.m16n8k16") == std::string::npos)
      return "PTX lacks its matrix instruction";
    return "";
  });
}

// Every body issues its first weight lines' L2 prefetch before the programmatic-launch wait (so a
// dependent launch streams them while the previous kernel drains) and reads no global memory
// before it (the wait orders the reads after the previous kernel's writes).
TEST(GemmDecode, EveryBodyPrefetchesItsFirstWeightsBeforeThePdlWait) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  for (int64_t wg : {0, 1, 2, 3})
    for (int64_t m : {1, 16})
      for (const Config& c : curatedConfigs(KernelKind::kDecode, nt(m, 4096, 4096)))
        if (c.getInt("DC_WG") == wg) {
          jobs.emplace_back(c, nt(m, 4096, 4096));
          break;
        }
  GemmShape g = nt(16, 8192, 4096);  // the gate/up rows through the TMA body's row map
  g.act = Activation::kSiluMul;
  g.ldc = 4096;
  jobs.emplace_back(curatedConfigs(KernelKind::kDecode, g).front(), g);
  ASSERT_GE(jobs.size(), 5u);
  compileEach(**cc, jobs, [](const Config&, const std::string& ptx) -> std::string {
    const size_t wait = ptx.find("griddepcontrol.wait"), pre = ptx.find("prefetch.global.L2");
    if (wait == std::string::npos || pre == std::string::npos) return "no wait or no L2 prefetch";
    if (pre > wait) return "the first L2 prefetch comes after the wait";
    if (ptx.find("ld.global") < wait) return "a global load before the wait";
    return "";
  });
}

Config fmaConfig(int64_t warps, int64_t nt_, int64_t u, int64_t depth, int64_t grid, int64_t mt = 1,
                 int64_t xr = 0) {
  return Config{{"DC_WG", int64_t{3}}, {"DC_WARPS", warps}, {"DC_NT", nt_},
                {"DC_MT", mt},         {"DC_U", u},         {"DC_DEPTH", depth},
                {"DC_PF", int64_t{1}}, {"DC_XR", xr},       {"DC_GRID", grid}};
}

// DC_WG = 3, the CUDA-core FMA body: M <= 8 only (DC_MT the power of two >= M, grids 0..3
// pinned), no shared memory, no workspace; groups of 2*DC_NT rows (silu_mul: DC_NT columns) over DC_WARPS warps a
// block, one group per warp (DC_GRID = 0) or DC_GRID blocks per SM; any NVIDIA architecture.
TEST(GemmDecode, FmaBodySpaceAndLaunchRule) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  size_t fmas = 0;
  for (const Config& c : sp.enumerate("cuda", 227 * 1024).accepted) {
    if (c.getInt("DC_WG") != 3) continue;
    ++fmas;
    EXPECT_LE(c.getInt("DC_MT"), 8) << c.toString();
    EXPECT_LE(c.getInt("DC_GRID"), 3) << c.toString();
    const int64_t nt = c.getInt("DC_NT"), mt = c.getInt("DC_MT"), u = c.getInt("DC_U");
    const int64_t w = c.getInt("DC_WARPS"), g = c.getInt("DC_GRID");
    EXPECT_LE(c.getInt("DC_DEPTH") * 8 * nt * u + 2 * nt * mt + 8 * mt * std::min<int64_t>(u, 2) + 8,
              std::min<int64_t>(255, 2048 / (w * (g ? g : 16 / w))) - 24)
        << c.toString();
    EXPECT_EQ(sharedBytes(KernelKind::kDecode, c), 0) << c.toString();
  }
  EXPECT_GT(fmas, 20u);
  // 8 rows of A at 128 registers a thread (two blocks of 8 warps per SM): over the budget (spills);
  // at 170 (three blocks of 4 warps), within.
  EXPECT_FALSE(sp.validate(fmaConfig(8, 2, 1, 2, 0, 8)).ok());
  EXPECT_TRUE(sp.validate(fmaConfig(4, 2, 1, 2, 3, 8)).ok());
  EXPECT_FALSE(sp.validate(fmaConfig(4, 1, 2, 2, 1, 16)).ok());
  DeviceInfo dev = sm90aDevice();
  dev.arch = "sm_80";  // no sm_90a instruction in this body
  auto p = launchPlan(KernelKind::kDecode, fmaConfig(8, 2, 1, 2, 0), nt(1, 4099, 4096), dev);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->grid.x, 129u);  // ceil(ceil(4099 / 4) / 8)
  EXPECT_EQ(p->block.x, 256u);
  EXPECT_EQ(p->shared_bytes, 0);
  EXPECT_EQ(p->workspace_bytes, 0);
  EXPECT_EQ(p->counters, 0);
  auto q = launchPlan(KernelKind::kDecode, fmaConfig(4, 1, 2, 2, 2, 8), nt(8, 28672, 4096), dev);
  ASSERT_TRUE(q.ok()) << q.status().toString();
  EXPECT_EQ(q->grid.x, 2u * 132u);
  GemmShape g = nt(3, 2 * 14336, 4096);  // gate/up: 14336 columns in groups of DC_NT = 2
  g.act = Activation::kSiluMul;
  g.ldc = 14336;
  auto r = launchPlan(KernelKind::kDecode, fmaConfig(4, 2, 1, 2, 0, 4), g, dev);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->grid.x, 14336u / 2u / 4u);
  EXPECT_TRUE(applicable(KernelKind::kDecode, fmaConfig(4, 1, 2, 2, 0, 8), nt(8, 64, 64)).ok());
  EXPECT_TRUE(applicable(KernelKind::kDecode, fmaConfig(4, 1, 2, 2, 0, 4), nt(3, 64, 64)).ok());
  const Status three = applicable(KernelKind::kDecode, fmaConfig(4, 1, 2, 2, 0, 2), nt(3, 64, 64));
  EXPECT_EQ(three.code(), Code::kUnsupported);
  EXPECT_NE(three.toString().find("power of two >= M"), std::string::npos) << three.toString();
  const Status nine = applicable(KernelKind::kDecode, fmaConfig(4, 1, 2, 2, 0, 8), nt(9, 64, 64));
  EXPECT_EQ(nine.code(), Code::kUnsupported);
  EXPECT_NE(nine.toString().find("M <= 8"), std::string::npos) << nine.toString();
  // The curated list's DC_MT "auto" follows the same rule for this body.
  for (int64_t m : {1, 2, 3, 5, 8})
    for (const Config& c : curatedConfigs(KernelKind::kDecode, nt(m, 4096, 4096)))
      if (c.getInt("DC_WG") == 3) {
        EXPECT_TRUE(c.getInt("DC_MT") >= m && c.getInt("DC_MT") < 2 * m) << m;
      }
}

// The FMA body's own knob values: DC_PF = 0 (plain loads) and DC_XR = 1 (the ring slot refilled
// before the stage's FMAs, one more stage of registers in the estimate); no other body takes
// DC_PF = 0.
TEST(GemmDecode, FmaBodyPlainLoadsAndEarlyRefill) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  size_t plain = 0, early = 0;
  for (const Config& c : sp.enumerate("cuda", 227 * 1024).accepted) {
    if (c.getInt("DC_PF") == 0) {
      EXPECT_EQ(c.getInt("DC_WG"), 3) << c.toString();
      ++plain;
    }
    early += c.getInt("DC_WG") == 3 && c.getInt("DC_XR") == 1;
  }
  EXPECT_GT(plain, 20u);
  EXPECT_GT(early, 20u);
  Config mma = decodeConfig(1);
  mma.set("DC_PF", int64_t{0});
  EXPECT_FALSE(sp.validate(mma).ok());
  Config c = fmaConfig(8, 1, 2, 2, 2, 1, 1);
  c.set("DC_PF", int64_t{0});
  EXPECT_TRUE(sp.validate(c).ok()) << sp.validate(c).toString();
  // 8 rows of A, 4-row groups, three blocks of 4 warps: within the budget with DC_XR = 0, over it
  // with the extra stage.
  EXPECT_TRUE(sp.validate(fmaConfig(4, 2, 1, 2, 3, 8, 0)).ok());
  EXPECT_FALSE(sp.validate(fmaConfig(4, 2, 1, 2, 3, 8, 1)).ok());
  const DeviceInfo dev = sm90aDevice();
  auto p = launchPlan(KernelKind::kDecode, c, nt(1, 8192, 14336), dev);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->grid.x, 2u * 132u);
  EXPECT_EQ(p->shared_bytes, 0);
}

// The FMA body compiles for sm_90a (its curated configs; gate/up with bias and C +=, f16 operands,
// a persistent grid of 3 blocks per SM with 4-row groups): fp32 FMAs and no matrix instruction in the PTX, no
// spills.
TEST(GemmDecode, FmaBodyCompilesWithoutMatrixInstructions) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  GemmShape g = nt(3, 8192, 4096);
  g.act = Activation::kSiluMul;
  g.has_bias = true;
  g.beta = 1.0f;
  g.ldc = 4096;
  GemmShape h = denseShape(Layout::kNT, ElemType::kF16, ElemType::kF32, 8, 4096, 4096);
  for (const Config& c : curatedConfigs(KernelKind::kDecode, nt(1, 4096, 4096)))
    if (c.getInt("DC_WG") == 3) jobs.emplace_back(c, nt(1, 4096, 4096));
  EXPECT_GE(jobs.size(), 2u) << "the curated list offers the FMA body at M = 1";
  jobs.emplace_back(fmaConfig(4, 2, 1, 2, 3, 4), nt(4, 4096, 4096));
  jobs.emplace_back(fmaConfig(8, 2, 1, 2, 0, 4), g);
  jobs.emplace_back(fmaConfig(4, 1, 2, 2, 1, 8), h);
  // At the register budget with 8 rows of A: 136 of 146 (three blocks of 4 warps), 104 of 104;
  // with one row, 58 of 61 (three blocks of 8 warps).
  GemmShape g8 = g;
  g8.m = 8;
  jobs.emplace_back(fmaConfig(4, 2, 1, 2, 3, 8), g8);
  jobs.emplace_back(fmaConfig(8, 1, 1, 2, 2, 8), nt(7, 4096, 4096));
  jobs.emplace_back(fmaConfig(8, 1, 2, 2, 3), nt(1, 4096, 4096));
  // The ring refilled before the FMAs (with the gate/up pair, bias and C +=, and 2 rows of A).
  jobs.emplace_back(fmaConfig(8, 1, 2, 2, 2, 1, 1), nt(1, 4096, 4096));
  jobs.emplace_back(fmaConfig(4, 1, 2, 2, 3, 4, 1), g);
  jobs.emplace_back(fmaConfig(4, 2, 1, 2, 3, 2, 1), nt(2, 4096, 4096));
  compileEach(**cc, jobs, [](const Config&, const std::string& ptx) { return fmaBodyCheck(ptx); });
}

// DC_WG = 2, the TMA-fed ring: its knobs (DC_PF pinned), one producer warp, the same ring bytes as
// the cp.async body, and the tensor maps its launch carries (A in boxes of its M tier's rows, up to
// 64; weights in boxes of 64 rows and 32 for the gate/up halves).
TEST(GemmDecode, TmaFedBodySpaceLaunchRuleAndMaps) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  Config c = wgConfig(1, 4, 1, 2, 4, 1);
  c.set("DC_WG", int64_t{2});
  ASSERT_TRUE(sp.validate(c).ok()) << sp.validate(c).toString();
  // DC_PF = 2: a producer warpgroup (A by cp.async beside the TMA weight boxes), not with the pair.
  Config wide = c;
  wide.set("DC_PF", int64_t{2});
  EXPECT_TRUE(sp.validate(wide).ok()) << sp.validate(wide).toString();
  auto pw = launchPlan(KernelKind::kDecode, wide, nt(8, 4096, 4096), sm90aDevice());
  ASSERT_TRUE(pw.ok()) << pw.status().toString();
  EXPECT_EQ(pw->block.x, 4u * 32u + 128u);
  wide.set("DC_GRID", int64_t{7});
  wide.set("DC_MT", int64_t{8});
  EXPECT_FALSE(sp.validate(wide).ok());
  Config cp = c;
  cp.set("DC_WG", int64_t{1});
  // The same ring as the cp.async body, plus the gate/up hand-over: 64 threads x 4 floats.
  EXPECT_EQ(sharedBytes(KernelKind::kDecode, c), sharedBytes(KernelKind::kDecode, cp) + 64 * 4 * 4);
  EXPECT_TRUE(decodeTakesTensorMaps(KernelKind::kDecode, c));
  EXPECT_FALSE(decodeTakesTensorMaps(KernelKind::kDecode, cp));
  EXPECT_FALSE(decodeTakesTensorMaps(KernelKind::kDecode, decodeConfig(1)));
  const DeviceInfo dev = sm90aDevice();
  auto p = launchPlan(KernelKind::kDecode, c, nt(8, 4096, 4096), dev);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->grid.x, 132u);
  EXPECT_EQ(p->block.x, 4u * 32u + 32u);
  EXPECT_EQ(p->counters, 4096 / 64);
  DeviceInfo a100 = dev;
  a100.arch = "sm_80";
  EXPECT_EQ(launchPlan(KernelKind::kDecode, c, nt(8, 4096, 4096), a100).status().code(),
            Code::kUnsupported);
  // DC_GRID = 4, 5: a cluster of 2 or 4 blocks per tile, no workspace, no counters.
  Config cl = c;
  cl.set("DC_GRID", int64_t{4});
  auto q = launchPlan(KernelKind::kDecode, cl, nt(8, 4099, 4104), dev);
  ASSERT_TRUE(q.ok()) << q.status().toString();
  EXPECT_EQ(q->grid.x, 2u * 65u);
  EXPECT_EQ(q->workspace_bytes, 0);
  EXPECT_EQ(q->counters, 0);
  cl.set("DC_GRID", int64_t{5});
  auto q4 = launchPlan(KernelKind::kDecode, cl, nt(8, 4096, 4096), dev);
  ASSERT_TRUE(q4.ok()) << q4.status().toString();
  EXPECT_EQ(q4->grid.x, 4u * 64u);
  // DC_GRID = 6: persistent, one block per SM at most one per tile, whole tiles: no workspace.
  Config per = c;
  per.set("DC_GRID", int64_t{6});
  ASSERT_TRUE(sp.validate(per).ok()) << sp.validate(per).toString();
  auto r6 = launchPlan(KernelKind::kDecode, per, nt(8, 28672, 4096), dev);
  ASSERT_TRUE(r6.ok()) << r6.status().toString();
  EXPECT_EQ(r6->grid.x, 132u);
  EXPECT_EQ(r6->workspace_bytes, 0);
  EXPECT_EQ(r6->counters, 0);
  auto r6small = launchPlan(KernelKind::kDecode, per, nt(8, 4096, 4096), dev);
  ASSERT_TRUE(r6small.ok());
  EXPECT_EQ(r6small->grid.x, 64u);
  Config per_cp = per;
  per_cp.set("DC_WG", int64_t{1});
  EXPECT_FALSE(sp.validate(per_cp).ok());
  // Only the TMA-fed body splits over a cluster; its ring must hold the sums a block takes in: in
  // the reduce-scatter (DC_MT >= blocks) 3 x 128 threads x a quarter of 64 floats at the 128 tier
  // (24 KB) fits 2 stages x 192 rows x 128 bytes (48 KB), where all 64 (96 KB) did not.
  Config cp4 = cp;
  cp4.set("DC_GRID", int64_t{4});
  EXPECT_FALSE(sp.validate(cp4).ok());
  EXPECT_FALSE(sp.validate(wgConfig(16, 4, 1, 1, 1, 5)).ok());
  Config small_ring = wgConfig(16, 4, 1, 1, 1, 5);
  small_ring.set("DC_WG", int64_t{2});
  EXPECT_TRUE(sp.validate(small_ring).ok()) << sp.validate(small_ring).toString();
  small_ring.set("DC_GRID", int64_t{4});  // a half of 32 KB fits the 48 KB ring
  EXPECT_TRUE(sp.validate(small_ring).ok()) << sp.validate(small_ring).toString();
  // 1 KB of each weight row per stage: TMA only.
  Config u8 = cp;
  u8.set("DC_U", int64_t{8});
  u8.set("DC_DEPTH", int64_t{1});
  EXPECT_FALSE(sp.validate(u8).ok());
  u8.set("DC_WG", int64_t{2});
  EXPECT_TRUE(sp.validate(u8).ok()) << sp.validate(u8).toString();
  // The weights in boxes of 64 rows and of 32; the gate/up pair's third map is 3-D, [2][N/2][K] in
  // boxes of 2 x 32 rows (a slab's 32 gate rows and their 32 up rows in one request).
  GemmShape g = nt(4, 8190, 1000);
  g.act = Activation::kSiluMul;
  g.ldb = 1008;
  EXPECT_TRUE(applicable(KernelKind::kDecode, c, g).ok()) << applicable(KernelKind::kDecode, c, g).toString();
  GemmShape plain = g;
  plain.act = Activation::kNone;
  const TmaDescriptors dd = decodeDescriptors(g, 4096, 8192), dp = decodeDescriptors(plain, 4096, 8192);
  const TensorMap2DDesc* maps[] = {&dd.b, &dd.c, &dp.b, &dp.c};
  for (const TensorMap2DDesc* m : maps) {
    const TensorMap2DDesc& w = *m;
    EXPECT_EQ(w.base, 8192u);
    EXPECT_EQ(w.rows, &w == &dd.c ? 4095u : 8190u);
    EXPECT_EQ(w.cols, 1000u);
    EXPECT_EQ(w.row_stride_bytes, 2016u);
    EXPECT_EQ(w.box_cols, 64u);
    EXPECT_EQ(w.planes, &w == &dd.c ? 2u : 1u);
    EXPECT_EQ(w.box_planes, &w == &dd.c ? 2u : 1u);
    EXPECT_TRUE(checkTensorMap2D(w).ok()) << checkTensorMap2D(w).toString();
  }
  EXPECT_EQ(dd.c.plane_stride_bytes, 4095u * 2016u);  // the first up row
  EXPECT_EQ(dd.b.box_rows, 64u);
  EXPECT_EQ(dd.c.box_rows, 32u);
  EXPECT_EQ(dp.c.box_rows, 32u);
  EXPECT_EQ(dd.a.base, 4096u);
  // The one-slab gate/up hand-over at the 128 tier fits 160 threads' registers, not 288's.
  GemmShape g128 = nt(128, 8192, 4096);
  g128.act = Activation::kSiluMul;
  Config w8 = wgConfig(16, 8, 1, 1, 2, 1);
  w8.set("DC_WG", int64_t{2});
  EXPECT_EQ(applicable(KernelKind::kDecode, w8, g128).code(), Code::kUnsupported);
  w8.set("DC_WARPS", int64_t{4});
  EXPECT_TRUE(applicable(KernelKind::kDecode, w8, g128).ok());
  // A's boxes: the tier's rows (8, 16, 32, 64), 64 at the 128 tier (two boxes per stage).
  const std::pair<int64_t, int64_t> tiers[] = {{1, 8}, {8, 8}, {9, 16}, {17, 32}, {33, 64}, {65, 64}, {128, 64}};
  for (auto [m, rows] : tiers) EXPECT_EQ(decodeABoxRows(m), rows) << m;
  GemmShape s = nt(5, 4096, 1000);
  s.lda = 1024;
  const TensorMap2DDesc a = decodeAMap(s, 4096);
  EXPECT_EQ(a.rows, 5u);
  EXPECT_EQ(a.cols, 1000u);
  EXPECT_EQ(a.row_stride_bytes, 2048u);
  EXPECT_EQ(a.box_rows, 8u);
  EXPECT_EQ(a.box_cols, 64u);
  EXPECT_EQ(a.swizzle_bytes, 128u);
  EXPECT_TRUE(checkTensorMap2D(a).ok()) << checkTensorMap2D(a).toString();
  // Every curated TMA config is a valid point of the space.
  size_t tma = 0;
  for (int64_t m : {1, 16, 32, 128})
    for (const Config& k : curatedConfigs(KernelKind::kDecode, nt(m, 4096, 4096)))
      tma += decodeTakesTensorMaps(KernelKind::kDecode, k) ? 1 : 0;
  EXPECT_GE(tma, 8u);
}

// The TMA-fed body compiles for sm_90a (plain, bias + C +=, gate/up; stream-K, both cluster
// splits and the persistent whole-tile grid) at the smallest, a middle and the largest tier: bulk tensor copies and wgmma in the PTX
// (and the cluster reduction's stores), no spills.
TEST(GemmDecode, TmaFedBodyCompilesWithBulkTensorCopies) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  // (M, DC_MT, DC_WARPS, DC_U, DC_DEPTH, gate/up with bias and C +=, DC_GRID, DC_NT)
  const int64_t cases[][8] = {{1, 1, 4, 8, 1, 0, 5, 1}, {40, 8, 4, 1, 4, 1, 4, 1},
                              {128, 16, 4, 2, 2, 1, 1, 1}, {16, 2, 8, 4, 1, 1, 4, 2},
                              {8, 1, 4, 2, 2, 1, 6, 2}};
  for (const auto& k : cases) {
    Config c = wgConfig(k[1], k[2], k[7], k[3], k[4], k[6]);
    c.set("DC_WG", int64_t{2});
    GemmShape g = nt(k[0], 8192, 4096);
    if (k[5]) {
      g.act = Activation::kSiluMul;
      g.has_bias = true;
      g.beta = 1.0f;
      g.ldc = 4096;
    }
    jobs.emplace_back(c, g);
  }
  compileEach(**cc, jobs, [](const Config& c, const std::string& ptx) -> std::string {
    if (ptx.find("cp.async.bulk.tensor.2d") == std::string::npos ||
        ptx.find("wgmma.mma_async") == std::string::npos)
      return "PTX lacks bulk tensor copies or wgmma";
    // The one-slab gate/up pair (the second and third cases: DC_NT 1, DC_MT > 1) loads its weights through
    // the pair's 3-D map; every other body in 2-D boxes.
    const bool pair3d = c.getInt("DC_NT") == 1 && c.getInt("DC_MT") > 1;
    if (pair3d != (ptx.find("cp.async.bulk.tensor.3d") != std::string::npos))
      return pair3d ? "PTX lacks the pair's 3-D weight boxes" : "PTX has 3-D boxes";
    const bool cluster = c.getInt("DC_GRID") == 4 || c.getInt("DC_GRID") == 5;
    if (cluster != (ptx.find("st.shared::cluster") != std::string::npos))
      return cluster ? "PTX lacks the cluster reduction" : "PTX has a cluster reduction";
    return "";
  });
}

// The TMA-fed body's epilogue at 128 rows loads every value of C a residual add (beta = 1) reads
// before it stores the first output, and computes the gate/up outputs in straight-line code with
// the approximate division: element by element each load of C waited its own L2 round trip and
// each silu its own chain, which made the residual cost 1.3-1.7x and the gate/up 1.3x the plain
// GEMM at 64..128 rows (bench/NOTES.md). In the PTX: 16-bit global loads before the first 16-bit
// global store, the SiLUs' tanh.approx (bf16 C) before it, and no IEEE division.
TEST(GemmDecode, TmaEpilogueLoadsTheResidualAndComputesBeforeItStores) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<testutil::CompileJob> jobs;
  for (const Config& c : curatedConfigs(KernelKind::kDecode, nt(128, 4096, 4096))) {
    // DC_XR = 1 stores C staged through the ring in 16-byte runs (store_staged): not this epilogue.
    if (!decodeTakesTensorMaps(KernelKind::kDecode, c) || c.getInt("DC_XR") != 0 || jobs.size() >= 5) continue;
    GemmShape r = nt(128, 4096, 4096);
    r.beta = 1.0f;
    jobs.emplace_back(KernelKind::kDecode, c, r);
    GemmShape g = nt(128, 4096, 4096);
    g.act = Activation::kSiluMul;
    if (applicable(KernelKind::kDecode, c, g).ok()) jobs.emplace_back(KernelKind::kDecode, c, g);
  }
  ASSERT_EQ(jobs.size(), 5u);  // three configs, two of them with the gate/up too
  auto count_before = [](const std::string& ptx, const std::string& what, size_t end) {
    size_t n = 0;
    for (size_t at = ptx.find(what); at != std::string::npos && at < end; at = ptx.find(what, at + 1)) ++n;
    return n;
  };
  auto failures = testutil::compileJobs(
      **cc, jobs, [&](const Config&, const GemmShape& s, const std::string& ptx) -> std::string {
        const size_t store = ptx.find("st.global.u16");
        if (store == std::string::npos) return "PTX lacks a 16-bit global store";
        if (s.act == Activation::kSiluMul) {
          if (ptx.find("div.rn.f32") != std::string::npos) return "the gate/up epilogue divides IEEE";
          // bf16 C: the SiLU's one MUFU op is tanh.approx (decode.cuh's silu_mul_value).
          const size_t ex = count_before(ptx, "tanh.approx.f32", store);
          return ex >= 16 ? "" : std::to_string(ex) + " SiLUs (tanh.approx) before the first store (want >= 16)";
        }
        const size_t loads = count_before(ptx, "ld.global.u16", store);
        return loads >= 32 ? "" : std::to_string(loads) + " loads of C before the first store (want >= 32)";
      });
  for (const auto& f : failures)
    if (!f.empty()) ADD_FAILURE() << f;
}

// DC_WP = 1 (the probe knob: a stage's wgmmas kept in flight, its slot released a stage later)
// compiles for sm_90a on the 16/32/64/128-row picks of the cluster K split (XR 3, 0, 3, 1), the
// persistent grid (G6: the flush inside the loop), stream-K (G0: the workspace), the row-split pair
// (G7: the peer's release) and the gate/up pair: wgmma_wait 1 in the PTX, no spills.
TEST(GemmDecode, TmaFedPipelinedConsumersCompile) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  // (M, N, DC_MT, DC_WARPS, DC_U, DC_DEPTH, DC_XR, DC_GRID, gate/up)
  for (const auto& k : std::vector<std::array<int64_t, 9>>{{16, 4096, 2, 4, 4, 2, 3, 4, 0},
                                                           {32, 4096, 4, 4, 2, 2, 0, 4, 0},
                                                           {64, 4096, 8, 4, 2, 2, 3, 4, 0},
                                                           {128, 4096, 16, 4, 2, 2, 1, 4, 0},
                                                           {16, 28672, 2, 8, 4, 1, 0, 6, 0},
                                                           {16, 4096, 2, 4, 4, 1, 0, 0, 0},
                                                           {128, 6144, 8, 4, 2, 2, 0, 7, 0},
                                                           {13, 2 * 4096, 2, 4, 2, 2, 3, 4, 1}}) {
    Config c = wgConfig(k[2], k[3], 1, k[4], k[5], k[7]);
    c.set("DC_WG", int64_t{2});
    c.set("DC_XR", k[6]);
    c.set("DC_WP", int64_t{1});
    GemmShape g = nt(k[0], k[1], 4096);
    if (k[8]) {
      g.act = Activation::kSiluMul;
      g.has_bias = true;
      g.ldc = k[1] / 2;
    }
    jobs.emplace_back(c, g);
  }
  // No accumulator defined between the loop's wgmma_wait<1> and the last wgmmas' wait<0>: the
  // zeroing before the loop, once sunk there (onto the path around the loop), made ptxas serialise
  // every wgmma (C7518, a note NVRTC's log does not carry; acc_fence pins it).
  compileEach(**cc, jobs, [](const Config&, const std::string& ptx) -> std::string {
    if (ptx.find("cp.async.bulk.tensor") == std::string::npos || ptx.find("wgmma.mma_async") == std::string::npos)
      return "PTX lacks bulk tensor copies or wgmma";
    const size_t w1 = ptx.find("wgmma.wait_group.sync.aligned 1;");
    if (w1 == std::string::npos) return "no wgmma_wait<1> in the PTX";
    const size_t w0 = ptx.find("wgmma.wait_group.sync.aligned 0;", w1);
    if (w0 == std::string::npos) return "no wgmma_wait<0> after the loop";
    return ptx.substr(w1, w0 - w1).find("0f00000000") == std::string::npos ? "" : "accumulators zeroed beside the last wait";
  });
}

}  // namespace
}  // namespace ktune::gemm

