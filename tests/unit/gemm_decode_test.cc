// CI (no GPU): the decode GEMM kind (templates/gemm/decode): its space and register budget, its
// launch rule (stream-K grid, workspace, counters), the reasons it refuses a problem, its curated
// configs and the gate/up (silu_mul) epilogue's contract. The bodies' NVRTC compiles (sm_90a PTX:
// mma.sync without spills, FP32 FMAs only, bulk tensor copies) are in gemm_decode_compile_part.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#include "compiler/compiler.h"
#include "ops/gemm_configs.h"
#include "templates/catalog.h"
#include "templates/gemm.h"
#include "tests/support/tools.h"
#include "tests/unit/gemm_decode_test_util.h"

namespace ktune::gemm {
namespace {

using namespace decode_test;  // NOLINT: the shared helpers (gemm_decode_test_util.h)

TEST(GemmDecode, SpaceKeepsTheRegisterBudget) {
  auto e = configSpace(KernelKind::kDecode).enumerate("cuda", 227 * 1024);
  EXPECT_GT(e.accepted.size(), 50u);
  EXPECT_FALSE(e.rejected.empty());
  for (const Config& c : e.accepted) {
    if (c.getInt("DC_WG") != 0) continue;  // the wgmma body: GemmDecode.WgmmaVariant*
    const int64_t nt = c.getInt("DC_NT"), mt = c.getInt("DC_MT"), u = c.getInt("DC_U");
    const int64_t xr = c.getInt("DC_XR"), x = 4 * mt * u;
    EXPECT_LE(c.getInt("DC_DEPTH") * (8 * nt * u + xr * x) + (1 - xr) * x + 4 * nt * mt, 232)
        << c.toString();
  }
  EXPECT_EQ(kernelKindName(KernelKind::kDecode), std::string("decode"));
  auto k = parseKernelKind("decode");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(*k, KernelKind::kDecode);
  // The warps' sums of a tile: 8 warps x 16 rows x (8 + 1) floats.
  EXPECT_EQ(sharedBytes(KernelKind::kDecode, decodeConfig(1)), 8 * 16 * 9 * 4);
  // A ring of 4-deep 16-byte loads over two 16-row tiles at M <= 128 is over the register budget.
  Config big = decodeConfig(16);
  big.set("DC_NT", int64_t{2});
  big.set("DC_DEPTH", int64_t{4});
  big.set("DC_U", int64_t{1});
  big.set("DC_XR", int64_t{0});
  EXPECT_FALSE(configSpace(KernelKind::kDecode).validate(big).ok());
}

// DC_L2P, the weight maps' L2 promotion: a probe knob outside the tuning space (never enumerated,
// not required; absent = 128, the default), only on the TMA-fed body, and the maps carry it (A's
// keeps the 256 of every other map).
TEST(GemmDecode, WeightMapsL2PromotionIsAProbeKnob) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  const auto e = sp.enumerate("cuda", 227 * 1024);
  for (const Config& c : e.accepted) ASSERT_FALSE(c.has("DC_L2P")) << c.toString();
  EXPECT_EQ(sp.rawSize("cuda"), 4u * 2 * 2 * 5 * 4 * 2 * 4 * 3 * 8);  // the tuned knobs only
  Config tma = wgConfig(2, 8, 1, 2, 2, 6);
  tma.set("DC_WG", int64_t{2});
  ASSERT_TRUE(sp.validate(tma).ok()) << sp.validate(tma).toString();  // absent: the default
  EXPECT_EQ(decodeL2Promotion(tma), 128);
  EXPECT_EQ(kDecodeL2Promotion, 128);
  for (int64_t v : {0, 128, 256}) {
    tma.set("DC_L2P", v);
    EXPECT_TRUE(sp.validate(tma).ok()) << sp.validate(tma).toString();
    EXPECT_EQ(decodeL2Promotion(tma), v);
  }
  for (int64_t v : {64, 96, 512}) {  // 64 is a driver value, not one the knob offers
    tma.set("DC_L2P", v);
    EXPECT_EQ(sp.validate(tma).code(), Code::kInvalidArgument) << v;
  }
  Config wg = wgConfig(2, 8, 1, 2, 2, 2);  // the cp.async ring: no tensor maps
  wg.set("DC_L2P", int64_t{256});
  EXPECT_NE(sp.validate(wg).message().find("DC_L2P"), std::string::npos) << sp.validate(wg).toString();
  wg.set("DC_L2P", int64_t{128});
  EXPECT_TRUE(sp.validate(wg).ok());
  const GemmShape s = nt(16, 28672, 4096);
  for (int l2 : {0, 128, 256}) {
    const TmaDescriptors d = decodeDescriptors(s, 4096, 8192, l2);
    EXPECT_EQ(d.a.l2_promotion_bytes, 256);
    EXPECT_EQ(d.b.l2_promotion_bytes, l2);
    EXPECT_EQ(d.c.l2_promotion_bytes, l2);
    EXPECT_TRUE(checkTensorMap2D(d.b).ok()) << checkTensorMap2D(d.b).toString();
  }
  const TmaDescriptors dflt = decodeDescriptors(s, 4096, 8192);
  EXPECT_EQ(dflt.b.l2_promotion_bytes, 128);
  EXPECT_EQ(dflt.c.l2_promotion_bytes, 128);
  EXPECT_EQ(dflt.a.l2_promotion_bytes, 256);
  TensorMap2DDesc bad = decodeBMap(s, 8192, 64, 96);
  EXPECT_NE(checkTensorMap2D(bad).message().find("L2 promotion"), std::string::npos);
  bad.l2_promotion_bytes = 64;
  EXPECT_TRUE(checkTensorMap2D(bad).ok());
}

// DC_WP = 1, a probe knob outside the tuning space (never enumerated, absent = 0): the TMA-fed
// consumers keep a stage's wgmmas in flight and release its slot a stage later. Only with DC_WG 2
// (every grid), only 1; the launch (grid, block, shared memory, scratch) stays the config's, and
// the kernel gets the define.
TEST(GemmDecode, PipelinedConsumersAreAProbeKnob) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  for (const Config& c : sp.enumerate("cuda", 227 * 1024).accepted) ASSERT_FALSE(c.has("DC_WP")) << c.toString();
  const DeviceInfo dev = sm90aDevice();
  for (int64_t grid : {0, 4, 6, 7}) {
    Config base = wgConfig(grid == 7 ? 8 : 16, 4, 1, 2, 2, grid);
    base.set("DC_WG", int64_t{2});
    Config wp = base;
    wp.set("DC_WP", int64_t{1});
    ASSERT_TRUE(sp.validate(wp).ok()) << grid << ": " << sp.validate(wp).toString();
    const GemmShape s = nt(128, 4096, 4096);
    auto pb = launchPlan(KernelKind::kDecode, base, s, dev), pw = launchPlan(KernelKind::kDecode, wp, s, dev);
    ASSERT_TRUE(pb.ok() && pw.ok()) << grid;
    EXPECT_EQ(pw->grid.x, pb->grid.x);
    EXPECT_EQ(pw->block.x, pb->block.x);
    EXPECT_EQ(pw->workspace_bytes, pb->workspace_bytes);
    EXPECT_EQ(sharedBytes(KernelKind::kDecode, wp), sharedBytes(KernelKind::kDecode, base));
    bool has = false;
    for (const auto& [name, value] : defines(KernelKind::kDecode, wp, s)) has = has || (name == "DC_WP" && value == "1");
    EXPECT_TRUE(has) << grid;
  }
  for (auto [wgk, v] : std::vector<std::array<int64_t, 2>>{{1, 1}, {2, 2}, {2, 0}}) {
    Config c = wgConfig(2, 4, 1, 2, 2, 4);
    c.set("DC_WG", wgk);
    c.set("DC_WP", v);
    EXPECT_NE(sp.validate(c).message().find("DC_WP"), std::string::npos) << c.toString();
  }
}

// DC_PW = 0, 1, 2, a probe knob outside the tuning space (never enumerated; absent: 2 for tiles of
// 64 rows or more, 0 below): 2 the whole producer warp in the loop, one elected lane issuing, the
// tile and k step stepped; 0 the elected thread alone dividing the unit index per stage, 1 the same
// stepped. Only with DC_WG 2 and one producer warp (DC_PF 1); the launch stays the config's,
// and the kernel gets the define.
TEST(GemmDecode, ProducerPathIsAProbeKnob) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  for (const Config& c : sp.enumerate("cuda", 227 * 1024).accepted) ASSERT_FALSE(c.has("DC_PW")) << c.toString();
  const DeviceInfo dev = sm90aDevice();
  for (int64_t grid : {0, 4, 6, 7})
    for (int64_t pw : {0, 1, 2}) {
      Config base = wgConfig(grid == 7 ? 8 : 16, 4, 1, 2, 2, grid);
      base.set("DC_WG", int64_t{2});
      Config c = base;
      c.set("DC_PW", pw);
      ASSERT_TRUE(sp.validate(c).ok()) << grid << ": " << sp.validate(c).toString();
      const GemmShape s = nt(128, 4096, 4096);
      auto pb = launchPlan(KernelKind::kDecode, base, s, dev), pc = launchPlan(KernelKind::kDecode, c, s, dev);
      ASSERT_TRUE(pb.ok() && pc.ok()) << grid;
      EXPECT_EQ(pc->grid.x, pb->grid.x);
      EXPECT_EQ(pc->block.x, pb->block.x);
      EXPECT_EQ(sharedBytes(KernelKind::kDecode, c), sharedBytes(KernelKind::kDecode, base));
      bool has = false;
      for (const auto& [name, value] : defines(KernelKind::kDecode, c, s))
        has = has || (name == "DC_PW" && value == std::to_string(pw));
      EXPECT_TRUE(has) << grid;
    }
  for (auto [wgk, pf, v] : std::vector<std::array<int64_t, 3>>{{1, 1, 0}, {2, 2, 1}, {2, 3, 0}, {2, 1, 3}, {2, 1, -1}}) {
    Config c = wgConfig(2, 4, 1, 2, 2, 4, pf);
    c.set("DC_WG", wgk);
    c.set("DC_PW", v);
    EXPECT_NE(sp.validate(c).message().find("DC_PW"), std::string::npos) << c.toString();
  }
}

// DC_WP = 1 is curated where it won (bench/NOTES.md, issue 32): as the twin right
// after its base config, only at <= 16 rows and only on rings of 4+ stages (it starves 2-stage
// rings); so the tuner races both at 8x4096x4096, 16x4096x4096 and 16x14336x4096, none at 32..128
// rows.
TEST(GemmDecode, PipelinedConsumersAreCuratedAsTwinsAtFewRows) {
  for (const GemmShape& s : {nt(8, 4096, 4096), nt(16, 4096, 4096), nt(16, 14336, 4096), nt(32, 4096, 4096),
                             nt(128, 4096, 4096), nt(128, 28672, 4096)}) {
    const std::vector<Config> cs = curatedConfigs(KernelKind::kDecode, s);
    int twins = 0;
    for (size_t i = 0; i < cs.size(); ++i) {
      if (cs[i].getInt("DC_WP", 0) != 1) continue;
      ++twins;
      EXPECT_LE(s.m, 16) << cs[i].toString();
      EXPECT_GE(cs[i].getInt("DC_DEPTH"), 2) << cs[i].toString();
      ASSERT_GT(i, 0u);
      std::string base = cs[i].toString();
      base.erase(base.find(",DC_WP=1"), 8);
      EXPECT_EQ(cs[i - 1].toString(), base) << "the twin follows its base config";
    }
    EXPECT_EQ(twins > 0, s.m <= 16) << shapeKey(s);
  }
}

TEST(GemmDecode, LaunchRuleIsStreamKOverTheSms) {
  const DeviceInfo dev = sm90aDevice();
  auto p = launchPlan(KernelKind::kDecode, decodeConfig(1), nt(1, 4096, 4096), dev);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->grid.x, 2u * 132u);
  EXPECT_EQ(p->grid.y, 1u);
  EXPECT_EQ(p->block.x, 256u);
  EXPECT_EQ(p->shared_bytes, 8 * 16 * 9 * 4);
  EXPECT_EQ(p->counters, 4096 / 16);
  EXPECT_EQ(p->workspace_bytes, 1 * 4096 * 4);
  // Fewer (tile, block step) units than blocks: one block per unit. N=17 is two tiles of 16
  // rows, K=8 one block step.
  auto q = launchPlan(KernelKind::kDecode, decodeConfig(1), nt(1, 17, 8), dev);
  ASSERT_TRUE(q.ok()) << q.status().toString();
  EXPECT_EQ(q->grid.x, 2u);
  // ... and each unit is a whole tile: no range is cut, so no workspace and no counters.
  EXPECT_EQ(q->counters, 0);
  EXPECT_EQ(q->workspace_bytes, 0);
  Config m16 = decodeConfig(16, 1);
  m16.set("DC_U", int64_t{1});
  m16.set("DC_XR", int64_t{0});
  // DC_GRID = 0: one block per tile of 16*DC_NT rows, whatever the SM count.
  auto t = launchPlan(KernelKind::kDecode, decodeConfig(1, 0), nt(1, 4099, 4096), dev);
  ASSERT_TRUE(t.ok()) << t.status().toString();
  EXPECT_EQ(t->grid.x, 257u);
  EXPECT_EQ(t->workspace_bytes, 0);  // no range cuts a tile
  EXPECT_EQ(t->counters, 0);
  auto r = launchPlan(KernelKind::kDecode, m16, nt(128, 28672, 4096), dev);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->grid.x, 132u);
  EXPECT_EQ(r->workspace_bytes, 128 * 28672 * 4);
}

// DC_WG = 1 (decode_wg.cuh): its knobs pinned where unused, its ring's shared memory, its launch
// rule (tiles of 64*DC_NT*DC_WARPS/4 rows, units of 64*DC_U k, a producer warp) and sm_90a only.
TEST(GemmDecode, WgmmaVariantSpaceAndLaunchRule) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  auto e = sp.enumerate("cuda", 227 * 1024);
  size_t wgs = 0;
  for (const Config& c : e.accepted) {
    if (c.getInt("DC_WG") != 1 && c.getInt("DC_WG") != 2) continue;
    ++wgs;
    const int64_t g = c.getInt("DC_GRID");
    if (c.getInt("DC_WG") != 2 || (g != 4 && g != 5)) {  // DC_XR: the cluster K split's end only
      EXPECT_EQ(c.getInt("DC_XR"), 0) << c.toString();
    }
    EXPECT_GE(c.getInt("DC_PF"), 1) << c.toString();  // the producer width: a warp or a warpgroup
    EXPECT_LE(sharedBytes(KernelKind::kDecode, c), 227 * 1024) << c.toString();
  }
  EXPECT_GT(wgs, 100u);
  Config pinned = wgConfig(1, 4, 1, 1, 4, 2);
  pinned.set("DC_XR", int64_t{1});
  EXPECT_FALSE(sp.validate(pinned).ok());
  // 8 stages x (64 weight rows + 8 A rows) x 128 bytes + alignment + 16 mbarriers + the flag.
  const Config c = wgConfig(1, 4, 1, 1, 4, 2);
  EXPECT_EQ(sharedBytes(KernelKind::kDecode, c), 8 * 72 * 128 + 1024 + 16 * 8 + 16);
  // 256-row tiles at M = 128, 4 stages of 2 x 64 k: over the opt-in limit.
  EXPECT_GT(sharedBytes(KernelKind::kDecode, wgConfig(16, 8, 2, 2, 2, 1)), 227 * 1024);
  const DeviceInfo dev = sm90aDevice();
  auto p = launchPlan(KernelKind::kDecode, c, nt(8, 4096, 4096), dev);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->grid.x, 2u * 132u);
  EXPECT_EQ(p->block.x, 4u * 32u + 32u);
  Config wide = c;
  wide.set("DC_PF", int64_t{2});  // a producer warpgroup
  auto pw = launchPlan(KernelKind::kDecode, wide, nt(8, 4096, 4096), dev);
  ASSERT_TRUE(pw.ok()) << pw.status().toString();
  EXPECT_EQ(pw->block.x, 4u * 32u + 128u);
  EXPECT_EQ(p->counters, 4096 / 64);
  EXPECT_EQ(p->workspace_bytes, 8 * 4096 * 4);
  // DC_GRID = 0: one block per 128-row tile (two warpgroups), no workspace.
  auto q = launchPlan(KernelKind::kDecode, wgConfig(16, 8, 1, 1, 2, 0), nt(128, 4100, 4104), dev);
  ASSERT_TRUE(q.ok()) << q.status().toString();
  EXPECT_EQ(q->grid.x, 33u);
  EXPECT_EQ(q->block.x, 288u);
  EXPECT_EQ(q->workspace_bytes, 0);
  EXPECT_EQ(q->counters, 0);
  // Not on other NVIDIA architectures (the mma.sync body covers them).
  DeviceInfo a100 = dev;
  a100.arch = "sm_80";
  auto r = launchPlan(KernelKind::kDecode, c, nt(8, 4096, 4096), a100);
  EXPECT_EQ(r.status().code(), Code::kUnsupported);
  EXPECT_NE(r.status().toString().find("sm_90a"), std::string::npos) << r.status().toString();
  EXPECT_TRUE(launchPlan(KernelKind::kDecode, decodeConfig(1), nt(8, 4096, 4096), a100).ok());
  // Same M tier rule as the mma.sync body: DC_MT = 4 serves 17..32.
  EXPECT_TRUE(applicable(KernelKind::kDecode, wgConfig(4, 4, 1, 1, 4, 2), nt(17, 64, 64)).ok());
  EXPECT_EQ(applicable(KernelKind::kDecode, wgConfig(4, 4, 1, 1, 4, 2), nt(33, 64, 64)).code(),
            Code::kUnsupported);
}

TEST(GemmDecode, RefusesWhatItCannotComputeWithAReason) {
  const Config c = decodeConfig(2);
  EXPECT_TRUE(applicable(KernelKind::kDecode, c, nt(16, 4096, 4096)).ok());
  EXPECT_TRUE(applicable(KernelKind::kDecode, c, nt(9, 4099, 520)).ok());
  GemmShape nn = nt(16, 4096, 4096);
  nn.layout = Layout::kNN;
  nn.ldb = 4096;
  Status s = applicable(KernelKind::kDecode, c, nn);
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.toString().find("layout NT"), std::string::npos) << s.toString();
  s = applicable(KernelKind::kDecode, c, nt(16, 4096, 4100));  // K % 8 != 0
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.toString().find("K % 8"), std::string::npos) << s.toString();
  GemmShape unal = nt(16, 4096, 4096);
  unal.aligned16 = false;
  EXPECT_EQ(applicable(KernelKind::kDecode, c, unal).code(), Code::kUnsupported);
  GemmShape lda = nt(16, 4096, 4096);
  lda.lda = 4100;
  EXPECT_EQ(applicable(KernelKind::kDecode, c, lda).code(), Code::kUnsupported);
  // Only the smallest M tier: DC_MT=2 serves 9..16, not 8 or 17; nothing above 128.
  EXPECT_EQ(applicable(KernelKind::kDecode, c, nt(8, 4096, 4096)).code(), Code::kUnsupported);
  s = applicable(KernelKind::kDecode, c, nt(17, 4096, 4096));
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.toString().find("DC_MT"), std::string::npos) << s.toString();
  EXPECT_TRUE(applicable(KernelKind::kDecode, decodeConfig(16), nt(128, 64, 64)).ok());
  EXPECT_EQ(applicable(KernelKind::kDecode, decodeConfig(16), nt(129, 64, 64)).code(),
            Code::kUnsupported);
}

// `ktune compile gemm_decode -D ...` checks a pinned config against the template's example shape
// (M = 1) before compiling; a config of a larger row tier is checked at the first power-of-two M it
// serves (the source does not depend on M), so its code can be compiled and read; a config that no
// M serves (layout NN: the decode kind reads B as [N][K]) is still refused with the reason.
TEST(GemmDecode, CompileChecksAPinnedConfigAtARowCountItServes) {
  auto t = templates::findTemplate("gemm_decode");
  ASSERT_TRUE(t.ok()) << t.status().toString();
  auto defs = templates::defaultDefines(*t, "sm_90a");
  ASSERT_TRUE(defs.ok()) << defs.status().toString();
  auto definesWith = [&](const std::vector<std::pair<std::string, std::string>>& set) {
    templates::DefineList d = *defs;
    for (const auto& [k, v] : set) {
      auto it = std::find_if(d.begin(), d.end(), [&](const auto& kv) { return kv.first == k; });
      if (it == d.end()) d.emplace_back(k, v);
      else it->second = v;
    }
    return d;
  };
  auto with = [&](const std::vector<std::pair<std::string, std::string>>& set) {
    return templates::checkDefines(*t, "sm_90a", definesWith(set));
  };
  EXPECT_TRUE(with({}).ok());
  const std::vector<std::pair<std::string, std::string>> rows64 = {
      {"DC_WG", "2"}, {"DC_WARPS", "4"}, {"DC_NT", "1"}, {"DC_MT", "8"}, {"DC_U", "2"},
      {"DC_DEPTH", "2"}, {"DC_PF", "1"}, {"DC_XR", "3"}, {"DC_GRID", "4"}};
  EXPECT_TRUE(with(rows64).ok()) << with(rows64).toString();
  // Its launch (what `ktune explain` reports occupancy from) is the 64-row tier's: its ring in
  // dynamic shared memory, the producer warp beside the consumer warpgroup (DC_WARPS = 4).
  auto launch = templates::exampleLaunch(*t, "sm_90a", definesWith(rows64));
  ASSERT_TRUE(launch.ok()) << launch.status().toString();
  EXPECT_GT(launch->shared_bytes, 100 * 1024);
  EXPECT_EQ(launch->block.x, 160u);
  auto nn = rows64;
  nn.emplace_back("LAYOUT", "0");
  const Status s = with(nn);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("layout NT"), std::string::npos) << s.toString();
}

// The gate/up pair (act silu_mul): B = [gate; up], C gets N/2 columns; its checks, its key, the
// float64 reference against a hand computation, and only the decode and tma kinds compute it
// (the tma kind's pair: gemm_templates_tma_part.cc).
TEST(GemmDecode, SiluMulIsTheGateUpPairOnTheDecodeKernel) {
  auto a = parseActivation("silu_mul");
  ASSERT_TRUE(a.ok()) << a.status().toString();
  EXPECT_EQ(*a, Activation::kSiluMul);
  EXPECT_EQ(activationName(Activation::kSiluMul), std::string("silu_mul"));
  GemmShape s = nt(2, 4, 8);
  s.act = Activation::kSiluMul;
  s.ldc = 2;
  EXPECT_EQ(outCols(s), 2);
  EXPECT_TRUE(validate(s).ok()) << validate(s).toString();
  EXPECT_NE(shapeKey(s).find("act=silu_mul"), std::string::npos) << shapeKey(s);
  GemmShape odd = nt(2, 5, 8);
  odd.act = Activation::kSiluMul;
  Status v = validate(odd);
  EXPECT_EQ(v.code(), Code::kInvalidArgument);
  EXPECT_NE(v.toString().find("even N"), std::string::npos) << v.toString();
  GemmShape narrow = s;
  narrow.ldc = 1;
  EXPECT_EQ(validate(narrow).code(), Code::kInvalidArgument);
  // C[m][j] = silu(alpha*g + bias[j]) * (alpha*u + bias[N/2 + j]) + beta*C[m][j].
  s.has_bias = true;
  s.alpha = 0.5f;
  s.beta = 2.0f;
  std::vector<float> A(2 * 8), B(4 * 8), bias = {0.25f, -0.5f, 1.0f, 0.125f}, C = {1, 2, 3, 4};
  for (size_t i = 0; i < A.size(); ++i) A[i] = float(int(i % 5) - 2) / 4;
  for (size_t i = 0; i < B.size(); ++i) B[i] = float(int(i % 7) - 3) / 8;
  const auto ref = reference(s, A.data(), B.data(), C.data(), bias.data());
  ASSERT_EQ(ref.size(), 4u);
  for (int m = 0; m < 2; ++m)
    for (int j = 0; j < 2; ++j) {
      double g = 0, u = 0;
      for (int k = 0; k < 8; ++k) {
        g += double(A[m * 8 + k]) * B[j * 8 + k];
        u += double(A[m * 8 + k]) * B[(j + 2) * 8 + k];
      }
      g = 0.5 * g + bias[j];
      u = 0.5 * u + bias[2 + j];
      EXPECT_NEAR(ref[m * 2 + j], g / (1 + std::exp(-g)) * u + 2.0 * C[m * 2 + j], 1e-12);
    }
  EXPECT_TRUE(applicable(KernelKind::kDecode, decodeConfig(1), s).ok());
  auto plan = launchPlan(KernelKind::kDecode, decodeConfig(1), s, sm90aDevice());
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->counters, 0);  // one unit: the tile is never cut
  for (KernelKind k : {KernelKind::kMma, KernelKind::kSkinny, KernelKind::kWgmma}) {
    const auto cs = curatedConfigs(k, nt(2, 4096, 4096));
    if (cs.empty()) continue;
    Status st = applicable(k, cs.front(), s);
    EXPECT_EQ(st.code(), Code::kUnsupported) << kernelKindName(k);
    EXPECT_NE(st.toString().find("the tma kernel (K-major B) only"), std::string::npos) << st.toString();
  }
}

TEST(GemmDecode, CuratedConfigsCoverEveryDecodeM) {
  for (int64_t m = 1; m <= 128; m += (m < 16 ? 1 : 7)) {
    const GemmShape s = nt(m, 4096, 4096);
    auto cs = curatedConfigs(KernelKind::kDecode, s);
    ASSERT_FALSE(cs.empty()) << "M=" << m;
    for (const Config& c : cs) {
      EXPECT_TRUE(configSpace(KernelKind::kDecode).validate(c).ok()) << c.toString();
      EXPECT_TRUE(launchPlan(KernelKind::kDecode, c, s, sm90aDevice()).ok()) << c.toString();
    }
  }
  EXPECT_TRUE(curatedConfigs(KernelKind::kDecode, nt(129, 4096, 4096)).empty());
}

// The GEMM family's candidates are the curated configs of representative problems, not of the
// key: every M of 1..128 must find a decode config of its own DC_MT tier among them. Keys of
// 17..32 rows found none, so a gate/up pair there (then on the decode kernel only) had no
// candidate and `ktune tune gemm --epilogue silu_mul` found no winner. The tma kind's pair
// (BLOCK_N 128 / 256, EPI_TMA 0 / 1) is among the candidates at every M too.
TEST(GemmDecode, TheFamilysCandidatesCoverEveryDecodeM) {
  auto family = gemm_ops::familyConfigs({KernelKind::kDecode, KernelKind::kTma}, "cuda", false,
                                        227 * 1024, sm90aDevice(), "");
  ASSERT_TRUE(family.ok()) << family.status().toString();
  for (int64_t m = 1; m <= 128; ++m) {
    GemmShape s = nt(m, 4096, 4096);
    s.act = Activation::kSiluMul;
    s.ldc = 2048;
    int applicable[2] = {0, 0};
    for (const Config& c : *family) {
      auto k = gemm_ops::kindOf(c);
      ASSERT_TRUE(k.ok());
      applicable[*k == KernelKind::kTma] += gemm::applicable(*k, gemm_ops::knobsOf(c), s).ok();
    }
    EXPECT_GE(applicable[0], 2) << "decode, M=" << m;
    EXPECT_GE(applicable[1], 8) << "tma, M=" << m;
  }
}

// Every curated decode/skinny config of a decode shape is among the family's candidates, so the
// tuned op can pick what gemm_bench (which takes each shape's own curated list) times. The family
// list used to come from M = 1/16/32/64/128 at N = 4096 only: the FMA body at 2..8 rows (its DC_MT
// counts rows) and the wide-N persistent decode configs (min_n 8192: the LLM suite's 16x28672x4096
// gate/up key) were never candidates.
TEST(GemmDecode, TheFamilysCandidatesHoldEveryCuratedConfigOfADecodeShape) {
  const std::vector<KernelKind> kinds = {KernelKind::kDecode, KernelKind::kSkinny};
  auto family = gemm_ops::familyConfigs(kinds, "cuda", false, 227 * 1024, sm90aDevice(), "");
  ASSERT_TRUE(family.ok()) << family.status().toString();
  int fma_small_m = 0;
  for (int64_t m : {1, 2, 3, 4, 8, 16, 24, 64, 100})
    for (int64_t n : {4096, 6144, 14336, 28672})
      for (KernelKind k : kinds) {
        // The skinny kind's SK_MT is ceil(M/8), 1..8: the family holds its power-of-two tiers.
        if (k == KernelKind::kSkinny && (m & (m - 1)) != 0) continue;
        for (const Config& c : gemm::curatedConfigs(k, nt(m, n, 4096))) {
          const Config kc = gemm_ops::withKind(c, k);
          EXPECT_NE(std::find(family->begin(), family->end(), kc), family->end())
              << m << "x" << n << "x4096: " << kc.toString();
          fma_small_m += m >= 2 && m <= 8 && k == KernelKind::kDecode && c.getInt("DC_WG") == 3;
        }
      }
  EXPECT_GT(fma_small_m, 0) << "the curated FMA body has no config at 2..8 rows";
}

}  // namespace
}  // namespace ktune::gemm
