// The TMA GEMM's ping-pong consumer (PINGPONG = 1; what it does and why: tma.cuh's header),
// included by tma.cuh where its kernel needs it: it uses that file's constants and helpers.
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
  const Descs d0 = stage_descs(sA, sB, cw);
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
    // The ring's slot, phase and descriptors, stepped per k-tile (ring_at divides once per tile).
    Ring r = ring_at(d0, it);
    unsigned prev = 0;
    for (int kt = un.kb; kt < un.ke; ++kt) {
      mma_ktile(acc, full + 8 * r.s, r.ph, r.d.a, r.d.b);
      KT_TRT((tid & 127) == 0 && kt == un.kb, j, cw, kTtFirst);
      ktune::wgmma_wait<1>();
      if (kt > un.kb && lane == 0) mbar_arrive(empty + 8 * prev);
      prev = r.s;
      ring_step(r, d0);
    }
    it += un.ke - un.kb;
    // Every MMA of this tile is issued: the other consumer's turn, while this one drains and
    // stores (the next unit, if any, is the other's).
    if (j + 1 < units) bar_arrive_named(3 + (cw ^ 1), 256);
    KT_TRT((tid & 127) == 0, j, cw, kTtIssued);
    ktune::wgmma_wait<0>();
    KT_TRT((tid & 127) == 0, j, cw, kTtRetired);
    if (un.ke > un.kb && lane == 0) mbar_arrive(empty + 8 * prev);
    store_tile(acc, tmC, ebuf, C, bias, m0, n0, warp, g, q, tid & 127, 1 + cw, M, N, ldc, alpha,
               beta);
    KT_TRT((tid & 127) == 0, j, cw, kTtEpi);
  }
}
