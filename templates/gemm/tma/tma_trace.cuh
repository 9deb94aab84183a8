// The TMA GEMM's per-phase trace (part of tma.cuh, inside its namespace kt): a probe build's
// instrument, off in every shipped kernel. With KT_TRACE = 1 (set here by a probe build of the tree,
// dev/trace_stage.sh) each block writes %clock64 stamps of its phases, per block and per unit
// (tile) of its schedule, plus %globaltimer at its entry and at its first consumer's end, into its
// row of the buffer passed as scale_a (the kernel then reads no scale through it; bf16 / f16 runs
// only), which gemm_bench --trace reads back (bench/gemm_bench_modes.h; dev/tma_trace_table.py
// makes the split). One thread per warpgroup stamps; no printf (a call serialises the wgmma
// pipeline, ptxas C7510). With KT_TRACE = 0 every KT_TR* is nothing.
#ifndef KT_TRACE
#define KT_TRACE 0
#endif
#if KT_TRACE
// A block's row: kTrHead words, then kTrTileWords per (unit, consumer) of its first kTrTiles units.
enum TraceWord : int {
  kTrEntry,    // thread 0 at entry (clock64; never 0 in a row that ran)
  kTrIssue0,   // the producer before its first stage's copies
  kTrLanded0,  // consumer 0 past the first stage's `full` (the first data landed)
  kTrEnd0,     // consumer 0 at its end (its last stores have read its buffer)
  kTrEnd1,     // consumer 1 at its end
  kTrGEntry,   // %globaltimer at kTrEntry (ns)
  kTrGEnd0,    // %globaltimer at kTrEnd0
  kTrSm,       // the block's SM
  kTrUnits,    // the block's units (tiles or tail pieces)
  kTrKtiles,   // k-tiles of a whole tile
  kTrHead
};
// Per (unit j, consumer c) at kTrHead + (j * 2 + c) * kTrTileWords (a unit of the other consumer
// in ping-pong stays 0):
enum TileWord : int {
  kTtStart,    // the unit's loop top (before its schedule and coordinates)
  kTtFirst,    // its first k-tile's wgmmas issued (committed)
  kTtIssued,   // its last k-tile's wgmmas issued
  kTtRetired,  // every wgmma of the unit retired (wait_group 0)
  kTtEpi,      // its C packed (deferred epilogue) or its stores issued
  kTtStored,   // deferred: its last piece's TMA store issued (during the next unit or at the end)
  kTrTileWords
};
constexpr int kTrTiles = 8, kTrBlocks = 4096;
constexpr int kTrWords = kTrHead + kTrTiles * 2 * kTrTileWords;  // 106: gemm_bench's kTraceRows
static_assert(kTrWords == 106, "gemm_bench's kTraceRows holds the row's width");
__shared__ unsigned long long* kt_tr_row;  // this block's row, or null (set by thread 0 at entry)
KTUNE_DEVICE void tr_put(int w, unsigned long long v) {
  if (kt_tr_row) kt_tr_row[w] = v;
}
KTUNE_DEVICE void tr_entry(const float* out) {
  const unsigned long long g = kgemm::trace_gtime(), c = kgemm::trace_clock();
  kt_tr_row = out && blockIdx.x < kTrBlocks
                  ? reinterpret_cast<unsigned long long*>(const_cast<float*>(out)) + blockIdx.x * kTrWords
                  : nullptr;
  tr_put(kTrEntry, c);
  tr_put(kTrGEntry, g);
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;\n" : "=r"(smid));
  tr_put(kTrSm, smid);
}
#define KT_TR_ENTRY(cond, out) \
  do {                          \
    if (cond) tr_entry(out);    \
  } while (0)
#define KT_TR(cond, w)                             \
  do {                                             \
    if (cond) tr_put(w, kgemm::trace_clock());     \
  } while (0)
#define KT_TRT(cond, j, c, w)                                                                   \
  do {                                                                                          \
    if ((cond) && (j) >= 0 && (j) < kTrTiles) tr_put(kTrHead + ((j) * 2 + (c)) * kTrTileWords + (w), kgemm::trace_clock()); \
  } while (0)
#define KT_TR_VALUE(cond, w, v) \
  do {                          \
    if (cond) tr_put(w, v);     \
  } while (0)
// The first stage's landing, stamped by consumer 0 (a second wait on a completed phase returns at once).
#define KT_TR_LANDED(cond, bar)  \
  do {                           \
    if (cond) {                  \
      mbar_wait(bar, 0);         \
      tr_put(kTrLanded0, kgemm::trace_clock()); \
    }                            \
  } while (0)
// The consumer's end: clock64, and for consumer 0 the globaltimer the reader converts with.
#define KT_TR_END(cond, cw)                                             \
  do {                                                                  \
    if (cond) {                                                         \
      const unsigned long long c_ = kgemm::trace_clock();               \
      tr_put((cw) == 0 ? kTrEnd0 : kTrEnd1, c_);                        \
      if ((cw) == 0) tr_put(kTrGEnd0, kgemm::trace_gtime());            \
    }                                                                   \
  } while (0)
#define KT_TR_SCALE_A nullptr  // the buffer is the trace's, not a scale
#else
#define KT_TR_ENTRY(cond, out) ((void)0)
#define KT_TR(cond, w) ((void)0)
#define KT_TRT(cond, j, c, w) ((void)0)
#define KT_TR_VALUE(cond, w, v) ((void)0)
#define KT_TR_LANDED(cond, bar) ((void)0)
#define KT_TR_END(cond, cw) ((void)0)
#define KT_TR_SCALE_A scale_a
#endif
