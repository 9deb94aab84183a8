// The decode kind's probe knobs at 17..128 rows (part of the gemm_decode_test program:
// KTUNE_TEST_PARTS in tests/CMakeLists.txt): the start path cut (DC_ST) from DC_MT 8 on the
// warp-converged producer path (DC_PW absent), with DC_CW 2 and DC_PP 1 too, on every TMA-fed grid but
// the row-split pair (its space, launch rule, shared memory and PTX), DC_XH's curated twin at
// 17..32 rows, DC_XH from 64 rows, and three slabs a tile refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "ops/gemm_configs.h"
#include "templates/gemm.h"
#include "tests/support/tools.h"
#include "tests/unit/gemm_decode_test_util.h"
#include "tests/unit/gemm_test_util.h"

namespace ktune::gemm {
namespace {

using namespace decode_test;  // NOLINT: the shared helpers (gemm_decode_test_util.h)

Config with(Config c, std::initializer_list<std::pair<const char*, int64_t>> knobs) {
  for (const auto& [k, v] : knobs) c.set(k, v);
  return c;
}

// DC_ST 1 at DC_MT 8 and 16: valid on the cluster K split (XR 0/1/3, one or two consumer warpgroups,
// DC_PP), one block per tile, stream-K and the persistent grid; the launch and the shared memory the
// base config's, the define set. Refused: the row-split pair, an explicit DC_PW, DC_PF 2.
TEST(GemmDecode, WideStartIsAProbeKnob) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  const DeviceInfo dev = sm90aDevice();
  std::vector<Config> bases = {tmaConfig(16, 4, 1, 2, 2, 4, 3), tmaConfig(16, 4, 1, 2, 2, 4, 1),
                               tmaConfig(8, 4, 1, 2, 3, 4, 3),  tmaConfig(8, 4, 1, 2, 2, 0, 0),
                               tmaConfig(16, 4, 1, 2, 2, 1, 0), tmaConfig(8, 8, 1, 2, 2, 6, 0),
                               with(tmaConfig(16, 8, 1, 2, 2, 4, 3), {{"DC_CW", 2}}),
                               with(tmaConfig(16, 8, 1, 2, 2, 4, 3), {{"DC_CW", 2}, {"DC_PP", 1}}),
                               with(tmaConfig(16, 8, 2, 1, 2, 5, 3), {{"DC_CW", 2}})};
  for (const Config& base : bases) {
    ASSERT_TRUE(sp.validate(base).ok()) << base.toString() << ": " << sp.validate(base).toString();
    const Config st = with(base, {{"DC_ST", 1}});
    ASSERT_TRUE(sp.validate(st).ok()) << st.toString() << ": " << sp.validate(st).toString();
    const GemmShape s = nt(8 * base.getInt("DC_MT"), 6144, 4096);
    auto pb = launchPlan(KernelKind::kDecode, base, s, dev), ps = launchPlan(KernelKind::kDecode, st, s, dev);
    ASSERT_TRUE(pb.ok() && ps.ok()) << st.toString();
    EXPECT_EQ(ps->grid.x, pb->grid.x);
    EXPECT_EQ(ps->block.x, pb->block.x);
    EXPECT_EQ(sharedBytes(KernelKind::kDecode, st), sharedBytes(KernelKind::kDecode, base));
    bool set = false;
    for (const auto& [n, v] : defines(KernelKind::kDecode, st, s)) set = set || (n == "DC_ST" && v == "1");
    EXPECT_TRUE(set) << st.toString();
  }
  const Config pair = with(tmaConfig(8, 4, 2, 2, 2, 7, 0), {{"DC_ST", 1}});
  const Config pw2 = with(tmaConfig(16, 4, 1, 2, 2, 4, 3), {{"DC_ST", 1}, {"DC_PW", 2}});
  const Config pf2 = with(tmaConfig(8, 4, 2, 2, 1, 4, 0), {{"DC_ST", 1}, {"DC_PF", 2}});
  for (const Config& bad : {pair, pw2, pf2})
    EXPECT_NE(sp.validate(bad).message().find("DC_ST"), std::string::npos) << bad.toString();
}

// The PTX at 64/128 rows: the tensor maps prefetched before the first mbarrier.init, the first
// boxes after the programmatic-launch wait and before the block barrier, no first-stage line
// prefetch before that wait, no 64-bit division between the first box and the block barrier (the
// early stages' units stepped), the early stages' count broadcast to the producer warp after the
// barrier (a lane starting from stage 0 would issue them again); no spills (compileEach), gate/up too.
TEST(GemmDecode, WideStartCompiles) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  jobs.emplace_back(with(tmaConfig(16, 8, 1, 2, 2, 4, 3), {{"DC_CW", 2}, {"DC_ST", 1}}), nt(128, 4096, 4096));
  jobs.emplace_back(with(tmaConfig(16, 8, 1, 2, 2, 4, 3), {{"DC_CW", 2}, {"DC_PP", 1}, {"DC_ST", 1}}),
                    nt(128, 6144, 4096));
  jobs.emplace_back(with(tmaConfig(8, 4, 1, 2, 3, 4, 3), {{"DC_ST", 1}}), nt(64, 4096, 14336));
  jobs.emplace_back(with(tmaConfig(16, 4, 1, 2, 2, 4, 1), {{"DC_ST", 1}}), nt(100, 4096, 4096));
  jobs.emplace_back(with(tmaConfig(8, 8, 1, 2, 2, 6, 0), {{"DC_ST", 1}}), nt(64, 28672, 4096));
  GemmShape gu = nt(128, 8192, 4096);
  gu.act = Activation::kSiluMul;
  jobs.emplace_back(with(tmaConfig(16, 4, 1, 2, 2, 4, 0), {{"DC_ST", 1}}), gu);
  compileEach(**cc, jobs, [](const Config&, const std::string& ptx) -> std::string {
    const size_t tm = ptx.find("prefetch.tensormap"), init = ptx.find("mbarrier.init");
    if (tm == std::string::npos || init == std::string::npos || tm > init) return "no tensor map prefetch before the init";
    const size_t wait = ptx.find("griddepcontrol.wait"), box = ptx.find("cp.async.bulk.tensor");
    const size_t bar = ptx.find("bar.sync");
    if (wait == std::string::npos || box == std::string::npos || bar == std::string::npos) return "PTX lacks a marker";
    if (box < wait) return "a box issued before the programmatic-launch wait";
    if (box > bar) return "no box before the block barrier";
    if (ptx.find("prefetch.global.L2 ") < wait) return "a first-stage line prefetch";
    // The producer warp's lanes all go on after produce_first's stages: its count from lane 0.
    if (ptx.find("shfl.sync.idx", bar) == std::string::npos) return "no broadcast of the early stages' count";
    for (const char* div : {"div.s64", "div.u64", "rem.s64", "rem.u64"}) {
      const size_t d = ptx.find(div, box);
      if (d < bar) return std::string("a 64-bit division among the early stages: ") + div;
    }
    return "";
  });
}

// DC_XH = 1 is curated at 17..32 rows as the twin right after the cluster split G4 W4 NT1 U2 D2 XR0
// (the 32-row pick; bench/NOTES.md, issue 32): one twin at every N there, valid, none from 33 rows
// (DC_XH needs DC_MT <= 4); the tuned op's candidates hold it (its family's 32-row representative).
TEST(GemmDecode, HandOverTwinIsCuratedAt17To32Rows) {
  const Config base = tmaConfig(4, 4, 1, 2, 2, 4, 0);
  auto family = gemm_ops::familyConfigs({KernelKind::kDecode}, "cuda", false, 227 * 1024, sm90aDevice(), "");
  ASSERT_TRUE(family.ok()) << family.status().toString();
  for (int64_t m : {17, 24, 32, 33, 64})
    for (int64_t n : {4096, 6144, 14336, 28672}) {
      const std::vector<Config> cs = curatedConfigs(KernelKind::kDecode, nt(m, n, 4096));
      int twins = 0;
      for (size_t i = 0; i < cs.size(); ++i) {
        if (!cs[i].has("DC_XH") || cs[i].getInt("DC_MT") < 4) continue;
        ++twins;
        EXPECT_TRUE(configSpace(KernelKind::kDecode).validate(cs[i]).ok()) << cs[i].toString();
        EXPECT_FALSE(cs[i].has("DC_ST")) << cs[i].toString();
        ASSERT_GT(i, 0u);
        EXPECT_EQ(cs[i - 1].toString(), base.toString()) << "the twin follows its base config";
        EXPECT_EQ(with(cs[i - 1], {{"DC_XH", 1}}).toString(), cs[i].toString());
        const Config kc = gemm_ops::withKind(cs[i], KernelKind::kDecode);
        EXPECT_NE(std::find(family->begin(), family->end(), kc), family->end()) << kc.toString();
      }
      EXPECT_EQ(twins, m <= 32 ? 1 : 0) << m << "x" << n;
    }
}

// DC_ST = 1 is curated from 33 rows at N <= 4096 (where it was measured) as the twin right after two
// bases: the 64-row cluster split G4 W4 NT1 U2 D2 XR3 (33..64 rows) and its 128-row two-warpgroup twin
// (DC_CW 2, W8, 65..128 rows); valid, in the tuned op's candidates (the 64- and 128-row representatives).
TEST(GemmDecode, StartTwinsAreCuratedFrom33Rows) {
  auto family = gemm_ops::familyConfigs({KernelKind::kDecode}, "cuda", false, 227 * 1024, sm90aDevice(), "");
  ASSERT_TRUE(family.ok()) << family.status().toString();
  for (int64_t m : {32, 33, 64, 65, 100, 128})
    for (int64_t n : {4096, 6144, 14336}) {
      const std::vector<Config> cs = curatedConfigs(KernelKind::kDecode, nt(m, n, 4096));
      int twins = 0;
      for (size_t i = 0; i < cs.size(); ++i) {
        if (!cs[i].has("DC_ST") || cs[i].getInt("DC_MT") < 8) continue;
        ++twins;
        EXPECT_TRUE(configSpace(KernelKind::kDecode).validate(cs[i]).ok()) << cs[i].toString();
        ASSERT_GT(i, 0u);
        const Config base = m <= 64 ? tmaConfig(8, 4, 1, 2, 2, 4, 3) : with(tmaConfig(16, 8, 1, 2, 2, 4, 3), {{"DC_CW", 2}});
        EXPECT_EQ(cs[i - 1].toString(), base.toString()) << "the twin follows its base config";
        EXPECT_EQ(with(base, {{"DC_ST", 1}}).toString(), cs[i].toString());
        EXPECT_FALSE(cs[i].has("DC_XH")) << cs[i].toString();
        const Config kc = gemm_ops::withKind(cs[i], KernelKind::kDecode);
        EXPECT_NE(std::find(family->begin(), family->end(), kc), family->end()) << kc.toString();
      }
      EXPECT_EQ(twins, m > 32 && n <= 4096 ? 1 : 0) << m << "x" << n;
    }
}

// Three slabs a tile (DC_NT = 3, 192-row tiles) are refused on the TMA-fed body: measured 1.27-1.52x
// slower than the picks at 32/64 x 6144 x 4096 (bench/NOTES.md, issue 32), so not kept as a probe config.
TEST(GemmDecode, ThreeSlabTilesAreRefused) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  for (const Config& c : {with(tmaConfig(8, 8, 3, 1, 3, 5, 3), {{"DC_CW", 2}}), tmaConfig(4, 4, 3, 1, 3, 5, 3)})
    EXPECT_NE(sp.validate(c).message().find("DC_NT"), std::string::npos) << c.toString();
  EXPECT_TRUE(sp.validate(tmaConfig(8, 8, 2, 1, 2, 5, 3)).ok());
}

// DC_XH = 1 from 64 rows (DC_MT 8 and 16) on the cluster K split of 2: one consumer warpgroup or two
// (DC_CW 2), with DC_ST, XR 0/1/3; the launch the base config's, the peer's sums in the gate/up
// hand-over's region (shared memory: the base's, or more where the sums are larger: two slabs a
// warpgroup); refused with DC_PP and on clusters of 4.
TEST(GemmDecode, WideHandOverIsAProbeKnob) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  const DeviceInfo dev = sm90aDevice();
  struct Row {
    Config base;
    int64_t extra;  // shared bytes beyond the base config's
  };
  const std::vector<Row> rows = {{tmaConfig(8, 4, 1, 2, 2, 4, 3), 0},
                                 {tmaConfig(8, 4, 1, 2, 2, 4, 1), 0},
                                 {tmaConfig(16, 4, 1, 2, 2, 4, 0), 0},
                                 {with(tmaConfig(16, 8, 1, 2, 2, 4, 3), {{"DC_CW", 2}}), 0},
                                 {with(tmaConfig(16, 8, 1, 2, 2, 4, 3), {{"DC_CW", 2}, {"DC_ST", 1}}), 0},
                                 {tmaConfig(8, 4, 2, 1, 2, 4, 3), 128 * 2 * 16 * 4 - 16 * 4 * 4 * 8 * 4}};
  for (const Row& r : rows) {
    ASSERT_TRUE(sp.validate(r.base).ok()) << r.base.toString() << ": " << sp.validate(r.base).toString();
    const Config xh = with(r.base, {{"DC_XH", 1}});
    ASSERT_TRUE(sp.validate(xh).ok()) << xh.toString() << ": " << sp.validate(xh).toString();
    const GemmShape s = nt(8 * r.base.getInt("DC_MT"), 4096, 4096);
    auto pb = launchPlan(KernelKind::kDecode, r.base, s, dev), px = launchPlan(KernelKind::kDecode, xh, s, dev);
    ASSERT_TRUE(pb.ok() && px.ok()) << xh.toString();
    EXPECT_EQ(px->grid.x, pb->grid.x);
    EXPECT_EQ(px->block.x, pb->block.x);
    EXPECT_EQ(sharedBytes(KernelKind::kDecode, xh), sharedBytes(KernelKind::kDecode, r.base) + r.extra) << xh.toString();
    EXPECT_LE(sharedBytes(KernelKind::kDecode, xh), 227 * 1024) << xh.toString();
    bool set = false;
    for (const auto& [n, v] : defines(KernelKind::kDecode, xh, s)) set = set || (n == "DC_XH" && v == "1");
    EXPECT_TRUE(set) << xh.toString();
  }
  for (const Config& bad : {with(tmaConfig(16, 8, 1, 2, 2, 4, 3), {{"DC_CW", 2}, {"DC_PP", 1}, {"DC_XH", 1}}),
                            with(tmaConfig(16, 8, 1, 2, 2, 5, 3), {{"DC_CW", 2}, {"DC_XH", 1}})})
    EXPECT_NE(sp.validate(bad).message().find("DC_XH"), std::string::npos) << bad.toString();
}

// The PTX at 64/128 rows: the cluster barrier arrived at once before the main loop (relaxed) and
// never again, the hand-over by st.async; with DC_ST the first boxes before the block barrier. No
// spills (compileEach), the gate/up pair (its hand-over region the peer's sums too) and odd shapes.
TEST(GemmDecode, WideHandOverCompiles) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  jobs.emplace_back(with(tmaConfig(16, 8, 1, 2, 2, 4, 3), {{"DC_CW", 2}, {"DC_XH", 1}}), nt(128, 4096, 4096));
  jobs.emplace_back(with(tmaConfig(16, 8, 1, 2, 2, 4, 3), {{"DC_CW", 2}, {"DC_XH", 1}, {"DC_ST", 1}}),
                    nt(128, 4096, 14336));
  jobs.emplace_back(with(tmaConfig(8, 4, 1, 2, 2, 4, 3), {{"DC_XH", 1}, {"DC_ST", 1}}), nt(64, 4096, 4096));
  jobs.emplace_back(with(tmaConfig(8, 4, 1, 2, 2, 4, 1), {{"DC_XH", 1}}), nt(57, 4099, 1000));
  jobs.emplace_back(with(tmaConfig(8, 4, 2, 1, 2, 4, 3), {{"DC_XH", 1}}), nt(64, 6144, 4096));
  GemmShape gu = nt(100, 8192, 4096);
  gu.act = Activation::kSiluMul;
  jobs.emplace_back(with(tmaConfig(16, 8, 1, 2, 2, 4, 0), {{"DC_CW", 2}, {"DC_XH", 1}}), gu);
  compileEach(**cc, jobs, [](const Config& c, const std::string& ptx) -> std::string {
    const size_t mma = ptx.find("wgmma.mma_async"), arrive = ptx.find("barrier.cluster.arrive.relaxed");
    if (mma == std::string::npos) return "PTX lacks wgmma";
    if (arrive == std::string::npos || arrive > mma) return "no cluster arrival before the main loop";
    if (ptx.find("barrier.cluster.arrive", arrive + 1) != std::string::npos) return "a second cluster arrival";
    if (ptx.find("st.async") == std::string::npos) return "PTX lacks st.async";
    if (c.has("DC_ST") && ptx.find("cp.async.bulk.tensor") > ptx.find("bar.sync")) return "no box before the block barrier";
    return "";
  });
}

}  // namespace
}  // namespace ktune::gemm
