// The TMA GEMM's gate/up epilogue (ACT 3, Activation::kSiluMul; part of tma.cuh, included by
// tma_epilogue.cuh before store_tile): B is the concatenated [gate; up] weight (N rows, N / 2 of
// each), C has N / 2 columns, C[m][j] = silu(alpha*G + bias[j]) * (alpha*U + bias[N/2 + j]) + beta*C.
// A tile's B stage holds kBN / 2 gate rows and the matching kBN / 2 up rows (b_box_row in tma.cuh),
// so accumulator column c < kBN / 2 is the gate sum of output column n0 / 2 + c and column
// c + kBN / 2 its up sum. In the wgmma layout those are accumulators j*4 + e and (j + kGJ)*4 + e
// (column j*8 + 2q + e%2): every thread holds both halves of its outputs, no exchange is needed.
constexpr int kGJ = kBN / 16;  // 8-column groups of output columns per tile row


// Output column c (< half) from its gate and up sums, before the residual (beta * C).
KTUNE_DEVICE float gated_value(float gate, float up, const out_t* bias, int c, int half, float alpha) {
  gate *= alpha;
  up *= alpha;
#if HAS_BIAS
  gate += ktune::to_float(bias[c]);
  up += ktune::to_float(bias[half + c]);
#else
  (void)bias, (void)c, (void)half;
#endif
  return silu_mul_value(gate, up);
}

// Output columns c and c + 1 of row r from group j, half h of a slab's accumulators (zero past
// the last column, so nothing outside C or the bias is read).
KTUNE_DEVICE void gated_pair(const float (&acc)[kAcc], int j, int h, const out_t* C,
                             const out_t* bias, int r, int c, int M, int half, long ldc,
                             float alpha, float beta, float& v0, float& v1) {
  const int i = j * 4 + h * 2, u = (j + kGJ) * 4 + h * 2;
  v0 = c < half ? gated_value(acc[i], acc[u], bias, c, half, alpha) : 0.0f;
  v1 = c + 1 < half ? gated_value(acc[i + 1], acc[u + 1], bias, c + 1, half, alpha) : 0.0f;
  if (beta != 0.0f && r < M) {
    if (c < half) v0 += beta * ktune::to_float(C[(long)r * ldc + c]);
    if (c + 1 < half) v1 += beta * ktune::to_float(C[(long)r * ldc + c + 1]);
  }
}

// One 64-row slab's outputs stored directly (rows r0 and r0 + 8 of this thread, columns from c0).
KTUNE_DEVICE void store_slab_gated(const float (&acc)[kAcc], out_t* C, const out_t* bias, int r0,
                                   int c0, int q, int M, int half, long ldc, float alpha,
                                   float beta, bool pair_ok) {
#pragma unroll
  for (int j = 0; j < kGJ; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r0 + h * 8, c = c0 + j * 8 + q * 2;
      if (r >= M || c >= half) continue;
      float v0, v1;
      gated_pair(acc, j, h, C, bias, r, c, M, half, ldc, alpha, beta, v0, v1);
      out_t* dst = C + (long)r * ldc + c;
      const out_t o0 = ktune::from_float<out_t>(v0), o1 = ktune::from_float<out_t>(v1);
      if (c + 1 < half && pair_ok) {
        struct __align__(2 * sizeof(out_t)) Pair { out_t a, b; };
        *reinterpret_cast<Pair*>(dst) = Pair{o0, o1};
      } else {
        dst[0] = o0;
        if (c + 1 < half) dst[1] = o1;
      }
    }
}

#if KT_EPI_TMA
// One 64-row slab's kBN / 2 output columns (one or two 64-column boxes) through the warpgroup's
// shared buffer and TMA stores, as store_slab_tma (the map of C clips rows and columns past it;
// without one, tmC null, the warpgroup copies the boxes: store_boxes).
KTUNE_DEVICE void store_slab_gated_tma(const float (&acc)[kAcc], const TensorMap* tmC, unsigned buf,
                                       out_t* C, const out_t* bias, int slab_m0, int c0,
                                       int warp, int g, int q, int wg_tid, int bar_id, int M,
                                       int half, long ldc, float alpha, float beta) {
  constexpr int kBoxes = kBN / 128;
#pragma unroll
  for (int part = 0; part < (kBoxes + kEpiBoxes - 1) / kEpiBoxes; ++part) {
    const int boxes = min(kEpiBoxes, kBoxes - kEpiBoxes * part);
    if (wg_tid == 0) bulk_wait_read0();  // the previous stores have read the buffer
    bar_named(bar_id, 128);
#pragma unroll
    for (int jj = 0; jj < 16; ++jj) {
      if (jj >= 8 * boxes) break;
      const int j = part * 8 * kEpiBoxes + jj;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = warp * 16 + g + h * 8;
        float v0, v1;
        gated_pair(acc, j, h, C, bias, slab_m0 + row, c0 + j * 8 + q * 2, M, half, ldc, alpha,
                   beta, v0, v1);
        const out_t o0 = ktune::from_float<out_t>(v0), o1 = ktune::from_float<out_t>(v1);
        const unsigned b0 = *reinterpret_cast<const unsigned short*>(&o0);
        const unsigned b1 = *reinterpret_cast<const unsigned short*>(&o1);
        const unsigned addr = buf + (jj >> 3) * 8192 + row * 128 + (((jj & 7) ^ (row & 7)) << 4) + q * 4;
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(b0 | (b1 << 16)) : "memory");
      }
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    bar_named(bar_id, 128);
    store_boxes(tmC, buf, boxes, C, slab_m0, c0 + part * 64 * kEpiBoxes, M, half, ldc, wg_tid);
  }
}
#endif

// store_tile for the pair: the tile at pair column n0 writes output columns n0 / 2 on.
KTUNE_DEVICE void store_tile_gated(const float (&acc)[kWgM][kAcc], const TensorMap* tmC,
                                   unsigned buf, out_t* C, const out_t* bias, int slab_m0, int n0,
                                   int warp, int g, int q, int wg_tid, int bar_id, int M, int N,
                                   long ldc, float alpha, float beta) {
  const int half = N / 2, c0 = n0 / 2;
#if KT_EPI_TMA
#pragma unroll
  for (int w = 0; w < kWgM; ++w)
    store_slab_gated_tma(acc[w], tmC, buf, C, bias, slab_m0 + w * 64, c0, warp, g, q, wg_tid,
                         bar_id, M, half, ldc, alpha, beta);
#else
  (void)tmC, (void)buf, (void)wg_tid, (void)bar_id;
  const bool pair_ok = c_pairs_ok(C, ldc);
#pragma unroll
  for (int w = 0; w < kWgM; ++w)
    store_slab_gated(acc[w], C, bias, slab_m0 + w * 64 + warp * 16 + g, c0, q, M, half, ldc, alpha,
                     beta, pair_ok);
#endif
}
