// The decode GEMM's wgmma wrappers for its small N tiers (part of decode_wg.cuh, inside namespace
// kd, for DC_WG = 1, 2): m64nNk16 with N = 8, 16, 32, 64 (the prelude has N = 128 and up), and a
// stage's wgmmas (mma_stage). scale_d 0 ignores d.
KTUNE_DEVICE void wgmma_n8(float (&d)[4], unsigned long long da, unsigned long long db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32." KTUNE_WGMMA_T "." KTUNE_WGMMA_T " "
      "{%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(da), "l"(db), "r"(scale_d));
}
KTUNE_DEVICE void wgmma_n16(float (&d)[8], unsigned long long da, unsigned long long db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32." KTUNE_WGMMA_T "." KTUNE_WGMMA_T " "
      "{%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "l"(da), "l"(db), "r"(scale_d));
}
KTUNE_DEVICE void wgmma_n32(float (&d)[16], unsigned long long da, unsigned long long db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32." KTUNE_WGMMA_T "." KTUNE_WGMMA_T " "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(da), "l"(db), "r"(scale_d));
}
KTUNE_DEVICE void wgmma_n64(float (&d)[32], unsigned long long da, unsigned long long db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." KTUNE_WGMMA_T "." KTUNE_WGMMA_T " "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(scale_d));
}

// Consumer thread ctid's warpgroup: its first 64-row weight slab of the tile (kCW = 1: the
// warpgroups split the tile's weight rows) and its first A row group (kCW = 2: they split A's rows,
// warpgroup g taking row groups g, g + kCW, ...).
KTUNE_DEVICE int wg_slab(int ctid) { return kCW == 1 ? (ctid >> 7) * kNT : 0; }
KTUNE_DEVICE int wg_group(int ctid) { return kCW == 1 ? 0 : ctid >> 7; }
// The A row of accumulator group j (8 rows) of consumer thread ctid's warpgroup, row 0 of the group.
KTUNE_DEVICE int acc_row(int j, int ctid) { return (j * kCW + wg_group(ctid)) * 8; }
// The B (A rows) descriptor: 8-row groups 1024*kCW bytes apart, so a warpgroup of kCW = 2 reads
// every second group of the stage's A rows.
KTUNE_DEVICE unsigned long long x_desc(unsigned addr) {
  return make_desc_addr(addr) + ((unsigned long long)(1024 * (kCW - 1) >> 4) << 32);
}

// One stage's wgmmas of a consumer warpgroup into its A accumulators per slab (wgmma n = 2*A): w its
// first weight slab, x its first A row group (kAll: every row of the stage's A, 8-row groups 1024
// bytes apart: DC_PP's warpgroups; else x_desc's stride).
template <int A, bool kAll = false>
KTUNE_DEVICE void mma_stage(float (&acc)[kNT][A], unsigned w, unsigned x) {
#pragma unroll
  for (int u = 0; u < kU; ++u)
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const unsigned xa = x + u * kBM * 128 + kk * 32;
      const unsigned long long db = kAll ? make_desc_addr(xa) : x_desc(xa);
#pragma unroll
      for (int t = 0; t < kNT; ++t) {
        const unsigned long long da = make_desc_addr(w + u * kBN * 128 + t * 64 * 128 + kk * 32);
        if constexpr (A == 4) wgmma_n8(acc[t], da, db, 1);
        else if constexpr (A == 8) wgmma_n16(acc[t], da, db, 1);
        else if constexpr (A == 16) wgmma_n32(acc[t], da, db, 1);
        else if constexpr (A == 32) wgmma_n64(acc[t], da, db, 1);
        else ktune::wgmma_n128(acc[t], da, db, 1);
      }
    }
}
