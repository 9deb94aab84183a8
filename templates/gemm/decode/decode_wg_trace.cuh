// The decode GEMM's per-phase trace (part of decode_wg.cuh, inside namespace kd): a probe build's
// instrument, off in every shipped kernel. With DC_TRACE = 1 (set here by a probe build of the tree,
// dev/decode/trace_stage.sh) each block records %clock64 at its phases into a device array (one
// row per block, rewritten every launch) and %globaltimer at its entry and exit; at its end the
// block's first consumer thread copies its row into the buffer passed as scale_a (the TMA tail's
// first float pointer, unread by this kernel; null: nothing copied), which gemm_bench --trace
// reads back (bench/gemm_bench_modes.h; dev/decode/trace_table.py makes the phase split). No
// printf: a call in the kernel serialises its wgmma pipeline (ptxas C7510). With DC_TRACE = 0,
// DC_TR(...) is nothing. DC_TRACE = 2 (dev/decode/trace_stage.sh VALUE=2) also stamps the ring's
// first kTsStages stages of each block (the producer's empty wait and issue, consumer thread 0's
// full wait, wgmma issue and completion, the last consumer warp's release: StageEvent) into the
// row's stage words, which dev/decode/trace_stages.py turns into per-stage latencies and the ring's
// occupancy; at 1 those words stay 0.
#ifndef DC_TRACE
#define DC_TRACE 0
#endif
#if DC_TRACE
// A block's row: clock64 stamps (a slot left 0 did not happen in this kernel), the two
// globaltimers, its SM and cluster rank.
enum TraceEvent : int {
  kTrEntry,        // thread 0 at entry
  kTrPrologue,     // thread 0 after the block barrier (barriers initialised, prefetches issued)
  kTrIssue0,       // the producer's elected thread before its first stage's boxes
  kTrRingIssued,   // ... after the ring's last first-round stage (every slot in flight)
  kTrFirstEmpty,   // ... after its first wait on a released slot
  kTrLastIssue,    // ... after its last stage's boxes
  kTrFull0,        // thread 0 past the first stage's `full` (the first weights landed)
  kTrFull1,        // ... past the second's
  kTrFullLast,     // ... past the last's
  kTrLoopEnd,      // ... after the last stage's wgmmas completed
  kTrRed1,         // ... past the reduction's first cluster barrier
  kTrRed2,         // ... past its second (the peers' sums are in)
  kTrStore0,       // ... before the epilogue's stores
  kTrDone,         // ... after every consumer thread's stores were issued (a consumer barrier)
  kTrGEntry,       // %globaltimer at entry (ns)
  kTrGExit,        // %globaltimer at kTrDone
  kTrSm,           // the block's SM (%smid)
  kTrRank,         // its rank in the cluster (0 without one)
  kTrEvents        // 18: gemm_bench's kTraceEvents
};
// A stage's words (DC_TRACE = 2; clock64, 0: not stamped).
enum StageEvent : int {
  kTsTop,     // the producer's elected thread at the stage's top (before its wait on `empty`)
  kTsGo,      // ... past that wait (the slot released), before the stage's expect_tx and boxes
  kTsIssued,  // ... after its boxes were issued
  kTsWait,    // consumer thread 0 before its wait on the stage's `full`
  kTsFull,    // ... past it (the stage's bytes landed)
  kTsCommit,  // ... after the stage's wgmmas were issued and committed
  kTsDone,    // ... after its wgmma wait and its warp's release of the slot
  kTsRel,     // the last consumer warp's lane 0 after its release (the slot's last arrival)
  kTsWords    // 8
};
constexpr int kTsStages = 32;  // stages stamped per block (the row's words for them whatever DC_TRACE)
constexpr int kTrRow = kTrEvents + kTsStages * kTsWords;  // 274: gemm_bench's decode row
constexpr int kTrBlocks = 4096;  // blocks traced (grids larger than this trace their first ones)
__device__ unsigned long long dc_trace_buf[kTrBlocks][kTrRow];
KTUNE_DEVICE void tr_put(int e, unsigned long long v) {
  if (blockIdx.x < kTrBlocks) dc_trace_buf[blockIdx.x][e] = v;
}
KTUNE_DEVICE void ts_put(int s, int e) {
  if (blockIdx.x < kTrBlocks) dc_trace_buf[blockIdx.x][kTrEvents + s * kTsWords + e] = kgemm::trace_clock();
}
// Every thread at entry: its share of the block's stage words cleared (before the block barrier).
KTUNE_DEVICE void ts_clear() {
  if (DC_TRACE < 2 || blockIdx.x >= kTrBlocks) return;
  for (int i = threadIdx.x; i < kTsStages * kTsWords; i += blockDim.x) dc_trace_buf[blockIdx.x][kTrEvents + i] = 0ull;
}
// Every consumer thread at exit (after the consumers' barrier): its share of the stage words into
// out's row.
KTUNE_DEVICE void ts_out(const float* out) {
  if (DC_TRACE < 2 || out == nullptr || blockIdx.x >= kTrBlocks) return;
  unsigned long long* o = reinterpret_cast<unsigned long long*>(const_cast<float*>(out)) + blockIdx.x * kTrRow;
  for (int i = threadIdx.x; i < kTsStages * kTsWords; i += kConsumers)
    o[kTrEvents + i] = *(const volatile unsigned long long*)&dc_trace_buf[blockIdx.x][kTrEvents + i];
}
// Entry (thread 0): the block's row cleared, then its entry stamps.
KTUNE_DEVICE void tr_entry() {
  const unsigned long long g = kgemm::trace_gtime(), c = kgemm::trace_clock();
  for (int e = 0; e < kTrEvents; ++e) tr_put(e, 0ull);
  tr_put(kTrEntry, c);
  tr_put(kTrGEntry, g);
}
// Exit (thread 0, after the consumers' barrier): the last stamps, the SM and cluster rank, and the
// row into out[block][kTrEvents] (raw values; the reader takes the offsets).
KTUNE_DEVICE void tr_exit(unsigned rank, const float* out) {
  tr_put(kTrDone, kgemm::trace_clock());
  tr_put(kTrGExit, kgemm::trace_gtime());
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;\n" : "=r"(smid));
  tr_put(kTrSm, smid);
  tr_put(kTrRank, rank);
  if (out == nullptr || blockIdx.x >= kTrBlocks) return;
  unsigned long long* o = reinterpret_cast<unsigned long long*>(const_cast<float*>(out)) + blockIdx.x * kTrRow;
  const volatile unsigned long long* b = dc_trace_buf[blockIdx.x];
  for (int e = 0; e < kTrEvents; ++e) o[e] = b[e];
}
#define DC_TR(cond, e) \
  do {                 \
    if (cond) tr_put(e, kgemm::trace_clock()); \
  } while (0)
#define DC_TR_ENTRY(cond) \
  do {                    \
    ts_clear();           \
    if (cond) tr_entry(); \
  } while (0)
// DC_TRACE = 2: stage s's event e (StageEvent) when `cond`, for the first kTsStages stages.
#define DC_TS(cond, s, e)                                  \
  do {                                                     \
    if (DC_TRACE >= 2 && (cond) && (s) < kTsStages) ts_put(s, e); \
  } while (0)
// The kernel's scale_a parameter (the TMA tail's first float pointer): the trace's output.
#define DC_TR_OUT_PARAM dc_trace_out
#if DC_TMA
#define DC_TR_OUT_PTR dc_trace_out
#else
#define DC_TR_OUT_PTR nullptr
#endif
#define DC_TR_EXIT(cond, rank)                 \
  do {                                         \
    consumers_sync();                          \
    ts_out(DC_TR_OUT_PTR);                     \
    if (cond) tr_exit(rank, DC_TR_OUT_PTR);    \
  } while (0)
#else
#define DC_TR(cond, e) ((void)0)
#define DC_TS(cond, s, e) ((void)0)
#define DC_TR_ENTRY(cond) ((void)0)
#define DC_TR_OUT_PARAM
#define DC_TR_EXIT(cond, rank) ((void)0)
#endif
// The kernel's stamp sites: the producer past its `empty` wait (`lead`: the elected thread) and
// after its boxes, consumer thread 0 past `full`, the consumers after a stage's release.
#define DC_TR_GO(lead, s)                            \
  do {                                               \
    DC_TR((lead) && (s) == kStages, kTrFirstEmpty);  \
    DC_TR((lead) && (s) == 0, kTrIssue0);            \
    DC_TS(lead, s, kTsGo);                           \
  } while (0)
#define DC_TR_ISSUED(lead, s, S)                                               \
  do {                                                                         \
    DC_TS(lead, s, kTsIssued);                                                 \
    DC_TR((lead) && (s) == ((S) < kStages ? (S) : kStages) - 1, kTrRingIssued); \
    DC_TR((lead) && (s) == (S) - 1, kTrLastIssue);                             \
  } while (0)
#define DC_TR_FULL(t0, s, S)                  \
  do {                                        \
    DC_TS(t0, s, kTsFull);                    \
    DC_TR((t0) && (s) == 0, kTrFull0);        \
    DC_TR((t0) && (s) == 1, kTrFull1);        \
    DC_TR((t0) && (s) == (S) - 1, kTrFullLast); \
  } while (0)
#define DC_TR_RELEASED(tid, s)                   \
  do {                                           \
    DC_TS((tid) == 0, s, kTsDone);               \
    DC_TS((tid) == kConsumers - 32, s, kTsRel);  \
  } while (0)
