// The decode GEMM's TMA and cluster primitives (part of decode_wg.cuh, inside namespace kd, for
// DC_WG = 2): the tensor-map argument type, expect_tx, the 2-D box load, the gate/up pair's 3-D one, and for DC_GRID = 4, 5, 7
// the cluster barrier, rank and distributed-shared-memory store (7: the multicast load). tma.cuh has twins of some of them:
// each kernel folder keeps its own so that editing one kernel never changes another's sources.
#if DC_TMA
// The 128 bytes of a CUtensorMap, passed by value (__grid_constant__).
struct __align__(64) TensorMap {
  unsigned long long v[16];
};
KTUNE_DEVICE void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
// One box of a 2-D tensor map at (col c0, row r0) into shared memory, completing on `bar`.
KTUNE_DEVICE void tma_load_2d(unsigned dst, const TensorMap* map, int c0, int r0, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(r0), "r"(bar)
      : "memory");
}
// One box of the gate/up pair's 3-D map (gemm::decodePairMap, [2][N/2][K]) at (col c0, pair row j0,
// half 0): 32 gate rows from j0, then the 32 up rows of the same columns, as one 64-row box.
// mc: .multicast::cluster to both blocks of the row-split pair (DC_MSPLIT, below).
template <bool mc = false>
KTUNE_DEVICE void tma_load_pair(unsigned dst, const TensorMap* map, int c0, int j0, unsigned bar) {
  if constexpr (mc)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(j0), "r"(0), "r"(bar),
        "h"((unsigned short)3)
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(j0), "r"(0), "r"(bar)
        : "memory");
}
#if DC_CLUSTER || DC_MSPLIT
// DC_CLUSTER: split K over a cluster: its kCL blocks stream one tile's K in kCL parts; the partial
// sums meet in the first block's shared memory (distributed shared memory), never in global memory.
// DC_MSPLIT: a pair splits the tile's A rows instead (below).
constexpr int kCL = DC_GRID == 5 ? 4 : 2;
KTUNE_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// The same barrier, ordering execution only (every block of the cluster is past its main loop,
// whose shared-memory reads have completed): a release arrival is a GPU-scope memory barrier.
KTUNE_DEVICE void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed;\nbarrier.cluster.wait;\n" ::: "memory");
}
KTUNE_DEVICE unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// The shared::cluster address of `addr` (a shared::cta address of this block) in block `rank`.
KTUNE_DEVICE unsigned map_to_rank(unsigned addr, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
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
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(r0), "r"(bar), "h"((unsigned short)3)
      : "memory");
}
// An arrival on the barrier at shared::cluster address `bar` (the peer's, from map_to_rank), with
// the default (CTA-scope) semantics: the consumer's wgmmas on the slot have completed (wgmma_wait)
// before it. The cluster-scope release (.release.cluster) compiled to a memory barrier per stage and
// warp and cost 0.7-0.9 us per stage (bench/NOTES.md, ninth session: 42 us at 128x4096x4096).
KTUNE_DEVICE void mbar_arrive_cluster(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
#endif
#endif
