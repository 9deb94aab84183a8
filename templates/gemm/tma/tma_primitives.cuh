// The TMA GEMM's synchronisation and copy primitives (part of tma.cuh, inside its namespace kt):
// the tensor-map argument type, mbarriers, cluster helpers and the TMA box loads.
// The 128 bytes of a CUtensorMap, passed by value (__grid_constant__).
struct __align__(64) TensorMap {
  unsigned long long v[16];
};

using ktune::smem_addr;

KTUNE_DEVICE void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
KTUNE_DEVICE void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
KTUNE_DEVICE void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// fn(bar, parity): spins until phase `parity` of mbarrier `bar` has completed; `sem` is the
// wait's PTX semantics/scope qualifier ("" for the CTA default).
#define KTUNE_MBAR_WAIT(fn, sem)                                                    \
  KTUNE_DEVICE void fn(unsigned bar, unsigned parity) {                             \
    unsigned done = 0;                                                              \
    do {                                                                            \
      asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity" sem                 \
                   ".shared::cta.b64 p, [%1], %2;\n"                                \
                   "selp.u32 %0, 1, 0, p;\n}\n"                                     \
                   : "=r"(done)                                                     \
                   : "r"(bar), "r"(parity)                                          \
                   : "memory");                                                     \
    } while (!done);                                                                \
  }
KTUNE_MBAR_WAIT(mbar_wait, "")
#if CLUSTER_M > 1
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
KTUNE_DEVICE void mbar_arrive_cluster(unsigned cluster_addr) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_addr)
               : "memory");
}
// mbar_wait whose acquire covers the partner block's releases (cluster scope).
KTUNE_MBAR_WAIT(mbar_wait_cluster, ".acquire.cluster")
KTUNE_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// tma_load_2d into the same offset of every block in `mask`, completing on each one's `bar`.
KTUNE_DEVICE void tma_load_2d_multicast(unsigned dst, const void* map, int c0, int r0, unsigned bar,
                                        unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(r0), "r"(bar), "h"(mask)
      : "memory");
}
#endif

// One 64 x 64 box of a 2-D tensor map at (col c0, row r0) into shared memory, completing on `bar`.
KTUNE_DEVICE void tma_load_2d(unsigned dst, const TensorMap* map, int c0, int r0, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(r0), "r"(bar)
      : "memory");
}
