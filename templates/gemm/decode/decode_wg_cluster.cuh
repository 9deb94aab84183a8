// The decode GEMM's cluster split of K (part of decode_wg.cuh, inside namespace kd, after flush;
// DC_GRID = 4, 5; and the persistent pair's cut tile, DC_GRID = 9): the partial sums of a tile's
// blocks meet in distributed shared memory.
#if DC_CLUSTER
// DC_XR bit 0: the block's rows of C through its idle ring as 16-byte vectors (store_staged; the
// gate/up pair's runs from its staged gate and up sums). Bit 1 (DC_XR = 3, with bit 0): the
// reduce-scatter's hand-over by st.async in 16-byte vectors, counted on the receiver's own barrier
// `red` (its bytes expected from the start) in place of the second cluster barrier, and read back
// as float4 (a warp's 512 contiguous bytes: no bank conflict).
constexpr bool kStaged = (DC_XR & 1) != 0;
constexpr bool kTxHand = (DC_XR & 2) != 0 && kBM >= 8 * kCL;
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

// A reduce-scatter over the cluster's kCL blocks (kBM >= 8*kCL): accumulator a of a thread is A row
// (a / 4) * 8 + ..., so its accumulators [q*kH, (q+1)*kH) hold the kBM/kCL rows of part q. Block r
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

// After the main loop (every thread of the cluster, producer warps too, passes both barriers, or
// the first alone with kTxHand);
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

#if DC_PAIRS
// DC_GRID = 9: a persistent pair (a cluster of two) per contiguous range of 64-row slabs; block 0
// streams the first half of the range's bytes, block 1 the rest, so at most one tile is cut between
// them (28672 rows: 448 slabs on 66 pairs, at most 3.5 slabs a block where whole 128-row tiles per
// block (DC_GRID = 6) give 4). The cut tile is block 1's first run and block 0's last: block 1 hands
// its partial sums over early (st.async into block 0's buffer, counted on its barrier `red`), block 0 adds them
// after its last stage and stores the tile. No workspace, and no wait at the kernel's end but a
// barrier whose bytes landed long before.
constexpr unsigned kPairBytes = kNT * kAcc * kConsumers * 4;  // block 0's buffer (sharedBytes)
// After the flag word and the gate/up hand-over (floats): the buffer.
constexpr int kHandFloats = 16 * kCWarps * 4 * DC_MT;
// Pair blockIdx.x / 2's rows: its share [p.r0, p.rlim) of the weight rows in slabs of kG rows (64: a
// tile of two or four slabs may end past rlim, whose boxes are zeros and rows not stored; the gate/up
// pair's in whole tiles), in tiles of kBN rows from p.r0. Block `rank`'s units (tile, k step) of
// them: [u0, u1), block 0 the first c, which hold half the pair's slab steps (a unit of the last
// tile holds `last` of them, the others kS). True for block 0 when unit c cuts a tile (it receives).
KTUNE_DEVICE bool pair_range(Prob& p, unsigned rank, long& u0, long& u1) {
  constexpr int kG = ACT == 3 ? kBN : 64, kS = kBN / kG;  // rows of a slab; slabs of a tile
  const long slabs = (p.N + kG - 1) / kG, pairs = gridDim.x / 2, pc = blockIdx.x / 2;
  const long s0 = slabs * pc / pairs, s1 = slabs * (pc + 1) / pairs, R = s1 - s0, ns = p.nsteps;
  p.r0 = (int)(s0 * kG);
  p.rlim = (int)min((long)p.N, s1 * kG);
  const long nt = (R + kS - 1) / kS, last = R - (nt - 1) * kS, half = (R * ns + 1) / 2, full = (nt - 1) * kS * ns;
  const long c = half <= full ? (half + kS - 1) / kS : (nt - 1) * ns + (half - full + last - 1) / last;
  u0 = rank ? c : 0;
  u1 = rank ? nt * ns : c;
  return rank == 0 && c % ns != 0;
}
// The end of a run over the cut tile (run < nsteps): block 1 hands its sums to block 0 and zeroes
// them; block 0 waits for them, adds them and stores the tile. Hand-over j (4 floats) of a thread
// sits at floats (j * kConsumers + ctid) * 4 of the buffer (a warp's 512 contiguous bytes). `flag` and
// `red`: the shared word and the barrier 8 bytes after it.
KTUNE_DEVICE void pair_end(const Prob& p, float (&acc)[kNT][kAcc], int row0, unsigned rank, int ctid,
                           volatile unsigned* flag, unsigned red) {
  if (rank != 0) {
    const unsigned dst = map_to_rank(red + 8 + kHandFloats * 4, 0), bar = map_to_rank(red, 0);
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int i = 0; i < kAcc; i += 4) st_async4(dst + (((t * kAcc + i) / 4) * kConsumers + ctid) * 16, &acc[t][i], bar);
    for_each_acc(acc, ctid, [](float& v, int, int) { v = 0.0f; });
    return;
  }
  mbar_wait_acquire_cluster(red, 0);  // the peer's st.async: cluster scope
  const float* in = reinterpret_cast<const float*>(const_cast<unsigned*>(flag) + 4) + kHandFloats;
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int i = 0; i < kAcc; i += 4) {
      const float4 r = *reinterpret_cast<const float4*>(in + (((t * kAcc + i) / 4) * kConsumers + ctid) * 4);
      acc[t][i] += r.x, acc[t][i + 1] += r.y, acc[t][i + 2] += r.z, acc[t][i + 3] += r.w;
    }
  flush(p, acc, row0, p.nsteps, ctid, flag);
}
#endif
