// The decode GEMM's cluster split of K (part of decode_wg.cuh, inside namespace kd, after flush;
// DC_GRID = 4, 5): the partial sums of a tile's blocks meet in distributed shared memory.
#if DC_CLUSTER
// DC_XR (a bit set each; 0: the exchange and stores below as they were): bit 0, the block's rows
// of C through its idle ring as 16-byte vectors (store_staged; not the gate/up pair); bit 1, the
// sums handed over by st.async, counted on the receiver's own barrier `red` (its expected bytes
// posted at the start), which each receiver waits on in place of the second cluster barrier.
constexpr bool kStaged = (DC_XR & 1) != 0 && ACT != 3, kTxHand = (DC_XR & 2) != 0;
// Bytes block `rank` takes in from its peers (kTxHand: the count on its `red` barrier).
KTUNE_DEVICE unsigned reduce_bytes(unsigned rank) {
  if constexpr (kBM >= 8 * kCL) return (kCL - 1) * kNT * (kAcc / kCL) * kConsumers * 4;
  return rank == 0 ? (kCL - 1) * kNT * kAcc * kConsumers * 4 : 0;
}
// One float (kV = 1) or four consecutive ones (kV = 4, kTxHand only: one 16-byte vector) at
// shared::cluster address a of a peer: a plain remote store, or (kTxHand) one counted on the
// peer's barrier.
template <int kV>
KTUNE_DEVICE void hand_over(unsigned a, const float* v, unsigned bar) {
  if constexpr (kTxHand && kV == 4) st_async4(a, v[0], v[1], v[2], v[3], bar);
  else if constexpr (kTxHand) st_async(a, v[0], bar);
  else st_cluster(a, v[0]);  // kV = 1 without kTxHand
}
// The peers' sums are in this block's ring: the second cluster barrier, or its own `red` barrier.
KTUNE_DEVICE void reduce_wait(unsigned red) {
  if constexpr (kTxHand) mbar_wait(red, 0);
  else cluster_sync();
}
// The block's reduced sums (acc rows 0 .. kRows) into C: staged (kStaged) or by the epilogue.
template <int kRows>
KTUNE_DEVICE void reduce_store(const Prob& q, float (&acc)[kNT][kAcc], int row0, int ctid, float* stg,
                               volatile unsigned* flag) {
  DC_TR(ctid == 0, kTrStore0);
#if ACT != 3
  if constexpr (kStaged) return store_staged<kRows>(q, acc, row0, ctid, stg);
#endif
  flush(q, acc, row0, q.nsteps, ctid, flag);
}

// A reduce-scatter over the cluster's kCL blocks (kBM >= 8*kCL): accumulator a of a thread is A row
// (a / 4) * 8 + ..., so its accumulators [q*kH, (q+1)*kH) hold the kBM/kCL rows of part q. Block r
// owns part r: it hands every other part q to block q's ring (idle by then; region (r - q - 1) mod
// kCL of kCL - 1, which the space checks the ring holds), adds the kCL - 1 parts it got to its own
// and stores them: every block runs the epilogue on kBM/kCL rows, where a single summing block
// took in (kCL - 1) x all the sums and ran the whole epilogue while the others waited (the
// epilogue is the kernel's tail). Block r moves its part down to accumulators [0, kH) and stores
// through C shifted by r*kBM/kCL rows. Accumulators are indexed at compile time only (a runtime
// index would put them in local memory): the rank selects among the unrolled parts. With kTxHand
// a thread's four consecutive sums of a part travel as one 16-byte st.async (fewer counted stores).
KTUNE_DEVICE void scatter_reduce(const Prob& p, float (&acc)[kNT][kAcc], unsigned base, float* ring,
                                 int row0, unsigned rank, int ctid, volatile unsigned* flag, unsigned red) {
  constexpr int kH = kAcc / kCL, kRegion = kNT * kH * kConsumers;  // floats
  // Floats per hand-over: 4 where a part has a multiple of 4 (this function is compiled for the
  // gather's tiers too, kH < 4, never called there).
  constexpr int kV = kTxHand && kH % 4 == 0 ? 4 : 1;
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
        hand_over<kV>(dst + (((t * kH + i) / kV) * kConsumers + ctid) * kV * 4, &acc[t][q * kH + i], bar);
  }
  reduce_wait(red);
  DC_TR(ctid == 0, kTrRed2);
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int i = 0; i < kH; ++i) {
      float v = acc[t][i];
#pragma unroll
      for (int q = 1; q < kCL; ++q)
        if (q == (int)rank) v = acc[t][q * kH + i];
#pragma unroll
      for (int g = 0; g < kCL - 1; ++g)
        v += ring[g * kRegion + (((t * kH + i) / kV) * kConsumers + ctid) * kV + i % kV];
      acc[t][i] = v;
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

// After the main loop (every thread of the cluster, producer warps too, passes the barriers);
// under 8*kCL A rows, the blocks of rank r > 0 write their sums into slot r - 1 of rank 0's ring
// (idle by then; the space checks it holds kCL - 1 slots), rank 0 adds them and stores the tile
// (whole: no workspace).
KTUNE_DEVICE void cluster_reduce(const Prob& p, float (&acc)[kNT][kAcc], unsigned base, float* ring,
                                 int row0, unsigned rank, int ctid, volatile unsigned* flag, unsigned red) {
  constexpr int kSlot = kNT * kAcc * kConsumers;  // floats
  if constexpr (kBM >= 8 * kCL) {  // each block sums and stores kBM/kCL of the A rows (scatter_reduce)
    scatter_reduce(p, acc, base, ring, row0, rank, ctid, flag, red);
  } else {
    cluster_sync_relaxed();
    DC_TR(ctid == 0, kTrRed1);
    if (rank > 0) {
      const unsigned dst = map_to_rank(base, 0) + (rank - 1) * kSlot * 4;
      const unsigned bar = kTxHand ? map_to_rank(red, 0) : 0u;
#pragma unroll
      for (int t = 0; t < kNT; ++t)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) hand_over<1>(dst + ((t * kAcc + i) * kConsumers + ctid) * 4, &acc[t][i], bar);
      if (kTxHand) return;  // rank 0 counts the bytes; nothing of this block is read after them
    }
    reduce_wait(red);  // kTxHand: rank 0 only
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
