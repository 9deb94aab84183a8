// ktune GEMM for NVIDIA Hopper (sm_90a): TMA loads, warp-specialised warpgroups, persistent grid.
//
//   C = act(alpha * op(A) * op(B) + beta * C + bias)      every LAYOUT (NN, NT, TN, TT)
//
// Operands stored [M][K] / [N][K] (A of NN/NT, B of NT/TT) are K-major; stored [K][M] / [K][N] (A of
// TN/TT, B of NN/TN) are MN-major. Both arrive by TMA as 64 x 64 boxes with the 128-byte swizzle
// (the box's inner dimension is whatever the matrix stores contiguously), and the wgmma reads an
// MN-major operand through a descriptor with the instruction's transpose flag (16-bit types): no
// data is transposed anywhere.
//
// Block = 1 producer warpgroup + CONSUMERS consumer warpgroups (128 threads each).
// - Producer: one thread walks the block's tiles and, per 64-wide k-tile, waits until the stage's
//   slot is free (mbarrier `empty`), announces the bytes on `full` and issues cp.async.bulk.tensor
//   copies (a K-major operand's tile in one box, an MN-major one in 64 x 64 boxes: kABoxRows,
//   kBBoxRows; the tensor maps tmA/tmB are built by the host per matrix and config, with the
//   128-byte swizzle, so the shared-memory image is exactly what the wgmma descriptors read). Boxes
//   outside the matrix are zero-filled by the copy engine, so edges need no predication.
//   setmaxnreg gives its registers to the consumers.
// - Consumers: each owns WG_M x 64 rows of the BLOCK_M x BLOCK_N tile (wgmma m64nBLOCK_Nk16, fp32
//   accumulators in registers), waits on `full`, issues the four k16 steps, keeps one wgmma group
//   in flight (wait_group 1) and then releases the previous stage (one arrive per warp on `empty`).
//   The epilogue (alpha, beta, bias, activation) stores straight from registers while the producer
//   already loads the next tile's stages.
// - Persistent: gridDim.x <= number of SMs; block b takes tiles b, b + gridDim.x, ... in GROUP_M
//   order (GROUP_M tile rows share their B columns in L2).
// Pipeline phases: iteration `it` (counted over all the block's k-tiles) uses slot it % STAGES;
// `full` completes once per fill (parity (it / STAGES) & 1), `empty` once per release; the
// producer's first wait on each `empty` passes at once (parity 1 of a fresh barrier). Producer and
// consumers step slot and parity per k-tile (no division), the consumers their wgmma descriptors
// too, from ones built once (tma_mma.cuh), in uniform registers: the warpgroup index is broadcast
// from lane 0 so the compiler knows it is warp-uniform.
//
// Epilogue (EPI_TMA = 1 | 2, 16-bit C): each consumer warpgroup converts its accumulators into a
// 16 KiB shared buffer (two 64 x 64 boxes, 128-byte swizzle, so the quad's 4-byte writes hit 32
// distinct banks) and one thread issues TMA stores of the boxes (bulk async group), 128 columns
// at a time; the next use of the buffer waits only for the copy engine to have READ it. The
// consumers go on to the next tile's MMAs while C is written. EPI_TMA = 2 defers even the shared
// memory writes: C is packed into registers and written one 64 x 64 box per k-tile of the next
// tile, after that k-tile's MMAs are issued, the boxes in turn in the buffer's two halves
// (tma_epilogue.cuh). Without a tensor map for C (c_tma_ok == 0: unaligned C or ldc) the threads
// copy each box from the buffer to C instead (store_boxes); fp32 C is stored from registers.
//
// Clusters (CLUSTER_M = 2): two blocks on neighbouring SMs take vertically adjacent tiles (same B
// columns); each loads its own A rows and half of the B tile, multicast into both blocks' shared
// memory, so L2 -> SM traffic per stage drops from (BM + BN) to (BM + BN / 2) rows. Each block's
// `full` expects the whole stage; a slot is refilled only when the consumers of BOTH blocks have
// released it (consumer warps arrive on the `empty` barrier of both blocks, count doubled). The
// pair walks the same tiles in lockstep, so phases agree; a pair whose second tile lies below M
// loads zeros and stores nothing. Both blocks meet at a cluster barrier after the barriers are
// initialised and again before exit (no block leaves while its partner may still write to it).
// The barrier waits are CTA-scope like every other wait (see mbar_wait): with a cluster-scope
// acquire on each k-tile's waits the variant was far slower; with them it runs level with the
// same tile without a cluster, as L2 is not what bounds this kernel (bench/NOTES.md, issue 33).
// CLUSTER_M = 4: four blocks, each loading a quarter of B (BLOCK_N 256) into all four,
// every consumer warp arriving on all four `empty`s; it pays where the loads bound the kernel
// (2000-byte rows at K = 1000: 3000x5000x1000 runs 3-8% faster than the pair, bench/NOTES.md).
//
// Split tail (SPLIT_K = 2 | 4, no clusters): when the tiles do not fill the last round of the
// persistent grid (e.g. 448 tiles on 132 SMs: 3 full rounds + 52 tiles, so 80 SMs idle for a whole
// tile's time), the k-tiles of that round's tiles are shared out stream-K style: cut into equal
// contiguous ranges, one per block, each at most one tile's K long (tma_schedule.cuh; at most
// SPLIT_K ranges per tile when that leaves SMs idle anyway; tails of more than 60% of a round stay
// whole). A range that ends a tile without
// starting it (a contributor) writes its fp32 accumulators to its block's workspace slot in
// register order (thread-contiguous float4, so the writes are coalesced and need no layout change),
// then increments its tile's counter (release); the range that starts the tile (the reducer)
// finishes its own K range, waits for its contributors (acquire), adds the partials, zeroes the
// slots and the counter (the launch contract: workspace and counters are left zero) and runs the
// epilogue. All blocks are resident at once (grid <= SMs, one block per SM) and a reducer only
// waits for ranges its contributors run before any wait of their own, so the wait cannot deadlock.
// The same mechanism splits a single partial round (few tiles, e.g. M = 128): the host then
// launches up to SPLIT_K x tiles blocks (at most one per SM).
//
// FP8 (DTYPE_AB 8 = e4m3, 9 = e5m2; layout NT only): the same kernel with the m64nNk32 fp8 wgmma.
// A k-tile is 128 elements (still 128 bytes per row, so boxes, swizzle, descriptors and shared
// memory are byte for byte those of the 16-bit kernel), fp32 accumulators, and the per-tensor
// scales (scale_a, scale_b: device floats, null = 1) folded into alpha once per block before the
// epilogue: C = act(alpha * sa * sb * A * B + beta * C + bias). wgmma has no transpose for 8-bit
// operands, so both must be K-major (the host refuses the other layouts).
//
// Ping-pong (PINGPONG = 1; two consumers, no clusters, no split tail, EPI_TMA 0 | 1): each consumer
// warpgroup owns a whole tile of its own (BLOCK_M = 64 * WG_M rows), the block's tiles alternating
// between them; the producer fills the one stage ring with their k-tiles in tile order. A pair of
// named barriers orders the mainloops: a consumer issues its tile's MMAs only once the other has
// issued all of its own, then runs its epilogue while the other's MMAs keep the tensor pipe busy
// (the cooperative schedule, both warpgroups on one tile, idles through the epilogue and the tile
// switch). The order is also what keeps the shared ring's parity waits exact: a consumer waits on
// a `full` phase only once the previous fill of that slot (the other's k-tile) has completed.
// A consumer tile may be 128 x 192 (WG_M 2: 192 accumulators per thread under setmaxnreg's 232),
// whose stage feeds 768 MMA cycles for 40 KiB (a 64 x 256 tile: 512 for 40 KiB), and the C staging
// buffer is one 64 x 64 box per consumer (its stores run under the other's MMAs), so 5 stages fit.
// Per tile it still runs a little below the cooperative kernel's tensor-pipe rate; it wins only
// where its tile count fills the last round better (bench/NOTES.md, issue 33).
//
// Wide tiles (BLOCK_N a multiple of 8 from 136 to 248 that is not one of 64; two consumers, no
// cluster, K-major B): tile counts that fill the persistent grid's rounds where 128 | 192 | 256
// leave a short last one (N = 14336 in 128 x 176 tiles: 82 per row, 656 at M = 1024 = 4.97 rounds
// of 132 SMs; N = 6144 in 128 x 168: 1184 tiles at M = 4096 = 8.97 rounds). B arrives in one box
// of BLOCK_N rows, so a stage holds exactly BLOCK_N rows and no row of the next tile is read. C leaves the deferred epilogue (EPI_TMA 2) the same way, the last 64-column
// box ending at the tile's last column (the overlap stored twice with the same values: no box
// crosses into the next tile); EPI_TMA 0 | 1 store the columns past the last whole box directly.
//
// Config: BLOCK_N (128 | 192 | 256 | a wide width above), CONSUMERS (1 | 2), WG_M (1 | 2; BLOCK_M =
// 64 * WG_M * CONSUMERS; WG_M * BLOCK_N <= 256 keeps the accumulators at <= 128 registers; 384 with
// PINGPONG), NUM_STAGES (2..8), GROUP_M, CLUSTER_M (1 | 2 | 4; 4 with BLOCK_N 256, the grid of
// resident clusters: tma.cc), SPLIT_K (1 | 2 | 4), PINGPONG (0 | 1; BLOCK_M = 64 * WG_M per consumer).
// Problem defines: DTYPE_AB (1 f16, 2 bf16), DTYPE_C (0 f32, 1 f16, 2 bf16), HAS_BIAS, HAS_BETA (0:
// beta is 0, C is never read and the epilogues' beta * C code is not compiled; absent: 1), ACT (0 none,
// 1 SiLU, 2 GELU erf, 3 the gate/up pair: tma_gated.cuh), LAYOUT (0 NN, 1 NT, 2 TN, 3 TT). Host
// requirements (launch rule): 16-byte aligned A and B, lda % 8 == 0, ldb % 8 == 0; tmA / tmB =
// boxes 128 bytes wide over A and B as stored (cols = the contiguous dimension), of
// gemm::tmaBoxRows' rows (kABoxRows, kBBoxRows).
// Dynamic shared memory: NUM_STAGES * (BLOCK_M + BLOCK_N) * 128
// + (EPI_TMA > 0) * CONSUMERS * 16384
// (8192 with PINGPONG) + 1024 (alignment) + 256 (barriers).
// Workspace (SPLIT_K > 1): gridDim.x * BLOCK_M * BLOCK_N floats and gridDim.x * CONSUMERS counters,
// both zero at launch and left zero. The parameter list starts like every ktune GEMM kernel's, so
// one argument packing serves all kinds; the tensor maps come last.

#if !defined(BLOCK_N) || !defined(CONSUMERS) || !defined(WG_M) || !defined(NUM_STAGES) || \
    !defined(GROUP_M) || !defined(CLUSTER_M) || !defined(EPI_TMA) || !defined(SPLIT_K) || \
    !defined(PINGPONG)
#error "tma.cuh: define BLOCK_N, CONSUMERS, WG_M, NUM_STAGES, GROUP_M, CLUSTER_M, EPI_TMA, SPLIT_K and PINGPONG (see gemm::defines)"
#endif
// MN-major operands: A stored [K][M] (TN, TT), B stored [K][N] (NN, TN).
#define KT_A_MN (LAYOUT == 2 || LAYOUT == 3)
#define KT_B_MN (LAYOUT == 0 || LAYOUT == 2)

#define KT_FP8 (DTYPE_AB == 8 || DTYPE_AB == 9)
#if KT_FP8 && (KT_A_MN || KT_B_MN)
#error "tma.cuh: fp8 operands must both be K-major (layout NT)"
#endif
#if DTYPE_AB == 8
#define KTUNE_WGMMA_T "e4m3"
#elif DTYPE_AB == 9
#define KTUNE_WGMMA_T "e5m2"
#elif DTYPE_AB == 2
#define KTUNE_WGMMA_T "bf16"
#else
#define KTUNE_WGMMA_T "f16"
#endif
#if KT_FP8
#define KTUNE_WGMMA_K "k32"
#define KTUNE_WGMMA_TRANS ""
#endif
#if KT_A_MN
#define KTUNE_WGMMA_TA "1"
#endif
#if KT_B_MN
#define KTUNE_WGMMA_TB "1"
#endif
#include "prelude.cuh"
#include "gemm_common.cuh"

namespace kt {

using namespace kgemm;

// kElem: bytes per A/B element; a k-tile is always 128 bytes of K (64 16-bit or 128 fp8 values).
constexpr int kElem = KT_FP8 ? 1 : 2;
constexpr int kBN = BLOCK_N, kBK = 128 / kElem, kCons = CONSUMERS, kWgM = WG_M;
// kPP: ping-pong; a block tile is then one consumer's (kBM rows), else the consumers' together.
constexpr bool kPP = PINGPONG != 0;
constexpr int kBM = 64 * kWgM * (kPP ? 1 : kCons);
constexpr int kMmaWgs = kPP ? 1 : kCons;  // consumer warpgroups that read each stage
constexpr int kThreads = 128 * (kCons + 1);
constexpr int kStages = NUM_STAGES;
// 64-column boxes of a tile's C (the epilogues); a wide tile's last one ends at its last column
// (box_row0), overlapping the one before it.
constexpr int kBBoxes = (kBN + 63) / 64;
constexpr int kATile = kBM * kBK, kBTile = kBN * kBK;  // elements per stage
// The boxes the producer copies per stage (the host's maps: gemm::tmaBoxRows). A K-major operand
// arrives in one box of its tile's rows (B: this block's 1 / CLUSTER_M part), so a stage receives
// exactly kBM + kBN rows in two copies. An MN-major operand (64 k rows x 64 columns) and the
// gate/up pair's B (64 gate rows, then 64 up rows) arrive in 64-wide boxes; a wide tile's last B box
// then ends at its last row (b_box_row), overlapping the one before it (its rows loaded twice).
// TMA_ABOX / TMA_BBOX = 64 (probe defines outside the tuning space, gemm::tmaBoxRows reads the
// same knobs): A / B in 64-row boxes again, as before the one-box copies, for A/B runs of the two.
#ifndef HAS_BETA
#define HAS_BETA 1
#endif
#ifndef TMA_ABOX
#define TMA_ABOX 0
#endif
#ifndef TMA_BBOX
#define TMA_BBOX 0
#endif
constexpr int kABoxRows = (KT_A_MN || TMA_ABOX == 64) ? 64 : kBM;
constexpr bool kBOneBox = !KT_B_MN && ACT != 3 && TMA_BBOX != 64;
constexpr int kBBoxRows = kBOneBox ? kBN / CLUSTER_M : 64;
constexpr int kBLoads = kBOneBox ? CLUSTER_M : kBBoxes;  // B boxes per stage, the cluster's together
// The bytes the copies of a stage deliver: every box whole (a 64-wide box's overlap twice).
constexpr unsigned kStageBytes = (kATile + kBLoads * kBBoxRows * kBK) * kElem;
constexpr int kAcc = kBN / 2;  // fp32 accumulators per thread per 64-row slab

static_assert(kBN == 128 || (kBN % 8 == 0 && kBN >= 136 && kBN <= 256),
              "BLOCK_N must be 128 or a multiple of 8 from 136 to 256");
// A width that is not whole 64-column boxes: two consumers (cooperative or ping-pong) without
// clusters and a K-major B only (the MN-major descriptor steps whole 64-wide chunks; the host
// refuses the other layouts).
static_assert(kBN % 64 == 0 || (kCons == 2 && CLUSTER_M == 1 && !KT_B_MN),
              "BLOCK_N not a multiple of 64: CONSUMERS 2, CLUSTER_M 1 and a K-major B (layout NT or TT)");
static_assert(kCons == 1 || kCons == 2, "CONSUMERS must be 1 or 2");
static_assert(kWgM == 1 || kWgM == 2, "WG_M must be 1 or 2");
// Ping-pong's consumer owns one tile per warpgroup, so it may hold a 128 x 192 tile (192
// accumulators per thread under setmaxnreg's 232 registers); the cooperative kernel stays at 128.
static_assert(kWgM * kBN <= (kPP ? 384 : 256), "WG_M * BLOCK_N <= 256 (384 with PINGPONG): accumulator registers");
static_assert(kStages >= 2 && kStages <= 8, "NUM_STAGES must be in [2, 8]");
static_assert(CLUSTER_M == 1 || CLUSTER_M == 2 || CLUSTER_M == 4, "CLUSTER_M must be 1, 2 or 4");
static_assert(CLUSTER_M == 1 || kBN % (64 * CLUSTER_M) == 0,
              "clusters split the B tile into CLUSTER_M parts of whole 64-row boxes");
static_assert(SPLIT_K == 1 || SPLIT_K == 2 || SPLIT_K == 4, "SPLIT_K must be 1, 2 or 4");
static_assert(SPLIT_K == 1 || CLUSTER_M == 1, "the split tail is not combined with clusters");
// The gate/up pair (ACT 3): whole 64-row boxes of gate and of up rows per tile, and the epilogues
// that store from the tile's registers (tma_gated.cuh; not the deferred one).
static_assert(ACT != 3 || ((kBN == 128 || kBN == 256) && EPI_TMA <= 1 && !KT_FP8 && !KT_B_MN),
              "ACT 3 (silu_mul): BLOCK_N 128 or 256, EPI_TMA 0 or 1, 16-bit A and K-major B");
static_assert(!kPP || (kCons == 2 && CLUSTER_M == 1 && SPLIT_K == 1 && EPI_TMA <= 1),
              "PINGPONG needs two consumers, no cluster, no split tail, EPI_TMA 0 or 1");
#if EPI_TMA && DTYPE_C != 0
#define KT_EPI_TMA 1
#else
#define KT_EPI_TMA 0
#endif
// C staging buffer per consumer warpgroup: two 64 x 64 boxes, or one with ping-pong (its epilogue
// runs under the other consumer's MMAs, so a smaller buffer costs nothing there and leaves room for
// a fifth stage of 128 x 192 tiles).
constexpr int kEpiBoxes = kPP ? 1 : 2;
constexpr int kEpiBytes = KT_EPI_TMA ? kEpiBoxes * 8192 : 0;
// EPI_TMA = 2: the TMA-store epilogue deferred into the next tile's k-loop (tma_epilogue.cuh);
// 3 (a probe value, not in the space): the same with a box every second k-tile.
#define KT_DEFER (KT_EPI_TMA && EPI_TMA >= 2)
constexpr int kCluster = CLUSTER_M;

using ktune::smem_addr;
// The sm_90 primitives the decode kind shares: templates/gemm/hopper.cuh.
#include "gemm_hopper.cuh"
#include "tma_trace.cuh"
#if BLOCK_N % 64 != 0
#include "tma_wgmma_wide.cuh"
#endif
#include "tma_wgmma_first.cuh"

// Tile `tile` of a grid_m x grid_n grid of (kCluster * kBM) x kBN cluster tiles, in GROUP_M order;
// this block's rows start `rank` block tiles further down.
KTUNE_DEVICE void tile_coords(int tile, int grid_m, int grid_n, int rank, int& m0, int& n0) {
  const int in_group = GROUP_M * grid_n;
  const int first_m = (tile / in_group) * GROUP_M;
  const int group_rows = min(grid_m - first_m, GROUP_M);
  m0 = ((first_m + (tile % in_group) % group_rows) * kCluster + rank) * kBM;
  n0 = ((tile % in_group) / group_rows) * kBN;
}

#include "tma_schedule.cuh"

KTUNE_DEVICE unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Row (of the tile's B rows / C columns) where 64-row box b starts: b * 64, the last one of a wide
// tile at kBN - 64 (it overlaps the one before; see the header).
KTUNE_DEVICE constexpr int box_row0(int b) { return b * 64 < kBN - 64 ? b * 64 : kBN - 64; }
// Row of the tile's B where the producer's box b starts (its row in the stage too).
KTUNE_DEVICE constexpr int b_row0(int b) { return kBOneBox ? b * kBBoxRows : box_row0(b); }

// ACT 3 (the gate/up pair, tma_gated.cuh): a tile of kBN B rows is kBN / 2 gate rows and the
// kBN / 2 up rows N / 2 further on, so its columns n0 .. n0 + kBN of the pair grid are output
// columns n0 / 2 .. n0 / 2 + kBN / 2. B row of box b of the tile at n0 (`half`: N / 2).
KTUNE_DEVICE int b_box_row(int n0, int b, int half) {
#if ACT == 3
  constexpr int kHalfBoxes = kBBoxes / 2;
  return n0 / 2 + (b < kHalfBoxes ? b * 64 : half + (b - kHalfBoxes) * 64);
#else
  (void)half;
  return n0 + b_row0(b);
#endif
}

// TMA coordinates (contiguous dimension first) of box `row0` (the tile's M or N offset) of k-tile
// `k0` for a K-major or an MN-major operand.
template <bool kMnMajor>
KTUNE_DEVICE void box_coords(int k0, int row0, int& c0, int& r0) {
  if (kMnMajor) {
    c0 = row0, r0 = k0;
  } else {
    c0 = k0, r0 = row0;
  }
}

// The stage ring's barriers: `full` (one arrival: the producer's, plus the TMA bytes) and `empty`
// (every consumer warp of the cluster), initialised before any block of the cluster uses them.
KTUNE_DEVICE void init_barriers(unsigned full, unsigned empty, int tid) {
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full + 8 * s, 1);
      mbar_init(empty + 8 * s, kCluster * kMmaWgs * 4);
    }
    fence_mbarrier_init();
  }
#if CLUSTER_M > 1
  cluster_sync();  // the partner's barriers are initialised before anyone signals them
#else
  __syncthreads();
#endif
}

// The other blocks of the cluster (their `empty` barriers: rank ^ r, r = 1 .. kCluster - 1).
constexpr int kOthers = kCluster > 1 ? kCluster - 1 : 1;

// Hands stage `s` back to the producer; in a cluster to every block's producer (each multicasts
// its part of B into the slot too).
KTUNE_DEVICE void release_slot(unsigned empty, const unsigned (&others)[kOthers], unsigned s) {
  mbar_arrive(empty + 8 * s);
#if CLUSTER_M > 1
#pragma unroll
  for (int r = 0; r < kCluster - 1; ++r) mbar_arrive_cluster(others[r] + 8 * s);
#else
  (void)others;
#endif
}

// The producer warpgroup's one issuing thread: every unit's k-tiles of A and B into the stage ring
// through TMA, each stage once the consumers (of both blocks of a cluster) released it.
KTUNE_DEVICE void produce(const TensorMap* tmA, const TensorMap* tmB, unsigned sA, unsigned sB,
                          unsigned full, unsigned empty, const Sched& sc, int grid_m, int grid_n,
                          int rank, int half) {
  prefetch_tensormap(tmA);
  prefetch_tensormap(tmB);
  unsigned it = 0, s = 0, ph = 0;  // ring position, its slot and phase (stepped, not divided)
  const int units = sched_units(sc);
  for (int j = 0; j < units; ++j) {
    const Unit un = sched_unit(sc, j);
    int m0, n0;
    tile_coords(un.tile, grid_m, grid_n, rank, m0, n0);
    for (int kt = un.kb; kt < un.ke; ++kt, ++it) {
      mbar_wait(empty + 8 * s, ph ^ 1u);  // CTA scope in a cluster too (see mbar_wait)
      mbar_expect_tx(full + 8 * s, kStageBytes);
      KT_TR(it == 0, kTrIssue0);
      int c0, r0;
#pragma unroll
      for (int b = 0; b < kBM / kABoxRows; ++b) {
        box_coords<KT_A_MN>(kt * kBK, m0 + b * kABoxRows, c0, r0);
        tma_load_2d(sA + (s * kATile + b * kABoxRows * kBK) * kElem, tmA, c0, r0, full + 8 * s);
      }
#if CLUSTER_M > 1
      // This block's part of the B tile (1 / kCluster of its boxes), into every block.
      constexpr int kPart = kBLoads / kCluster;
#pragma unroll
      for (int b = rank * kPart; b < (rank + 1) * kPart; ++b) {
        box_coords<KT_B_MN>(kt * kBK, b_box_row(n0, b, half), c0, r0);
        tma_load_2d_multicast(sB + (s * kBTile + b_row0(b) * kBK) * kElem, tmB, c0, r0, full + 8 * s,
                              (unsigned short)((1u << kCluster) - 1u));
      }
#else
#pragma unroll
      for (int b = 0; b < kBLoads; ++b) {
        box_coords<KT_B_MN>(kt * kBK, b_box_row(n0, b, half), c0, r0);
        tma_load_2d(sB + (s * kBTile + b_row0(b) * kBK) * kElem, tmB, c0, r0, full + 8 * s);
      }
#endif
      if (++s == kStages) s = 0, ph ^= 1u;
    }
  }
}

#include "tma_epilogue.cuh"

// alpha with the per-tensor scales (FP8 dequantisation; null = 1) folded in: read once per thread,
// so the epilogue still does one multiply per element.
KTUNE_DEVICE float scaled_alpha(float alpha, const float* scale_a, const float* scale_b) {
  if (scale_a) alpha *= __ldg(scale_a);
  if (scale_b) alpha *= __ldg(scale_b);
  return alpha;
}

#if SPLIT_K > 1
#include "tma_splitk.cuh"
#endif

#include "tma_mma.cuh"

#if PINGPONG
#include "tma_pingpong.cuh"
#else
#include "tma_cooperative.cuh"
#endif

}  // namespace kt

#if CLUSTER_M > 1
#define KTUNE_TMA_CLUSTER __cluster_dims__(CLUSTER_M, 1, 1)
#else
#define KTUNE_TMA_CLUSTER
#endif
KTUNE_KERNEL void KTUNE_TMA_CLUSTER __launch_bounds__(kt::kThreads, 1)
    ktune_gemm_tma(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                   void* Cv, const void* biasv, float* workspace, unsigned* counters, int M, int N,
                   int K, long lda, long ldb, long ldc, float alpha, float beta,
                   const __grid_constant__ kt::TensorMap tmA,
                   const __grid_constant__ kt::TensorMap tmB,
                   const __grid_constant__ kt::TensorMap tmC, int c_tma_ok,
                   const float* __restrict__ scale_a, const float* __restrict__ scale_b) {
  using namespace kt;
  (void)A, (void)B, (void)lda, (void)ldb;
#if SPLIT_K == 1
  (void)workspace, (void)counters;
#endif
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* base = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  const unsigned sA = smem_addr(base);
  const unsigned sB = sA + kStages * kATile * kElem;
  const unsigned epi = sB + kStages * kBTile * kElem;  // kCons buffers of kEpiBytes
  const unsigned full = epi + kCons * kEpiBytes;    // kStages barriers of 8 bytes
  const unsigned empty = full + kStages * 8;

  // The warpgroup index broadcast from lane 0: the compiler then knows it is warp-uniform, so the
  // consumers' ring position and wgmma descriptors live in uniform registers (no R2UR per wgmma).
  const int tid = threadIdx.x, wg = __shfl_sync(0xffffffffu, tid >> 7, 0);
  const int grid_m = (M + kCluster * kBM - 1) / (kCluster * kBM);
  // ACT 3: tiles of kBN / 2 output columns (gate/up pairs) over N / 2.
  const int grid_n = ACT == 3 ? (N / 2 + kBN / 2 - 1) / (kBN / 2) : (N + kBN - 1) / kBN;
#if CLUSTER_M > 1
  const int rank = static_cast<int>(cluster_rank());
  const int first_tile = blockIdx.x / kCluster, tile_step = gridDim.x / kCluster;
#else
  const int rank = 0;
  const int first_tile = blockIdx.x, tile_step = gridDim.x;
#endif
  // Whole rounds, then the last round's tiles split along K (tma_schedule.cuh).
  const Sched sc = make_sched(grid_m * grid_n, (K + kBK - 1) / kBK, first_tile, tile_step, SPLIT_K);
  KT_TR_ENTRY(tid == 0, scale_a);

  init_barriers(full, empty, tid);

  if (wg == 0) {
    // ---- producer warpgroup ----
#if CONSUMERS == 2
    setmaxnreg_dec<40>();
#endif
    if (tid == 0)
      produce(&tmA, &tmB, sA, sB, full, empty, sc, grid_m, grid_n, rank, N / 2);
#if CLUSTER_M > 1
    cluster_sync();
#endif
    return;
  }

  // ---- consumer warpgroups ----
#if CONSUMERS == 2
  setmaxnreg_inc<232>();
#endif
  const int cw = wg - 1;
  alpha = scaled_alpha(alpha, KT_TR_SCALE_A, scale_b);
#if !HAS_BETA
  beta = 0.0f;  // the host's promise (beta == 0): no epilogue reads C
#endif
  KT_TR_VALUE(tid == 128, kTrUnits, sched_units(sc));
  KT_TR_VALUE(tid == 128, kTrKtiles, sc.ktiles);
  out_t* C = reinterpret_cast<out_t*>(Cv);
  const out_t* bias = reinterpret_cast<const out_t*>(biasv);
#if PINGPONG
  consume_pingpong(sc, grid_m, grid_n, sA, sB, full, empty, c_tma_ok ? &tmC : nullptr,
                   epi + cw * kEpiBytes, C, bias, M, N, ldc, alpha, beta, cw, tid);
#else
  consume_cooperative(sc, grid_m, grid_n, rank, sA, sB, full, empty, &tmC, c_tma_ok != 0,
                      epi + cw * kEpiBytes, C, bias, M, N, ldc, alpha, beta, workspace, counters,
                      cw, tid);
#endif  // PINGPONG
#if KT_EPI_TMA
  // The last stores must have read the buffer before the block's shared memory goes; their global
  // writes complete with the grid (as CUTLASS's epilogue tail, wait_group.read), so the block does
  // not sit out their write latency.
  if ((tid & 127) == 0) bulk_wait_read0();
#else
  (void)tmC, (void)c_tma_ok;
#endif
  KT_TR_END((tid & 127) == 0, cw);
#if CLUSTER_M > 1
  cluster_sync();
#endif
}
