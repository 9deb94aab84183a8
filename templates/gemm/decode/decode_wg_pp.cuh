// The decode GEMM's ping-pong consumers (part of decode_wg.cuh, inside namespace kd, after
// release_slot; DC_TMA with DC_PP = 1, DC_CW = 2, the cluster K split).
#if DC_PP
// DC_PP = 1: consumer warpgroup g runs stages g, g + 2, ... of the block's S over every A row (its
// sums of all 8*DC_MT rows in al), then the warpgroups trade through the idle ring: g keeps its row
// groups j with j % 2 == g and adds the peer's sums of them, into acc as DC_CW = 2 holds them.
KTUNE_DEVICE void consume_pp(float (&acc)[kNT][kAcc], unsigned base, unsigned full, unsigned empty, int S,
                             int tid, unsigned rank, float* ring) {
  const int g = tid >> 7;
  float al[kNT][2 * kAcc];
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int a = 0; a < 2 * kAcc; ++a) al[t][a] = 0.0f;
#pragma unroll 1
  for (int s = g; s < S; s += 2) {
    const int slot = s % kStages;
    DC_TS((tid & 127) == 0, s, kTsWait);
    mbar_wait(full + 8 * slot, (s / kStages) & 1);
    DC_TS((tid & 127) == 0, s, kTsFull);
    const unsigned w = base + slot * kStageBytes;
    ktune::wgmma_fence();
    mma_stage<2 * kAcc, true>(al, w, w + kWBytes);
    ktune::wgmma_commit();
    DC_TS((tid & 127) == 0, s, kTsCommit);
    ktune::wgmma_wait<0>();
    release_slot(empty, slot, tid, rank);
    DC_TS((tid & 127) == 0, s, kTsDone);
    DC_TS((tid & 127) == 96, s, kTsRel);
  }
  consumers_sync();  // both warpgroups' wgmmas done: the ring is idle
  float* x = ring + tid;  // value i of a thread at x[i * kConsumers]; the peer's at (tid ^ 128)
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int a = 0; a < kAcc; ++a) {  // a = jj*4 + e: the peer's row group 2*jj + (1 - g)
      const int j = a >> 2, e = a & 3;
      x[(t * kAcc + a) * kConsumers] = g ? al[t][8 * j + e] : al[t][8 * j + 4 + e];
    }
  consumers_sync();
  const float* y = ring + (tid ^ 128);
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int a = 0; a < kAcc; ++a) {
      const int j = a >> 2, e = a & 3;
      acc[t][a] = (g ? al[t][8 * j + 4 + e] : al[t][8 * j + e]) + y[(t * kAcc + a) * kConsumers];
    }
  consumers_sync();  // every read done before the cluster's reduction writes the ring
  (void)base;
}
#endif
