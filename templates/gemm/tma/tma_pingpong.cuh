// The TMA GEMM's ping-pong consumer, included by tma.cuh where its kernel needs it: it uses that
// file's constants and helpers.
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
KTUNE_DEVICE void bar_arrive_named(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The ping-pong consumer (PINGPONG = 1, see the header): units j = cw, cw + 2, ... of the block's
// schedule, each a whole tile of this warpgroup; `it` counts every k-tile of the ring, the other
// consumer's included. Named barrier 3 + cw completes when the other consumer has issued all MMAs
// of the previous unit (its 128 arrivals + this warpgroup's 128); consumer 1's arrival at the start
// stands for a unit -1, so arrivals and waits pair up exactly for any unit count.
KTUNE_DEVICE void consume_pingpong(const Sched& sc, int grid_m, int grid_n, unsigned sA, unsigned sB,
                                   unsigned full, unsigned empty, const TensorMap* tmC,
                                   unsigned ebuf, out_t* C, const out_t* bias, int M, int N,
                                   long ldc, float alpha, float beta, int cw, int tid) {
  const int lane = tid & 31, warp = (tid >> 5) & 3, g = lane >> 2, q = lane & 3;
  const int units = sched_units(sc);
  float acc[kWgM][kAcc];
  if (cw == 1 && units > 0) bar_arrive_named(3, 256);
  unsigned it = 0;
  for (int j = 0; j < units; ++j) {
    const Unit un = sched_unit(sc, j);
    if ((j & 1) != cw) {  // the other consumer's tile: skip its k-tiles in the ring
      it += un.ke - un.kb;
      continue;
    }
    KT_TRT((tid & 127) == 0, j, cw, kTtStart);
    KT_TR_LANDED(j == 0 && tid == 128, full);
    int m0, n0;
    tile_coords(un.tile, grid_m, grid_n, 0, m0, n0);
#pragma unroll
    for (int w = 0; w < kWgM; ++w)
#pragma unroll
      for (int i = 0; i < kAcc; ++i) acc[w][i] = 0.0f;
    bar_named(3 + cw, 256);  // the other consumer's MMAs are all issued: the pipe is ours
    for (int kt = un.kb; kt < un.ke; ++kt, ++it) {
      const unsigned s = it % kStages;
      mma_ktile(acc, full + 8 * s, (it / kStages) & 1u, sA + s * kATile * kElem,
                sB + s * kBTile * kElem, cw);
      KT_TRT((tid & 127) == 0 && kt == un.kb, j, cw, kTtFirst);
      ktune::wgmma_wait<1>();
      if (kt > un.kb && lane == 0) mbar_arrive(empty + 8 * ((it - 1) % kStages));
    }
    // Every MMA of this tile is issued: the other consumer's turn, while this one drains and
    // stores (the next unit, if any, is the other's).
    if (j + 1 < units) bar_arrive_named(3 + (cw ^ 1), 256);
    KT_TRT((tid & 127) == 0, j, cw, kTtIssued);
    ktune::wgmma_wait<0>();
    KT_TRT((tid & 127) == 0, j, cw, kTtRetired);
    if (un.ke > un.kb && lane == 0) mbar_arrive(empty + 8 * ((it - 1) % kStages));
    store_tile(acc, tmC, ebuf, C, bias, m0, n0, warp, g, q, tid & 127, 1 + cw, M, N, ldc, alpha,
               beta);
    KT_TRT((tid & 127) == 0, j, cw, kTtEpi);
  }
}
