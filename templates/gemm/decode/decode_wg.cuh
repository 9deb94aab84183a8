// The decode GEMM's warpgroup-MMA body (DC_WG = 1, sm_90a; part of decode.cuh, after its shared
// helpers). Swap AB on wgmma: C^T = B * A^T, so the weight rows fill wgmma's 64-row side and the
// M <= 128 rows of A are its N (8*DC_MT), both operands K-major from shared memory with the
// 128-byte swizzle (16-byte chunk c of row r at chunk c ^ (r % 8) in each 1024-byte group of 8
// rows; one descriptor per 64-row slab, the k16 steps advance it by 32 bytes).
//
// Warp roles: DC_WARPS/4 consumer warpgroups, each owning DC_NT slabs of 64 weight rows of the
// tile (a tile: 64*DC_NT*DC_WARPS/4 rows), and a producer warp (DC_PF = 2: a warpgroup) that
// streams every (tile, k step) unit of the block's range through a ring of 2*DC_DEPTH shared-memory
// stages: per stage the tile's weight rows x 64*DC_U k and the A rows x the same k (A is re-read from L2 by every tile; the
// weight bytes come from DRAM once). The producer writes with cp.async (16-byte, zero-filled past
// N, M and K: no tensor map, so the launch needs nothing beyond the common arguments) and keeps
// 2*DC_DEPTH - 1 stages in flight: after issuing stage s it waits for its copies of stage
// s - (2*DC_DEPTH - 1), fences them into the async proxy (wgmma reads shared memory through it)
// and arrives on that stage's `full` barrier; consumers wait on `full`, run the stage's wgmmas to
// completion and arrive on `empty`, which the producer waits on before it refills the slot.
// The block's range of units is cut as in the mma.sync body (stream-K over gridDim.x blocks, or
// DC_GRID = 0: one block per tile, all of K); a run that covers a whole tile stores straight from
// the accumulators, a cut one adds into the workspace and the block that completes the tile's
// counter stores (the same last-block protocol, among the consumer threads only: named barrier 1).
//
// DC_WG = 2 feeds the same ring by TMA instead (sm_90a; the launch passes tensor maps, see
// gemm::decodeAMap / decodeBMap): one elected producer thread posts each stage's byte count on
// its `full` barrier (expect_tx) and issues one cp.async.bulk.tensor per weight box (64 rows x 64
// k; with silu_mul and one slab per warpgroup 32 rows: gate rows, then the up rows of the same
// columns, see kHalves) and per A box (min(8*DC_MT, 64) rows x 64 k). The copies complete the barrier themselves (zero-filled
// past N, M and K), so the producer never waits for its own copies and every stage of the ring
// can be in flight; it issues a few instructions per 8 KB where the cp.async producer issued one
// warp instruction per 512 bytes plus its address arithmetic.
// With DC_PF = 2 the producer is a warpgroup: the elected thread issues the weight boxes and every
// producer thread copies a share of each stage's A rows by cp.async, its arrival on `full` made by
// the copies' completion (cp.async.mbarrier.arrive.noinc; each consumer thread fences the proxy
// after its wait), so A's bytes (two thirds of a block's at 128 rows) do not go through the TMA
// unit (bench/NOTES.md).
//
// DC_GRID = 4, 5 (TMA-fed only): one cluster of 2 or 4 blocks per tile, each streaming its part
// of K; the partial sums meet in the first block's ring over distributed shared memory (two
// cluster barriers), so no block goes through the global workspace and its chain of dependent L2
// round trips (the probe measured stream-K's reduction at ~20% of a 4096x4096 call).
//
// DC_GRID = 6 (TMA-fed only): persistent, one block per SM (at most one per tile), each streaming a
// contiguous range of whole tiles through its ring without draining it between tiles: no split of
// K (no reduction), one prologue per SM instead of one per tile, and no gap between a block's end
// and the next block's first copy where N makes several waves of tiles (28672 rows: 448 tiles of
// 64 on 132 SMs).
//
// DC_GRID = 7 (TMA-fed only, 65..128 rows of A with DC_MT = 8): a cluster of two blocks per tile
// splitting the A rows (64 each) instead of K, each over all of K: no reduction, half the
// accumulators and half the epilogue per block, and the weight tile multicast to both (each block
// issues half its boxes), so L2 serves each weight byte once (decode_tma.cuh). On the plain GEMM
// at 128 rows 1.3x the K split: each block's ring still takes in the whole weight tile (1 MB per
// block where the K split's take 768 KB) and the ring's fill rate per SM (~48 GB/s, the same in
// every grid) is the bound there; with 128-row tiles the fastest gate/up at N = 6144 and 14336
// (fewer blocks than the K split's: one wave or two instead of two or four; bench/NOTES.md).
//
// Knobs here: DC_WARPS (4, 8: consumer warpgroups), DC_NT (64-row slabs per warpgroup), DC_MT
// (A rows / 8: the wgmma N, or twice it with DC_CW = 2: the warpgroups split A's rows, kCW), DC_U (k per stage / 64; 8 with TMA only), DC_DEPTH (stages / 2), DC_GRID, DC_PF
// (1: one producer warp, 2: a producer warpgroup; with TMA: A by its cp.async; 3, TMA only: a
// producer warpgroup giving its registers to two consumer warpgroups, kRegSplit); DC_XR (0; 1 on the
// cluster K split: C staged through the ring, decode_wg_cluster.cuh; 3: also the counted hand-over). Dynamic shared memory: 2*DC_DEPTH * (tile rows + 8*DC_MT) * 128*DC_U bytes +
// 1024 (alignment) + the barriers (16 bytes per stage + 16); DC_WG = 2 also the gate/up hand-over,
// 16*DC_WARPS * 4*DC_MT floats. DC_TRACE (decode_wg_trace.cuh; not a knob, 0 in every shipped
// kernel): a probe build's per-phase trace of the TMA-fed body.
#define DC_TMA (DC_WG == 2)
#define DC_CLUSTER (DC_TMA && (DC_GRID == 4 || DC_GRID == 5))
#define DC_MSPLIT (DC_TMA && DC_GRID == 7)  // a pair per tile splitting A's rows (decode_tma.cuh)
#ifndef DC_WP
#define DC_WP 0
#endif
#ifndef DC_PW
#define DC_PW (DC_MT >= 8 ? 2 : 0)
#endif
// DC_CW = 2 (TMA-fed, two consumer warpgroups): both warpgroups on the same weight slabs, each over
// half of A's rows (wgmma N = 4*DC_MT each; DC_WMT: the warpgroup's N / 8).
#if DC_TMA && defined(DC_CW) && DC_CW == 2
#define DC_WMT (DC_MT / 2)
#else
#define DC_WMT DC_MT
#endif
#ifndef DC_PP
#define DC_PP 0
#endif
#ifndef DC_XH  // probe knobs of the few-row paths (kXH, kST below)
#define DC_XH 0
#endif
#ifndef DC_ST
#define DC_ST 0
#endif
namespace kd {

constexpr int kCWarps = DC_WARPS;                 // consumer warps
constexpr int kConsumers = 32 * kCWarps;          // consumer threads
constexpr int kProducers = DC_PF >= 2 ? 128 : 32;  // a warp or a warpgroup
// DC_TMA with DC_PF = 3: a producer warpgroup whose elected thread issues every box (as DC_PF = 1)
// and which hands its registers to the consumers (setmaxnreg: 40 each, the consumers 232), so two
// consumer warpgroups hold 128 accumulators each (DC_NT * DC_MT = 32: 256-row tiles at 128 rows).
constexpr bool kRegSplit = DC_TMA && DC_PF == 3;
static_assert(!kRegSplit || kCWarps == 8, "DC_PF = 3 (setmaxnreg) needs two consumer warpgroups");
// DC_TMA with DC_PF = 2: A's rows by cp.async from the producer warpgroup beside the weight boxes
// (its elected thread's TMA), so A's bytes bypass the TMA unit (produce_x).
constexpr bool kXA = DC_TMA && DC_PF == 2;
// DC_WP = 1 (TMA-fed): the consumers keep a stage's wgmmas in flight while they wait for the next
// stage and issue its wgmmas (wgmma_wait<1>), releasing a slot one stage later, where DC_WP = 0
// drains each stage's wgmmas (wgmma_wait<0>) before the next wait: at 64..128 rows a stage's
// drain and wait cost ~0.25 us each beside its wgmmas (bench/NOTES.md, issue 32).
constexpr bool kWP = DC_TMA && DC_WP == 1;
// DC_PP = 1 (with DC_CW = 2, the cluster K split): the two consumer warpgroups take alternate stages,
// each over all of A's rows (wgmma n = 8*DC_MT), so one's wait, release and loop run beside the
// other's wgmmas; after the loop they trade halves of their sums through the idle ring into
// DC_CW = 2's layout (consume_pp). One warpgroup's warps release a slot.
constexpr bool kPP = DC_TMA && DC_PP == 1;
// The TMA producer's per-stage path with one producer warp (DC_PF = 1; DC_PW, absent: 2 for tiles of
// 64 rows or more, 0 below): 2, the whole warp runs the loop (its values warp-uniform) and one
// elected lane issues each stage's boxes, the unit's tile and k step stepped, not divided; 0, the
// elected thread alone dividing per stage (1: stepped). Path 0 bounded the 64/128-row ring (~0.5 us
// of serial work a stage, the ring two stages deep: bench/NOTES.md's stage trace), while at 16 rows
// path 2 was level or slower (the 16x6144x4096 cluster split ~3%). DC_PF = 2, 3: path 0.
constexpr int kPW = DC_TMA && DC_PF == 1 ? DC_PW : 0;
// DC_XH = 1 (the cluster K split of 2): the partial sums handed over into a region of their own
// (xh_reduce, decode_wg_cluster.cuh), so no cluster barrier after the main loop; from 64 A rows
// (DC_MT >= 8, one or two consumer warpgroups, not DC_PP) that region is the gate/up hand-over's,
// read before the epilogue writes it (the ring's 4 stages and both regions would not fit). DC_ST = 1
// (TMA-fed, <= 32 rows): the start path cut: the tensor maps prefetched at entry, no L2 line
// prefetches of the first stage, and the producer's elected thread initialises the barriers and
// issues the first stages before the block barrier (produce_first; bench/NOTES.md, issue 32).
constexpr bool kXH = DC_CLUSTER && DC_XH == 1;
constexpr int kST = DC_TMA ? DC_ST : 0;
static_assert(!kXH || (DC_GRID == 4 && DC_PF == 1 && !kPP), "DC_XH: DC_GRID 4, DC_PF 1, not DC_PP");
static_assert(kST == 0 || (DC_ST == 1 && DC_PF == 1 && (DC_MT <= 4 ? kPW == 0 : kPW == 2 && !DC_MSPLIT)),
              "DC_ST: 1, DC_PF 1, DC_MT <= 4 with DC_PW 0 or DC_MT >= 8 with DC_PW 2, not DC_GRID 7");
constexpr int kThreads = kConsumers + kProducers;
constexpr int kNT = DC_NT;                        // 64-row slabs per warpgroup
// DC_CW = 2: the consumer warpgroups split a stage's A rows (each wgmma n = kWM on the same weight
// slabs) instead of the tile's weight rows. Warpgroup g's wgmma column group j (8 A rows) is A
// row group j*kCW + g: its B descriptor starts at group g, the groups 1024*kCW bytes apart (x_desc),
// so a cluster's reduce-scatter part (accumulator groups) is still a contiguous run of A rows.
constexpr int kCW = DC_MT / DC_WMT;
static_assert(kCW == 1 || (kCWarps == 8 && DC_MT >= 2 && !DC_MSPLIT), "DC_CW = 2: DC_WARPS 8, DC_MT >= 2, not DC_GRID 7");
static_assert(kCW == 1 || DC_MT >= 8 || (!kXH && kST == 0), "DC_CW = 2: not with DC_XH nor DC_ST under 64 rows");
constexpr int kBN = 64 * kNT * (kCWarps / 4) / kCW;  // weight rows per tile
constexpr int kBM = 8 * DC_MT;                    // A rows per tile (a stage's A box rows)
constexpr int kWM = kBM / kCW;                    // wgmma N: A rows per warpgroup
constexpr int kU = DC_U, kBK = 64 * kU;           // k per stage (unit)
constexpr int kStages = 2 * DC_DEPTH;
constexpr int kWBytes = kBN * kBK * 2, kXBytes = kBM * kBK * 2;
constexpr int kStageBytes = kWBytes + kXBytes;    // a multiple of 1024: swizzle groups stay aligned
constexpr int kAcc = kWM / 2;                     // fp32 accumulators per thread per slab
static_assert(kCWarps == 4 || kCWarps == 8, "DC_WARPS must be 4 or 8 with DC_WG");
static_assert(kBM == 8 || kBM == 16 || kBM == 32 || kBM == 64 || kBM == 128, "DC_MT: 1..16");
static_assert(kStageBytes % 1024 == 0, "stage size must keep the 1024-byte swizzle alignment");
// DC_TMA: rows of an A box and of a weight box (gemm::decodeABoxRows / decodeBMap).
// With silu_mul and two slabs per warpgroup the slabs pair up as (64 gate rows, the 64 up rows of
// the same columns): whole 64-row boxes, and gate and up of a column meet in one thread
// (kPairs); with one slab per warpgroup the slab's rows 0-31 are gate rows and 32-63 the up rows
// of the same 32 columns (kHalves: 32-row boxes; the epilogue hands the up sums to the gate rows'
// threads through shared memory).
constexpr bool kPairs = DC_TMA && ACT == 3 && kNT == 2, kHalves = DC_TMA && ACT == 3 && kNT == 1;
// kHalves loads a slab's 64 rows as one box of the pair's 3-D map (kPairBox: gemm::decodePairMap,
// the kernel's third weight map with silu_mul), which lands them in this layout and swizzle.
// DC_MSPLIT without silu_mul: 32-row weight boxes, an even count per stage to share out between
// the pair (with silu_mul 64-row boxes: the third map is the pair's).
constexpr bool kPairBox = kHalves;
constexpr int kXBox = kBM < 64 ? kBM : 64, kWBox = DC_MSPLIT && ACT != 3 ? 32 : 64;
constexpr int kEmptyArrivals = (DC_MSPLIT ? 2 : 1) * kCWarps / (kPP ? 2 : 1);  // consumer warps releasing a slot
static_assert(!kPP || (kCW == 2 && DC_CLUSTER && !kWP), "DC_PP = 1: DC_CW 2 on the cluster K split, no DC_WP");

using ktune::smem_addr;
using ktune::make_desc_addr;

// The sm_90 primitives (mbarriers, cluster barriers and ranks, TMA loads, setmaxnreg) the tma kind
// shares: templates/gemm/hopper.cuh.
#include "gemm_hopper.cuh"
#include "decode_tma.cuh"
#include "decode_wg_trace.cuh"
KTUNE_DEVICE void consumers_sync() { asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumers) : "memory"); }

// 16 bytes global -> shared, zero-filled beyond `bytes` (0 or 16 here).
KTUNE_DEVICE void cp16(unsigned dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
}

#include "decode_wg_mma.cuh"

#include "decode_wg_produce.cuh"

// The weight row behind row n of the tile at row0, or -1 (past N; with silu_mul a column past N/2).
KTUNE_DEVICE int tile_row(const Prob& p, int row0, int n) {
  if (kHalves) {
    const int j = row0 / 2 + (n >> 6) * 32 + (n & 31);
    return j < p.half ? j + ((n >> 5) & 1) * p.half : -1;
  }
  if (!kPairs) return weight_row(p, row0, n);
  const int j = row0 / 2 + (n >> 7) * 64 + (n & 63);
  return j < p.half ? j + ((n >> 6) & 1) * p.half : -1;
}

// Calls f(v, n, m) for accumulator v of slab t: n the tile row (weight row via weight_row), m the
// A row. Accumulator j*4 + e: row warp*16 + lane/4 + (e/2)*8 of the slab, column j*8 + 2*(lane%4)
// + e%2 of the warpgroup's wgmma N (A row acc_row(j) + 2*(lane%4) + e%2).
template <class F>
KTUNE_DEVICE void for_each_acc(float (&acc)[kNT][kAcc], int ctid, F f) {
  const int warp = (ctid >> 5) & 3, lane = ctid & 31;
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int j = 0; j < kWM / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        f(acc[t][j * 4 + e], (wg_slab(ctid) + t) * 64 + warp * 16 + (lane >> 2) + (e >> 1) * 8,
          acc_row(j, ctid) + (lane & 3) * 2 + (e & 1));
}

#include "decode_wg_epi.cuh"

// End of the block's run of `steps` units over the tile at row0 (uniform over the consumers):
// store, or add into the workspace and let the block that completes the tile's count store.
// Leaves acc zero. `flag`: one shared word.
KTUNE_DEVICE void flush(const Prob& p, float (&acc)[kNT][kAcc], int row0, int steps, int ctid,
                        volatile unsigned* flag) {
  const bool whole = steps == p.nsteps;
  if (!whole) {
    for_each_acc(acc, ctid, [&](float& v, int n, int m) {
      const int row = tile_row(p, row0, n);
      if (row >= 0 && m < p.M) atomicAdd(p.ws + (long)m * p.N + row, v);
    });
    __threadfence();
    consumers_sync();
    if (ctid == 0) {
      unsigned* cnt = p.counters + row0 / kBN;
      const unsigned last = atomicAdd(cnt, (unsigned)steps) + (unsigned)steps == (unsigned)p.nsteps;
      if (last) *cnt = 0u;
      *flag = last ? 1u : 0u;
    }
    consumers_sync();
    const bool last = *flag != 0u;
    if (last) {
      __threadfence();
      for_each_acc(acc, ctid, [&](float& v, int n, int m) {
        const int row = tile_row(p, row0, n);
        if (row < 0 || m >= p.M) return;
        float* w = p.ws + (long)m * p.N + row;
        v = ld_cg(w);
        st_cg(w, 0.0f);
      });
    }
    // The next flush's first barrier orders every consumer's read of `flag` before its rewrite.
    if (!last) {
      for_each_acc(acc, ctid, [](float& v, int, int) { v = 0.0f; });
      return;
    }
  }
  store_acc(p, acc, row0, ctid, flag);
}

#include "decode_wg_cluster.cuh"

// Pins the accumulators' registers here (CUTLASS's warpgroup_fence_operand): with DC_WP the zeroing
// before the main loop would otherwise be sunk onto the path around it, beside the last wgmmas'
// wait, and ptxas then serialises every wgmma (C7518).
KTUNE_DEVICE void acc_fence(float (&acc)[kNT][kAcc]) {
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int a = 0; a < kAcc; ++a) asm volatile("" : "+f"(acc[t][a])::"memory");
}

// A consumer warp's release of ring slot `slot` once its wgmmas on it completed (lane 0 arrives on
// `empty`; the row-split pair also on the peer's, whose multicast writes the slot too), if `go`.
// Predicated arrivals, no branch: with DC_WP a stage's wgmmas are in flight here, and a divergent
// path makes ptxas serialise them (C7518).
KTUNE_DEVICE void release_slot(unsigned empty, int slot, int tid, [[maybe_unused]] unsigned rank, bool go = true) {
  __syncwarp();
  if constexpr (!kWP) {  // the stage's wgmmas are done: a branch is free
    if ((tid & 31) == 0) mbar_arrive(empty + 8 * slot);
#if DC_MSPLIT
    if ((tid & 31) == 0) mbar_arrive_cluster(map_to_rank(empty + 8 * slot, rank ^ 1u));
#endif
    return;
  }
  const unsigned on = go && (tid & 31) == 0;
  asm volatile("{\n.reg .pred p;\nsetp.ne.u32 p, %1, 0;\n@p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n"
               ::"r"(empty + 8 * slot), "r"(on) : "memory");
#if DC_MSPLIT
  asm volatile("{\n.reg .pred p;\nsetp.ne.u32 p, %1, 0;\n@p mbarrier.arrive.shared::cluster.b64 _, [%0];\n}\n"
               ::"r"(map_to_rank(empty + 8 * slot, rank ^ 1u)), "r"(on) : "memory");
#endif
}

// After a stage's wgmmas were committed on ring slot `slot`: DC_WP = 0 waits for them and releases
// the slot; DC_WP = 1 waits for the previous stage's only (this one's run on) and releases that
// slot (`held`: the slot still in use, -1 for none), the arrival predicated (release_slot).
KTUNE_DEVICE void stage_issued(unsigned empty, int slot, int& held, int tid, unsigned rank) {
  if constexpr (kWP) {
    ktune::wgmma_wait<1>();
    release_slot(empty, held < 0 ? 0 : held, tid, rank, held >= 0);
    held = slot;
  } else {
    ktune::wgmma_wait<0>();
    release_slot(empty, slot, tid, rank);
  }
}
// DC_WP = 1: every wgmma done, the held slot released (none held after), the sums readable; no
// branch around the wait (ptxas would serialise the wgmmas).
KTUNE_DEVICE void drain(float (&acc)[kNT][kAcc], unsigned empty, int& held, int tid, unsigned rank) {
  ktune::wgmma_wait<0>();
  acc_fence(acc);
  release_slot(empty, held < 0 ? 0 : held, tid, rank, held >= 0);
  held = -1;
}

#if DC_TMA
#include "decode_wg_pp.cuh"

// The producer warp(s), thread pt: the elected thread (pt = 0; kPW 2: the warp, one lane
// elected per stage) streams the block's S units from u0 through the ring by TMA; with kXA every producer thread also copies its share of each stage's A
// rows (cp.async) and has the stage's `full` count its arrival when they land (.noinc: the
// barrier's count includes the producer threads), never waiting on its own copies. Then (cluster
// split) all pass cluster_reduce's two barriers.
KTUNE_DEVICE void produce_all(const Prob& p, const TensorMap* tmW, const TensorMap* tmX, unsigned base,
                              unsigned full, unsigned empty, long u0, int S, int pt, unsigned rank, int s0) {
  static_assert(!(kXA && DC_MSPLIT), "A by cp.async: not with the row-split pair");
  const bool lead = pt == 0;
  const int n = kXA || lead || kPW == 2 ? S : 0;
  if (lead && kST == 0) {  // the descriptors' first use should not wait for their fetch
    prefetch_tensormap(tmW);
    prefetch_tensormap(tmX);
  }
  if constexpr (kST != 0 && kPW == 2) s0 = __shfl_sync(0xffffffffu, s0, 0);  // produce_first's count: lane 0's
  const long ub = kST != 0 ? u0 + s0 : u0;  // DC_ST: after the stages produce_first issued
  int tile = (int)(ub / p.nsteps), st = (int)(ub - (long)tile * p.nsteps);  // kPW: stepped
#pragma unroll 1
  for (int s = s0; s < n; ++s) {
    const int slot = s % kStages;
    DC_TS(lead, s, kTsTop);
    if (s >= kStages) mbar_wait(empty + 8 * slot, ((s / kStages) - 1) & 1);
    if (kPW == 0) {
      const long u = u0 + s;
      tile = (int)(u / p.nsteps), st = (int)(u - (long)tile * p.nsteps);
    }
    const unsigned w = base + slot * kStageBytes;
    DC_TR_GO(lead, s);
    if (kPW == 2 ? elect_one() : lead) produce_tma(p, tmW, tmX, w, full + 8 * slot, tile * kBN, st * kBK, rank);
    DC_TR_ISSUED(lead, s, S);
    if constexpr (kXA) {  // the barrier tracks the copies: no wait here (the consumers fence)
      produce_x(p, w + kWBytes, st * kBK, pt);
      asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(full + 8 * slot) : "memory");
    }
    if (kPW != 0 && ++st == p.nsteps) st = 0, ++tile;
  }
#if DC_CLUSTER  // cluster_reduce's barriers (one with kTxHand): the producers write nothing the others read
  if (kXH) asm volatile("barrier.cluster.wait;\n" ::: "memory");  // the arrival after the block barrier
  if (!kXH) cluster_sync_relaxed();
  if (!kTxHand && !kXH) cluster_sync_relaxed();
#elif DC_MSPLIT  // the consumers' barrier after their main loop
  cluster_sync();
#endif
}
#endif

}  // namespace kd

#if DC_CLUSTER || DC_MSPLIT
#define KTUNE_DC_CLUSTER __cluster_dims__(kd::kCL, 1, 1)
#else
#define KTUNE_DC_CLUSTER
#endif
KTUNE_KERNEL void KTUNE_DC_CLUSTER KTUNE_LAUNCH_BOUNDS(kd::kThreads, 1)
    ktune_gemm_decode(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                      void* Cv, const void* biasv, float* workspace, unsigned* counters, int M,
                      int N, int K, long lda, long ldb, long ldc, float alpha, float beta
#if DC_TMA  // the TMA kernel's tail (gemm::tmaDescriptors, unread), then the decode boxes' maps
                      , const __grid_constant__ kd::TensorMap, const __grid_constant__ kd::TensorMap,
                      const __grid_constant__ kd::TensorMap, int, const float* DC_TR_OUT_PARAM, const float*,
                      const __grid_constant__ kd::TensorMap tmX,
                      const __grid_constant__ kd::TensorMap tmW64,
                      const __grid_constant__ kd::TensorMap tmW32  // silu_mul: the pair's 3-D map
#endif
) {
  using namespace kd;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned base = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const unsigned full = base + kStages * kStageBytes, empty = full + 8 * kStages;
  volatile unsigned* flag = reinterpret_cast<volatile unsigned*>(
      smem_raw + (empty + 8 * kStages - smem_addr(smem_raw)));
  // DC_XR bit 1: the reduce-scatter's barrier, in the flag's 16 bytes (the gate/up hand-over's
  // floats start at +16).
  [[maybe_unused]] const unsigned red = empty + 8 * kStages + 8;
  const int tid = threadIdx.x;
  DC_TR_ENTRY(tid == 0);
  Prob p{A, B, reinterpret_cast<out_t*>(Cv), reinterpret_cast<const out_t*>(biasv), workspace,
         counters, M, N, K, (K + kBK - 1) / kBK, N / 2, lda, ldb, ldc, alpha, beta};
#if DC_CLUSTER  // a cluster per tile, block `rank` takes part `rank` of its K steps
  const unsigned rank = cluster_rank();
  const long t0 = (long)(blockIdx.x / kCL) * p.nsteps;
  const long u0 = t0 + p.nsteps * (long)rank / kCL, u1 = t0 + p.nsteps * (long)(rank + 1) / kCL;
#elif DC_MSPLIT  // a pair per tile, all of K; block `rank` stores A rows rank*kBM ..
  const unsigned rank = cluster_rank();
  const long u0 = (long)(blockIdx.x / 2) * p.nsteps, u1 = u0 + p.nsteps;
  p.C += (long)rank * kBM * ldc;
  p.M = min(M - (int)rank * kBM, kBM);
#elif DC_GRID == 6  // persistent: block b streams whole tiles [tiles*b/grid, tiles*(b+1)/grid)
  const long tiles = (N + kBN - 1) / kBN;
  const long u0 = tiles * blockIdx.x / gridDim.x * p.nsteps;
  const long u1 = tiles * (blockIdx.x + 1) / gridDim.x * p.nsteps;
#else
  const long units = (long)((N + kBN - 1) / kBN) * p.nsteps;
  const long u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;
#endif
  const int S = (int)(u1 - u0);
#if !DC_CLUSTER && !DC_MSPLIT
  [[maybe_unused]] const unsigned rank = 0;
#endif
  [[maybe_unused]] int s0 = 0;  // DC_ST: the stages the producer issued before the block barrier
#if DC_TMA
  const TensorMap* tmW = kWBox == 32 || kPairBox ? &tmW32 : &tmW64;
  if (kST != 0 && tid == kConsumers) {  // DC_ST: the descriptors fetched at once, the first stages issued
    prefetch_tensormap(tmW), prefetch_tensormap(&tmX);
    s0 = produce_first(p, tmW, &tmX, base, full, empty, red, u0, S, rank);
  }
#endif
  start_block(p, full, empty, red, u0, S, rank, tid);
  KTUNE_PDL_WAIT(); KTUNE_PDL_LAUNCH_DEPENDENTS();  // prelude.cuh: no memory read above
  __syncthreads();
  DC_TR(tid == 0, kTrPrologue);
#if DC_MSPLIT
  cluster_sync();  // the peer's barriers are initialised before its first multicast or arrival
#elif DC_CLUSTER
  if (kXH) asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory");  // waited for in xh_reduce
#endif

  if (tid >= kConsumers) {  // the producer warp(s)
    if constexpr (kRegSplit) setmaxnreg_dec<40>();
#if DC_TMA
    produce_all(p, tmW, &tmX, base, full, empty, u0, S, tid - kConsumers, rank, s0);
#else
    produce_all(p, base, full, empty, u0, S, tid - kConsumers);
#endif
    return;
  }
  if constexpr (kRegSplit) setmaxnreg_inc<232>();

  if (S > 0)  // the epilogue's C and bias lines of this block's tiles into L2 (prefetch_out)
    for (int t = (int)(u0 / p.nsteps); t <= (int)((u1 - 1) / p.nsteps); ++t)
      prefetch_out(p, ACT == 3 ? t * kBN / 2 : t * kBN, ACT == 3 ? (t + 1) * kBN / 2 : (t + 1) * kBN, tid,
                   kConsumers);
  float acc[kNT][kAcc];
#if DC_PP
  consume_pp(acc, base, full, empty, S, tid, rank, reinterpret_cast<float*>(smem_raw + (base - smem_addr(smem_raw))));
#else
  for_each_acc(acc, tid, [](float& v, int, int) { v = 0.0f; });
  if constexpr (kWP) acc_fence(acc);
  int run = 0;  // units of the current run (tile) so far
  [[maybe_unused]] int held = -1;  // DC_WP: the slot whose wgmmas may still run, released a stage later
#pragma unroll 1
  for (int s = 0; s < S; ++s) {
    const int slot = s % kStages;
    if (DC_TMA && p.beta != 0.0f) {  // a residual's C lines into L1 while the tile's last stage lands
      const long u = u0 + s;
      const int tile = (int)(u / p.nsteps);
      if (s == S - 1 || u - (long)tile * p.nsteps == p.nsteps - 1)
        prefetch_out(p, ACT == 3 ? tile * kBN / 2 : tile * kBN, ACT == 3 ? (tile + 1) * kBN / 2 : (tile + 1) * kBN,
                     tid, kConsumers, true);
    }
    DC_TS(tid == 0, s, kTsWait);
    mbar_wait(full + 8 * slot, (s / kStages) & 1);
    DC_TR_FULL(tid == 0, s, S);
    if (kXA) ktune::fence_proxy_async();  // the producers' cp.async writes of A -> the async proxy
    const unsigned w = base + slot * kStageBytes;
    ktune::wgmma_fence();
    mma_stage<kAcc>(acc, w + wg_slab(tid) * 64 * 128, w + kWBytes + wg_group(tid) * 1024);
    ktune::wgmma_commit();
    DC_TS(tid == 0, s, kTsCommit);
    stage_issued(empty, slot, held, tid, rank);
    DC_TR_RELEASED(tid, s);
    ++run;
#if !DC_CLUSTER && !DC_MSPLIT
    const long u = u0 + s;
    const int tile = (int)(u / p.nsteps), st = (int)(u - (long)tile * p.nsteps);
    if (st == p.nsteps - 1 || s == S - 1) {
      if constexpr (kWP) drain(acc, empty, held, tid, rank);  // flush reads the sums
      flush(p, acc, tile * kBN, run, tid, flag);
      run = 0;
    }
#endif
  }
  if constexpr (kWP) drain(acc, empty, held, tid, rank);  // the last stage's, before the sums are read
#endif
  DC_TR(tid == 0, kTrLoopEnd);
#if DC_CLUSTER
  cluster_reduce(p, acc, base, reinterpret_cast<float*>(smem_raw + (base - smem_addr(smem_raw))),
                 (int)(blockIdx.x / kCL) * kBN, rank, tid, flag, red);
#elif DC_MSPLIT
  cluster_sync();  // no peer's copy or arrival reaches this block after it (the producers pass it too)
  flush(p, acc, (int)(blockIdx.x / 2) * kBN, S, tid, flag);
#endif
  DC_TR_EXIT(tid == 0, rank);
}
