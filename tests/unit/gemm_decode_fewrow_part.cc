// The decode kind's few-row probe knobs (part of the gemm_decode_test program: KTUNE_TEST_PARTS in
// tests/CMakeLists.txt): DC_XH (the cluster K split's sums handed over without a cluster barrier
// after the main loop), DC_ST (the start path cut) and DC_EF (the TMA boxes' L2 eviction priority),
// their spaces, launch rules, PTX and curated twins.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "ops/gemm_configs.h"

#include "compiler/compiler.h"
#include "templates/gemm.h"
#include "tests/support/tools.h"
#include "tests/unit/gemm_decode_test_util.h"
#include "tests/unit/gemm_test_util.h"

namespace ktune::gemm {
namespace {

using namespace decode_test;  // NOLINT: the shared helpers (gemm_decode_test_util.h)


bool hasDefine(const Config& c, const GemmShape& s, const std::string& name, const std::string& value) {
  for (const auto& [n, v] : defines(KernelKind::kDecode, c, s))
    if (n == name && v == value) return true;
  return false;
}

// Neither knob is enumerated; DC_XH only on the TMA-fed cluster split of 2 (DC_GRID 4) with one
// producer warp (from DC_MT 8: gemm_decode_widestart_part.cc), at DC_MT <= 4 its shared memory the config's plus the peer's sums (a thread's half
// of its 4*DC_MT accumulators, all of them at DC_MT = 1); DC_ST 1 on the TMA-fed body at DC_MT <= 4
// with one producer warp on its old path (DC_PF 1, DC_PW 0), the launch unchanged.
TEST(GemmDecode, FewRowStartAndHandOverAreProbeKnobs) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  for (const Config& c : sp.enumerate("cuda", 227 * 1024).accepted)
    ASSERT_FALSE(c.has("DC_XH") || c.has("DC_ST")) << c.toString();
  const DeviceInfo dev = sm90aDevice();
  // (M, DC_MT, DC_WARPS, DC_NT, DC_U, DC_DEPTH, DC_XR): the hand-over's floats per consumer thread
  for (const auto& k : std::vector<std::array<int64_t, 8>>{{16, 2, 4, 1, 4, 2, 3, 4}, {8, 1, 4, 1, 2, 5, 0, 4},
                                                           {16, 2, 4, 2, 2, 2, 3, 8}, {32, 4, 4, 1, 2, 2, 0, 8}}) {
    const Config base = tmaConfig(k[1], k[2], k[3], k[4], k[5], 4, k[6]);
    ASSERT_TRUE(sp.validate(base).ok()) << sp.validate(base).toString();
    Config xh = base;
    xh.set("DC_XH", int64_t{1});
    ASSERT_TRUE(sp.validate(xh).ok()) << sp.validate(xh).toString();
    const GemmShape s = nt(k[0], 6144, 4096);
    auto pb = launchPlan(KernelKind::kDecode, base, s, dev), px = launchPlan(KernelKind::kDecode, xh, s, dev);
    ASSERT_TRUE(pb.ok() && px.ok());
    EXPECT_EQ(px->grid.x, pb->grid.x);
    EXPECT_EQ(px->block.x, pb->block.x);
    EXPECT_EQ(sharedBytes(KernelKind::kDecode, xh),
              sharedBytes(KernelKind::kDecode, base) + 32 * k[2] * k[7] * 4);
    EXPECT_TRUE(hasDefine(xh, s, "DC_XH", "1"));
    Config st = base;
    st.set("DC_ST", int64_t{1});
    ASSERT_TRUE(sp.validate(st).ok()) << sp.validate(st).toString();
    EXPECT_EQ(sharedBytes(KernelKind::kDecode, st), sharedBytes(KernelKind::kDecode, base));
    EXPECT_TRUE(hasDefine(st, s, "DC_ST", "1"));
  }
  Config g6 = tmaConfig(2, 8, 1, 4, 1, 6, 0);
  g6.set("DC_ST", int64_t{1});
  EXPECT_TRUE(sp.validate(g6).ok()) << sp.validate(g6).toString();  // every TMA-fed grid
  struct Bad {
    Config c;
    const char* knob;
  };
  std::vector<Bad> bad;
  for (int64_t grid : {0, 5, 6, 7}) bad.push_back({tmaConfig(grid == 7 ? 8 : 2, 4, 1, 2, 2, grid, 0), "DC_XH"});
  bad.push_back({tmaConfig(2, 8, 1, 2, 2, 4, 3), "DC_XH"});  // under 64 rows: not with DC_CW
  bad.back().c.set("DC_CW", int64_t{2});
  bad.push_back({tmaConfig(16, 8, 1, 2, 2, 4, 3), "DC_XH"});  // from 64 rows: not with DC_PP
  bad.back().c.set("DC_CW", int64_t{2});
  bad.back().c.set("DC_PP", int64_t{1});
  bad.push_back({wgConfig(2, 4, 1, 2, 2, 4), "DC_XH"});      // the cp.async ring
  for (Bad& b : bad) b.c.set("DC_XH", int64_t{1});
  Config two = tmaConfig(2, 4, 1, 4, 2, 4, 3);
  two.set("DC_XH", int64_t{2});
  bad.push_back({two, "DC_XH"});
  for (int64_t st : {0, 2, 3}) {
    Config c = tmaConfig(2, 4, 1, 4, 2, 4, 3);
    c.set("DC_ST", st);
    bad.push_back({c, "DC_ST"});
  }
  // From 64 rows DC_ST is valid on the warp-converged producer path (gemm_decode_widestart_part.cc),
  // not on the row-split pair.
  Config st64 = tmaConfig(8, 4, 2, 2, 2, 7, 0), stwg = wgConfig(2, 4, 1, 2, 2, 4);
  st64.set("DC_ST", int64_t{1});
  stwg.set("DC_ST", int64_t{1});
  bad.push_back({st64, "DC_ST"});
  Config pf2 = tmaConfig(2, 4, 1, 4, 2, 4, 3), pw1 = pf2;
  pf2.set("DC_PF", int64_t{2});
  pf2.set("DC_ST", int64_t{1});
  pw1.set("DC_PW", int64_t{1});
  pw1.set("DC_ST", int64_t{1});
  bad.push_back({pf2, "DC_ST"});
  bad.push_back({pw1, "DC_ST"});
  bad.push_back({stwg, "DC_ST"});
  for (const Bad& b : bad) EXPECT_NE(sp.validate(b.c).message().find(b.knob), std::string::npos) << b.c.toString();
}

// The PTX: with DC_XH the cluster barrier is arrived at once before the main loop (relaxed) and
// waited for before the hand-over, which goes by st.async counted on the peer's barrier; no
// barrier.cluster.arrive after the first wgmma. DC_ST: the tensor maps prefetched before the first
// mbarrier.init, no prefetch.global.L2 before the programmatic-launch wait, the first boxes before
// the block barrier but after that wait (A may be the last kernel's output). No spills
// (compileEach), gate/up too.
TEST(GemmDecode, FewRowStartAndHandOverCompile) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  // (M, DC_MT, DC_WARPS, DC_NT, DC_U, DC_DEPTH, DC_XR)
  for (const auto& k : std::vector<std::array<int64_t, 7>>{{16, 2, 4, 1, 4, 2, 3}, {5, 1, 4, 1, 2, 5, 0},
                                                           {13, 2, 4, 2, 2, 2, 3}, {27, 4, 4, 1, 2, 2, 0},
                                                           {16, 2, 4, 1, 4, 2, 1}})
    for (const auto& [xh, st] : std::vector<std::array<int64_t, 2>>{{1, 0}, {0, 1}, {1, 1}}) {
      Config c = tmaConfig(k[1], k[2], k[3], k[4], k[5], 4, k[6]);
      if (xh) c.set("DC_XH", xh);
      if (st) c.set("DC_ST", st);
      jobs.emplace_back(c, nt(k[0], 4096, 4096));
    }
  Config g6 = tmaConfig(2, 8, 1, 4, 1, 6, 0);
  g6.set("DC_ST", int64_t{1});
  jobs.emplace_back(g6, nt(16, 28672, 4096));
  Config gu = tmaConfig(2, 4, 1, 4, 2, 4, 3);
  gu.set("DC_XH", int64_t{1});
  GemmShape sgu = nt(16, 8192, 4096);
  sgu.act = Activation::kSiluMul;
  jobs.emplace_back(gu, sgu);
  compileEach(**cc, jobs, [](const Config& c, const std::string& ptx) -> std::string {
    const size_t mma = ptx.find("wgmma.mma_async");
    if (mma == std::string::npos) return "PTX lacks wgmma";
    if (c.has("DC_XH")) {
      const size_t arrive = ptx.find("barrier.cluster.arrive.relaxed");
      if (arrive == std::string::npos || arrive > mma) return "no cluster arrival before the main loop";
      if (ptx.find("barrier.cluster.arrive", arrive + 1) != std::string::npos) return "a second cluster arrival";
      if (ptx.find("st.async") == std::string::npos) return "PTX lacks st.async";
    }
    const int64_t st = c.getInt("DC_ST", 0);
    const size_t tm = ptx.find("prefetch.tensormap"), init = ptx.find("mbarrier.init");
    if (tm == std::string::npos || init == std::string::npos) return "PTX lacks the prefetch or the init";
    if ((st > 0) != (tm < init)) return st ? "the tensor maps prefetched after the init" : "an early prefetch";
    const size_t wait = ptx.find("griddepcontrol.wait"), box = ptx.find("cp.async.bulk.tensor");
    if (wait == std::string::npos) return "PTX lacks the programmatic-launch wait";
    if (box < wait) return "a box issued before the programmatic-launch wait";
    if ((st == 1) != (box < ptx.find("bar.sync"))) return st ? "no box before the block barrier" : "an early box";
    const bool lines = ptx.find("prefetch.global.L2 ") < wait;  // the first stage's, before the wait
    return lines == (st == 0) ? "" : lines ? "line prefetches with DC_ST" : "no line prefetches";
  });
}

// The knobs are curated where they won (bench/NOTES.md, issue 32): DC_XH as the twin of the cluster
// split G4 W4 NT1 U4 D2 XR0 at 1..8 rows, DC_XH + DC_ST as the twin of 16x6144x4096's pick (G4 W4
// NT2 U2 D2 XR3) at 9..16 rows and N = 6144 (where it was measured); each twin a few entries after its base config (after the base's
// DC_WP twin), none at 17 rows or more.
TEST(GemmDecode, FewRowKnobsAreCuratedAsTwins) {
  for (const GemmShape& s : {nt(1, 4096, 4096), nt(8, 4096, 4096), nt(9, 6144, 4096), nt(16, 6144, 4096),
                             nt(16, 4096, 4096), nt(17, 4096, 4096), nt(64, 4096, 4096), nt(128, 28672, 4096)}) {
    const std::vector<Config> cs = curatedConfigs(KernelKind::kDecode, s);
    int twins = 0;
    for (size_t i = 0; i < cs.size(); ++i) {
      if ((!cs[i].has("DC_XH") && !cs[i].has("DC_ST")) || cs[i].has("DC_EF")) continue;
      if (cs[i].getInt("DC_MT") >= 4) continue;  // the 17..32-row twin: gemm_decode_widestart_part.cc
      ++twins;
      EXPECT_EQ(cs[i].getInt("DC_XH", 0), 1) << cs[i].toString();
      EXPECT_EQ(cs[i].has("DC_ST"), s.m > 8) << cs[i].toString();
      EXPECT_EQ(cs[i].getInt("DC_NT"), s.m > 8 ? 2 : 1) << cs[i].toString();
      std::string base = cs[i].toString();
      for (const char* k : {",DC_XH=1", ",DC_ST=1"})
        if (base.find(k) != std::string::npos) base.erase(base.find(k), 8);
      bool follows = false;
      for (size_t j = i >= 2 ? i - 2 : 0; j < i; ++j) follows = follows || cs[j].toString() == base;
      EXPECT_TRUE(follows) << "the twin follows its base config: " << cs[i].toString();
    }
    EXPECT_EQ(twins, s.m <= 8 || (s.m <= 16 && s.n == 6144) ? 1 : 0) << shapeKey(s);
  }
}

// DC_EF (the weight boxes' L2 eviction priority) is not enumerated; 1 on the TMA-fed body, not on
// the row-split pair, the launch and shared memory unchanged.
TEST(GemmDecode, TmaCacheHintIsAProbeKnob) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  for (const Config& c : sp.enumerate("cuda", 227 * 1024).accepted)
    ASSERT_FALSE(c.has("DC_EF")) << c.toString();
  const DeviceInfo dev = sm90aDevice();
  const GemmShape s = nt(16, 28672, 4096);
  for (const Config& base : {tmaConfig(2, 4, 1, 4, 2, 4, 3), tmaConfig(2, 8, 1, 4, 1, 6, 0),
                             tmaConfig(2, 4, 2, 4, 1, 0, 0)}) {
    Config c = base;
    c.set("DC_EF", int64_t{1});
    ASSERT_TRUE(sp.validate(c).ok()) << sp.validate(c).toString();
    auto pb = launchPlan(KernelKind::kDecode, base, s, dev),
         pc = launchPlan(KernelKind::kDecode, c, s, dev);
    ASSERT_TRUE(pb.ok() && pc.ok());
    EXPECT_EQ(pc->grid.x, pb->grid.x);
    EXPECT_EQ(sharedBytes(KernelKind::kDecode, c), sharedBytes(KernelKind::kDecode, base));
    EXPECT_TRUE(hasDefine(c, s, "DC_EF", "1"));
  }
  std::vector<Config> bad = {wgConfig(2, 4, 1, 2, 2, 4), tmaConfig(8, 4, 1, 2, 2, 7, 0),
                             tmaConfig(2, 4, 1, 4, 2, 4, 3)};
  for (Config& c : bad) c.set("DC_EF", int64_t{1});
  bad[2].set("DC_EF", int64_t{2});
  for (const Config& c : bad)
    EXPECT_NE(sp.validate(c).message().find("DC_EF"), std::string::npos) << c.toString();
}

// The PTX: with DC_EF the weight boxes carry an evict-first L2 policy (.L2::cache_hint); without it
// no box carries a hint (the shipped kernels). No spills (compileEach); the gate/up pair's 3-D
// boxes keep the default (no hint at all with one slab a warpgroup).
TEST(GemmDecode, TmaCacheHintCompiles) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  for (int64_t ef : {0, 1}) {
    for (const auto& [c0, s] : std::vector<std::pair<Config, GemmShape>>{
             {tmaConfig(2, 4, 1, 4, 2, 4, 3), nt(16, 4096, 4096)},
             {tmaConfig(2, 8, 1, 4, 1, 6, 0), nt(13, 28672, 4096)},
             {tmaConfig(1, 4, 2, 4, 1, 0, 0), nt(5, 14336, 4096)}}) {
      Config c = c0;
      if (ef) c.set("DC_EF", ef);
      jobs.emplace_back(c, s);
    }
  }
  for (int64_t nt_ : {1, 2}) {
    Config gu = tmaConfig(2, 4, nt_, 4, 2, 4, 0);
    gu.set("DC_EF", int64_t{1});
    GemmShape sgu = nt(16, 8192, 4096);
    sgu.act = Activation::kSiluMul;
    jobs.emplace_back(gu, sgu);
  }
  compileEach(**cc, jobs, [](const Config& c, const std::string& ptx) -> std::string {
    const bool want = c.has("DC_EF");  // the gate/up pair's 3-D boxes too
    const bool hint = ptx.find(".L2::cache_hint") != std::string::npos;
    const bool first = ptx.find("L2::evict_first") != std::string::npos;
    if (hint != want || first != want)
      return want ? "the weight boxes lack the evict-first hint" : "a cache hint";
    return ptx.find("L2::evict_last") == std::string::npos ? "" : "an evict-last policy";
  });
}

// DC_EF = 1 is curated as the twin of six few-row picks (bench/NOTES.md, issue 32): each follows
// its base config (the same without DC_EF) within three entries, at 1..16 rows only; at 1..8 x 6144
// also the NT2 U2 D2 XR0 EF twin with DC_XH and DC_ST, right after it.
TEST(GemmDecode, CacheHintIsCuratedAsTwins) {
  for (const GemmShape& s : {nt(1, 4096, 4096), nt(8, 4096, 4096), nt(16, 4096, 4096), nt(4, 6144, 4096),
                             nt(16, 6144, 4096), nt(4, 14336, 4096), nt(16, 28672, 4096),
                             nt(17, 4096, 4096), nt(64, 28672, 4096), nt(128, 4096, 4096)}) {
    const std::vector<Config> cs = curatedConfigs(KernelKind::kDecode, s);
    int twins = 0;
    for (size_t i = 0; i < cs.size(); ++i) {
      if (!cs[i].has("DC_EF")) continue;
      ++twins;
      EXPECT_EQ(cs[i].getInt("DC_EF", 0), 1) << cs[i].toString();
      // Its base: the same without DC_EF, or (N = 6144's XR0 XH ST twin at 1..8 rows) the EF twin it
      // extends by DC_XH and DC_ST.
      std::string base = cs[i].toString(), ef = base;
      base.erase(base.find(",DC_EF=1"), 8);
      for (const char* k : {",DC_XH=1", ",DC_ST=1"})
        if (ef.find(k) != std::string::npos && cs[i].getInt("DC_XR") == 0) ef.erase(ef.find(k), 8);
      bool follows = false;
      for (size_t j = i >= 3 ? i - 3 : 0; j < i; ++j)
        follows = follows || cs[j].toString() == base || (ef != cs[i].toString() && cs[j].toString() == ef);
      EXPECT_TRUE(follows) << "the twin follows its base config: " << cs[i].toString();
    }
    // G0 NT2 at 1..16 rows, the XH twin at 1..8 / XR3 at 9..16, G6 U4 D1 and U2 D2 from N = 8192,
    // the 6144 twin at 9..16 rows, the two NT2 XR0 twins and the XR0 XH ST one at 1..8 rows of N = 6144
    const int want = s.m > 16 ? 0 : 2 + (s.n >= 8192 ? 2 : 0) + (s.n == 6144 ? (s.m > 8 ? 1 : 3) : 0);
    EXPECT_EQ(twins, want) << shapeKey(s);
  }
}

}  // namespace
}  // namespace ktune::gemm
