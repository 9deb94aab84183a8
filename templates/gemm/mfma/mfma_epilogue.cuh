// The MFMA GEMM's epilogue and split-K reduction (part of mfma.cuh, inside its KTUNE_AMD block).
namespace km {

KTUNE_DEVICE void epilogue(acc_t (&acc)[kTM][kTN], void* Cv, const void* biasv, int M, int N,
                           long ldc, float alpha, float beta, int m_base, int n_base, int lane) {
  out_t* C = reinterpret_cast<out_t*>(Cv);
  const out_t* bias = reinterpret_cast<const out_t*>(biasv);
  (void)bias;
  (void)beta;
  // 4 consecutive n per group: vector stores when they are in range and C rows are aligned.
  const unsigned long long align = 4 * sizeof(out_t);
  bool vec = ldc % 4 == 0 && reinterpret_cast<unsigned long long>(C) % align == 0;
#if HAS_BIAS
  vec = vec && reinterpret_cast<unsigned long long>(bias) % align == 0;
#endif
#pragma unroll
  for (int tm = 0; tm < kTM; ++tm)
#pragma unroll
    for (int tn = 0; tn < kTN; ++tn)
#pragma unroll
      for (int g = 0; g < kAcc / 4; ++g) {
        const int m = m_base + tm * kMI + accM(lane, kMI);
        const int n = n_base + tn * kMI + accN(lane, kMI, 4 * g);
        if (m >= M) continue;
        float v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = alpha * acc[tm][tn][4 * g + e];
        out_t* dst = C + (long)m * ldc + n;
        if (vec && n + 4 <= N) {
          ktune::Vec<out_t, 4> o;
#if HAS_BETA
          const ktune::Vec<out_t, 4> old = ktune::load_vec<4>(dst);
#endif
#if HAS_BIAS
          const ktune::Vec<out_t, 4> bv = ktune::load_vec<4>(bias + n);
#endif
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float x = v[e];
#if HAS_BETA
            x += beta * ktune::to_float(old[e]);
#endif
#if HAS_BIAS
            x += ktune::to_float(bv[e]);
#endif
            o[e] = ktune::from_float<out_t>(activate(x));
          }
          ktune::store_vec<4>(dst, o);
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            if (n + e >= N) continue;
            float x = v[e];
#if HAS_BETA
            x += beta * ktune::to_float(dst[e]);
#endif
#if HAS_BIAS
            x += ktune::to_float(bias[n + e]);
#endif
            dst[e] = ktune::from_float<out_t>(activate(x));
          }
        }
      }
}

#if SPLIT_K > 1
typedef __attribute__((address_space(1))) float global_float;
// Split-K: each z slice adds its fp32 partial tile into `workspace` (M x N floats) with hardware
// float atomics and bumps counters[tile]; the last slice to arrive reads the sums back 16 bytes at
// a time (the host requires N % 4 == 0), restores the workspace and its counter to zero, and returns true to run
// the epilogue. The caller zeroes workspace and counters once per allocation, never per launch.
KTUNE_DEVICE bool splitReduce(acc_t (&acc)[kTM][kTN], float* workspace, unsigned* counters,
                              int tile, int M, int N, int m_base, int n_base, int lane) {
  __shared__ unsigned is_last;
#pragma unroll
  for (int tm = 0; tm < kTM; ++tm)
#pragma unroll
    for (int tn = 0; tn < kTN; ++tn)
#pragma unroll
      for (int e = 0; e < kAcc; ++e) {
        const int m = m_base + tm * kMI + accM(lane, kMI), n = n_base + tn * kMI + accN(lane, kMI, e);
        if (m < M && n < N)
          __builtin_amdgcn_global_atomic_fadd_f32(
              (global_float*)(workspace + (long)m * N + n), acc[tm][tn][e]);
      }
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "agent");
  ktune::sync_threads();
  if (ktune::tid_x() == 0)
    is_last = __hip_atomic_fetch_add(counters + tile, 1u, __ATOMIC_ACQ_REL,
                                     __HIP_MEMORY_SCOPE_AGENT) == SPLIT_K - 1;
  ktune::sync_threads();
  if (!is_last) return false;
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "agent");
  // N % 4 == 0 (the host's rule for SPLIT_K > 1): each group of 4 is in range or out whole.
#pragma unroll
  for (int tm = 0; tm < kTM; ++tm)
#pragma unroll
    for (int tn = 0; tn < kTN; ++tn)
#pragma unroll
      for (int g = 0; g < kAcc / 4; ++g) {
        const int m = m_base + tm * kMI + accM(lane, kMI), n = n_base + tn * kMI + accN(lane, kMI, 4 * g);
        if (m >= M || n >= N) continue;
        float* w = workspace + (long)m * N + n;
        const ktune::Vec<float, 4> v = ktune::load_vec<4>(w);
        ktune::store_vec<4>(w, ktune::Vec<float, 4>{});
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[tm][tn][4 * g + e] = v[e];
      }
  if (ktune::tid_x() == 0) counters[tile] = 0u;
  return true;
}
#endif

}  // namespace km
