// The decode GEMM's own TMA and cluster primitives (part of decode_wg.cuh, inside namespace kd, for
// DC_WG = 2): the gate/up pair's 3-D box load, and for DC_GRID = 4, 5, 7 the cluster size and the
// distributed-shared-memory stores (7: the multicast load of a row-split pair). The ones the tma kind
// uses too (the tensor-map type, mbarriers, expect_tx, the 2-D box loads, cluster barriers, rank and
// mapa) are in templates/gemm/hopper.cuh, included before this file.
#if DC_TMA
// DC_EF = 1 (a probe knob, absent: 0; curated as twins): the weight boxes' L2 eviction priority
// evict-first (streamed once, as the read bound's ld.global.cs loads), the gate/up pair's 3-D boxes
// too. The row-split pair's multicast boxes and A's boxes keep the default (A evict-last too
// measured level: bench/NOTES.md, issue 32).
#ifndef DC_EF
#define DC_EF 0
#endif
constexpr int kEF = DC_EF;
// The policy (not volatile: one createpolicy per function, hoisted out of the box loops).
KTUNE_DEVICE unsigned long long l2_evict_first() {
  unsigned long long pol;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  return pol;
}
// tma_load_2d (hopper.cuh) with an L2 cache-hint policy.
KTUNE_DEVICE void tma_load_2d_hint(unsigned dst, const TensorMap* map, int c0, int r0, unsigned bar,
                                   unsigned long long pol) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(r0), "r"(bar), "l"(pol)
      : "memory");
}
// One box of the gate/up pair's 3-D map (gemm::decodePairMap, [2][N/2][K]) at (col c0, pair row j0,
// half 0): 32 gate rows from j0, then the 32 up rows of the same columns, as one 64-row box.
// mc: .multicast::cluster to both blocks of the row-split pair (DC_MSPLIT, below).
// hint: the box with an L2 cache-hint policy `pol` (DC_EF; not with mc).
template <bool mc = false, bool hint = false>
KTUNE_DEVICE void tma_load_pair(unsigned dst, const TensorMap* map, int c0, int j0, unsigned bar,
                                unsigned long long pol = 0) {
  static_assert(!(mc && hint), "the row-split pair's multicast boxes take no cache hint");
  if constexpr (mc)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(j0), "r"(0), "r"(bar),
        "h"((unsigned short)3)
        : "memory");
  else if constexpr (hint)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
        " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(j0), "r"(0), "r"(bar), "l"(pol)
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(j0), "r"(0), "r"(bar)
        : "memory");
  (void)pol;
}
#if DC_CLUSTER || DC_MSPLIT
// DC_CLUSTER: split K over a cluster: its kCL blocks stream one tile's K in kCL parts; the partial
// sums meet in the first block's shared memory (distributed shared memory), never in global memory.
// DC_MSPLIT: a pair splits the tile's A rows instead (below).
constexpr int kCL = DC_GRID == 5 ? 4 : 2;
KTUNE_DEVICE void st_cluster(unsigned addr, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
}
// DC_XR bit 1 (DC_CLUSTER): four floats into a peer's shared memory, their 16 bytes counted on
// the peer's barrier `bar` (both shared::cluster addresses, map_to_rank), so the receiver waits on
// its own barrier for exactly the bytes it takes in instead of a release/acquire cluster barrier.
KTUNE_DEVICE void st_async4(unsigned addr, const float* v, unsigned bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(
                   addr),
               "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3]), "r"(bar)
               : "memory");
}
#endif
#if DC_MSPLIT
// DC_GRID = 7: a pair per tile splitting its A rows (block r: rows r*kBM ..), each over all of K,
// so neither reduces anything and each holds half the accumulators. The weight tile is read from L2
// once for both: each block issues every other 32-row box of a stage with .multicast::cluster, which
// writes it at the same offset of both blocks' rings and completes both blocks' `full` barriers at
// that offset. A slot is refilled by both producers, so each block's `empty` barrier counts the
// consumer warps of both (kEmptyArrivals) and a consumer warp releases its slot in both blocks.
KTUNE_DEVICE void tma_load_2d_pair(unsigned dst, const TensorMap* map, int c0, int r0, unsigned bar) {
  tma_load_2d_multicast(dst, map, c0, r0, bar, 3);
}
// (A consumer warp's arrival on the peer's `empty`: mbar_arrive_cluster, CTA-scope release.)
#endif
#endif
