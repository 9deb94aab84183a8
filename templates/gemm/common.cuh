// What every ktune GEMM kernel shares: the problem defines, the C element type and its
// conversions, and the epilogue's activation. A kernel writes `#include "gemm_common.cuh"` after
// the prelude; gemm::kernelSource() puts this text in its place, so each kernel's compiled source
// is this file plus its own folder's files and nothing of the other kernels (the one exception:
// the tma and decode kinds both include gemm/hopper.cuh, their shared sm_90 primitives).
//
// Problem defines (gemm::defines() sets them all; a missing one is an error, never a default):
//   LAYOUT 0 NN, 1 NT, 2 TN, 3 TT;  DTYPE_AB 1 f16, 2 bf16, 8 f8e4m3, 9 f8e5m2 (tma only);  DTYPE_C 0 f32, 1 f16, 2 bf16 (ktune
//   DType values, as the row-wise kernels);
//   HAS_BIAS 0/1;  ACT 0 none, 1 SiLU, 2 GELU (erf form on NVIDIA, tanh form on AMD: no libm).
#ifdef KTUNE_GEMM_INAPPLICABLE
#error "ktune GEMM: config not applicable to this problem (see gemm::applicable)"
#endif
#if !defined(LAYOUT) || !defined(DTYPE_AB) || !defined(DTYPE_C) || !defined(HAS_BIAS) || !defined(ACT)
#error "ktune GEMM: define LAYOUT, DTYPE_AB, DTYPE_C, HAS_BIAS and ACT (see gemm::defines in templates/gemm.h)"
#endif
#if DTYPE_AB != 1 && DTYPE_AB != 2 && DTYPE_AB != 8 && DTYPE_AB != 9
#error "ktune GEMM: DTYPE_AB must be 1 (f16), 2 (bf16), 8 (f8e4m3) or 9 (f8e5m2; the tma kernel only)"
#endif
#if DTYPE_C != 0 && DTYPE_C != 1 && DTYPE_C != 2
#error "ktune GEMM: DTYPE_C must be 0 (f32), 1 (f16) or 2 (bf16)"
#endif

namespace kgemm {

KTUNE_ELEMENT_TYPE(out_t, out_to_float, out_from_float, DTYPE_C)

KTUNE_DEVICE float activate(float v) {
#if ACT == 1 && KTUNE_AMD
  return ktune::silu(v);
#elif ACT == 1
  return v / (1.0f + __expf(-v));
#elif ACT == 2 && KTUNE_AMD
  const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
  const float t = 1.0f - ktune::fast_div(2.0f, ktune::exp_fast(2.0f * u) + 1.0f);  // tanh(u)
  return 0.5f * v * (1.0f + t);
#elif ACT == 2
  return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
#else
  return v;
#endif
}

// Block `pid` of a 1-D grid over grid_m x grid_n output tiles, in group_m order: group_m tile rows
// walk their columns together, so neighbouring blocks share B columns in L2 (the GROUP_M knob).
KTUNE_DEVICE void group_tile(int pid, int grid_m, int grid_n, int group_m, int& pid_m, int& pid_n) {
  const int in_group = group_m * grid_n;
  const int first_m = (pid / in_group) * group_m;
  const int group_rows = grid_m - first_m < group_m ? grid_m - first_m : group_m;
  pid_m = first_m + (pid % in_group) % group_rows;
  pid_n = (pid % in_group) / group_rows;
}

#if KTUNE_NVIDIA
// The per-phase traces' clocks (a probe build's only: tma/tma_trace.cuh, decode/decode_wg_trace.cuh):
// the SM's cycle counter and the global nanosecond timer.
KTUNE_DEVICE unsigned long long trace_clock() {
  unsigned long long c;
  asm volatile("mov.u64 %0, %%clock64;\n" : "=l"(c));
  return c;
}
KTUNE_DEVICE unsigned long long trace_gtime() {
  unsigned long long c;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(c));
  return c;
}

// silu(gate) * up, the gate/up pair's epilogue chain per output (the decode and tma kinds).
// KT_GU_FORM is a build-time probe define, not a config knob: 1 (shipped) takes
// 0.5 g (1 + tanh(g / 2)) with one MUFU op (tanh.approx) for bf16 C, whose rounding (2^-9) hides
// tanh.approx's error (2^-11 absolute, 2^-12 |g| in the SiLU); f16 and f32 C, and 0 for every C,
// take g / (1 + 2^(-g log2 e)) with the approximate division (ex2 + rcp; the IEEE division
// branches to a slow path); 2 (a probe of the epilogue's share, wrong results) g + u.
#ifndef KT_GU_FORM
#define KT_GU_FORM 1
#endif
KTUNE_DEVICE float silu_mul_value(float gate, float up) {
#if KT_GU_FORM == 2
  return gate + up;
#elif KT_GU_FORM == 1 && DTYPE_C == 2
  float t;
  asm("tanh.approx.f32 %0, %1;\n" : "=f"(t) : "f"(0.5f * gate));
  const float h = 0.5f * gate;
  return fmaf(h, t, h) * up;
#else
  return __fdividef(gate, 1.0f + __expf(-gate)) * up;
#endif
}

#if DTYPE_AB == 2
#define KTUNE_GEMM_MMA_T "bf16"
#else
#define KTUNE_GEMM_MMA_T "f16"
#endif
// mma.sync m16n8k16 with fp32 accumulators: a0..a3 the A fragment, b0 b1 the B fragment.
KTUNE_DEVICE void mma16816(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                           unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." KTUNE_GEMM_MMA_T "." KTUNE_GEMM_MMA_T
               ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

#ifdef KGEMM_STREAM_PF
// Weight-streaming kernels (skinny, decode) define KGEMM_STREAM_PF to their prefetch knob before
// including this file. A streaming 16-byte load of weights (read once): no L1 allocation; 1 adds an
// L2 prefetch of the whole 256-byte block (the other lanes/warps that read the rest of it then hit
// L2), 2 also an evict-first L2 policy (l2_policy), 0 neither. Zeros when !pred (predicated in PTX:
// no branch per load).
KTUNE_DEVICE uint4 ld_stream(const unsigned short* p, bool pred, unsigned long long policy) {
  uint4 v;
  (void)policy;
#if KGEMM_STREAM_PF == 2
#define KGEMM_LD "ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4], %6;\n"
#elif KGEMM_STREAM_PF == 1
#define KGEMM_LD "ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];\n"
#else
#define KGEMM_LD "ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
#endif
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %5, 0;\n"
      "mov.b32 %0, 0;\nmov.b32 %1, 0;\nmov.b32 %2, 0;\nmov.b32 %3, 0;\n"
      "@p " KGEMM_LD "}\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p), "r"((int)pred), "l"(policy));
#undef KGEMM_LD
  return v;
}

KTUNE_DEVICE unsigned long long l2_policy() {
  unsigned long long pol = 0;
#if KGEMM_STREAM_PF == 2
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
#endif
  return pol;
}
#endif  // KGEMM_STREAM_PF

// Split-K, after this block added its slice into the fp32 workspace: true (in every thread) for
// the block whose slice arrived last for its tile, which then finishes the tile and resets
// `*counter`. `flag` is one word of shared memory.
KTUNE_DEVICE bool last_slice(volatile unsigned* flag, unsigned* counter, int tid) {
  __threadfence();
  __syncthreads();
  if (tid == 0) *flag = (atomicAdd(counter, 1u) == (unsigned)gridDim.z - 1) ? 1u : 0u;
  __syncthreads();
  if (!*flag) return false;
  __threadfence();
  return true;
}
#endif

}  // namespace kgemm
