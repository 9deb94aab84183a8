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
// Spins until phase `parity` of mbarrier `bar` has completed. CTA scope (the default acquire) also
// for the barriers a cluster partner signals (its multicast bytes on `full`, its consumers'
// arrivals on `empty`), as CUTLASS's cluster pipelines do: the copy engine's complete_tx makes
// the bytes it wrote visible to the threads that see the phase complete, and the partner arrives
// only after its wgmma reads of the slot have finished. A cluster-scope acquire on every k-tile's
// waits was what the two-block cluster variant had when it measured 1.43x slower (bench/NOTES.md).
KTUNE_DEVICE void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (!done);
}
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
// An arrival on the partner's barrier (the default release semantics, as CUTLASS's ClusterBarrier).
KTUNE_DEVICE void mbar_arrive_cluster(unsigned cluster_addr) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_addr) : "memory");
}
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
