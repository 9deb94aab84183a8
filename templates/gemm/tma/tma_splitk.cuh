// The TMA GEMM's split tail exchange (SPLIT_K > 1; the schedule is tma_schedule.cuh), included by
// tma.cuh where its kernel needs it: it uses that file's constants and helpers.
// A split tail piece (see tma_schedule.cuh): a contributor leaves this warpgroup's partial sums in
// its block's workspace slot and counts them (false: nothing to store); the reducer waits for the
// count of its contributors, adds their slots into acc (zeroing them for the next launch) and
// stores the tile.
KTUNE_DEVICE bool splitk_exchange(float (&acc)[kWgM][kAcc], const Unit& un, const Sched& sc,
                                  float* workspace, unsigned* counters, int cw, int tid) {
  // One slot per (block, consumer): a block contributes at most one partial tile per launch.
  constexpr int kSlot = kWgM * kAcc * 128;  // floats
  const int wt = tid & 127;
  unsigned* ctr = counters + un.tail * kCons + cw;
  if (un.split > 0) {
    float4* dst = reinterpret_cast<float4*>(workspace + (long)(sc.first * kCons + cw) * kSlot);
#pragma unroll
    for (int w = 0; w < kWgM; ++w)
#pragma unroll
      for (int i = 0; i < kAcc; i += 4)
        __stcg(dst + ((w * kAcc + i) / 4) * 128 + wt,
               make_float4(acc[w][i], acc[w][i + 1], acc[w][i + 2], acc[w][i + 3]));
    bar_named(1 + cw, 128);  // every thread's partials are written ...
    if (wt == 0) {
      __threadfence();  // ... and visible device-wide before the count (release)
      atomicAdd(ctr, 1u);
    }
    return false;  // the reducer stores the tile
  }
  const int nc = sched_contributors(sc, un.tail);
  if (nc == 0) return true;
  if (wt == 0) {
    while (ld_acquire(ctr) < static_cast<unsigned>(nc)) {
    }
    *ctr = 0;  // nobody else touches it in this launch
  }
  bar_named(1 + cw, 128);
  for (int b = sc.first + 1; b <= sc.first + nc; ++b) {
    float4* src = reinterpret_cast<float4*>(workspace + (long)(b * kCons + cw) * kSlot);
#pragma unroll
    for (int w = 0; w < kWgM; ++w)
#pragma unroll
      for (int i = 0; i < kAcc; i += 4) {
        float4* p = src + ((w * kAcc + i) / 4) * 128 + wt;
        const float4 v = __ldcg(p);
        acc[w][i] += v.x, acc[w][i + 1] += v.y, acc[w][i + 2] += v.z, acc[w][i + 3] += v.w;
        __stcg(p, make_float4(0.f, 0.f, 0.f, 0.f));
      }
  }
  return true;
}
