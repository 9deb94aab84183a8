#include <gtest/gtest.h>

#include "compiler/analysis/occupancy.h"

namespace ktune {
namespace {

TEST(AmdOccupancy, Mi300xGuideExample) {
  auto l = amdArchLimits("gfx942");
  ASSERT_TRUE(l.ok());
  // 170 VGPRs -> 176 allocated -> 2 waves per EU (176 * 3 > 512).
  auto o = amdOccupancy(*l, 170, 0, 0, 4);
  ASSERT_TRUE(o.ok()) << o.status().toString();
  EXPECT_EQ(o->vgpr_allocated, 176);
  EXPECT_EQ(o->occ_vgpr, 2);
  EXPECT_EQ(o->workgroups_per_cu, 2);  // floor(2 * 4 / 4)
  EXPECT_DOUBLE_EQ(o->waves_per_eu, 2.0);
  EXPECT_EQ(o->limiter, "vgpr");
}

TEST(AmdOccupancy, LdsLimitsAndFormula) {
  auto l = amdArchLimits("gfx90a:xnack-");
  ASSERT_TRUE(l.ok());
  // 64 VGPRs -> 8 waves/EU; 8 waves per workgroup; 32 KiB LDS -> occ_lds = 2.
  auto o = amdOccupancy(*l, 64, 0, 32768, 8);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->occ_vgpr, 8);
  EXPECT_EQ(o->occ_lds, 2);
  EXPECT_EQ(o->workgroups_per_cu, 2);      // min(floor(8*4/8)=4, 2)
  EXPECT_DOUBLE_EQ(o->waves_per_eu, 4.0);  // 2 * 8 / 4
  EXPECT_EQ(o->limiter, "lds");
  // AGPRs share the file and .vgpr_count already holds them: 128 VGPR (4-aligned) + 128 AGPR
  // is a descriptor count of 256 -> 2 waves per EU; the AGPRs are not added a second time.
  EXPECT_EQ(amdTotalVgprs(*l, 126, 128), 256);
  auto u = amdOccupancy(*l, 256, 128, 0, 4);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->vgpr_allocated, 256);
  EXPECT_EQ(u->occ_vgpr, 2);
  // 3 waves per workgroup: floor(2*4/3) = 2 workgroups -> 1.5 waves per EU.
  auto odd = amdOccupancy(*l, 256, 0, 0, 3);
  ASSERT_TRUE(odd.ok());
  EXPECT_DOUBLE_EQ(odd->waves_per_eu, 1.5);
}

TEST(AmdOccupancy, Errors) {
  auto l = amdArchLimits("gfx942");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(amdOccupancy(*l, 600, 0, 0, 4).status().code(), Code::kOutOfResources);
  EXPECT_EQ(amdOccupancy(*l, 64, 0, 70000, 4).status().code(), Code::kOutOfResources);
  EXPECT_EQ(amdOccupancy(*l, 64, 0, 0, 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(amdArchLimits("gfx9999").status().code(), Code::kUnsupported);
}

TEST(NvOccupancy, HandComputedCases) {
  auto h = nvArchLimits("sm_90a");
  ASSERT_TRUE(h.ok());
  // 128 regs x 256 threads: 4096 regs per warp, 4 warps per 16K partition -> 16 warps -> 2 blocks.
  auto a = nvOccupancy(*h, 128, 256, 1024);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->blocks_per_sm, 2);
  EXPECT_EQ(a->limiter, "registers");
  EXPECT_DOUBLE_EQ(a->occupancy, 16.0 / 64);
  // 100 KiB smem: (102400 + 1024) rounded = 103424 per block -> 233472 / 103424 = 2 blocks.
  auto b = nvOccupancy(*h, 32, 128, 100 * 1024);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->blocks_per_sm, 2);
  EXPECT_EQ(b->limiter, "shared");
  // Tiny kernel: block count limit (32) on sm_90; threads limit on sm_86 (1536 / 32 = 48 > 16).
  auto c = nvOccupancy(*h, 16, 32, 0);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->blocks_per_sm, 32);
  EXPECT_EQ(c->limiter, "blocks");
  auto g = nvArchLimits("sm_86");
  ASSERT_TRUE(g.ok());
  auto d = nvOccupancy(*g, 32, 512, 0);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->blocks_per_sm, 3);  // 1536 threads
  EXPECT_EQ(d->limiter, "threads");
  // sm_80: 255 regs x 256 threads -> 8192 regs/warp -> 2 warps per partition -> 8 warps -> 1 block
  auto e = nvOccupancy(*nvArchLimits("sm_80"), 255, 256, 0);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->blocks_per_sm, 1);
}

TEST(NvOccupancy, Errors) {
  auto h = nvArchLimits("sm_90");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(nvOccupancy(*h, 32, 128, 228 * 1024).status().code(), Code::kOutOfResources);
  EXPECT_EQ(nvOccupancy(*h, 32, 2048, 0).status().code(), Code::kOutOfResources);
  EXPECT_EQ(nvOccupancy(*h, 32, 0, 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(nvArchLimits("sm_1").status().code(), Code::kUnsupported);
}

}  // namespace
}  // namespace ktune
