// The decode GEMM's producers' per-stage copies (part of decode_wg.cuh, inside namespace kd): the
// TMA-fed body's boxes (DC_WG = 2: produce_tma, and with DC_PF = 2 produce_x's cp.async A rows),
// or the cp.async ring's copies and its producer loop (DC_WG = 1: produce, produce_all).
#if DC_TMA
// The weight row of weight box b of the tile at row0 (N: past the end, a box of zeros).
KTUNE_DEVICE int tile_row(const Prob& p, int row0, int n);
KTUNE_DEVICE int box_row(const Prob& p, int row0, int b) {
  const int r = tile_row(p, row0, b * kWBox);
  return r < 0 ? p.N : r;
}

// One stage by the elected producer thread: its byte count on `bar`, then the boxes in the layout
// of produce() below (a row's kU boxes back to back: one longer DRAM run per row). kPairBox: box b
// is the pair map's (32 gate rows from j0 and their up rows; past N/2 zeros).
// DC_MSPLIT: block `rank` issues the weight boxes of its parity to both blocks and its own A rows.
KTUNE_DEVICE void produce_tma(const Prob& p, const TensorMap* tmW, const TensorMap* tmA, unsigned w,
                              unsigned bar, int row0, int k0, unsigned rank) {
  mbar_expect_tx(bar, kXA ? kWBytes : kStageBytes);
  const unsigned long long wpol = kEF ? l2_evict_first() : 0;
  (void)wpol;
#pragma unroll
  for (int b = 0; b < kBN / kWBox; ++b)
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const unsigned dst = w + u * kBN * 128 + b * kWBox * 128;
      const int c0 = k0 + u * 64, j0 = row0 / 2 + b * 32;  // j0: kPairBox's pair row (tile_row)
#if DC_MSPLIT
      if (((b * kU + u) & 1) == (int)rank) {
        if constexpr (kPairBox) tma_load_pair<true>(dst, tmW, c0, j0, bar);
        else tma_load_2d_pair(dst, tmW, c0, box_row(p, row0, b), bar);
      }
#else
      if constexpr (kPairBox) tma_load_pair<false, (kEF > 0)>(dst, tmW, c0, j0, bar, wpol);
      else if constexpr (kEF > 0) tma_load_2d_hint(dst, tmW, c0, box_row(p, row0, b), bar, wpol);
      else tma_load_2d(dst, tmW, c0, box_row(p, row0, b), bar);
#endif
    }
  if (kXA) return;  // A by produce_x
#pragma unroll
  for (int xb = 0; xb < kBM / kXBox; ++xb)
#pragma unroll
    for (int u = 0; u < kU; ++u)
      tma_load_2d(w + kWBytes + u * kBM * 128 + xb * kXBox * 128, tmA, k0 + u * 64,
                  (DC_MSPLIT ? (int)rank * kBM : 0) + xb * kXBox, bar);
}
// DC_ST = 1: the elected producer thread initialises the barriers and issues the ring's first stages
// (at most 4: a deeper ring's first round, issued by one thread, kept the consumers at the block
// barrier after the first stage landed) before the block barrier, after the programmatic-launch wait
// (A may be the last kernel's output); produce_all goes on from there (returned: the stages issued).
// At 64/128 rows (DC_MT >= 8, the warp-converged path kPW 2; DC_CW 2 too) the units are stepped: a
// lone thread's 64-bit division per stage (~0.1 us) would hold back each later stage's boxes; not
// with the row-split pair (its first multicast needs the peer's barriers: its cluster barrier).
KTUNE_DEVICE void init_barriers(unsigned full, unsigned empty, unsigned red, unsigned rank);
KTUNE_DEVICE int produce_first(const Prob& p, const TensorMap* tmW, const TensorMap* tmX, unsigned base,
                               unsigned full, unsigned empty, unsigned red, long u0, int S, unsigned rank) {
  init_barriers(full, empty, red, rank);
  KTUNE_PDL_WAIT();
  const int n = min(S, min(kStages, 4));
  int tile = (int)(u0 / p.nsteps), st = (int)(u0 - (long)tile * p.nsteps);  // kPW 2: stepped
#pragma unroll 1
  for (int s = 0; s < n; ++s) {
    if (kPW == 0) {
      const long u = u0 + s;
      tile = (int)(u / p.nsteps), st = (int)(u - (long)tile * p.nsteps);
    }
    DC_TR(s == 0, kTrIssue0);
    produce_tma(p, tmW, tmX, base + s * kStageBytes, full + 8 * s, tile * kBN, st * kBK, rank);
    if (kPW != 0 && ++st == p.nsteps) st = 0, ++tile;
  }
  return n;
}
// kXA: one stage's A rows by producer thread t (cp.async, 16 bytes, zero-filled past M and K) in
// the layout of the A boxes (the 128-byte swizzle: chunk c of row r at c ^ (r % 8)); a row's 8*kU
// chunks on consecutive threads, as in produce() below.
KTUNE_DEVICE void produce_x(const Prob& p, unsigned x, int k0, int t) {
  constexpr int kPer = 8 * kU, kStep = kProducers / kPer;  // chunks per row; rows per pass
  static_assert(!kXA || kProducers % kPer == 0, "a pass must cover whole rows");
  const int c = t & 7, u = (t >> 3) % kU, k = k0 + u * 64 + c * 8;
  const bool kin = k < p.K;
#pragma unroll 4
  for (int r = t / kPer; r < kBM; r += kStep) {
    const bool ok = kin && r < p.M;
    cp16(x + u * kBM * 128 + r * 128 + ((c ^ (r & 7)) << 4), ok ? p.A + (long)r * p.lda + k : p.A,
         ok ? 16 : 0);
  }
}
#else
// One stage's copies by producer thread t: the tile's weight rows (row r of the tile is weight row
// weight_row(p, row0, r)) and the A rows, k0 .. k0+kBK. A row's 8*kU 16-byte chunks sit on
// consecutive threads, so each thread keeps one chunk (c, u) and steps over rows: no index
// division per copy (one producer warp is issue-bound on its address arithmetic, bench/NOTES.md).
KTUNE_DEVICE void produce(const Prob& p, unsigned w, unsigned x, int row0, int k0, int t) {
  constexpr int kPer = 8 * kU, kStep = kProducers / kPer;  // chunks per row; rows per pass
  static_assert(kProducers % kPer == 0, "a pass must cover whole rows");
  const int c = t & 7, u = (t >> 3) % kU, k = k0 + u * 64 + c * 8;
  const bool kin = k < p.K;
#pragma unroll 4
  for (int r = t / kPer; r < kBN; r += kStep) {
    const int n = weight_row(p, row0, r);
    const bool ok = kin && n >= 0;
    cp16(w + u * kBN * 128 + r * 128 + ((c ^ (r & 7)) << 4), ok ? p.B + (long)n * p.ldb + k : p.B,
         ok ? 16 : 0);
  }
#pragma unroll 2
  for (int r = t / kPer; r < kBM; r += kStep) {
    const bool ok = kin && r < p.M;
    cp16(x + u * kBM * 128 + r * 128 + ((c ^ (r & 7)) << 4), ok ? p.A + (long)r * p.lda + k : p.A,
         ok ? 16 : 0);
  }
}

// The producer warp(s), thread pt: S units from u0 by cp.async, 2*DC_DEPTH - 1 stages in flight
// behind the one just issued (each stage's `full` arrival once its copies landed).
KTUNE_DEVICE void produce_all(const Prob& p, unsigned base, unsigned full, unsigned empty, long u0,
                              int S, int pt) {
  constexpr int kLag = kStages - 1;
#pragma unroll 1
  for (int s = 0; s < S; ++s) {
    const int slot = s % kStages;
    if (s >= kStages) mbar_wait(empty + 8 * slot, ((s / kStages) - 1) & 1);
    const long u = u0 + s;
    const int tile = (int)(u / p.nsteps), st = (int)(u - (long)tile * p.nsteps);
    const unsigned w = base + slot * kStageBytes;
    produce(p, w, w + kWBytes, tile * kBN, st * kBK, pt);
    ktune::cp_async_commit();
    if (s >= kLag) {
      ktune::cp_async_wait<kLag>();
      ktune::fence_proxy_async();
      mbar_arrive(full + 8 * ((s - kLag) % kStages));
    }
  }
  ktune::cp_async_wait<0>();
  ktune::fence_proxy_async();
  for (int s = S > kLag ? S - kLag : 0; s < S; ++s) mbar_arrive(full + 8 * (s % kStages));
}
#endif
