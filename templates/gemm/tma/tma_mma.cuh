// The TMA GEMM's consumer MMA steps (part of tma.cuh, inside its namespace kt; included where its
// consumers need it): the wgmma descriptors of the stage ring and their stepping, one k-tile's
// wgmma group, and the ring position the consumer loops carry (slot, phase, descriptors).

// wgmma descriptor of a stage's operand starting at `addr` (k step 0): K-major rows of 128 swizzled
// bytes; MN-major 64-wide chunks 8192 bytes apart, 8-row atoms 1024 apart.
template <bool kMnMajor>
KTUNE_DEVICE unsigned long long operand_desc(unsigned addr) {
  if (kMnMajor) return ktune::make_desc_mn(addr, 8192u, 1024u);
  return ktune::make_desc_addr(addr);
}
// The descriptor of `bytes` further on: desc(addr + bytes) = desc(addr) + bytes / 16, added to the
// low word alone (its 14-bit start field holds addr / 16 of any shared address, so the sum never
// carries into the fields above it). The consumers build their descriptors once and step them
// (a stage, a slab, a k step) with one add each, in uniform registers (bench/NOTES.md, issue 33).
KTUNE_DEVICE unsigned long long desc_plus(unsigned long long d, unsigned bytes) {
  return (d & 0xFFFFFFFF00000000ull) | static_cast<unsigned>(static_cast<unsigned>(d) + (bytes >> 4));
}
// Bytes between k steps (32 bytes of K: k16 16-bit or k32 fp8): K-major 32 bytes inside the
// swizzled rows, MN-major two 8-row atoms.
constexpr unsigned kStepA = KT_A_MN ? 2048u : 32u, kStepB = KT_B_MN ? 2048u : 32u;

// acc += A * B; kFirst: acc = A * B (wgmma_first: the old accumulators are neither read nor live).
template <bool kFirst>
KTUNE_DEVICE void mma_step(float (&acc)[kAcc], unsigned long long da, unsigned long long db) {
  if (kFirst) {
    wgmma_first(acc, da, db);
    return;
  }
#if BLOCK_N == 256
  ktune::wgmma_n256(acc, da, db, 1);
#elif BLOCK_N == 192
  ktune::wgmma_n192(acc, da, db, 1);
#elif BLOCK_N % 64 != 0
  wgmma_wide(acc, da, db, 1);
#else
  ktune::wgmma_n128(acc, da, db, 1);
#endif
}

// One k-tile of this consumer's MMAs, once the stage's `full` barrier (phase `parity`) completed:
// 128 bytes of K in four wgmma steps per 64-row slab, committed as one group (not waited for).
// kFirst: the unit's first k-tile, whose first step overwrites the accumulators (scale-d 0), so
// the tile switch spends no instructions on zeroing them while the tensor pipe waits.
template <bool kFirst = false>
KTUNE_DEVICE void mma_ktile(float (&acc)[kWgM][kAcc], unsigned full_bar, unsigned parity,
                            unsigned long long da, unsigned long long db) {
  mbar_wait(full_bar, parity);  // in a cluster half the bytes come from the partner (see mbar_wait)
  ktune::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)  // 128 bytes of K in steps of 32
#pragma unroll
    for (int w = 0; w < kWgM; ++w)
      if (kk == 0)
        mma_step<kFirst>(acc[w], desc_plus(da, w * 64 * kBK * kElem), db);
      else
        mma_step<false>(acc[w], desc_plus(da, w * 64 * kBK * kElem + kk * kStepA),
                        desc_plus(db, kk * kStepB));
  ktune::wgmma_commit();
}
// A consumer's position in the stage ring: slot s, the parity of its `full` phase, and the slot's
// wgmma descriptors (k step 0; A at this consumer's first slab), all stepped per k-tile: no
// division by the stage count, no descriptor built from an address in the loop.
struct Descs {
  unsigned long long a, b;
};
struct Ring {
  unsigned s, ph;
  Descs d;
};
// Slot 0's descriptors of consumer cw.
KTUNE_DEVICE Descs stage_descs(unsigned sA, unsigned sB, int cw) {
  return {operand_desc<KT_A_MN>(sA + (kPP ? 0 : cw) * kWgM * 64 * kBK * kElem),
          operand_desc<KT_B_MN>(sB)};
}
// The ring at position `it` (counted over all the block's k-tiles).
KTUNE_DEVICE Ring ring_at(const Descs& d0, unsigned it) {
  const unsigned s = it % kStages;
  return {s, (it / kStages) & 1u,
          {desc_plus(d0.a, s * kATile * kElem), desc_plus(d0.b, s * kBTile * kElem)}};
}
KTUNE_DEVICE void ring_step(Ring& r, const Descs& d0) {
  if (++r.s == kStages) {
    r.s = 0, r.ph ^= 1u, r.d = d0;
  } else {
    r.d = {desc_plus(r.d.a, kATile * kElem), desc_plus(r.d.b, kBTile * kElem)};
  }
}
