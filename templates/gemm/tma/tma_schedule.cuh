// The TMA GEMM's persistent schedule (part of tma.cuh, inside its namespace kt): which output tiles
// and which k-tile ranges each block works on. Plain C++ (KTUNE_DEVICE functions, no intrinsics):
// tests/unit/gemm_tma_schedule_test.cc includes it on the host and checks that every (tile, k-tile)
// is covered exactly once, that every split tile has one reducer and that the reducer's count of
// contributors is right, for many shapes and grids.
//
// Whole rounds: block `first` of `step` takes tiles first, first + step, ... below `whole` (the
// largest multiple of step). The tail (the `tail` tiles that do not fill a last round) is split
// stream-K style when SPLIT_K > 1: its tail * ktiles k-tiles, flattened tile by tile, are cut into
// `workers` contiguous, equal ranges (workers = min(step, tail * min(SPLIT_K, ktiles))), one per
// block. A range is never longer than a tile's K (workers >= tail), so it touches at most two
// tiles: the end of one (a contributor: its fp32 partials go to the block's workspace slot) and the
// start of the next (the reducer: it adds the partials of the blocks after it that cover the rest
// of that tile, then stores the tile). So each block contributes at most one partial tile per
// launch, and a reducer only waits for ranges that other blocks run first: no cycle. With
// tail * SPLIT_K <= step the ranges are exactly K / SPLIT_K (the plain split of a few tiles, e.g.
// M = 128); otherwise every block gets the same share of the tail, and the last round takes
// tail / step of a tile's time instead of a whole one (448 tiles on 132 SMs: 3.39 rounds instead
// of 4). Tails of more than 60% of a round stay whole (see make_sched).

struct Unit {
  int tile, kb, ke;  // output tile, k-tile range [kb, ke)
  int split, tail;   // split: 0 = stores the tile (whole or reducer), 1 = contributor; tail-tile index or -1
};

struct Sched {
  int first, step;  // this block's index among the `step` blocks (or clusters) of the grid
  int whole;        // tiles [0, whole) are taken whole, round robin
  int tail;         // tiles [whole, whole + tail) are split (0: none)
  int ktiles;
  int workers;      // blocks sharing the tail's k-tiles (0: no split)
  int nwhole;       // whole tiles of this block
  int pieces;       // tail pieces of this block (0, 1 or 2)
  long long lo, hi; // this block's range of the flattened tail k-tiles
};

KTUNE_DEVICE long long sched_start(const Sched& s, int b) {
  return static_cast<long long>(b) * s.tail * s.ktiles / s.workers;
}

KTUNE_DEVICE Sched make_sched(int ntiles, int ktiles, int first, int step, int split) {
  Sched s;
  s.first = first, s.step = step, s.ktiles = ktiles;
  s.whole = ntiles, s.tail = 0, s.workers = 0, s.pieces = 0, s.lo = 0, s.hi = 0;
  const int rest = ntiles % step;
  const int per = split < ktiles ? split : ktiles;
  // Only tails of at most 60% of a round are split: measured (bench/NOTES.md, issue 33),
  // sharing a tail of 68 of 132 tiles (8192^3) out over every block gained about 1%, one of
  // 116 of 132 (4096^3) lost 6%, one of 84 (64%, 3000x5000x1000: 16 k-tiles a tile) lost 10% (19%
  // for cluster pairs, 42 of 66, in a probe); a tail of 52 split in two gained 6% (1024x14336x4096).
  if (split > 1 && rest > 0 && per > 1 && rest * 5 <= step * 3) {
    s.whole = ntiles - rest;
    s.tail = rest;
    const long long w = static_cast<long long>(rest) * per;
    s.workers = w < step ? static_cast<int>(w) : step;
  }
  s.nwhole = first < s.whole ? (s.whole - 1 - first) / step + 1 : 0;
  if (s.workers > 0 && first < s.workers) {
    s.lo = sched_start(s, first);
    s.hi = sched_start(s, first + 1);
    const long long boundary = (s.lo / ktiles + 1) * ktiles;
    s.pieces = s.hi <= s.lo ? 0 : (s.hi > boundary ? 2 : 1);
  }
  return s;
}

KTUNE_DEVICE int sched_units(const Sched& s) { return s.nwhole + s.pieces; }

// The block's j-th unit (j < sched_units): its whole tiles first, then its tail pieces.
KTUNE_DEVICE Unit sched_unit(const Sched& s, int j) {
  Unit r;
  if (j < s.nwhole) {
    r.tile = s.first + j * s.step, r.kb = 0, r.ke = s.ktiles, r.split = 0, r.tail = -1;
    return r;
  }
  const long long boundary = (s.lo / s.ktiles + 1) * s.ktiles;
  const long long a = j == s.nwhole ? s.lo : boundary;
  const long long b = j == s.nwhole ? (s.hi < boundary ? s.hi : boundary) : s.hi;
  r.tail = static_cast<int>(a / s.ktiles);
  r.tile = s.whole + r.tail;
  r.kb = static_cast<int>(a - static_cast<long long>(r.tail) * s.ktiles);
  r.ke = static_cast<int>(b - static_cast<long long>(r.tail) * s.ktiles);
  r.split = r.kb == 0 ? 0 : 1;
  return r;
}

// The number of contributors to tail tile `t` whose reducer is this block: the blocks after it
// whose ranges start inside the tile (their slots are first + 1, first + 2, ...).
KTUNE_DEVICE int sched_contributors(const Sched& s, int t) {
  const long long end = static_cast<long long>(t + 1) * s.ktiles;
  int n = 0;
  for (int b = s.first + 1; b < s.workers && sched_start(s, b) < end; ++b) ++n;
  return n;
}
