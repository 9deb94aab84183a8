// The decode kind's cluster and producer variants for 33..128 rows (part of the gemm_decode_test
// program: KTUNE_TEST_PARTS in tests/CMakeLists.txt): the cluster of four's reduce-scatter on
// 128-row tiles, A's rows by cp.async beside the TMA weight boxes, the start and reduction barriers,
// their spaces, launch rules and PTX.
#include <gtest/gtest.h>

#include <algorithm>
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

// DC_GRID = 5 with 128-row tiles (two warpgroups) at 65..128 rows: a cluster of four splitting K,
// reduce-scattered (each block takes in 3 x a quarter of the sums: 48 KB, where the first block
// taking in all of them needed 192 KB, more than a 128 KB ring), so A is read once per 128 weight
// rows on a 128-block grid at N = 4096 (measured 1.4-1.9x slower than the pair where 30 clusters of
// four are co-resident: bench/NOTES.md, tenth session).
TEST(GemmDecode, ClusterOfFourReduceScattersA128RowTile) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  Config c = wgConfig(16, 8, 1, 1, 2, 5);
  c.set("DC_WG", int64_t{2});
  ASSERT_TRUE(sp.validate(c).ok()) << sp.validate(c).toString();
  Config u2 = c;
  u2.set("DC_U", int64_t{2});
  u2.set("DC_DEPTH", int64_t{1});
  ASSERT_TRUE(sp.validate(u2).ok()) << sp.validate(u2).toString();
  const DeviceInfo dev = sm90aDevice();
  auto p = launchPlan(KernelKind::kDecode, c, nt(128, 4096, 4096), dev);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->grid.x, 4u * 32u);
  EXPECT_EQ(p->block.x, 288u);
  EXPECT_EQ(p->workspace_bytes, 0);
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  GemmShape r = nt(100, 4099, 4104);
  r.has_bias = true;
  r.beta = 1.0f;
  Config m8 = wgConfig(8, 8, 1, 2, 2, 5);
  m8.set("DC_WG", int64_t{2});
  compileEach(**cc, {{u2, r}, {m8, nt(64, 4096, 4096)}},
              [](const Config&, const std::string& ptx) -> std::string {
                if (ptx.find("st.shared::cluster") == std::string::npos) return "PTX lacks the cluster reduction";
                if (ptx.find("barrier.cluster.arrive") == std::string::npos) return "PTX lacks the cluster barrier";
                return "";
              });
}

// DC_WG = 2 with DC_PF = 2: the weight boxes by TMA, A's rows by the producer warpgroup's cp.async
// (so A's bytes, two thirds of a block's at 128 rows, bypass the TMA unit), at the K split's
// configs, with the gate/up pair, bias and C +=; no spills.
TEST(GemmDecode, TmaFedBodyCopiesABesideTheWeightBoxes) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  auto tma = [](int64_t mt, int64_t warps, int64_t nt_, int64_t u, int64_t depth, int64_t grid) {
    Config c = wgConfig(mt, warps, nt_, u, depth, grid, 2);
    c.set("DC_WG", int64_t{2});
    return c;
  };
  GemmShape g = nt(64, 8192, 4104);
  g.act = Activation::kSiluMul;
  g.has_bias = true;
  g.beta = 1.0f;
  g.ldc = 4096;
  GemmShape r = nt(100, 4099, 4104);
  r.beta = 1.0f;
  // The K split pair at 128 rows with C +=; the curated config (two slabs: the gate/up pair).
  compileEach(**cc, {{tma(16, 4, 1, 2, 2, 4), r}, {tma(8, 4, 2, 2, 1, 4), g}},
              [](const Config&, const std::string& ptx) -> std::string {
                if (ptx.find("cp.async.bulk.tensor") == std::string::npos) return "PTX lacks the TMA weight boxes";
                if (ptx.find("cp.async.cg.shared.global") == std::string::npos) return "PTX lacks A's cp.async";
                if (ptx.find("cp.async.mbarrier.arrive.noinc") == std::string::npos)
                  return "PTX lacks the copies' arrival on the stage's barrier";
                if (ptx.find("fence.proxy.async") == std::string::npos) return "PTX lacks the proxy fence";
                return "";
              });
}

// The TMA-fed body initialises its barriers before it prefetches the first weights (the init fence
// is a memory barrier: behind the prefetches it waited for them and delayed the first copy), and a
// cluster splitting K passes its first reduction barrier with a relaxed arrival (execution order
// only; a release arrival is a GPU-scope memory barrier), the second with a release.
TEST(GemmDecode, TmaFedBodyStartsItsCopiesWithoutWaitingOnMemoryBarriers) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  Config c = wgConfig(16, 4, 1, 2, 2, 4);
  c.set("DC_WG", int64_t{2});
  compileEach(**cc, {{c, nt(128, 4096, 4096)}}, [](const Config&, const std::string& ptx) -> std::string {
    const size_t fence = ptx.find("fence.mbarrier_init"), pf = ptx.find("prefetch.global.L2");
    if (fence == std::string::npos || pf == std::string::npos) return "PTX lacks the init fence or the prefetches";
    if (fence > pf) return "the barriers' init fence comes after the first weight prefetch";
    if (ptx.find("barrier.cluster.arrive.relaxed") == std::string::npos) return "PTX lacks the relaxed cluster arrival";
    if (ptx.find("barrier.cluster.arrive.release") == std::string::npos) return "PTX lacks the release before the sums are read";
    // The per-phase trace (decode_wg_trace.cuh) is a probe build's: never in a shipped kernel.
    if (ptx.find("globaltimer") != std::string::npos) return "the shipped kernel carries the per-phase trace";
    return "";
  });
}

// DC_XR = 1 on the cluster K split (decode_wg_cluster.cuh) stores C as 16-byte vectors staged
// through the ring, on the reduce-scatter (pair and four) and on the gather under 8*blocks rows,
// with bias and C +=, the gate/up pair's runs too; DC_XR = 0 keeps the element stores; both keep the
// two cluster barriers. DC_XR = 3 also hands the sums over by st.async.
TEST(GemmDecode, ClusterEndStagesCThroughTheRing) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  GemmShape r = nt(61, 4099, 4104);
  r.has_bias = true;
  r.beta = 1.0f;
  std::vector<std::pair<Config, GemmShape>> jobs;
  for (int64_t xr : {0, 1}) {
    Config c = wgConfig(8, 4, 1, 2, 2, 4);
    c.set("DC_WG", int64_t{2});
    c.set("DC_XR", xr);
    ASSERT_TRUE(sp.validate(c).ok()) << sp.validate(c).toString();
    jobs.push_back({c, xr == 1 ? r : nt(64, 4096, 4096)});
  }
  Config quad = wgConfig(16, 8, 1, 2, 1, 5), gather = wgConfig(1, 4, 1, 2, 2, 4);
  for (Config* c : {&quad, &gather}) {
    c->set("DC_WG", int64_t{2});
    c->set("DC_XR", int64_t{1});
    ASSERT_TRUE(sp.validate(*c).ok()) << sp.validate(*c).toString();
  }
  jobs.push_back({quad, nt(128, 4096, 4096)});
  jobs.push_back({gather, nt(8, 4099, 1000)});
  // The gate/up pair staged the same way (one slab per warpgroup: 32 gate rows, then their up rows),
  // with bias, C += and an odd ldc (the runs' element path).
  GemmShape gu = nt(61, 2 * 4099, 4104);
  gu.act = Activation::kSiluMul;
  gu.has_bias = true;
  gu.beta = 1.0f;
  gu.ldc = 4099;
  EXPECT_TRUE(applicable(KernelKind::kDecode, jobs[1].first, gu).ok());
  jobs.push_back({jobs[1].first, gu});
  // DC_XR = 3: the reduce-scatter's sums by st.async counted on the receiver's barrier, no release
  // barrier; not under the reduce-scatter's rows (there it would be DC_XR = 1 again).
  Config counted = jobs[1].first;
  counted.set("DC_XR", int64_t{3});
  ASSERT_TRUE(sp.validate(counted).ok()) << sp.validate(counted).toString();
  jobs.push_back({counted, r});
  jobs.push_back({counted, gu});
  Config counted_gather = gather;
  counted_gather.set("DC_XR", int64_t{3});
  EXPECT_FALSE(sp.validate(counted_gather).ok());
  Config stream_k = wgConfig(8, 4, 1, 2, 2, 2);  // DC_XR = 1 is the cluster split's only
  stream_k.set("DC_WG", int64_t{2});
  stream_k.set("DC_XR", int64_t{1});
  EXPECT_FALSE(sp.validate(stream_k).ok());
  compileEach(**cc, jobs, [](const Config& c, const std::string& ptx) -> std::string {
    const bool vec = ptx.find("st.global.wb.v4") != std::string::npos || ptx.find("st.global.v4") != std::string::npos;
    const bool tx = c.getInt("DC_XR") == 3;
    if ((ptx.find("barrier.cluster.arrive.release") == std::string::npos) != tx)
      return tx ? "DC_XR = 3 keeps the release barrier" : "PTX lacks the release before the sums are read";
    if (tx && ptx.find("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4") == std::string::npos)
      return "DC_XR = 3 without the counted 16-byte hand-over";
    // The receiver's wait pairs with the peers' cluster-scope completions.
    if (tx != (ptx.find("mbarrier.try_wait.parity.acquire.cluster") != std::string::npos))
      return tx ? "DC_XR = 3 waits for the hand-over without acquire at cluster scope"
                : "a cluster-scope wait without the counted hand-over";
    if ((c.getInt("DC_XR") != 0) != vec) return vec ? "16-byte C stores with DC_XR = 0" : "DC_XR = 1 without 16-byte C stores";
    if (ptx.find("__local_depot") != std::string::npos) return "the accumulators went to local memory";
    return "";
  });
}

// DC_PF = 3: a producer warpgroup that gives its registers to two consumer warpgroups
// (setmaxnreg 40 / 232), so 256-row tiles at 128 rows (DC_NT 2 x DC_MT 16: 128 accumulators a
// consumer thread) compile without spills on the cluster K split, plain and gate/up; the space
// keeps 128 accumulators to DC_PF = 3 and DC_PF = 3 to two consumer warpgroups on DC_GRID 4, 5.
TEST(GemmDecode, RegisterSplitCarries256RowTilesAt128Rows) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  auto cfg = [](int64_t warps, int64_t nt_, int64_t grid, int64_t pf, int64_t xr) {
    Config c = wgConfig(16, warps, nt_, 1, 2, grid, pf);
    c.set("DC_WG", int64_t{2});
    c.set("DC_XR", xr);
    return c;
  };
  EXPECT_FALSE(sp.validate(cfg(8, 2, 4, 1, 0)).ok());  // 128 accumulators in 168 registers spill
  EXPECT_FALSE(sp.validate(cfg(4, 2, 4, 3, 0)).ok());  // one consumer warpgroup: no split
  EXPECT_FALSE(sp.validate(cfg(8, 2, 0, 3, 0)).ok());  // the whole-tile epilogue spills
  std::vector<std::pair<Config, GemmShape>> jobs;
  for (int64_t grid : {4, 5})
    for (int64_t xr : {0, 3}) {
      const Config c = cfg(8, 2, grid, 3, xr);
      ASSERT_TRUE(sp.validate(c).ok()) << sp.validate(c).toString();
      jobs.push_back({c, nt(128, 14336, 4096)});
    }
  GemmShape gu = nt(97, 2 * 4099, 1000);
  gu.act = Activation::kSiluMul;
  gu.has_bias = true;
  gu.beta = 1.0f;
  gu.ldc = 4099;
  jobs.push_back({cfg(8, 2, 4, 3, 0), gu});
  // Curated from N = 14336 on at 65..128 rows (plain and its gate/up twin), not at N = 4096.
  auto has = [](const GemmShape& s, const Config& c) {
    const auto cs = curatedConfigs(KernelKind::kDecode, s);
    return std::find(cs.begin(), cs.end(), c) != cs.end();
  };
  EXPECT_TRUE(has(nt(128, 14336, 4096), cfg(8, 2, 4, 3, 3)));
  GemmShape wide_gu = nt(128, 2 * 14336, 4096);
  wide_gu.act = Activation::kSiluMul;
  EXPECT_TRUE(has(wide_gu, cfg(8, 2, 4, 3, 0)));
  EXPECT_TRUE(has(wide_gu, cfg(8, 2, 4, 3, 3)));  // the pair's staged runs (two slabs: kPairs)
  jobs.push_back({cfg(8, 2, 4, 3, 3), gu});
  EXPECT_FALSE(has(nt(128, 4096, 4096), cfg(8, 2, 4, 3, 3)));
  auto p = launchPlan(KernelKind::kDecode, jobs[0].first, nt(128, 14336, 4096), sm90aDevice());
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->grid.x, 112u);  // 56 tiles of 256 rows, a pair each
  EXPECT_EQ(p->block.x, 384u);
  compileEach(**cc, jobs, [](const Config&, const std::string& ptx) -> std::string {
    if (ptx.find("setmaxnreg.dec.sync.aligned.u32 40") == std::string::npos ||
        ptx.find("setmaxnreg.inc.sync.aligned.u32 232") == std::string::npos)
      return "PTX lacks the register split";
    if (ptx.find("__local_depot") != std::string::npos) return "the accumulators went to local memory";
    return "";
  });
}

// DC_GRID = 7: a pair of blocks per tile splitting the rows of A (64 each, DC_MT = 8, at 65..128
// rows), each over all of K, the weight boxes multicast to both: the TMA-fed body only, no
// workspace or counters, two blocks per tile; in the PTX (plain, and the gate/up in 32-row halves
// and in 64-row pairs with bias and C +=) multicast bulk copies and the release of a ring slot in
// the peer block (CTA scope: no fence), and no cluster reduction. No spills.
TEST(GemmDecode, RowSplitPairMulticastsTheWeightsAndReducesNothing) {
  const ConfigSpace& sp = configSpace(KernelKind::kDecode);
  Config c = wgConfig(8, 4, 1, 2, 2, 7);
  c.set("DC_WG", int64_t{2});
  ASSERT_TRUE(sp.validate(c).ok()) << sp.validate(c).toString();
  Config cp = c, mt16 = c;
  cp.set("DC_WG", int64_t{1});
  mt16.set("DC_MT", int64_t{16});
  EXPECT_FALSE(sp.validate(cp).ok());
  EXPECT_FALSE(sp.validate(mt16).ok());
  const DeviceInfo dev = sm90aDevice();
  for (int64_t m : {65, 100, 128}) {
    auto p = launchPlan(KernelKind::kDecode, c, nt(m, 4099, 4104), dev);
    ASSERT_TRUE(p.ok()) << m << ": " << p.status().toString();
    EXPECT_EQ(p->grid.x, 2u * 65u);
    EXPECT_EQ(p->workspace_bytes, 0);
    EXPECT_EQ(p->counters, 0);
  }
  const Status st = applicable(KernelKind::kDecode, c, nt(64, 4096, 4096));
  EXPECT_EQ(st.code(), Code::kUnsupported);
  EXPECT_NE(st.toString().find("65 <= M"), std::string::npos) << st.toString();
  // Curated from 65 rows on (the gate/up pair's fastest at 128 rows of N = 6144, 14336), its DC_MT
  // "auto" the tier of a block's half of the rows.
  for (int64_t m : {64, 100, 128}) {
    size_t pairs = 0;
    for (const Config& k : curatedConfigs(KernelKind::kDecode, nt(m, 6144, 4096)))
      if (k.getInt("DC_GRID") == 7) {
        ++pairs;
        EXPECT_EQ(k.getInt("DC_MT"), 8) << k.toString();
      }
    EXPECT_EQ(pairs > 0, m > 64) << m;
  }
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  GemmShape g = nt(120, 8192, 4096);
  g.act = Activation::kSiluMul;
  g.has_bias = true;
  g.beta = 1.0f;
  g.ldc = 4096;
  Config two = c;
  two.set("DC_NT", int64_t{2});
  compileEach(**cc, {{c, nt(128, 4096, 4096)}, {c, g}, {two, g}},
              [](const Config&, const std::string& ptx) -> std::string {
                if (ptx.find(".multicast::cluster") == std::string::npos) return "PTX lacks multicast copies";
                // The gate/up pair's boxes are 64 rows (the 3-D pair map with one slab, else 2-D),
                // so no 3-D copy goes without multicast.
                if (ptx.find("tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [") != std::string::npos)
                  return "PTX has a 3-D copy without multicast";
                if (ptx.find("mbarrier.arrive.shared::cluster") == std::string::npos)
                  return "PTX lacks the release of the peer's ring slot";
                // A cluster-scope release there is a memory barrier per stage (0.7-0.9 us each).
                if (ptx.find("arrive.release.cluster") != std::string::npos)
                  return "PTX releases the peer's slot with a cluster-scope fence";
                if (ptx.find("st.shared::cluster") != std::string::npos) return "PTX has a cluster reduction";
                return "";
              });
}

// DC_TRACE = 2 (decode_wg_trace.cuh: a probe build's per-stage trace, not a knob: a define the
// shipped kernels never get, 0 there) compiles for sm_90a on the 16/64/128-row picks of the
// cluster K split (XR 3, 3, 1), the persistent grid and stream-K: the stage stamps (clock64) and the
// phase trace (globaltimer) in the PTX, no spills.
TEST(GemmDecode, StageTraceCompiles) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  // (M, DC_MT, DC_WARPS, DC_U, DC_DEPTH, DC_XR, DC_GRID)
  for (const auto& k : std::vector<std::array<int64_t, 7>>{{16, 2, 4, 4, 2, 3, 4}, {64, 8, 4, 2, 2, 3, 4},
                                                           {128, 16, 4, 2, 2, 1, 4}, {16, 2, 8, 4, 1, 0, 6},
                                                           {16, 2, 4, 4, 1, 0, 0}}) {
    Config c = wgConfig(k[1], k[2], 1, k[3], k[4], k[6]);
    c.set("DC_WG", int64_t{2});
    c.set("DC_XR", k[5]);
    const GemmShape s = nt(k[0], 4096, 4096);
    CompileRequest req;
    req.source = std::string(kernelSource(KernelKind::kDecode));
    req.source_name = sourceFile(KernelKind::kDecode);
    req.entry = entryName(KernelKind::kDecode);
    req.defines = defines(KernelKind::kDecode, c, s);
    for (const auto& [name, value] : req.defines) ASSERT_NE(name, "DC_TRACE");  // never a config's define
    req.defines.emplace_back("DC_TRACE", "2");
    req.arch = "sm_90a";
    req.dumps = kDumpPtx;
    auto r = (*cc)->compile(req);
    ASSERT_TRUE(r.ok()) << c.toString() << ": " << r.status().toString().substr(0, 2000);
    EXPECT_FALSE(r->resources.spills()) << c.toString() << ": " << r->log;
    const std::string& ptx = r->dumps["ptx"];
    EXPECT_NE(ptx.find("%clock64"), std::string::npos) << c.toString();
    EXPECT_NE(ptx.find("%globaltimer"), std::string::npos) << c.toString();
    EXPECT_NE(ptx.find("wgmma.mma_async"), std::string::npos) << c.toString();
  }
}

// The TMA producer's per-stage path (decode_wg.cuh's kPW) compiles for sm_90a on the 16/64/128-row
// picks of the cluster K split, the persistent grid, stream-K and the row-split pair, no spills: with
// DC_PW = 2 (the default with one producer warp at 64 rows or more; 0 below) no division between
// the producer's wait on a slot and its first box and the boxes issued by an elected lane
// (elect.sync); DC_PW = 1 no division and no election;
// DC_PW = 0 the division (the path before); a producer warpgroup (DC_PF = 2) elects no lane (four
// warps would each issue the stage).
TEST(GemmDecode, ProducerPathCompiles) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  std::vector<std::pair<Config, GemmShape>> jobs;
  // (M, DC_MT, DC_WARPS, DC_U, DC_DEPTH, DC_XR, DC_GRID)
  for (const auto& k : std::vector<std::array<int64_t, 7>>{{16, 2, 4, 4, 2, 3, 4}, {64, 8, 4, 2, 2, 3, 4},
                                                           {128, 16, 4, 2, 2, 1, 4}, {16, 2, 8, 4, 1, 0, 6},
                                                           {16, 2, 4, 4, 1, 0, 0}, {128, 8, 4, 2, 2, 0, 7}})
    for (int64_t pw : {-1, 2, 1, 0}) {  // -1: absent (2 at 64 rows or more, 0 below)
      Config c = wgConfig(k[1], k[2], 1, k[3], k[4], k[6]);
      c.set("DC_WG", int64_t{2});
      c.set("DC_XR", k[5]);
      if (pw >= 0) c.set("DC_PW", pw);
      jobs.emplace_back(c, nt(k[0], 4096, 4096));
    }
  Config xa = wgConfig(8, 4, 1, 2, 2, 4, 2);
  xa.set("DC_WG", int64_t{2});
  jobs.emplace_back(xa, nt(64, 4096, 4096));
  compileEach(**cc, jobs, [](const Config& c, const std::string& ptx) -> std::string {
    const size_t box = ptx.find("cp.async.bulk.tensor");
    if (box == std::string::npos) return "PTX lacks the bulk tensor copies";
    const size_t wait = ptx.rfind("mbarrier.try_wait", box);
    if (wait == std::string::npos) return "no wait on a slot before the first box";
    const int64_t pw = c.getInt("DC_PF") == 1 ? c.getInt("DC_PW", c.getInt("DC_MT") >= 8 ? 2 : 0) : 0;
    const bool div = ptx.substr(wait, box - wait).find("div.") != std::string::npos;
    if (div != (pw == 0)) return div ? "a division in the producer's stage" : "no division with DC_PW = 0";
    const bool elect = ptx.find("elect.sync") != std::string::npos;
    return elect == (pw == 2) ? "" : elect ? "elect.sync without one converged producer warp" : "PTX lacks elect.sync";
  });
}

}  // namespace
}  // namespace ktune::gemm
