// DC_TAIL = 1 (a probe knob, not enumerated; the persistent grid DC_GRID = 6 of the TMA-fed body,
// one producer warp on its dividing path; part of decode_wg.cuh): the leftover tiles the grid
// does not divide (tiles mod grid, the ragged last wave of whole tiles: 224 tiles of 128 rows on
// 132 blocks leave 92) are split in k steps evenly over every block, and each block streams its
// share of them FIRST, then its whole tiles. A cut tile's partial sums meet through flush's
// workspace path (fp32 atomics, the tile's counter, the last block to complete it stores), which
// then runs while the ring streams the block's whole tiles instead of at the kernel's end, where
// nothing hid it (the earlier tail split, bench/NOTES.md, issue 32). The launch: min(units, SMs)
// blocks (so at fewer tiles than SMs every SM streams: stream-K), the workspace and one counter per
// tile when the grid does not divide the tiles.
#ifndef DC_TAIL
#define DC_TAIL 0
#endif
constexpr bool kTail = DC_GRID == 6 && DC_TAIL == 1;
static_assert(DC_TAIL == 0 || (kTail && DC_TMA && DC_PF == 1 && kPW == 0 && kST == 0),
              "DC_TAIL: DC_GRID 6, TMA-fed, DC_PF 1, DC_PW 0, no DC_ST");

// A block's units with DC_TAIL: [a0, a0 + n0) (its share of the leftover tiles' units), then
// a1, a1 + 1, .. (its whole tiles, contiguous).
struct TailRange {
  long a0;
  int n0;
  long a1, whole;  // whole: the block's whole tiles
};
KTUNE_DEVICE TailRange tail_range(const Prob& p) {
  const long tiles = (p.N + kBN - 1) / kBN, g = gridDim.x, whole = tiles / g;
  const long left = (tiles - whole * g) * p.nsteps, b = blockIdx.x;
  const long t0 = left * b / g, t1 = left * (b + 1) / g;
  return {whole * g * p.nsteps + t0, (int)(t1 - t0), b * whole * p.nsteps, whole};
}
// The block's unit s: u0 + s without DC_TAIL.
KTUNE_DEVICE long unit_at([[maybe_unused]] const TailRange& r, long u0, int s) {
  if constexpr (!kTail) return u0 + s;
  return s < r.n0 ? r.a0 + s : r.a1 + (s - r.n0);
}

// The C and bias lines of the block's tiles [u0, u1) into L2 (prefetch_out; DC_TAIL: its whole tiles).
KTUNE_DEVICE void prefetch_block_out(const Prob& p, [[maybe_unused]] const TailRange& r, long u0, long u1, int tid) {
  if constexpr (kTail) u0 = r.a1, u1 = r.a1 + r.whole * p.nsteps;
  if (kTail && u1 <= u0) return;
  for (int t = (int)(u0 / p.nsteps); t <= (int)((u1 - 1) / p.nsteps); ++t)
    prefetch_out(p, ACT == 3 ? t * kBN / 2 : t * kBN, ACT == 3 ? (t + 1) * kBN / 2 : (t + 1) * kBN, tid, kConsumers);
}
