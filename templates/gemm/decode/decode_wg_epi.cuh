// The decode GEMM's wgmma bodies' epilogue (part of decode_wg.cuh, inside namespace kd, after
// for_each_acc): a tile's sums into C with bias, activation, the gate/up pair and the residual add.
// The tile's outputs of this thread in three passes: every C value of a residual add (beta != 0)
// loaded, then every output computed (straight-line code, so the bias loads and the silu chains
// overlap), then the stores. Element by element (load C, compute, store under its bounds branch)
// each load of C waited its own L2 round trip and each gate/up output its own dependent chain,
// back to back; with one consumer warp per scheduler nothing hid them, and the epilogue is the
// kernel's tail (bench/NOTES.md: the residual cost 1.3-1.7x and the gate/up 1.3x the plain GEMM at
// 64..128 rows). at(i, col, m): output column and row of element i (col < 0: none);
// val(i, col, r): its value given r = beta * C (col may be < 0 there: the value is dropped).
template <int kN, int kC = kN, class At, class Val>
KTUNE_DEVICE void store_tile(const Prob& p, At at, Val val) {
  static_assert(kN % kC == 0, "chunks of kC elements");
  // at() is recomputed in each pass (a few integer operations) rather than held in registers.
  auto where = [&](int i, int& col, int& m) {
    at(i, col, m);
    if (m >= p.M) col = -1;
  };
  const bool res = p.beta != 0.0f;
#pragma unroll
  for (int i0 = 0; i0 < kN; i0 += kC) {  // kC < kN: a chunk's values at a time (register budget)
    out_t c[kC];
#pragma unroll
    for (int i = 0; i < kC; ++i) {
      int col, m;
      where(i0 + i, col, m);
      c[i] = res && col >= 0 ? p.C[(long)m * p.ldc + col] : out_from_float(0.0f);
    }
    float v[kC];
#pragma unroll
    for (int i = 0; i < kC; ++i) {
      int col, m;
      where(i0 + i, col, m);
      v[i] = val(i0 + i, col < 0 ? 0 : col, p.beta * out_to_float(c[i]));
    }
#pragma unroll
    for (int i = 0; i < kC; ++i) {
      int col, m;
      where(i0 + i, col, m);
      if (col >= 0) p.C[(long)m * p.ldc + col] = out_from_float(v[i]);
    }
  }
}

// The tile's sums (whole) into C through the epilogue (bias, activation, gate/up, residual), and
// acc zeroed. `flag`: the shared word before the gate/up hand-over.
KTUNE_DEVICE void store_acc(const Prob& p, float (&acc)[kNT][kAcc], int row0, int ctid,
                            volatile unsigned* flag) {
#if ACT == 3
  const int wg = ctid >> 7, warp = (ctid >> 5) & 3, lane = ctid & 31;
  if (kPairs) {  // slab 2t: the gate sums of columns j0 + r, slab 2t + 1: the up sums
    store_tile<kAcc>(
        p,
        [&](int i, int& col, int& m) {
          col = row0 / 2 + wg_slab(ctid) * 32 + warp * 16 + (lane >> 2) + ((i & 3) >> 1) * 8;
          m = acc_row(i >> 2, ctid) + (lane & 3) * 2 + (i & 1);
          if (col >= p.half) col = -1;
        },
        [&](int i, int col, float r) { return gated_out(p, col, acc[0][i], acc[kNT - 1][i]) + r; });
  } else if (kHalves) {  // warps 2, 3 of a warpgroup hold the up sums of warps 0, 1's gate columns
    // Each side hands the other half of its sums over ([kAcc][kConsumers / 2] floats after the
    // flag word, counted by sharedBytes) and stores half the outputs, split by column: gate warps
    // accumulators a with bit 1 clear (columns +0), up warps with it set (columns +8), each over
    // every A row. Split by A row (a < kAcc/2), the up warps stored nothing once a cluster's
    // reduce-scatter left a block half the rows (scatter_reduce): the gate warps stored it all.
    const bool up = warp >= 2;
    float* x = reinterpret_cast<float*>(const_cast<unsigned*>(flag) + 4) + wg * 64 + (warp & 1) * 32 + lane;
#pragma unroll
    for (int a = 0; a < kAcc; ++a)
      if (((a & 2) != 0) != up) x[a * (kConsumers / 2)] = acc[0][a];
    consumers_sync();
    // Element i: accumulator a = (i/2)*4 + i%2 (+2 for the up warps): one output column per thread
    // (+8 for the up warps), A row (i/2)*8 + ...; a select keeps both accumulator indices constant
    // (a runtime index would put acc in local memory).
    const int c0 = row0 / 2 + wg_slab(ctid) * 32 + (warp & 1) * 16 + (lane >> 2) + (up ? 8 : 0);
    const float* xo = x + (up ? 2 : 0) * (kConsumers / 2);
    store_tile<kAcc / 2>(
        p,
        [&](int i, int& col, int& m) {
          col = c0 < p.half ? c0 : -1;
          m = acc_row(i >> 1, ctid) + (lane & 3) * 2 + (i & 1);
        },
        [&](int i, int col, float r) {
          const int a = (i >> 1) * 4 + (i & 1);
          const float mine = up ? acc[0][a + 2] : acc[0][a];
          const float other = xo[a * (kConsumers / 2)];
          return gated_out(p, col, up ? other : mine, up ? mine : other) + r;
        });
    consumers_sync();  // the next flush may write x again
  } else {  // gate row n (n % 16 < 8) and up row n + 8 sit in one thread: accumulators e and e + 2
    // Element i: slab t = i / (kAcc/2), accumulator j*4 + e of it with j = (i % (kAcc/2)) / 2.
    constexpr int kH = kAcc / 2;
    // Chunks of 16: both sums of an output and its C value live at once (the widest tier's 64
    // accumulators plus 32 of each spilled under 288 threads' register budget).
    store_tile<kNT * kH, (kNT * kH < 16 ? kNT * kH : 16)>(
        p,
        [&](int i, int& col, int& m) {
          const int t = i / kH, j = (i % kH) >> 1, e = i & 1;
          col = weight_row(p, row0, (wg_slab(ctid) + t) * 64 + warp * 16 + (lane >> 2));
          m = acc_row(j, ctid) + (lane & 3) * 2 + e;
        },
        [&](int i, int col, float r) {
          const int t = i / kH, j = (i % kH) >> 1, e = i & 1;
          return gated_out(p, col, acc[t][j * 4 + e], acc[t][j * 4 + 2 + e]) + r;
        });
  }
#else
  // Accumulator j*4 + e of slab t: output row m = mb + j*8 + e%2, column col = cb + t*64 + (e/2)*8.
  // Loops over rows (one pointer each) and a thread's 2*kNT columns keep the index arithmetic to an
  // add per element; a residual loads all of C before the first store (store_tile says why).
  const int warp = (ctid >> 5) & 3, lane = ctid & 31;
  const int cb = row0 + wg_slab(ctid) * 64 + warp * 16 + (lane >> 2), mb = (lane & 3) * 2;
  auto each = [&](auto f) {  // f(t, a, row pointer, col): the in-bounds elements
#pragma unroll
    for (int j = 0; j < kWM / 8; ++j)
#pragma unroll
      for (int e1 = 0; e1 < 2; ++e1) {
        const int m = mb + acc_row(j, ctid) + e1;
        if (m >= p.M) continue;
        out_t* row = p.C + (long)m * p.ldc;
#pragma unroll
        for (int t = 0; t < kNT; ++t)
#pragma unroll
          for (int e2 = 0; e2 < 2; ++e2) {
            const int col = cb + t * 64 + e2 * 8;
            if (col < p.N) f(t, j * 4 + e2 * 2 + e1, row, col);
          }
      }
  };
  if (p.beta != 0.0f) {
    out_t c[kNT][kAcc];
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int a = 0; a < kAcc; ++a) c[t][a] = out_from_float(0.0f);
    each([&](int t, int a, out_t* row, int col) { c[t][a] = row[col]; });
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int a = 0; a < kAcc; ++a) acc[t][a] = acc[t][a] * p.alpha + p.beta * out_to_float(c[t][a]);
  } else {
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int a = 0; a < kAcc; ++a) acc[t][a] *= p.alpha;
  }
  each([&](int t, int a, out_t* row, int col) {
    float v = acc[t][a];
#if HAS_BIAS
    v += out_to_float(p.bias[col]);
#endif
    row[col] = out_from_float(activate(v));
  });
#endif
  for_each_acc(acc, ctid, [](float& v, int, int) { v = 0.0f; });
}

// DC_XR = 1 (the cluster K split, decode_wg_cluster.cuh): the block's kRows rows of C from acc
// (rows as in store_acc) through shared memory `stg` (kRows x (kBN + 4) floats of the idle ring:
// the padding puts a warp's 32 writes on 32 banks, a row stays 16-byte aligned). Each thread writes
// its sums there (stage_sums), then the consumers take whole 16-byte runs of a C row (8 columns of
// bf16) and store each as one vector, the residual's C loaded as one: a warp's store instruction
// covers 4 full 128-byte rows where store_acc's wrote 2 bytes a lane into 4 rows (16 bytes each).
// A run past N or an unaligned C (its pointer or ldc) goes element by element. Leaves acc as is.
// stg[m * (kBN + 4) + n] = the sum of A row m and tile row n; kPlain: alpha and the bias applied.
template <int kRows, bool kPlain>
KTUNE_DEVICE void stage_sums(const Prob& p, float (&acc)[kNT][kAcc], int row0, int ctid, float* stg) {
  constexpr int kP = kBN + 4;
  const int warp = (ctid >> 5) & 3, lane = ctid & 31;
  const int nb = wg_slab(ctid) * 64 + warp * 16 + (lane >> 2), mb = (lane & 3) * 2;
  // (kRows: a multiple of 8*kCW wherever this runs; a cluster's reduce-scatter branch under 8*kCW
  // rows a block is compiled, never run: cluster_reduce.)
#pragma unroll
  for (int j = 0; j < kRows / (8 * kCW); ++j)
#pragma unroll
    for (int e1 = 0; e1 < 2; ++e1)
#pragma unroll
      for (int t = 0; t < kNT; ++t)
#pragma unroll
        for (int e2 = 0; e2 < 2; ++e2) {
          const int n = nb + t * 64 + e2 * 8;
          float v = acc[t][j * 4 + e2 * 2 + e1];
          if (kPlain) {
            v *= p.alpha;
#if HAS_BIAS
            if (row0 + n < p.N) v += out_to_float(p.bias[row0 + n]);
#endif
          }
          stg[(mb + acc_row(j, ctid) + e1) * kP + n] = v;
        }
  (void)row0;
}

// C's rows start 16-byte aligned (its pointer and ldc): the runs go out as vectors.
KTUNE_DEVICE bool c_vectors_ok(const Prob& p) {
  return ((reinterpret_cast<unsigned long long>(p.C) | (unsigned long long)p.ldc * sizeof(out_t)) & 15) == 0;
}

#if ACT != 3
template <int kRows>
KTUNE_DEVICE void store_staged(const Prob& p, float (&acc)[kNT][kAcc], int row0, int ctid, float* stg) {
  constexpr int kP = kBN + 4, kE = 16 / (int)sizeof(out_t), kRun = kBN / kE, kRuns = kRows * kRun;
  stage_sums<kRows, true>(p, acc, row0, ctid, stg);
  consumers_sync();
  const bool aligned = c_vectors_ok(p);
#pragma unroll
  for (int i0 = 0; i0 < kRuns; i0 += kConsumers) {
    const int i = i0 + ctid, m = i / kRun, c = (i % kRun) * kE, col = row0 + c;
    if ((kRuns % kConsumers != 0 && i >= kRuns) || m >= p.M || col >= p.N) continue;
    float v[kE];
#pragma unroll
    for (int e = 0; e < kE; e += 4) {
      const float4 s = *reinterpret_cast<const float4*>(stg + m * kP + c + e);
      v[e] = s.x, v[e + 1] = s.y, v[e + 2] = s.z, v[e + 3] = s.w;
    }
    out_t* dst = p.C + (long)m * p.ldc + col;
    if (aligned && col + kE <= p.N) {
      ktune::Vec<out_t, kE> o;
      if (p.beta != 0.0f) {
        const ktune::Vec<out_t, kE> r = ktune::load_vec<kE>(dst);
#pragma unroll
        for (int e = 0; e < kE; ++e) v[e] += p.beta * out_to_float(r[e]);
      }
#pragma unroll
      for (int e = 0; e < kE; ++e) o[e] = out_from_float(activate(v[e]));
      ktune::store_vec<kE>(dst, o);
    } else {
#pragma unroll
      for (int e = 0; e < kE; ++e)
        if (col + e < p.N)
          dst[e] = out_from_float(activate(v[e] + (p.beta != 0.0f ? p.beta * out_to_float(dst[e]) : 0.0f)));
    }
  }
}
#else
// The gate/up pair's (ACT 3) runs: kBN / 2 output columns per C row. Output column c's gate sum is
// tile row (c / kS2) * 2 * kS2 + c % kS2 and its up sum kS2 rows further (kS2 = 32 * DC_NT: a
// warpgroup's gate rows come first, kPairs and kHalves in decode_wg.cuh), so a run's gate and up
// sums are float4s of one staged row; gated_out applies alpha, the bias and the SiLU.
template <int kRows>
KTUNE_DEVICE void store_staged(const Prob& p, float (&acc)[kNT][kAcc], int row0, int ctid, float* stg) {
  static_assert(kPairs || kHalves, "the staged gate/up pair needs the TMA-fed layout");
  constexpr int kP = kBN + 4, kE = 16 / (int)sizeof(out_t), kRun = kBN / 2 / kE, kRuns = kRows * kRun;
  constexpr int kS2 = 32 * kNT;
  stage_sums<kRows, false>(p, acc, row0, ctid, stg);
  consumers_sync();
  const bool aligned = c_vectors_ok(p);
#pragma unroll
  for (int i0 = 0; i0 < kRuns; i0 += kConsumers) {
    const int i = i0 + ctid, m = i / kRun, c = (i % kRun) * kE, col = row0 / 2 + c;
    if ((kRuns % kConsumers != 0 && i >= kRuns) || m >= p.M || col >= p.half) continue;
    const float* gs = stg + m * kP + (c / kS2) * 2 * kS2 + c % kS2;
    float g[kE], u[kE];
#pragma unroll
    for (int e = 0; e < kE; e += 4) {
      const float4 a = *reinterpret_cast<const float4*>(gs + e);
      const float4 b = *reinterpret_cast<const float4*>(gs + kS2 + e);
      g[e] = a.x, g[e + 1] = a.y, g[e + 2] = a.z, g[e + 3] = a.w;
      u[e] = b.x, u[e + 1] = b.y, u[e + 2] = b.z, u[e + 3] = b.w;
    }
    out_t* dst = p.C + (long)m * p.ldc + col;
    if (aligned && col + kE <= p.half) {
      ktune::Vec<out_t, kE> o, r;
      if (p.beta != 0.0f) r = ktune::load_vec<kE>(dst);
#pragma unroll
      for (int e = 0; e < kE; ++e)
        o[e] = out_from_float(gated_out(p, col + e, g[e], u[e]) +
                              (p.beta != 0.0f ? p.beta * out_to_float(r[e]) : 0.0f));
      ktune::store_vec<kE>(dst, o);
    } else {
#pragma unroll
      for (int e = 0; e < kE; ++e)
        if (col + e < p.half)
          dst[e] = out_from_float(gated_out(p, col + e, g[e], u[e]) +
                                  (p.beta != 0.0f ? p.beta * out_to_float(dst[e]) : 0.0f));
    }
  }
}
#endif
