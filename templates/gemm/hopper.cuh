// The sm_90 (Hopper) primitives the TMA-fed GEMM kernels share: the tma kind (tma/tma.cuh) and the
// decode kind's wgmma bodies (decode/decode_wg.cuh, DC_WG = 1 | 2). A kernel writes
// `#include "gemm_hopper.cuh"` inside its own namespace (kt, kd); gemm::kernelSource() puts this
// text in its place, so the functions stay the kernel's own (no namespace here, nothing else
// included). The one exception to "a kernel's source is common.cuh plus its own folder": editing
// this file changes the sources and code-object keys of both of those kinds, and of no other.
//
// Only primitives that are the same to the letter in both kernels live here (the same PTX, the
// same scope and semantics qualifiers, the same clobbers). Where a kernel needs another form, the
// form has a name of its own that says how it differs (mbar_wait / mbar_wait_acquire_cluster,
// cluster_sync / cluster_sync_relaxed); what only one kernel uses stays in its folder
// (decode_tma.cuh: the 3-D pair box, the distributed-shared-memory stores; tma_epilogue.cuh: the
// TMA stores and bulk groups). All are forced inline, so one a kernel does not call emits nothing.

// The 128 bytes of a CUtensorMap, passed by value (__grid_constant__).
struct __align__(64) TensorMap {
  unsigned long long v[16];
};

// mbarriers (shared::cta): the stage rings' full/empty handshakes.
KTUNE_DEVICE void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Orders the mbarrier.inits before them (release, cluster scope): the partner blocks and their
// copies may signal the barriers once a cluster barrier or __syncthreads follows.
KTUNE_DEVICE void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
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
// waits was what the tma kind's two-block cluster variant had when it measured 1.43x slower
// (bench/NOTES.md).
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
// The wait with an acquire at cluster scope, for a barrier that other blocks' writes complete
// (st.async counted on it: decode_wg_cluster.cuh): the form paired with their cluster-scope release.
KTUNE_DEVICE void mbar_wait_acquire_cluster(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}

// One lane of the converged warp (elect.sync over all 32): true there, false on the others.
KTUNE_DEVICE bool elect_one() {
  unsigned e;
  asm volatile("{\n.reg .pred p;\n.reg .b32 r;\nelect.sync r|p, 0xffffffff;\nselp.u32 %0, 1, 0, p;\n}\n" : "=r"(e));
  return e != 0u;
}

// Clusters.
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
// An arrival on the barrier at shared::cluster address `cluster_addr` (a partner's, from
// map_to_rank) with the default semantics (release at CTA scope, as CUTLASS's ClusterBarrier): the
// arriving consumer's wgmmas on the slot have completed (wgmma_wait) before it. The decode kind's
// cluster-scope release (.release.cluster) compiled to a memory barrier per stage and warp and cost
// 0.7-0.9 us per stage (bench/NOTES.md: 42 us at 128x4096x4096).
KTUNE_DEVICE void mbar_arrive_cluster(unsigned cluster_addr) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_addr) : "memory");
}
// Every block of the cluster meets here; a release arrival and an acquire wait, so each block's
// earlier shared-memory writes (and its barriers' initialisation) are visible to the others after.
KTUNE_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// The same barrier, ordering execution only (every block of the cluster is past its main loop,
// whose shared-memory reads have completed): a release arrival is a GPU-scope memory barrier.
KTUNE_DEVICE void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed;\nbarrier.cluster.wait;\n" ::: "memory");
}

// TMA.
KTUNE_DEVICE void prefetch_tensormap(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}
// One box of a 2-D tensor map at (col c0, row r0) into shared memory, completing on `bar`.
KTUNE_DEVICE void tma_load_2d(unsigned dst, const TensorMap* map, int c0, int r0, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(r0), "r"(bar)
      : "memory");
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

// Register reallocation of a warpgroup (setmaxnreg): a producer gives its registers away
// (setmaxnreg_dec<40>), the consumers take them (setmaxnreg_inc<232>).
template <int kRegs>
KTUNE_DEVICE void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
KTUNE_DEVICE void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
