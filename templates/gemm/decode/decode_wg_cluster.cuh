// The decode GEMM's cluster split of K (part of decode_wg.cuh, inside namespace kd, after flush;
// DC_GRID = 4, 5): the partial sums of a tile's blocks meet in distributed shared memory.
#if DC_CLUSTER
// DC_XR bit 0: the block's rows of C through its idle ring as 16-byte vectors (store_staged; the
// gate/up pair's runs from its staged gate and up sums). Bit 1 (DC_XR = 3, with bit 0): the
// reduce-scatter's hand-over by st.async in 16-byte vectors, counted on the receiver's own barrier
// `red` (its bytes expected from the start) in place of the second cluster barrier, and read back
// as float4 (a warp's 512 contiguous bytes: no bank conflict).
constexpr bool kStaged = (DC_XR & 1) != 0;
constexpr bool kTxHand = (DC_XR & 2) != 0 && kWM >= 8 * kCL;
constexpr int kV = kTxHand ? 4 : 1;  // floats per hand-over (the reduce-scatter's part: 4*DC_MT/kCL)
// Bytes a block takes in from its peers in the reduce-scatter (kTxHand: the count on `red`).
constexpr unsigned kRedBytes = (kCL - 1) * kNT * (kAcc / kCL) * kConsumers * 4;
// kV floats v into a peer's ring at shared::cluster address a: a plain remote store, or counted on
// the peer's barrier `bar`.
KTUNE_DEVICE void hand_over(unsigned a, const float* v, unsigned bar) {
  if constexpr (kTxHand) st_async4(a, v, bar);
  else st_cluster(a, v[0]);
}
// v[0 .. kV) += the kV floats a peer handed over at `at` (one float4 read with kTxHand).
KTUNE_DEVICE void add_handed(float* v, const float* at) {
  if constexpr (kTxHand) {
    const float4 r = *reinterpret_cast<const float4*>(at);
    v[0] += r.x, v[1] += r.y, v[2] += r.z, v[3] += r.w;
  } else {
    v[0] += at[0];
  }
}
// The block's reduced sums (acc rows 0 .. kRows) into C: staged (kStaged) or by the epilogue.
template <int kRows>
KTUNE_DEVICE void reduce_store(const Prob& q, float (&acc)[kNT][kAcc], int row0, int ctid, float* stg,
                               volatile unsigned* flag) {
  DC_TR(ctid == 0, kTrStore0);
  if constexpr (kStaged) return store_staged<kRows>(q, acc, row0, ctid, stg);
  flush(q, acc, row0, q.nsteps, ctid, flag);
}

// A reduce-scatter over the cluster's kCL blocks (kWM >= 8*kCL): accumulator a of a thread is A row
// acc_row(a / 4) + ..., so its accumulators [q*kH, (q+1)*kH) hold the kBM/kCL rows of part q (with
// DC_CW = 2 each warpgroup's every second 8-row group of them). Block r
// owns part r: it hands every other part q to block q's ring (idle by then; region (r - q - 1) mod
// kCL of kCL - 1, which the space checks the ring holds), adds the kCL - 1 parts it got to its own
// and stores them: every block runs the epilogue on kBM/kCL rows, where a single summing block
// took in (kCL - 1) x all the sums and ran the whole epilogue while the others waited (the
// epilogue is the kernel's tail). Block r moves its part down to accumulators [0, kH) and stores
// through C shifted by r*kBM/kCL rows. Accumulators are indexed at compile time only (a runtime
// index would put them in local memory): the rank selects among the unrolled parts.
// Hand-over j (kV floats) of a thread sits at floats (j * kConsumers + ctid) * kV of a region.
KTUNE_DEVICE void scatter_reduce(const Prob& p, float (&acc)[kNT][kAcc], unsigned base, float* ring,
                                 int row0, unsigned rank, int ctid, volatile unsigned* flag, unsigned red) {
  constexpr int kH = kAcc / kCL, kRegion = kNT * kH * kConsumers;  // floats
  static_assert(kH % kV == 0, "whole hand-overs");
  cluster_sync_relaxed();  // every ring of the cluster is idle (cluster_sync_relaxed says why)
  DC_TR(ctid == 0, kTrRed1);
#pragma unroll
  for (int q = 0; q < kCL; ++q) {
    if (q == (int)rank) continue;
    const unsigned dst = map_to_rank(base, (unsigned)q) + ((rank - q - 1 + kCL) % kCL) * kRegion * 4;
    const unsigned bar = kTxHand ? map_to_rank(red, (unsigned)q) : 0u;
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int i = 0; i < kH; i += kV)
        hand_over(dst + (((t * kH + i) / kV) * kConsumers + ctid) * kV * 4, &acc[t][q * kH + i], bar);
  }
  if constexpr (kTxHand) mbar_wait_acquire_cluster(red, 0);  // the peers' st.async: cluster scope
  else cluster_sync();
  DC_TR(ctid == 0, kTrRed2);
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int i = 0; i < kH; i += kV) {
      float v[kV];
#pragma unroll
      for (int e = 0; e < kV; ++e) {
        v[e] = acc[t][i + e];
#pragma unroll
        for (int q = 1; q < kCL; ++q)
          if (q == (int)rank) v[e] = acc[t][q * kH + i + e];
      }
#pragma unroll
      for (int g = 0; g < kCL - 1; ++g) add_handed(v, ring + g * kRegion + (((t * kH + i) / kV) * kConsumers + ctid) * kV);
#pragma unroll
      for (int e = 0; e < kV; ++e) acc[t][i + e] = v[e];
    }
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int i = kH; i < kAcc; ++i) acc[t][i] = 0.0f;
  Prob q = p;
  q.C += (long)rank * (kBM / kCL) * p.ldc;
  q.M = min(p.M - (int)rank * (kBM / kCL), kBM / kCL);
  reduce_store<kBM / kCL>(q, acc, row0, ctid, ring + (kCL - 1) * kRegion, flag);
}

// DC_XH = 1 (kXH: a cluster of 2): each block hands the sums its peer stores over into the peer's
// region of its own (`xin`, after the gate/up hand-over, or from 64 rows in it: the ring may still be
// read there), counted on the peer's `red` (st.async), and waits on its own `red` for the sums it takes
// in: no cluster barrier after the main loop, where scatter_reduce's first one waits for both
// blocks' loops and its round trip. The barrier's wait below pairs with the arrival every thread made
// after the block barrier (the peer's `red` initialised). Under 16 A rows (no reduce-scatter) block
// 1 hands all its sums to block 0 and leaves.
constexpr bool kXhScatter = kBM >= 8 * kCL;
constexpr int kXhFloats = kNT * (kXhScatter ? kAcc / kCL : kAcc);  // a thread's hand-over
constexpr unsigned kXhBytes = kXhFloats * kConsumers * 4;
KTUNE_DEVICE void xh_reduce(const Prob& p, float (&acc)[kNT][kAcc], float* ring, unsigned xin, const float* in,
                            int row0, unsigned rank, int ctid, volatile unsigned* flag, unsigned red) {
  constexpr int kH = kAcc / kCL, kOff = kXhScatter ? kH : 0;  // kOff: the peer's part in rank 0
  static_assert(!kXH || (kXhFloats % (4 * kNT) == 0 && (!kXhScatter || kH % 4 == 0)), "whole float4 hand-overs");
  asm volatile("barrier.cluster.wait;\n" ::: "memory");
  DC_TR(ctid == 0, kTrRed1);
  const unsigned dst = map_to_rank(xin, rank ^ 1u), bar = map_to_rank(red, rank ^ 1u);
  if (kXhScatter || rank != 0) {
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int i = 0; i < kXhFloats / kNT; i += 4) {
        float v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = rank == 0 ? acc[t][kOff + i + e] : acc[t][i + e];
        st_async4(dst + ((t * kXhFloats / kNT + i) / 4 * kConsumers + ctid) * 16, v, bar);
      }
  }
  if (!kXhScatter && rank != 0) return;
  mbar_wait_acquire_cluster(red, 0);
  DC_TR(ctid == 0, kTrRed2);
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int i = 0; i < kXhFloats / kNT; i += 4) {
      const float4 r = *reinterpret_cast<const float4*>(in + ((t * kXhFloats / kNT + i) / 4 * kConsumers + ctid) * 4);
      const float x[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[t][i + e] = (kXhScatter && rank != 0 ? acc[t][kH + i + e] : acc[t][i + e]) + x[e];
    }
  Prob q = p;
  if constexpr (kXhScatter) {
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int i = kH; i < kAcc; ++i) acc[t][i] = 0.0f;
    q.C += (long)rank * (kBM / kCL) * p.ldc;
    q.M = min(p.M - (int)rank * (kBM / kCL), kBM / kCL);
  }
  consumers_sync();  // every consumer warp past its last stage before the ring is rewritten
  reduce_store<kXhScatter ? kBM / kCL : kBM>(q, acc, row0, ctid, ring, flag);
}

// After the main loop (every thread of the cluster, producer warps too, passes both barriers, or
// the first alone with kTxHand);
// under 8*kCL A rows, the blocks of rank r > 0 write their sums into slot r - 1 of rank 0's ring
// (idle by then; the space checks it holds kCL - 1 slots), rank 0 adds them and stores the tile
// (whole: no workspace).
KTUNE_DEVICE void cluster_reduce(const Prob& p, float (&acc)[kNT][kAcc], unsigned base, float* ring,
                                 int row0, unsigned rank, int ctid, volatile unsigned* flag, unsigned red) {
  constexpr int kSlot = kNT * kAcc * kConsumers;  // floats
  if constexpr (kXH) {
    // After the gate/up hand-over; from 64 rows in it (xh_reduce reads it before the epilogue).
    const unsigned xin = red + 8 + (DC_MT >= 8 ? 0 : 16 * kCWarps * 4 * DC_MT * 4);
    xh_reduce(p, acc, ring, xin, ring + (xin - base) / 4, row0, rank, ctid, flag, red);
  } else if constexpr (kWM >= 8 * kCL) {  // each block sums and stores kBM/kCL of the A rows (scatter_reduce)
    scatter_reduce(p, acc, base, ring, row0, rank, ctid, flag, red);
  } else {
    cluster_sync_relaxed();
    DC_TR(ctid == 0, kTrRed1);
    if (rank > 0) {
      const unsigned dst = map_to_rank(base, 0) + (rank - 1) * kSlot * 4;
#pragma unroll
      for (int t = 0; t < kNT; ++t)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) st_cluster(dst + ((t * kAcc + i) * kConsumers + ctid) * 4, acc[t][i]);
    }
    cluster_sync();
    DC_TR(ctid == 0, kTrRed2);
    if (rank != 0) return;
    for (int r = 1; r < kCL; ++r)
#pragma unroll
      for (int t = 0; t < kNT; ++t)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) acc[t][i] += ring[(r - 1) * kSlot + (t * kAcc + i) * kConsumers + ctid];
    reduce_store<kBM>(p, acc, row0, ctid, ring + (kCL - 1) * kSlot, flag);
  }
}
#endif

// One thread: the ring's barriers and (DC_XR bit 1) the reduce-scatter's `red`, then the init fence.
KTUNE_DEVICE void init_barriers(unsigned full, unsigned empty, [[maybe_unused]] unsigned red,
                               [[maybe_unused]] unsigned rank) {
  for (int i = 0; i < kStages; ++i) {
    // DC_TMA: the producer's expect_tx (kXA: and every producer thread after its A copies
    // landed); else every producer thread, after its copies landed.
    mbar_init(full + 8 * i, DC_TMA ? 1 + (kXA ? kProducers : 0) : kProducers);
    mbar_init(empty + 8 * i, kEmptyArrivals);  // one lane per consumer warp (of the pair)
  }
#if DC_CLUSTER
  if (kTxHand || kXH) mbar_init(red, 1);  // the peers' sums (scatter_reduce, xh_reduce)
#endif
  fence_mbarrier_init();
#if DC_CLUSTER
  if (kXH && (kXhScatter || rank == 0)) mbar_expect_tx(red, kXhBytes);
  else if (kTxHand && !kXH) mbar_expect_tx(red, kRedBytes);
#endif
}

// The block's start without DC_ST (with it the producer thread does both: produce_first): thread 0
// initialises the barriers (shared memory only, so before the PDL wait too: the init fence is a
// memory barrier, and behind the weight prefetches it waited for them, delaying the first copy),
// then the first stage's weights go into L2 before the wait (prefetch_weights, decode.cuh).
KTUNE_DEVICE void start_block(const Prob& p, unsigned full, unsigned empty, unsigned red, long u0,
                              int S, unsigned rank, int tid) {
  if (kST != 0) return;
  if (tid == 0) init_barriers(full, empty, red, rank);
  if (S > 0) {
    const int tile = (int)(u0 / p.nsteps), st = (int)(u0 - (long)tile * p.nsteps);
    prefetch_weights(p, [&](int n) { return tile_row(p, tile * kBN, n); }, kBN, st * kBK, kBK, tid,
                     kThreads);
  }
}
