// The decode GEMM's cluster split of K (part of decode_wg.cuh, inside namespace kd, after flush;
// DC_GRID = 4, 5): the partial sums of a tile's blocks meet in distributed shared memory.
#if DC_CLUSTER
// A cluster of two (kBM >= 16): accumulator a of a thread is A row (a / 4) * 8 + ..., so its first
// kAcc/2 hold rows < kBM/2. Each block hands the other half to its peer's ring (idle by then), adds
// what it got to its own half and stores it: both blocks run the epilogue on half the tile, where
// one block summed and stored the whole tile while the other waited (the epilogue is the kernel's
// tail). Block 1 moves its half down (rows - kBM/2) and stores through C shifted by kBM/2 rows.
KTUNE_DEVICE void scatter_reduce(const Prob& p, float (&acc)[kNT][kAcc], unsigned base, const float* ring,
                                 int row0, unsigned rank, int ctid, volatile unsigned* flag) {
  constexpr int kH = kAcc / 2;
  cluster_sync();
  const unsigned dst = map_to_rank(base, rank ^ 1u);
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int i = 0; i < kH; ++i)
      st_cluster(dst + ((t * kH + i) * kConsumers + ctid) * 4, rank == 0 ? acc[t][kH + i] : acc[t][i]);
  cluster_sync();
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int i = 0; i < kH; ++i) {
      const float mine = rank == 0 ? acc[t][i] : acc[t][kH + i];
      acc[t][i] = mine + ring[(t * kH + i) * kConsumers + ctid];
      acc[t][kH + i] = 0.0f;
    }
  Prob q = p;
  if (rank != 0) {
    q.C += (long)(kBM / 2) * p.ldc;
    q.M = p.M - kBM / 2;
  }
  q.M = min(q.M, kBM / 2);
  flush(q, acc, row0, p.nsteps, ctid, flag);
}

// After the main loop (every thread of the cluster, producer warps too, passes both barriers): the
// blocks of rank r > 0 write their sums into slot r - 1 of rank 0's ring (idle by then; the space
// checks it holds kCL - 1 slots), rank 0 adds them and stores the tile (whole: no workspace).
KTUNE_DEVICE void cluster_reduce(const Prob& p, float (&acc)[kNT][kAcc], unsigned base,
                                 const float* ring, int row0, unsigned rank, int ctid,
                                 volatile unsigned* flag) {
  constexpr int kSlot = kNT * kAcc * kConsumers;  // floats
  if (kCL == 2 && kBM >= 16) {  // a pair: each block sums and stores half the A rows (scatter_reduce)
    scatter_reduce(p, acc, base, ring, row0, rank, ctid, flag);
    return;
  }
  cluster_sync();
  if (rank > 0) {
    const unsigned dst = map_to_rank(base, 0) + (rank - 1) * kSlot * 4;
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int i = 0; i < kAcc; ++i) st_cluster(dst + ((t * kAcc + i) * kConsumers + ctid) * 4, acc[t][i]);
  }
  cluster_sync();
  if (rank != 0) return;
  for (int r = 1; r < kCL; ++r)
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int i = 0; i < kAcc; ++i) acc[t][i] += ring[(r - 1) * kSlot + (t * kAcc + i) * kConsumers + ctid];
  flush(p, acc, row0, p.nsteps, ctid, flag);
}
#endif
