// The decode kind's two consumer warpgroups over A's rows (DC_CW = 2; part of the gemm_decode_test
// program: KTUNE_TEST_PARTS in tests/CMakeLists.txt): the knob's space (not enumerated, its
// constraints), its launch rule and shared memory, and its PTX (wgmma n = 4*DC_MT per warpgroup,
// no spills) on every grid and epilogue.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "templates/gemm.h"
#include "tests/support/tools.h"
#include "tests/unit/gemm_decode_test_util.h"
#include "tests/unit/gemm_test_util.h"

namespace ktune::gemm {
namespace {

using namespace decode_test;  // NOLINT: the shared helpers (gemm_decode_test_util.h)

// DC_CW = 2 is never enumerated (absent: 1, the shipped kernels); it validates with DC_WG 2, two
// consumer warpgroups, one producer warp, DC_MT >= 2, every grid but the row-split pair; the tile
// is the one-warpgroup config's (64 rows per slab: the same grid), the block 288 threads, the
// shared memory the one-warpgroup ring plus the larger hand-over area; the kernel gets the define.
TEST(GemmDecode, TwoConsumerWarpgroupsOverARowsAreAKnob) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  for (const Config& c : sp.enumerate("cuda", 227 * 1024).accepted) ASSERT_FALSE(c.has("DC_CW")) << c.toString();
  const DeviceInfo dev = sm90aDevice();
  for (int64_t grid : {0, 1, 4, 5, 6})
    for (int64_t mt : {4, 8, 16}) {
      const Config one = tmaConfig(mt, 4, 1, 2, 2, grid, grid == 4 ? 1 : 0);
      Config two = tmaConfig(mt, 8, 1, 2, 2, grid, grid == 4 ? 1 : 0);
      two.set("DC_CW", int64_t{2});
      ASSERT_TRUE(sp.validate(two).ok()) << two.toString() << ": " << sp.validate(two).toString();
      const GemmShape s = nt(8 * mt, 4096, 4096);
      auto p1 = launchPlan(KernelKind::kDecode, one, s, dev), p2 = launchPlan(KernelKind::kDecode, two, s, dev);
      ASSERT_TRUE(p1.ok() && p2.ok()) << two.toString() << ": " << p2.status().toString();
      EXPECT_EQ(p2->grid.x, p1->grid.x) << two.toString();
      EXPECT_EQ(p2->block.x, 288u);
      EXPECT_EQ(p2->workspace_bytes, p1->workspace_bytes);
      EXPECT_EQ(sharedBytes(KernelKind::kDecode, two),
                sharedBytes(KernelKind::kDecode, one) + 16 * 4 * 4 * mt * 4);  // the hand-over's share
      bool has = false;
      for (const auto& [name, value] : defines(KernelKind::kDecode, two, s)) has = has || (name == "DC_CW" && value == "2");
      EXPECT_TRUE(has) << two.toString();
    }
  // XR3's reduce-scatter needs a warpgroup's rows to split over the cluster: DC_MT / 2 >= blocks.
  Config xr3 = tmaConfig(16, 8, 1, 2, 2, 4, 3);
  xr3.set("DC_CW", int64_t{2});
  EXPECT_TRUE(sp.validate(xr3).ok()) << sp.validate(xr3).toString();
  xr3.set("DC_MT", int64_t{2});
  EXPECT_FALSE(sp.validate(xr3).ok());
  // (DC_WG, DC_WARPS, DC_MT, DC_PF, DC_GRID, DC_CW): each breaks one rule.
  for (const auto& k : std::vector<std::array<int64_t, 6>>{{1, 8, 16, 1, 4, 2}, {2, 4, 16, 1, 4, 2}, {2, 8, 1, 1, 4, 2},
                                                           {2, 8, 16, 2, 4, 2}, {2, 8, 8, 1, 7, 2}, {2, 8, 16, 1, 4, 1},
                                                           {2, 8, 16, 1, 4, 3}}) {
    Config c = tmaConfig(k[2], k[1], 1, 2, 2, k[4], 0);
    c.set("DC_WG", k[0]);
    c.set("DC_PF", k[3]);
    c.set("DC_CW", k[5]);
    EXPECT_NE(sp.validate(c).message().find("DC_CW"), std::string::npos) << c.toString();
  }
}

// DC_CW = 2 compiles for sm_90a at 16/32/64/128 rows on the cluster K split (XR 0, 1, 3; clusters
// of 2 and 4), the persistent grid, one block per tile, stream-K (the workspace), two slabs, the
// gate/up pair in halves (one slab) and pairs (two), bias and C +=: each warpgroup's wgmma is
// m64n(4*DC_MT) (never the one-warpgroup m64n(8*DC_MT)), no spills.
TEST(GemmDecode, TwoConsumerWarpgroupsOverARowsCompile) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  // (M, N, DC_MT, DC_NT, DC_U, DC_DEPTH, DC_XR, DC_GRID, gate/up with bias and C +=)
  for (const auto& k : std::vector<std::array<int64_t, 9>>{{128, 4096, 16, 1, 2, 2, 1, 4, 0},
                                                           {128, 4096, 16, 1, 2, 2, 3, 4, 0},
                                                           {100, 14336, 16, 1, 2, 2, 0, 4, 0},
                                                           {64, 4096, 8, 1, 2, 2, 3, 4, 0},
                                                           {32, 4096, 4, 1, 2, 2, 0, 4, 0},
                                                           {16, 4096, 2, 1, 4, 2, 0, 4, 0},
                                                           {9, 4096, 2, 1, 2, 2, 1, 4, 0},
                                                           {128, 4096, 16, 1, 4, 1, 3, 5, 0},
                                                           {128, 28672, 16, 1, 2, 2, 0, 6, 0},
                                                           {128, 4096, 16, 1, 2, 2, 0, 0, 0},
                                                           {97, 4096, 16, 1, 2, 2, 0, 1, 0},
                                                           {128, 14336, 16, 2, 1, 2, 3, 4, 0},
                                                           {128, 2 * 4096, 16, 1, 2, 2, 0, 4, 1},
                                                           {64, 2 * 4096, 8, 2, 1, 2, 0, 4, 1}}) {
    Config c = tmaConfig(k[2], 8, k[3], k[4], k[5], k[7], k[6]);
    c.set("DC_CW", int64_t{2});
    GemmShape g = nt(k[0], k[1], 4096);
    if (k[8]) {
      g.act = Activation::kSiluMul;
      g.has_bias = true;
      g.beta = 1.0f;
      g.ldc = k[1] / 2;
    }
    jobs.emplace_back(c, g);
  }
  compileEach(**cc, jobs, [](const Config& c, const std::string& ptx) -> std::string {
    if (ptx.find("cp.async.bulk.tensor") == std::string::npos) return "PTX lacks bulk tensor copies";
    const std::string n = "wgmma.mma_async.sync.aligned.m64n" + std::to_string(4 * c.getInt("DC_MT")) + "k16";
    if (ptx.find(n) == std::string::npos) return "PTX lacks " + n;
    if (ptx.find("wgmma.mma_async.sync.aligned.m64n" + std::to_string(8 * c.getInt("DC_MT")) + "k16") != std::string::npos)
      return "PTX has the one-warpgroup wgmma";
    return "";
  });
}

// DC_PP = 1 (DC_CW = 2's warpgroups on alternate stages over all of A's rows, the sums traded after
// the loop): not enumerated, only with DC_CW 2 on the cluster K split, <= 64 loop accumulators,
// not with DC_WP; the launch is DC_CW = 2's; its PTX has the one-warpgroup wgmma (n = 8*DC_MT), not
// DC_CW's, and no spills.
TEST(GemmDecode, PingPongWarpgroupsAreAKnobAndCompile) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  for (const Config& c : sp.enumerate("cuda", 227 * 1024).accepted) ASSERT_FALSE(c.has("DC_PP")) << c.toString();
  const DeviceInfo dev = sm90aDevice();
  std::vector<std::pair<Config, GemmShape>> jobs;
  // (M, DC_MT, DC_U, DC_DEPTH, DC_XR, DC_GRID, gate/up with bias and C +=)
  for (const auto& k : std::vector<std::array<int64_t, 7>>{{128, 16, 2, 2, 1, 4, 0}, {128, 16, 2, 2, 3, 4, 0},
                                                           {64, 8, 2, 2, 3, 4, 0}, {32, 4, 2, 2, 0, 4, 0},
                                                           {9, 2, 2, 2, 1, 4, 0}, {128, 16, 1, 4, 3, 5, 0},
                                                           {100, 16, 2, 2, 0, 4, 1}}) {
    Config c = tmaConfig(k[1], 8, 1, k[2], k[3], k[5], k[4]);
    c.set("DC_CW", int64_t{2});
    const Config cw = c;
    c.set("DC_PP", int64_t{1});
    ASSERT_TRUE(sp.validate(c).ok()) << c.toString() << ": " << sp.validate(c).toString();
    GemmShape g = nt(k[0], 4096, 4096);
    if (k[6]) {
      g.act = Activation::kSiluMul;
      g.has_bias = true;
      g.beta = 1.0f;
      g.n = 2 * 4096;
      g.ldc = 4096;
    }
    auto p1 = launchPlan(KernelKind::kDecode, cw, g, dev), p2 = launchPlan(KernelKind::kDecode, c, g, dev);
    ASSERT_TRUE(p1.ok() && p2.ok()) << c.toString();
    EXPECT_EQ(p2->grid.x, p1->grid.x);
    EXPECT_EQ(p2->block.x, p1->block.x);
    EXPECT_EQ(sharedBytes(KernelKind::kDecode, c), sharedBytes(KernelKind::kDecode, cw));
    jobs.emplace_back(c, g);
  }
  for (int64_t grid : {0, 1, 6}) {  // not outside the cluster K split, nor without DC_CW 2
    Config c = tmaConfig(16, 8, 1, 2, 2, grid, 0);
    c.set("DC_CW", int64_t{2});
    c.set("DC_PP", int64_t{1});
    EXPECT_NE(sp.validate(c).message().find("DC_PP"), std::string::npos) << c.toString();
  }
  Config nocw = tmaConfig(16, 8, 1, 2, 2, 4, 1);
  nocw.set("DC_PP", int64_t{1});
  EXPECT_FALSE(sp.validate(nocw).ok());
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  compileEach(**cc, jobs, [](const Config& c, const std::string& ptx) -> std::string {
    const std::string n = "wgmma.mma_async.sync.aligned.m64n" + std::to_string(8 * c.getInt("DC_MT")) + "k16";
    if (ptx.find(n) == std::string::npos) return "PTX lacks " + n;
    if (ptx.find("wgmma.mma_async.sync.aligned.m64n" + std::to_string(4 * c.getInt("DC_MT")) + "k16") != std::string::npos)
      return "PTX has DC_CW's half-width wgmma";
    return "";
  });
}

// DC_CW = 2 is curated where it won (bench/NOTES.md, issue 32): at 65..128 rows, each entry right
// after its one-warpgroup base (DC_WARPS 4 -> 8, the same tile and ring), so the tuner races both
// at 128x4096x4096 and 128x4096x14336, and DC_PP's right after its DC_CW = 2 config at N = 6144;
// none at 64 rows or fewer (1.02-1.04x slower there).
TEST(GemmDecode, TwoConsumerWarpgroupsAreCuratedAsTwinsAt128Rows) {
  for (const GemmShape& s : {nt(128, 4096, 4096), nt(128, 4096, 14336), nt(128, 6144, 4096), nt(100, 4096, 4096), nt(64, 4096, 4096),
                             nt(32, 4096, 4096), nt(16, 4096, 4096)}) {
    const std::vector<Config> cs = curatedConfigs(KernelKind::kDecode, s);
    int twins = 0;
    for (size_t i = 0; i < cs.size(); ++i) {
      if (cs[i].getInt("DC_CW", 1) != 2 || cs[i].has("DC_ST")) continue;  // DC_ST's: widestart part
      ++twins;
      ASSERT_GT(i, 0u);
      Config base;  // DC_PP's twin follows its DC_CW = 2 config, that one its one-warpgroup base
      const bool pp = cs[i].has("DC_PP");
      for (const auto& [name, value] : cs[i].params())
        if (name != (pp ? "DC_PP" : "DC_CW")) base.set(name, name == "DC_WARPS" && !pp ? ParamValue{int64_t{4}} : value);
      EXPECT_EQ(cs[i - 1].toString(), base.toString()) << "the twin follows its base config";
    }
    EXPECT_EQ(twins, s.m > 64 ? (s.n >= 6144 ? 3 : 2) : 0) << shapeKey(s);
  }
}

}  // namespace
}  // namespace ktune::gemm
