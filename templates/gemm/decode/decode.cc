// The decode (stream-K weight-streaming, M <= 128) GEMM's host side (decode.cuh beside it).
#include <algorithm>

#include "templates/gemm/kernel.h"

namespace ktune::gemm {

int64_t decodeABoxRows(int64_t m) {
  int64_t rows = 8;
  while (rows < 64 && rows < m) rows *= 2;
  return rows;
}

TensorMap2DDesc decodeAMap(const GemmShape& s, DevicePtr a) {
  TensorMap2DDesc t;
  t.base = a;
  t.elem_bytes = static_cast<int>(elemBytes(s.ab));
  t.rows = static_cast<uint64_t>(s.m);
  t.cols = static_cast<uint64_t>(s.k);
  t.row_stride_bytes = static_cast<uint64_t>(s.lda) * static_cast<uint64_t>(t.elem_bytes);
  t.box_rows = static_cast<uint32_t>(decodeABoxRows(s.m));
  t.box_cols = 64;
  t.swizzle_bytes = 128;
  return t;
}

TensorMap2DDesc decodeBMap(const GemmShape& s, DevicePtr b, uint32_t box_rows, int l2_promotion) {
  TensorMap2DDesc t = decodeAMap(s, b);
  t.rows = static_cast<uint64_t>(s.n);
  t.row_stride_bytes = static_cast<uint64_t>(s.ldb) * static_cast<uint64_t>(t.elem_bytes);
  t.box_rows = box_rows;
  t.l2_promotion_bytes = l2_promotion;
  return t;
}

TensorMap2DDesc decodePairMap(const GemmShape& s, DevicePtr b, int l2_promotion) {
  TensorMap2DDesc t = decodeBMap(s, b, 32, l2_promotion);
  t.rows = static_cast<uint64_t>(s.n / 2);
  t.planes = 2;
  t.plane_stride_bytes = t.rows * t.row_stride_bytes;
  t.box_planes = 2;
  return t;
}

TmaDescriptors decodeDescriptors(const GemmShape& s, DevicePtr a, DevicePtr b, int l2_promotion) {
  return {decodeAMap(s, a), decodeBMap(s, b, 64, l2_promotion),
          s.act == Activation::kSiluMul ? decodePairMap(s, b, l2_promotion)
                                        : decodeBMap(s, b, 32, l2_promotion)};
}

int decodeL2Promotion(const Config& c) { return static_cast<int>(c.getInt("DC_L2P", kDecodeL2Promotion)); }

namespace detail {
namespace {

using K = const Config&;

// Registers the kernel keeps live: DC_DEPTH fragments of 2*NT*U 16-byte weight loads (plus MT*U
// A loads with DC_XR), the accumulators, and one step of A loads without DC_XR. Calibrated on
// ptxas (sm_90a, dev/decode probe): every config at or under 232 compiles without spills (at 224:
// 238-254 registers), the ones at 256 and over spill at DC_MT=16.
int64_t registerEstimate(K c) {
  const int64_t nt = knob(c, "DC_NT"), mt = knob(c, "DC_MT"), u = knob(c, "DC_U");
  const int64_t x = 4 * mt * u;
  return knob(c, "DC_DEPTH") * (8 * nt * u + (knob(c, "DC_XR") ? x : 0)) +
         (knob(c, "DC_XR") ? 0 : x) + 4 * nt * mt;
}

bool wg(K c) { return knob(c, "DC_WG") == 1 || knob(c, "DC_WG") == 2; }
bool tmaFed(K c) { return knob(c, "DC_WG") == 2; }
// DC_WG = 3 (decode_fma.cuh): the CUDA-core FMA body, M <= 8; R = 2*DC_NT weight rows per warp.
bool fma(K c) { return knob(c, "DC_WG") == 3; }
// DC_GRID = 7 (decode_wg.cuh): a cluster of two blocks per tile, each over half the rows of A.
bool mSplit(K c) { return knob(c, "DC_GRID") == 7; }
// Its registers: the ring (DC_DEPTH stages, one more with DC_XR = 1, x R rows x DC_U 16-byte chunks, 4 each), the
// accumulators (R x DC_MT), the widened A chunks (8 per row of A and chunk, two chunks live) and 8
// for a widened weight chunk; and what its launch bounds leave a thread (DC_GRID blocks per SM, or
// 16 warps with DC_GRID = 0), less 24 for addresses and loop state. Calibrated on ptxas (sm_90a):
// the configs under the bound compile without spills.
int64_t fmaRegs(K c) {
  const int64_t nt = knob(c, "DC_NT"), mt = knob(c, "DC_MT"), u = knob(c, "DC_U");
  return (knob(c, "DC_DEPTH") + knob(c, "DC_XR")) * 8 * nt * u + 2 * nt * mt + 8 * mt * std::min<int64_t>(u, 2) + 8;
}
int64_t fmaRegBudget(K c) {
  const int64_t w = knob(c, "DC_WARPS"), g = knob(c, "DC_GRID");
  return std::min<int64_t>(255, 2048 / (w * (g ? g : 16 / w))) - 24;
}
// DC_CW (absent: 1; 2: the two consumer warpgroups split A's rows, not the tile's weight rows).
int64_t cw(K c) { return c.getInt("DC_CW", 1); }
// DC_WG = 1, 2 (decode_wg.cuh): weight rows per tile and shared-memory ring bytes (the same
// layout whether the ring is filled by cp.async or by TMA).
int64_t wgTileRows(K c) { return 64 * knob(c, "DC_NT") * (knob(c, "DC_WARPS") / 4) / cw(c); }
int64_t wgRingBytes(K c) {
  return 2 * knob(c, "DC_DEPTH") * (wgTileRows(c) + 8 * knob(c, "DC_MT")) * 128 * knob(c, "DC_U");
}

// DC_GRID = 4, 5, 7: blocks per cluster (one cluster per tile), 1 otherwise.
int64_t clusterBlocks(K c) {
  const int64_t g = knob(c, "DC_GRID");
  return g == 4 || g == 7 ? 2 : g == 5 ? 4 : 1;
}
// The sums a block of a cluster takes in (decode_wg_cluster.cuh): (blocks - 1) x consumer threads x
// DC_NT x its part of the 4*DC_MT/DC_CW accumulators: 1/blocks of them in the reduce-scatter
// (DC_MT/DC_CW >= blocks: every block owns 8*DC_MT/blocks rows of A), all of them in the first block otherwise.
// DC_XR bit 0 (the rows of C staged through the ring, store_staged): also the block's rows of A x
// (tile rows + 4) floats after them. (Bit 1, DC_XR = 3, moves the same sums.)
int64_t clusterReduceBytes(K c) {
  const int64_t cl = clusterBlocks(c), mt = knob(c, "DC_MT"), wmt = mt / cw(c);  // wgmma N / 8
  const int64_t part = wmt >= cl ? wmt / cl : wmt;  // a thread's accumulators / 4 taken in per peer
  const int64_t staged = (knob(c, "DC_XR") & 1) ? 8 * (wmt >= cl ? mt / cl : mt) * (wgTileRows(c) + 4) * 4 : 0;
  return (cl - 1) * 32 * knob(c, "DC_WARPS") * knob(c, "DC_NT") * 4 * part * 4 + staged;
}

// The knobs outside the enumerated space (probe knobs, and the curated DC_CW / DC_PP) and their rules.
void constrainProbeKnobs(ConfigSpace& s) {
  // DC_XH, DC_ST (probe knobs, not enumerated; decode_wg.cuh): the cluster K split's sums handed
  // over without a cluster barrier after the main loop; the start path cut (the tensor maps at entry,
  // no first-stage line prefetches, the first stages issued before the block barrier by one producer
  // warp on its old path). Curated as twins where they won (bench/NOTES.md). DC_XH from 64 rows
  // (DC_MT >= 8): one or two consumer warpgroups (DC_CW), not DC_PP.
  s.constrain("DC_XH 1 when present, with DC_WG 2, DC_GRID 4, DC_PF 1, and DC_MT <= 4, not DC_CW, or DC_MT >= 8, "
              "not DC_PP", [](K c) {
    const bool few = knob(c, "DC_MT") <= 4 && !c.has("DC_CW"), wide = knob(c, "DC_MT") >= 8 && !c.has("DC_PP");
    return !c.has("DC_XH") || (c.getInt("DC_XH", 0) == 1 && tmaFed(c) && knob(c, "DC_GRID") == 4 &&
                               knob(c, "DC_PF") == 1 && (few || wide));
  });
  // From 64 rows (DC_MT >= 8) DC_ST runs on the shipped warp-converged producer path (no DC_PW), DC_CW
  // too, not on the row-split pair (DC_GRID 7: the peer's barriers are ready only after the block's).
  s.constrain("DC_ST 1 when present, with DC_WG 2, DC_PF 1, and DC_MT <= 4, DC_PW 0, not DC_CW, or DC_MT >= 8, "
              "no DC_PW, DC_GRID != 7", [](K c) {
    const bool few = knob(c, "DC_MT") <= 4 && c.getInt("DC_PW", 0) == 0 && !c.has("DC_CW");
    const bool wide = knob(c, "DC_MT") >= 8 && !c.has("DC_PW") && knob(c, "DC_GRID") != 7;
    return !c.has("DC_ST") || (c.getInt("DC_ST", 0) == 1 && tmaFed(c) && knob(c, "DC_PF") == 1 && (few || wide));
  });
  // DC_EF = 1 (a probe knob, not enumerated; absent: 0; curated as twins): the weight boxes evict-first
  // in L2 (decode_tma.cuh), not on the row-split pair.
  s.constrain("DC_EF 1 when present, with DC_WG 2, not DC_GRID 7", [](K c) {
    return !c.has("DC_EF") || (c.getInt("DC_EF", 0) == 1 && tmaFed(c) && knob(c, "DC_GRID") != 7);
  });
  // DC_PW (a probe knob, not enumerated; absent: 2 for tiles of 64 rows or more, 0 below, the
  // shipped producer paths): the TMA producer's per-stage path with one producer warp
  // (decode_wg.cuh), 0: the elected thread alone dividing the unit index per stage (it bounded the
  // 64/128-row ring), 1: the tile and k step stepped, the elected thread alone, 2: the whole warp
  // in the loop, one elected lane issuing.
  s.constrain("DC_PW 0, 1 or 2 when present, with DC_WG 2 and DC_PF 1", [](K c) {
    const int64_t pw = c.getInt("DC_PW", 0);
    return !c.has("DC_PW") || (pw >= 0 && pw <= 2 && tmaFed(c) && knob(c, "DC_PF") == 1);
  });
  // DC_WP = 1 (a probe knob, not enumerated; absent: 0): the TMA-fed consumers keep one stage's
  // wgmmas in flight and release its slot a stage later (decode_wg.cuh).
  s.constrain("DC_WP 1 when present, with DC_WG 2", [](K c) {
    return !c.has("DC_WP") || (c.getInt("DC_WP", 0) == 1 && tmaFed(c));
  });
  // DC_L2P (a probe knob, not enumerated; absent: kDecodeL2Promotion): the weight maps' L2
  // promotion in bytes, so only the TMA-fed body's.
  s.constrain("DC_L2P one of 0, 128, 256 (absent: 128), and 128 unless DC_WG == 2", [](K c) {
    const int64_t l2 = decodeL2Promotion(c);
    return (l2 == 0 || l2 == 128 || l2 == 256) && (l2 == kDecodeL2Promotion || tmaFed(c));
  });
}

ConfigSpace buildSpace() {
  ConfigSpace s;
  s.addInts("DC_WG", {0, 1, 2, 3}, "cuda")
      .addInts("DC_WARPS", {4, 8}, "cuda")
      .addInts("DC_NT", {1, 2}, "cuda")
      .addInts("DC_MT", {1, 2, 4, 8, 16}, "cuda")
      .addInts("DC_U", {1, 2, 4, 8}, "cuda")
      .addInts("DC_DEPTH", {2, 4}, "cuda")
      .addInts("DC_PF", {0, 1, 2, 3}, "cuda")
      .addInts("DC_XR", {0, 1, 3}, "cuda")
      .addInts("DC_GRID", {0, 1, 2, 3, 4, 5, 6, 7}, "cuda")
      .addOptionalInts("DC_L2P", {0, 128, 256}, "cuda")
      .addOptionalInts("DC_WP", {1}, "cuda")
      .addOptionalInts("DC_PW", {0, 1, 2}, "cuda")
      .addOptionalInts("DC_CW", {2}, "cuda")
      .addOptionalInts("DC_PP", {1}, "cuda")
      .addOptionalInts("DC_XH", {1}, "cuda")
      .addOptionalInts("DC_ST", {1}, "cuda")
      .addOptionalInts("DC_EF", {1}, "cuda");
  // DC_CW = 2 (not enumerated; absent: 1; curated where it won): the TMA-fed body's two consumer
  // warpgroups on the same weight slabs, each over half of A's rows (wgmma N = 4*DC_MT, at least 8),
  // one producer warp; not with the row-split pair (DC_GRID 7: its blocks already split A's rows).
  s.constrain("DC_CW 2 when present, with DC_WG 2, DC_WARPS 8, DC_MT >= 2, DC_PF 1 and DC_GRID != 7", [](K c) {
    return !c.has("DC_CW") || (cw(c) == 2 && tmaFed(c) && knob(c, "DC_WARPS") == 8 && knob(c, "DC_MT") >= 2 &&
                               knob(c, "DC_PF") == 1 && knob(c, "DC_GRID") != 7);
  });
  constrainProbeKnobs(s);
  // Plain weight loads (DC_PF = 0): the FMA body's (decode_fma.cuh says why).
  s.constrain("DC_PF >= 1 || DC_WG == 3", [](K c) { return knob(c, "DC_PF") >= 1 || fma(c); });
  s.constrain("DC_WG >= 1 || register estimate DC_DEPTH*(8*DC_NT*DC_U + 4*DC_MT*DC_U*DC_XR) + "
              "4*DC_MT*DC_U*(1-DC_XR) + 4*DC_NT*DC_MT <= 232",
              [](K c) { return knob(c, "DC_WG") >= 1 || registerEstimate(c) <= 232; });
  // The FMA body: DC_MT rows of A (<= 8), DC_XR 0 or 1 (the ring refilled after or before a stage's
  // FMAs), grids 0..3 (one group per warp or
  // DC_GRID blocks per SM), at most 24 warps per SM for the persistent grids (its launch bounds
  // ask for DC_GRID blocks per SM), and its register estimate within what the bounds leave.
  s.constrain("DC_WG != 3 || (DC_MT <= 8 && DC_GRID <= 3 && DC_WARPS*DC_GRID <= 24 && "
              "(DC_DEPTH+DC_XR)*8*DC_NT*DC_U + 2*DC_NT*DC_MT + 8*DC_MT*min(DC_U,2) + 8 <= "
              "min(255, 2048/(DC_WARPS*blocks per SM)) - 24)",
              [](K c) {
                return !fma(c) || (knob(c, "DC_MT") <= 8 && knob(c, "DC_GRID") <= 3 &&
                                   knob(c, "DC_WARPS") * knob(c, "DC_GRID") <= 24 &&
                                   fmaRegs(c) <= fmaRegBudget(c));
              });
  // The register ring's DC_XR (DC_WG = 0, 3) is 0 or 1.
  s.constrain("DC_WG == 1 || DC_WG == 2 || DC_XR <= 1", [](K c) { return wg(c) || knob(c, "DC_XR") <= 1; });
  // The wgmma body has no register ring and reads DC_PF as its producer width (1: a warp, 2: a
  // warpgroup). DC_XR = 0 there, except for the cluster K split (DC_WG = 2, DC_GRID = 4, 5), where
  // DC_XR = 1 stages C through the ring and stores it in 16-byte vectors, and 3 also hands the
  // reduce-scatter's sums over counted on the receiver's barrier (decode_wg_cluster.cuh): only
  // where the reduce-scatter runs (DC_MT >= blocks; under it 3 would be 1 again).
  s.constrain("DC_WG == 0 || DC_WG == 3 || ((DC_XR == 0 || (DC_WG == 2 && (DC_GRID == 4 || DC_GRID == 5))) "
              "&& DC_PF >= 1)",
              [](K c) {
                const int64_t g = knob(c, "DC_GRID");
                return !wg(c) || ((knob(c, "DC_XR") == 0 || (tmaFed(c) && (g == 4 || g == 5))) &&
                                  knob(c, "DC_PF") >= 1);
              });
  // DC_PP = 1 (not enumerated; absent: 0): DC_CW = 2's warpgroups on alternate stages, each over all
  // of A's rows (its loop holds 4*DC_MT accumulators a slab, as one warpgroup does), the sums traded
  // after the loop; the cluster K split only (no flush inside the loop), not with DC_WP.
  s.constrain("DC_PP 1 when present, with DC_CW 2, DC_GRID 4 or 5, DC_NT * DC_MT <= 16, no DC_WP", [](K c) {
    const int64_t g = knob(c, "DC_GRID");
    return !c.has("DC_PP") || (c.getInt("DC_PP", 0) == 1 && cw(c) == 2 && (g == 4 || g == 5) &&
                               knob(c, "DC_NT") * knob(c, "DC_MT") <= 16 && !c.has("DC_WP"));
  });
  s.constrain("DC_XR != 3 || DC_MT / DC_CW >= cluster blocks",
              [](K c) { return knob(c, "DC_XR") != 3 || knob(c, "DC_MT") / cw(c) >= clusterBlocks(c); });
  // The TMA-fed body (DC_WG = 2): DC_PF = 1, one producer warp (an elected thread issues every
  // box); DC_PF = 2, a producer warpgroup copying A's rows by cp.async beside the elected thread's
  // weight boxes (A's bytes bypass the TMA unit), not with the row-split pair (DC_GRID = 7).
  s.constrain("DC_WG != 2 || DC_PF == 1 || DC_GRID != 7",
              [](K c) { return !tmaFed(c) || knob(c, "DC_PF") == 1 || knob(c, "DC_GRID") != 7; });
  // DC_PF = 3 (TMA-fed only): a producer warpgroup issuing every box as DC_PF = 1 does, which hands
  // its registers to two consumer warpgroups (setmaxnreg), for their 128 accumulators (below); on
  // the cluster K split (DC_GRID = 4, 5), where each block stores a share of the rows: with 128
  // accumulators the whole-tile epilogue of the other grids spills under ptxas (sm_90a).
  s.constrain("DC_PF != 3 || (DC_WG == 2 && DC_WARPS == 8 && (DC_GRID == 4 || DC_GRID == 5))",
              [](K c) {
                const int64_t g = knob(c, "DC_GRID");
                return knob(c, "DC_PF") != 3 ||
                       (tmaFed(c) && knob(c, "DC_WARPS") == 8 && (g == 4 || g == 5));
              });
  // 1 KB of each weight row per stage: the TMA-fed body only (the probe measured longer runs per
  // row faster; the cp.async producer's pass must cover whole rows).
  s.constrain("DC_U < 8 || DC_WG == 2", [](K c) { return knob(c, "DC_U") < 8 || tmaFed(c); });
  // DC_GRID = 4, 5: K split over a cluster of 2 or 4 blocks per tile, reduced in the first block's
  // ring (the TMA-fed body only): the ring must hold the other blocks' sums.
  // DC_GRID = 6: persistent, whole tiles per block (the TMA-fed body only; no reduction).
  // DC_GRID = 7: a pair per tile splitting the A rows, 64 each (DC_MT = 8; no reduction).
  s.constrain("DC_GRID < 4 || (DC_WG == 2 && (DC_GRID >= 6 || ring bytes >= cluster reduce bytes))",
              [](K c) {
                return knob(c, "DC_GRID") < 4 ||
                       (tmaFed(c) && (knob(c, "DC_GRID") >= 6 || wgRingBytes(c) >= clusterReduceBytes(c)));
              });
  s.constrain("DC_GRID != 7 || DC_MT == 8", [](K c) { return knob(c, "DC_GRID") != 7 || knob(c, "DC_MT") == 8; });
  // Accumulators: 4*DC_MT/DC_CW floats per 64-row slab and thread; 128 of them (two slabs at the widest
  // tier) spill under ptxas (sm_90a) within the launch's 168 registers a thread, 64 do not; with
  // DC_PF = 3 the consumers get 232 (setmaxnreg) and hold 128.
  s.constrain("DC_WG == 0 || DC_WG == 3 || DC_NT * DC_MT / DC_CW <= (DC_PF == 3 ? 32 : 16)", [](K c) {
    return !wg(c) || knob(c, "DC_NT") * knob(c, "DC_MT") / cw(c) <= (knob(c, "DC_PF") == 3 ? 32 : 16);
  });
  // Three slabs a tile (192-row tiles, pinned only) were 1.27-1.52x slower than the picks at
  // 32/64 x 6144 x 4096 (bench/NOTES.md, issue 32); the gate/up layouts hold one or two slabs.
  s.constrain("DC_NT 1 or 2 with DC_WG 2", [](K c) { return !tmaFed(c) || knob(c, "DC_NT") <= 2; });

  s.sharedBytes([](K c) { return decodeKernel().shared_bytes(c); });
  return s;
}

// The warps' sums of one tile: [DC_WARPS][16*DC_NT][8*DC_MT + 1] floats; DC_WG = 1: the ring,
// 1024 bytes to align it for the swizzle, two mbarriers per stage and the last-block flag; DC_WG = 2
// also the gate/up hand-over (half the consumer threads x 4*DC_MT floats) and with DC_XH the
// peer's sums (xh_reduce: a thread's part of them, 4*DC_MT/DC_CW/2 floats, all 4*DC_MT at DC_MT = 1;
// from DC_MT = 8 in the gate/up hand-over's region: the larger of the two).
int64_t sharedBytes(K c) {
  if (fma(c)) return 0;  // registers and warp shuffles only
  const int64_t mt = knob(c, "DC_MT");
  const int64_t xh_floats = 4 * (mt >= 2 ? mt / 2 : mt) / (mt >= 8 ? cw(c) : 1);  // a thread's, per slab
  const int64_t xh = c.has("DC_XH") ? 32 * knob(c, "DC_WARPS") * knob(c, "DC_NT") * xh_floats * 4 : 0;
  const int64_t gu = tmaFed(c) ? 16 * knob(c, "DC_WARPS") * 4 * mt * 4 : 0;
  if (wg(c))
    return wgRingBytes(c) + 1024 + 16 * 2 * knob(c, "DC_DEPTH") + 16 + (mt >= 8 ? std::max(gu, xh) : gu + xh);
  return knob(c, "DC_WARPS") * 16 * knob(c, "DC_NT") * (8 * knob(c, "DC_MT") + 1) * 4;
}

Status applicable(K c, const GemmShape& s) {
  if (s.layout != Layout::kNT)
    return Status::Unsupported("decode GEMM handles layout NT only (B stored [N][K]), got " +
                               std::string(layoutName(s.layout)));
  if (!fastPathOk(s) || s.k % 8 != 0)
    return Status::Unsupported(
        "decode GEMM needs 16-byte aligned A/B, lda % 8 == 0, ldb % 8 == 0 and K % 8 == 0");
  // Only the smallest tier that covers M: a larger one computes the same result with idle mma
  // columns, and tuning it would only cost time.
  // The FMA body (DC_WG = 3) counts rows of A (DC_MT >= M), the others 8-row tiles.
  // DC_GRID = 7 splits the rows over a pair: its tier covers ceil(M/2).
  const int64_t unit = fma(c) ? 1 : 8, rows = mSplit(c) ? (s.m + 1) / 2 : s.m;
  int64_t tier = 1;
  while (tier < 16 && unit * tier < rows) tier *= 2;
  // The gate/up hand-over of a one-slab warpgroup (decode_wg.cuh, kHalves) on top of 64
  // accumulators spills under ptxas (sm_90a) at 288 threads' register budget; at 160 it does not.
  if (tmaFed(c) && s.act == Activation::kSiluMul && knob(c, "DC_NT") == 1 &&
      knob(c, "DC_WARPS") == 8 && knob(c, "DC_MT") == 16 && cw(c) == 1)
    return Status::Unsupported("decode GEMM with DC_WG=2, silu_mul, DC_NT=1 and DC_MT=16 needs "
                               "DC_WARPS=4 (with 8 the gate/up epilogue spills registers)");
  // DC_XR = 1 stages the epilogue's rows (the gate/up pair's too: store_staged in
  // decode_wg_epi.cuh); DC_XR = 3 (decode_wg_cluster.cuh): 1 plus the counted hand-over.
  // Its A boxes are the shape's (decodeABoxRows: 64 rows from M = 33 on) and must be a block's rows.
  if (mSplit(c) && (s.m <= 64 || s.m > 128))
    return Status::Unsupported("decode GEMM with DC_GRID=7 (A rows split over a pair) covers 65 <= M "
                               "<= 128, got M=" + std::to_string(s.m));
  if (fma(c) && s.m > 8)
    return Status::Unsupported("decode GEMM with DC_WG=3 (CUDA-core FMA) covers M <= 8, got M=" +
                               std::to_string(s.m));
  if (fma(c) && knob(c, "DC_MT") != tier)
    return Status::Unsupported("decode GEMM with DC_WG=3 needs DC_MT the smallest power of two >= M (" +
                               std::to_string(tier) + " for M=" + std::to_string(s.m) + "), got DC_MT=" +
                               std::to_string(knob(c, "DC_MT")));
  if (s.m > 128 || knob(c, "DC_MT") != tier)
    return Status::Unsupported("decode GEMM covers M <= 128 with DC_MT the smallest power of two >= " +
                               std::string(mSplit(c) ? "ceil(M/16)" : "ceil(M/8)") + " (" + std::to_string(tier) + " for M=" +
                               std::to_string(s.m) + "), got DC_MT=" +
                               std::to_string(knob(c, "DC_MT")));
  return Status::Ok();
}

// A persistent grid of DC_GRID blocks per SM (never more blocks than (tile, block step) units);
// DC_GRID = 0: one block per tile, all of K (no range cuts a tile, so no block reduces through the
// workspace: the probe measured that reduction chain as stream-K's cost at 4096x4096, see
// bench/NOTES.md). The M x N fp32 workspace and one counter per tile of 16*DC_NT rows, zero between
// calls.
// DC_WG = 1, 2: tiles of 64*DC_NT*DC_WARPS/4 rows, units of 64*DC_U k, DC_WARPS consumer warps + the
// producer warp (DC_WG = 1 with DC_PF = 2: warpgroup), sm_90a only; DC_GRID = 4, 5: a cluster of
// 2 or 4 blocks per tile splitting its K, reduced in distributed shared memory (no workspace);
// DC_GRID = 6: persistent, min(tiles, SMs) blocks each streaming a contiguous range of whole tiles;
// DC_GRID = 7: a pair per tile splitting the rows of A, each over all of K (no workspace).
// A grid whose ranges cut no tile (DC_GRID = 0, 6, or one unit per tile) needs neither workspace
// nor counters.
Status plan(K c, const GemmShape& s, const DeviceInfo& dev, LaunchPlan& p) {
  if (wg(c) && dev.arch != "sm_90a")
    return Status::Unsupported("decode GEMM with DC_WG=1 or 2 (wgmma) needs arch sm_90a, device is " +
                               dev.arch);
  const int64_t warps = knob(c, "DC_WARPS"), nt = knob(c, "DC_NT");
  if (fma(c)) {  // groups of 2*DC_NT rows (silu_mul: DC_NT columns), whole K per group
    const int64_t groups = s.act == Activation::kSiluMul ? ceilDiv(s.n / 2, nt) : ceilDiv(s.n, 2 * nt);
    const int64_t blocks = ceilDiv(groups, warps), g = knob(c, "DC_GRID");
    const int64_t grid = g == 0 ? blocks : std::min(blocks, std::max(1, dev.multiprocessors) * g);
    p.grid = Dim3{static_cast<unsigned>(grid), 1u, 1u};
    p.block = Dim3{static_cast<unsigned>(32 * warps), 1u, 1u};
    return Status::Ok();
  }
  const int64_t rows = wg(c) ? wgTileRows(c) : 16 * nt;
  const int64_t tiles = ceilDiv(s.n, rows);
  const int64_t steps = wg(c) ? ceilDiv(s.k, 64 * knob(c, "DC_U"))
                              : ceilDiv(s.k, 32 * knob(c, "DC_U") * warps);
  const int64_t units = tiles * steps;
  const int64_t sms = std::max(1, dev.multiprocessors);
  const int64_t g = knob(c, "DC_GRID");
  const int64_t grid = g == 0   ? tiles
                       : g == 6 ? std::min(tiles, sms)
                       : g >= 4 ? tiles * clusterBlocks(c)
                                : std::min(units, sms * g);
  p.grid = Dim3{static_cast<unsigned>(grid), 1u, 1u};
  const int64_t producers = !wg(c) ? 0 : knob(c, "DC_PF") >= 2 ? 128 : 32;
  p.block = Dim3{static_cast<unsigned>(32 * warps + producers), 1u, 1u};
  if (g < 4 && steps > 1 && tiles % grid != 0) {  // else every range is whole tiles (grid divides tiles)
    p.counters = tiles;
    p.workspace_bytes = s.m * s.n * 4;
  }
  return Status::Ok();
}

}  // namespace

const KernelDesc& decodeKernel() {
  static const KernelDesc d{KernelKind::kDecode, "decode", "gemm/decode/decode.cuh",
                            "ktune_gemm_decode", "cuda", false, buildSpace, sharedBytes,
                            applicable, nullptr, plan};
  return d;
}

}  // namespace detail

bool decodeTakesTensorMaps(KernelKind k, const Config& c) {
  return k == KernelKind::kDecode && c.getInt("DC_WG", 0) == 2;
}

}  // namespace ktune::gemm
