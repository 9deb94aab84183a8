// The decode GEMM's consumer main loop and the cluster K split's k steps taken as they free up
// (part of decode_wg.cuh, inside namespace kd, after drain).
//
// DC_DK = 1 (the cluster K split, DC_GRID 4 / 5; TMA-fed, one producer warp): instead of block
// `rank` streaming the fixed part `rank` of its tile's k steps, the cluster's blocks take the steps
// as their rings free up: the first ring's stages are fixed and interleaved (block r: steps r,
// r + kCL, .., one per stage), then each producer takes the next step from a counter in the first
// block's shared memory (one atom.shared::cluster per stage, issued before the producer waits for
// the slot). A block whose stream lands later takes fewer steps, so the blocks' loops end together
// instead of the earlier one waiting at the cluster barrier for its peer's share (the 64/128-row
// hand-over phase was mostly that wait: bench/NOTES.md, issue 32). The partial sums are the same
// sums over another partition of K, so the reduction is unchanged. Words (the flag word and the one
// after it, unused on the cluster grids): +0 the cluster's counter (rank 0's, initialised to the
// fixed steps' count before the block barrier, published by a cluster arrive.release after it and
// read after the matching wait), +4 the block's stage count, written by the producer once a step past
// the tile's end comes back, before it arrives on that stage's `full` with no bytes: the consumers
// wake on it, read the count and leave the loop. Not with DC_XH (its early cluster arrival), DC_PP,
// DC_WP, A by cp.async (DC_PF 2) or the register split (DC_PF 3).
// The cluster barrier phase that publishes rank 0's counter: every thread arrives after the block
// barrier (dk_arrive) and waits once (dk_join) before its first claim or, at the latest, before
// cluster_reduce's barriers.
KTUNE_DEVICE void dk_arrive() {
  if constexpr (kDK) asm volatile("barrier.cluster.arrive.release;\n" ::: "memory");
}
KTUNE_DEVICE void dk_join() {
  if constexpr (kDK) asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory");
}
KTUNE_DEVICE void st_shared_u32(unsigned a, unsigned v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(a), "r"(v) : "memory");
}

#if DC_TMA
// The next k step of the cluster's tile (lane 0 of the producer warp; kPW 2: broadcast).
KTUNE_DEVICE int dk_claim(unsigned words) {
  int j = 0;
  if ((threadIdx.x & 31) == 0)
    asm volatile("atom.shared::cluster.add.u32 %0, [%1], 1;\n" : "=r"(j) : "r"(map_to_rank(words, 0u)) : "memory");
  if constexpr (kPW == 2) j = __shfl_sync(0xffffffffu, j, 0);
  return j;
}

// The producer's loop with DC_DK (produce_all's, from stage s0: DC_ST's produce_first issued the
// fixed stages before it): the warp (kPW 2) or the elected thread (pt 0) streams the steps it takes,
// then posts the count and the empty stage that ends the consumers' loop.
KTUNE_DEVICE void produce_dyn(const Prob& p, const TensorMap* tmW, const TensorMap* tmX, unsigned base,
                              unsigned full, unsigned empty, unsigned words, int tile, int pt, unsigned rank,
                              int s0) {
  bool joined = false;
  if (kPW == 2 || pt == 0) {
    int s = s0;
#pragma unroll 1
    for (;; ++s) {
      int j = (int)rank + s * kDkCL;  // the first ring's stages: fixed
      if (s >= kStages) {
        if (!joined) dk_join(), joined = true;
        j = dk_claim(words);
      }
      const int slot = s % kStages;
      if (s >= kStages) mbar_wait(empty + 8 * slot, ((s / kStages) - 1) & 1);
      if (j >= p.nsteps) break;
      if (kPW == 2 ? elect_one() : true)
        produce_tma(p, tmW, tmX, base + slot * kStageBytes, full + 8 * slot, tile * kBN, j * kBK, rank);
    }
    if ((threadIdx.x & 31) == 0) {  // the count before the arrival (release) that wakes the consumers
      st_shared_u32(words + 4, (unsigned)s);
      mbar_arrive(full + 8 * (s % kStages));
    }
  }
  if (!joined) dk_join();
}
#endif

// The consumers' main loop over the block's S units from u0 (DC_DK: until the producer's count),
// the sums in acc; on the grids that cut tiles each run ends in flush. `words`: DC_DK's.
KTUNE_DEVICE void consume_all(const Prob& p, float (&acc)[kNT][kAcc], unsigned base, unsigned full, unsigned empty,
                              long u0, int S, int tid, unsigned rank, volatile unsigned* flag) {
  for_each_acc(acc, tid, [](float& v, int, int) { v = 0.0f; });
  if constexpr (kWP) acc_fence(acc);
  [[maybe_unused]] int run = 0;  // units of the current run (tile) so far
  [[maybe_unused]] int held = -1;  // DC_WP: the slot whose wgmmas may still run, released a stage later
#pragma unroll 1
  for (int s = 0; kDK || s < S; ++s) {
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
    if (kDK && s >= reinterpret_cast<volatile int*>(flag)[1]) break;  // the producer's count
    DC_TR_FULL(tid == 0, s, S);
    if (kXA) ktune::fence_proxy_async();  // the producers' cp.async writes of A -> the async proxy
    const unsigned w = base + slot * kStageBytes;
    ktune::wgmma_fence();
    mma_stage<kAcc>(acc, w + wg_slab(tid) * 64 * 128, w + kWBytes + wg_group(tid) * 1024);
    ktune::wgmma_commit();
    DC_TS(tid == 0, s, kTsCommit);
    stage_issued(empty, slot, held, tid, rank);
    DC_TR_RELEASED(tid, s);
#if !DC_CLUSTER && !DC_MSPLIT
    ++run;
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
  dk_join();
}
