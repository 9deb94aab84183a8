// The TMA GEMM's epilogue (part of tma.cuh, inside its namespace kt): named barriers, TMA stores
// and bulk groups, the ways a 64-row slab of C leaves the accumulators (through shared memory and
// TMA stores, the same deferred into the next tile's k-loop, or stored directly), and the tile store.
KTUNE_DEVICE void bar_named(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
KTUNE_DEVICE void tma_store_2d(const TensorMap* map, unsigned src, int c0, int r0) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(c0), "r"(r0), "r"(src)
               : "memory");
}
KTUNE_DEVICE void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
KTUNE_DEVICE void bulk_wait_read0() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// All but the newest bulk group have read their shared memory.
KTUNE_DEVICE void bulk_wait_read1() { asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory"); }

// dst[0] = o0 and, where `two`, dst[1] = o1: one 4- or 8-byte store where `pair_ok` too. With a
// 16-bit C the three stores are predicated in one asm block, not branches: store_slab's 128
// unrolled pair-or-single branches were about a third of an EPI_TMA 0 128 x 256 config's compile
// (NVVM and ptxas; bench/NOTES.md, issue 34).
KTUNE_DEVICE void store_pair(out_t* dst, out_t o0, out_t o1, bool two, bool pair_ok) {
#if DTYPE_C != 0
  const unsigned v = static_cast<unsigned>(*reinterpret_cast<const unsigned short*>(&o0)) |
                     (static_cast<unsigned>(*reinterpret_cast<const unsigned short*>(&o1)) << 16);
  asm volatile(
      "{\n.reg .pred t, pp, p1;\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\n"
      "setp.ne.u32 t, %2, 0;\nsetp.ne.and.u32 pp, %3, 0, t;\nsetp.eq.and.u32 p1, %3, 0, t;\n"
      "@pp st.global.b32 [%0], %1;\n@!pp st.global.b16 [%0], lo;\n@p1 st.global.b16 [%0+2], hi;\n}\n"
      ::"l"(dst), "r"(v), "r"(static_cast<unsigned>(two)), "r"(static_cast<unsigned>(pair_ok))
      : "memory");
#else
  if (two && pair_ok) {
    struct __align__(2 * sizeof(out_t)) Pair { out_t a, b; };
    *reinterpret_cast<Pair*>(dst) = Pair{o0, o1};
  } else {
    dst[0] = o0;
    if (two) dst[1] = o1;
  }
#endif
}

// Stores one 64-row slab of accumulators from column n0 + kJ0 * 8 on: element j*4 + e is row
// r0 + (e/2)*8, column n0 + j*8 + 2q + (e%2); column pairs go out as one 4- or 8-byte store when C
// allows it. The TMA-store path (EPI_TMA 1) uses kJ0 > 0 for the columns past the last whole
// 64-column box of a wide tile (BLOCK_N not a multiple of 64).
template <int kJ0 = 0>
KTUNE_DEVICE void store_slab(const float (&acc)[kAcc], out_t* C, const out_t* bias, int r0, int n0,
                             int q, int M, int N, long ldc, float alpha, float beta, bool pair_ok) {
  // The two rows' pointers once: a 64-bit multiply and address per pair (NVVM keeps them apart
  // behind the bounds checks) were ~10% of an EPI_TMA 0 128 x 256 config's compile (issue 34). Not
  // with the split tail: its state beside the two pointers made ptxas spill (4 bytes).
  out_t* rowp[2];
  bool rok[2];
#pragma unroll
  for (int h = 0; h < 2; ++h)
    rok[h] = r0 + h * 8 < M, rowp[h] = C + (long)(r0 + h * 8) * ldc + n0 + q * 2;
#pragma unroll
  for (int j = kJ0; j < kBN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = n0 + j * 8 + q * 2;
      if (!rok[h] || c >= N) continue;
      out_t* dst = SPLIT_K == 1 ? rowp[h] + j * 8 : C + (long)(r0 + h * 8) * ldc + c;
      float v0 = alpha * acc[j * 4 + h * 2], v1 = alpha * acc[j * 4 + h * 2 + 1];
      const bool two = c + 1 < N;
      if (beta != 0.0f) {
        v0 += beta * ktune::to_float(dst[0]);
        if (two) v1 += beta * ktune::to_float(dst[1]);
      }
#if HAS_BIAS
      v0 += ktune::to_float(bias[c]);
      if (two) v1 += ktune::to_float(bias[c + 1]);
#else
      (void)bias;
#endif
      const out_t o0 = ktune::from_float<out_t>(activate(v0));
      const out_t o1 = ktune::from_float<out_t>(activate(v1));
      store_pair(dst, o0, o1, two, pair_ok);
    }
}

KTUNE_DEVICE bool c_pairs_ok(const out_t* C, long ldc) {
  return (ldc & 1) == 0 && (reinterpret_cast<unsigned long long>(C) & (2 * sizeof(out_t) - 1)) == 0;
}
// Whole 64-column boxes of a tile row (TMA stores of EPI_TMA 1); the rest of a wide tile is stored
// directly there (store_slab<kFullBoxes * 8>). The deferred epilogue stores kBBoxes boxes instead,
// the last ending at the tile's last column (box_row0).
constexpr int kFullBoxes = kBN / 64;


#if KT_EPI_TMA
// Adds beta * C and the bias to the pair of values of row r, columns c and c + 1 (inside M x N).
KTUNE_DEVICE void add_beta_bias(float& v0, float& v1, const out_t* C, const out_t* bias, int r, int c,
                                int M, int N, long ldc, float beta) {
  if (beta != 0.0f && r < M) {
    if (c < N) v0 += beta * ktune::to_float(C[(long)r * ldc + c]);
    if (c + 1 < N) v1 += beta * ktune::to_float(C[(long)r * ldc + c + 1]);
  }
#if HAS_BIAS
  if (c < N) v0 += ktune::to_float(bias[c]);
  if (c + 1 < N) v1 += ktune::to_float(bias[c + 1]);
#else
  (void)bias;
#endif
}

// Where C has no tensor map (c_tma_ok == 0: an unaligned C or ldc, a rare case), the warpgroup's
// 128 threads copy `boxes` (1 | 2) 64 x 64 boxes of the buffer at shared address `box` (the second
// at box + 8192, 64 columns further on; laid out as the TMA store reads them: 128-byte rows,
// 16-byte chunks swizzled by row & 7) to C at row r0, column c0, two values per step, nothing
// outside M x N. The kernels used to store C directly from the accumulators in that case, a second
// copy of the epilogue unrolled over every accumulator: about 60% of a 128 x 256 kernel's compile
// time (NVVM and ptxas; bench/NOTES.md, issue 34). One loop per call site: no unrolled copies (as
// one __noinline__ body for all sites a 128 x 256 config compiled only 2-4% faster).
KTUNE_DEVICE void box_to_global(unsigned box, int boxes, out_t* C, int r0, int c0, int M, int N,
                                long ldc, int wg_tid) {
  const bool pairs = c_pairs_ok(C, ldc);
#pragma unroll 1
  for (int i = wg_tid; i < boxes * 64 * 32; i += 128) {
    const int b = i >> 11, row = (i >> 5) & 63, word = i & 31;
    const int r = r0 + row, c = c0 + b * 64 + word * 2;
    if (r >= M || c >= N) continue;
    unsigned v;
    asm volatile("ld.shared.u32 %0, [%1];\n"
                 : "=r"(v)
                 : "r"(box + b * 8192 + row * 128 + (((word >> 2) ^ (row & 7)) << 4) + (word & 3) * 4)
                 : "memory");
    unsigned short* dst = reinterpret_cast<unsigned short*>(C + (long)r * ldc + c);
    if (c + 1 < N && pairs) {
      *reinterpret_cast<unsigned*>(dst) = v;
    } else {
      dst[0] = static_cast<unsigned short>(v);
      if (c + 1 < N) dst[1] = static_cast<unsigned short>(v >> 16);
    }
  }
}

// Stores `boxes` (1 | 2) boxes of the buffer at `buf` to C at row r0, column c0 (box_to_global's
// layout), once the warpgroup has written them and met: one thread's TMA stores (a bulk group)
// through tmC, or without a tensor map (tmC null) the warpgroup's copy.
KTUNE_DEVICE void store_boxes(const TensorMap* tmC, unsigned buf, int boxes, out_t* C, int r0,
                              int c0, int M, int N, long ldc, int wg_tid) {
  if (!tmC) {
    box_to_global(buf, boxes, C, r0, c0, M, N, ldc, wg_tid);
  } else if (wg_tid == 0) {
    tma_store_2d(tmC, buf, c0, r0);
    if (boxes == 2) tma_store_2d(tmC, buf + 8192, c0 + 64, r0);
    bulk_commit();
  }
}

// One 64-row slab through the warpgroup's shared buffer `buf` and TMA stores (see the header), or
// the warpgroup's copy where tmC is null (store_boxes).
// Row of accumulator j*4 + e: slab row warp*16 + g + (e/2)*8, column n0 + j*8 + 2q + (e%2).
KTUNE_DEVICE void store_slab_tma(const float (&acc)[kAcc], const TensorMap* tmC, unsigned buf,
                                 out_t* C, const out_t* bias, int slab_m0, int n0, int warp,
                                 int g, int q, int wg_tid, int bar_id, int M, int N, long ldc,
                                 float alpha, float beta) {
  // Groups of up to kEpiBoxes 64-column boxes (the buffer's size): with two, BLOCK_N 192 is one
  // group of two and one of one.
  constexpr int kBoxes = kFullBoxes;
  if (kBN % 64 != 0)
    store_slab<kBoxes * 8>(acc, C, bias, slab_m0 + warp * 16 + g, n0, q, M, N, ldc, alpha, beta,
                           c_pairs_ok(C, ldc));
#pragma unroll
  for (int half = 0; half < (kBoxes + kEpiBoxes - 1) / kEpiBoxes; ++half) {
    const int boxes = min(kEpiBoxes, kBoxes - kEpiBoxes * half);
    if (wg_tid == 0) bulk_wait_read0();  // the previous stores have read the buffer
    bar_named(bar_id, 128);
#pragma unroll
    for (int jj = 0; jj < 16; ++jj) {
      if (jj >= 8 * boxes) break;
      const int j = half * 8 * kEpiBoxes + jj;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = warp * 16 + g + h * 8;
        const int r = slab_m0 + row, c = n0 + j * 8 + q * 2;
        float v0 = alpha * acc[j * 4 + h * 2], v1 = alpha * acc[j * 4 + h * 2 + 1];
        add_beta_bias(v0, v1, C, bias, r, c, M, N, ldc, beta);
        const out_t o0 = ktune::from_float<out_t>(activate(v0));
        const out_t o1 = ktune::from_float<out_t>(activate(v1));
        const unsigned short b0 = *reinterpret_cast<const unsigned short*>(&o0);
        const unsigned short b1 = *reinterpret_cast<const unsigned short*>(&o1);
        const int box = jj >> 3, chunk = jj & 7;
        const unsigned addr = buf + box * 8192 + row * 128 + ((chunk ^ (row & 7)) << 4) + q * 4;
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"((unsigned)b0 | ((unsigned)b1 << 16))
                     : "memory");
      }
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    bar_named(bar_id, 128);
    store_boxes(tmC, buf, boxes, C, slab_m0, n0 + half * 64 * kEpiBoxes, M, N, ldc, wg_tid);
  }
}
#endif

#if KT_DEFER
// The deferred TMA-store epilogue (EPI_TMA = 2): the tile's C values (alpha, beta, bias,
// activation applied) are packed into registers, two 16-bit values per register, as soon as its
// accumulators are final; the next tile's first MMAs are issued and, while the tensor cores run
// them, the packed values go through the shared buffer and TMA stores one piece (one 64 x 64 box)
// per k-tile. So the consumer's tensor cores idle only for the packing, not for the shared memory
// round trip and the wait for the copy engine to have read the buffer. The pieces take the
// buffer's two boxes in turn, so a piece waits only for the store before the previous one to have
// read its box (bench/NOTES.md, issue 33: pieces of two boxes, each waiting for the store just
// issued, ran 1.3-1.7% slower at bf16 4096^3).
// EPI_TMA 3 (a probe value, not in the space): a piece every second k-tile.
constexpr int kPieceStride = EPI_TMA == 3 ? 2 : 1;  // k-tiles per piece
constexpr int kPieces = kWgM * kBBoxes;             // pieces per tile, <= 4 (WG_M * BLOCK_N <= 256)
// The pieces take the buffer's two boxes in turn across tiles: with an even count piece kP uses box
// kP % 2; with an odd one (192 wide, and wide tiles of 3 boxes) the turn carries over from tile to
// tile (`par`: the box of the tile's first piece, kept by the consumer).
constexpr bool kAltBox = kPieces % 2 == 0;

// Two C values (activation applied), v0 in the low half: one cvt of both for 16-bit C.
KTUNE_DEVICE unsigned pack2(float v0, float v1) {
  v0 = activate(v0), v1 = activate(v1);
  unsigned r;
#if DTYPE_C == 2
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(v1), "f"(v0));
#else
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(v1), "f"(v0));
#endif
  return r;
}

// pk[w][j * 2 + h] = C values of row slab_m0 + w * 64 + warp * 16 + g + h * 8, columns
// n0 + j * 8 + 2q and + 1. kPlain (alpha 1, beta 0: a plain GEMM, fp8 with unit scales): no
// multiply and no C read, so the packing, while the tensor pipe waits for the next tile, is one
// cvt per pair (plus the bias).
template <bool kPlain>
KTUNE_DEVICE void pack_values(const float (&acc)[kWgM][kAcc], unsigned (&pk)[kWgM][kAcc / 2],
                              const out_t* C, const out_t* bias, int slab_m0, int n0, int warp,
                              int g, int q, int M, int N, long ldc, float alpha, float beta) {
#pragma unroll
  for (int w = 0; w < kWgM; ++w)
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = slab_m0 + w * 64 + warp * 16 + g + h * 8, c = n0 + j * 8 + q * 2;
        float v0 = acc[w][j * 4 + h * 2], v1 = acc[w][j * 4 + h * 2 + 1];
        if (!kPlain) v0 *= alpha, v1 *= alpha;
        add_beta_bias(v0, v1, C, bias, r, c, M, N, ldc, kPlain ? 0.0f : beta);
        pk[w][j * 2 + h] = pack2(v0, v1);
      }
}

// The tile's C into pk (pack_values): every column, C read (beta) before any piece is stored, so
// a wide tile's overlapping last box stores the same values twice. With HAS_BETA 0 (no C read) a
// scale other than 1 goes into the accumulators (the next unit's first MMAs overwrite them) and
// one packing serves both: a second unrolled packing cost ~10% of a 128 x 256 compile.
KTUNE_DEVICE void pack_tile(float (&acc)[kWgM][kAcc], unsigned (&pk)[kWgM][kAcc / 2],
                            out_t* C, const out_t* bias, int slab_m0, int n0, int warp, int g,
                            int q, int M, int N, long ldc, float alpha, float beta) {
#if !HAS_BETA
  if (alpha != 1.0f) {
#pragma unroll
    for (int w = 0; w < kWgM; ++w)
#pragma unroll
      for (int i = 0; i < kAcc; ++i) acc[w][i] *= alpha;
  }
  pack_values<true>(acc, pk, C, bias, slab_m0, n0, warp, g, q, M, N, ldc, alpha, beta);
#else
  if (alpha == 1.0f && beta == 0.0f)
    pack_values<true>(acc, pk, C, bias, slab_m0, n0, warp, g, q, M, N, ldc, alpha, beta);
  else
    pack_values<false>(acc, pk, C, bias, slab_m0, n0, warp, g, q, M, N, ldc, alpha, beta);
#endif
}

// Piece kP of the packed tile (slab kP / kBBoxes, the 64 columns from box_row0(kP % kBBoxes))
// through one box of the warpgroup's buffer and a TMA store (the store that last used that box,
// the one before the previous piece's, must have read it). par: kAltBox's note.
template <int kP>
KTUNE_DEVICE void flush_piece(const unsigned (&pk)[kWgM][kAcc / 2], const TensorMap* tmC,
                              unsigned buf, int slab_m0, int n0, int warp, int g, int q, int wg_tid,
                              int bar_id, int par) {
  constexpr int w = kP / kBBoxes, col0 = box_row0(kP % kBBoxes);
  buf += ((kAltBox ? kP : kP + par) & 1) * 8192;
  if (wg_tid == 0) bulk_wait_read1();
  bar_named(bar_id, 128);
#pragma unroll
  for (int chunk = 0; chunk < 8; ++chunk)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = warp * 16 + g + h * 8;
      const unsigned addr = buf + row * 128 + ((chunk ^ (row & 7)) << 4) + q * 4;
      asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(pk[w][(col0 / 8 + chunk) * 2 + h])
                   : "memory");
    }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  bar_named(bar_id, 128);
  if (tmC && wg_tid == 0) {
    tma_store_2d(tmC, buf, n0 + col0, slab_m0 + w * 64);
    bulk_commit();
  }
}

// Piece p (runtime) of the packed tile: the register indices stay compile-time constants. Without
// a tensor map (tmC null) the warpgroup then copies the piece's box (box_to_global), once per call
// (kP 0) with the piece's box, rows and columns worked out at run time.
template <int kP = 0>
KTUNE_DEVICE void flush_pieces(const unsigned (&pk)[kWgM][kAcc / 2], int p, const TensorMap* tmC,
                               unsigned buf, out_t* C, int slab_m0, int n0, int M, int N, long ldc,
                               int warp, int g, int q, int wg_tid, int bar_id, int par) {
  if (p == kP) flush_piece<kP>(pk, tmC, buf, slab_m0, n0, warp, g, q, wg_tid, bar_id, par);
  if constexpr (kP + 1 < kPieces)
    flush_pieces<kP + 1>(pk, p, tmC, buf, C, slab_m0, n0, M, N, ldc, warp, g, q, wg_tid, bar_id,
                         par);
  if (kP == 0 && !tmC)
    box_to_global(buf + ((kAltBox ? p : p + par) & 1) * 8192, 1, C, slab_m0 + p / kBBoxes * 64,
                  n0 + box_row0(p % kBBoxes), M, N, ldc, wg_tid);
}

// Piece p (runtime) of the packed tile as ONE copy of flush_piece's code, its 16 values picked from
// the registers by p (selects), for the sites off the k-loop (a unit shorter than the pieces, the
// last tile's pieces after the unit loop): flush_pieces' copy per piece there was ~15% of a
// 128 x 256 config's compile (bench/NOTES.md, issue 34). Without a tensor map (tmC null) the
// warpgroup then copies the piece's box (box_to_global). In the k-loop too (one copy at every site,
// and one site after the k-loop for a short unit's and the last tile's pieces) it cut another ~10%
// of that compile, but the 4096^3 winner ran 0.4-0.6% slower on the GPU: not kept.
KTUNE_DEVICE void flush_piece_at(const unsigned (&pk)[kWgM][kAcc / 2], int p, const TensorMap* tmC,
                                 unsigned buf, out_t* C, int slab_m0, int n0, int M, int N,
                                 long ldc, int warp, int g, int q, int wg_tid, int bar_id, int par) {
  unsigned v[16];  // v[chunk * 2 + h] = flush_piece<p>'s pk[w][(col0 / 8 + chunk) * 2 + h]
#pragma unroll
  for (int i = 0; i < 16; ++i) v[i] = pk[0][i];
#pragma unroll
  for (int kP = 1; kP < kPieces; ++kP)
#pragma unroll
    for (int i = 0; i < 16; ++i)
      v[i] = p == kP ? pk[kP / kBBoxes][box_row0(kP % kBBoxes) / 4 + i] : v[i];
  const int w = p / kBBoxes, col0 = box_row0(p % kBBoxes);
  buf += ((kAltBox ? p : p + par) & 1) * 8192;
  if (wg_tid == 0) bulk_wait_read1();
  bar_named(bar_id, 128);
#pragma unroll
  for (int chunk = 0; chunk < 8; ++chunk)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = warp * 16 + g + h * 8;
      const unsigned addr = buf + row * 128 + ((chunk ^ (row & 7)) << 4) + q * 4;
      asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v[chunk * 2 + h]) : "memory");
    }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  bar_named(bar_id, 128);
  if (!tmC) {
    box_to_global(buf, 1, C, slab_m0 + w * 64, n0 + col0, M, N, ldc, wg_tid);
  } else if (wg_tid == 0) {
    tma_store_2d(tmC, buf, n0 + col0, slab_m0 + w * 64);
    bulk_commit();
  }
}
#endif

#if ACT == 3
#include "tma_gated.cuh"
#endif

// This consumer's rows of the tile (slabs of 64 from slab_m0): with a 16-bit C (KT_EPI_TMA) through
// its shared buffer `buf` and TMA stores when tmC is given (a tensor map of C), else the
// warpgroup's copy of the buffer (store_boxes); stored directly otherwise.
KTUNE_DEVICE void store_tile(const float (&acc)[kWgM][kAcc], const TensorMap* tmC, unsigned buf,
                             out_t* C, const out_t* bias, int slab_m0, int n0, int warp, int g, int q,
                             int wg_tid, int bar_id, int M, int N, long ldc, float alpha, float beta) {
#if ACT == 3
  store_tile_gated(acc, tmC, buf, C, bias, slab_m0, n0, warp, g, q, wg_tid, bar_id, M, N, ldc, alpha,
                   beta);
  return;
#endif
#if KT_EPI_TMA
#pragma unroll
  for (int w = 0; w < kWgM; ++w)
    store_slab_tma(acc[w], tmC, buf, C, bias, slab_m0 + w * 64, n0, warp, g, q, wg_tid, bar_id, M,
                   N, ldc, alpha, beta);
#else
  (void)tmC, (void)buf, (void)wg_tid, (void)bar_id;
  const bool pair_ok = c_pairs_ok(C, ldc);
#pragma unroll
  for (int w = 0; w < kWgM; ++w)
    store_slab(acc[w], C, bias, slab_m0 + w * 64 + warp * 16 + g, n0, q, M, N, ldc, alpha, beta,
               pair_ok);
#endif
}
