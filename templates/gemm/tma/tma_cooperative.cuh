// The TMA GEMM's cooperative consumer (PINGPONG = 0: both consumer warpgroups on one tile, each on
// its WG_M x 64 rows; what it does and why: tma.cuh's header), included by tma.cuh where its kernel
// needs it: it uses that file's constants and helpers. tmC is the kernel's tensor map of C, used
// where c_tma_ok (else the warpgroup copies its staged boxes: store_boxes); ebuf is this
// warpgroup's C staging buffer.
KTUNE_DEVICE void consume_cooperative(const Sched& sc, int grid_m, int grid_n, int rank,
                                      unsigned sA, unsigned sB, unsigned full, unsigned empty,
                                      const TensorMap* tmC, bool c_tma_ok, unsigned ebuf, out_t* C,
                                      const out_t* bias, int M, int N, long ldc, float alpha,
                                      float beta, float* workspace, unsigned* counters, int cw,
                                      int tid) {
#if SPLIT_K == 1
  (void)workspace, (void)counters;
#endif
  const int lane = tid & 31, warp = (tid >> 5) & 3, g = lane >> 2, q = lane & 3;
  // Without a tensor map of C the warpgroup copies its staged boxes itself (store_boxes).
  const TensorMap* tmc = c_tma_ok ? tmC : nullptr;
  float acc[kWgM][kAcc];
  unsigned others[kOthers] = {};
#if CLUSTER_M > 1
#pragma unroll
  for (int r = 1; r < kCluster; ++r)
    others[r - 1] = map_to_rank(empty, static_cast<unsigned>(rank ^ r));
#endif
#if KT_DEFER
  // The previous tile's packed C (tma_epilogue.cuh): `pend` pieces left, stored from the next
  // k-loop; ppar: the buffer box of its first piece (flush_piece), npar the next tile's.
  unsigned pk[kWgM][kAcc / 2];
  int pend = 0, pm0 = 0, pn0 = 0, ppar = 0, npar = 0;
#endif
  const int units = sched_units(sc);
  // The stage ring's position (slot, phase, descriptors; stepped per k-tile) and the slot of the
  // previous k-tile (released once its wgmma group has finished).
  const Descs d0 = stage_descs(sA, sB, cw);
  Ring r = ring_at(d0, 0);
  unsigned prev = 0;
  const bool lead = (tid & 127) == 0;  // the warpgroup's stamping thread (tma_trace.cuh)
  (void)lead;
  // The next unit's schedule and coordinates, worked out while the current unit's last MMAs run
  // (below), so the tile switch is the drain, the packing and the first issue only (bench/NOTES.md:
  // the per-phase trace put the switch at 1.5 K cycles with them after the drain, 1.0 K before).
  Unit nun = units > 0 ? sched_unit(sc, 0) : Unit{};
  int nm0 = 0, nn0 = 0;
  if (units > 0) tile_coords(nun.tile, grid_m, grid_n, rank, nm0, nn0);
  for (int j = 0; j < units; ++j) {
    KT_TRT(lead, j, cw, kTtStart);
    const Unit un = nun;
    const int m0 = nm0, n0 = nn0;
    // The unit's first k-tile, peeled: its first MMAs overwrite the accumulators (mma_ktile<true>),
    // so they are neither zeroed at the tile switch nor live beside the packed C before it; a unit
    // without k-tiles (K = 0) zeroes them.
    int kt = un.kb;
    if (kt < un.ke) {
      KT_TR_LANDED(j == 0 && tid == 128, full + 8 * r.s);
      mma_ktile<true>(acc, full + 8 * r.s, r.ph, r.d.a, r.d.b);
      KT_TRT(lead, j, cw, kTtFirst);
#if KT_DEFER
      if (pend > 0)
        flush_pieces(pk, 0, tmc, ebuf, C, pm0, pn0, M, N, ldc, warp, g, q, tid & 127, 1 + cw, ppar);
      KT_TRT(lead && pend == 1, j - 1, cw, kTtStored);
#endif
      ktune::wgmma_wait<1>();
      ++kt, prev = r.s;
      ring_step(r, d0);
    } else {
#pragma unroll
      for (int w = 0; w < kWgM; ++w)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) acc[w][i] = 0.0f;
    }
    for (; kt < un.ke; ++kt) {
      mma_ktile(acc, full + 8 * r.s, r.ph, r.d.a, r.d.b);
#if KT_DEFER
      // One piece of the previous tile's C while this k-tile's MMAs run (every kPieceStride-th).
      const int o = kt - un.kb;
      if (o % kPieceStride == 0 && o / kPieceStride < pend)
        flush_pieces(pk, o / kPieceStride, tmc, ebuf, C, pm0, pn0, M, N, ldc, warp, g, q, tid & 127,
                     1 + cw, ppar);
      KT_TRT(lead && o == (pend - 1) * kPieceStride, j - 1, cw, kTtStored);
#endif
      ktune::wgmma_wait<1>();
      // The wgmma group of the previous k-tile has finished reading its slot: hand it back.
      if (lane == 0) release_slot(empty, others, prev);
      prev = r.s;
      ring_step(r, d0);
    }
    KT_TRT(lead, j, cw, kTtIssued);
    // The next unit's schedule, coordinates and first stage while this unit's last MMAs run.
    if (j + 1 < units) {
      nun = sched_unit(sc, j + 1);
      tile_coords(nun.tile, grid_m, grid_n, rank, nm0, nn0);
      if (nun.ke > nun.kb) mbar_wait(full + 8 * r.s, r.ph);
    }
    ktune::wgmma_wait<0>();
    KT_TRT(lead, j, cw, kTtRetired);
    if (un.ke > un.kb && lane == 0) release_slot(empty, others, prev);
#if KT_DEFER
    // A unit shorter than the pieces.
    for (int p = (un.ke - un.kb + kPieceStride - 1) / kPieceStride; p < pend; ++p)
      flush_piece_at(pk, p, tmc, ebuf, C, pm0, pn0, M, N, ldc, warp, g, q, tid & 127, 1 + cw, ppar);
    pend = 0;
#endif
#if SPLIT_K > 1
    if (un.tail >= 0 && !splitk_exchange(acc, un, sc, workspace, counters, cw, tid)) continue;
#endif
#if KT_DEFER
    pm0 = m0 + cw * kWgM * 64, pn0 = n0, pend = kPieces, ppar = npar;
    if (!kAltBox) npar ^= 1;
    pack_tile(acc, pk, C, bias, pm0, n0, warp, g, q, M, N, ldc, alpha, beta);
#else
    store_tile(acc, tmc, ebuf, C, bias, m0 + cw * kWgM * 64, n0, warp, g, q, tid & 127, 1 + cw, M,
               N, ldc, alpha, beta);
#endif
    KT_TRT(lead, j, cw, kTtEpi);
  }
#if KT_DEFER
  for (int p = 0; p < pend; ++p)
    flush_piece_at(pk, p, tmc, ebuf, C, pm0, pn0, M, N, ldc, warp, g, q, tid & 127, 1 + cw, ppar);
  KT_TRT(lead && pend > 0, units - 1, cw, kTtStored);
#endif
}
