// The two kernels examples/llama.cc adds to ktune's ops, registered as ktune families of their own
// through the public API (ktune::KernelSpec): each brings its source, its config space, its key
// and its launch rule as data, and ktune tunes it like any other family.
//
//   llama_rope_kv  rotary embedding (rotate-half) of q and k, fused with the KV-cache write: the
//                  rotated q goes to its own buffer, k (rotated) and v into the static cache at
//                  positions pos0 .. pos0 + T - 1. Nothing is updated in place, so a tuning run
//                  may launch it any number of times on the caller's buffers.
//   llama_attn     attention over the static cache: causal softmax(q kᵀ · scale) v for T query
//                  tokens at positions pos0 .. pos0 + T - 1 (decode: T = 1, pos0 = context),
//                  grouped-query (query head h reads KV head h / (nq / nkv)).
//
// Layouts (bf16): qkv [B*T][ld] with q heads, then k heads, then v heads of hd each; rotated q
// [B*T][nq * hd]; cache
// [B][nkv][S][hd]; attention output [B*T][ldo]; rotary tables float [T][hd / 2].
#pragma once

#include <ktune/ktune.hpp>

namespace llama {

// One module holds both kernels (python/examples/llama.py reads it from here too); each family
// defines only its own knob, so the other's has a default.
inline const char* kKernelSource = R"(
#include "prelude.cuh"
#ifndef HPB
#define HPB 4
#endif
#ifndef WARPS
#define WARPS 8
#endif
#ifndef VEC
#define VEC 1
#endif

// VEC pairs (i, i + hd / 2) per thread, moved as VEC-element vectors where the addresses allow
// (16-byte accesses at VEC 8; the scalar path otherwise, and for a head dim VEC does not divide).
template <int V>
KTUNE_DEVICE void rope_pairs(const ktune::bf16_t* x, ktune::bf16_t* dst, const float* c,
                             const float* s, int i, int half, bool rotate) {
  float a[V], b[V];
  const bool vec = V > 1 && i + V <= half &&
                   (((unsigned long long)(x + i) | (unsigned long long)(x + i + half) |
                     (unsigned long long)(dst + i) | (unsigned long long)(dst + i + half)) &
                    (V * sizeof(ktune::bf16_t) - 1)) == 0;
  if (vec) {
    const ktune::Vec<ktune::bf16_t, V> va = ktune::load_vec<V>(x + i);
    const ktune::Vec<ktune::bf16_t, V> vb = ktune::load_vec<V>(x + i + half);
#pragma unroll
    for (int e = 0; e < V; ++e) a[e] = ktune::to_float(va[e]), b[e] = ktune::to_float(vb[e]);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const bool in = i + e < half;
      a[e] = in ? ktune::to_float(x[i + e]) : 0.f;
      b[e] = in ? ktune::to_float(x[i + e + half]) : 0.f;
    }
  }
  if (rotate) {  // q or k: rotate each pair (i + e, i + e + half)
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const float cc = i + e < half ? c[i + e] : 0.f, ss = i + e < half ? s[i + e] : 0.f;
      const float y0 = a[e] * cc - b[e] * ss, y1 = b[e] * cc + a[e] * ss;
      a[e] = y0, b[e] = y1;
    }
  }
  if (vec) {
    ktune::Vec<ktune::bf16_t, V> oa, ob;
#pragma unroll
    for (int e = 0; e < V; ++e)
      oa[e] = ktune::from_float<ktune::bf16_t>(a[e]), ob[e] = ktune::from_float<ktune::bf16_t>(b[e]);
    ktune::store_vec<V>(dst + i, oa);
    ktune::store_vec<V>(dst + i + half, ob);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      if (i + e >= half) break;
      dst[i + e] = ktune::from_float<ktune::bf16_t>(a[e]);
      dst[i + e + half] = ktune::from_float<ktune::bf16_t>(b[e]);
    }
  }
}

KTUNE_KERNEL void llama_rope_kv(const ktune::bf16_t* __restrict__ qkv, long long ld,
                                ktune::bf16_t* __restrict__ qo, ktune::bf16_t* __restrict__ kc,
                                ktune::bf16_t* __restrict__ vc,
                                const float* __restrict__ cos_t, const float* __restrict__ sin_t,
                                int B, int T, int nq, int nkv, int hd, int S, int pos0) {
  KTUNE_PDL_WAIT();  // nothing is read or written before it (programmatic_wait below)
  KTUNE_PDL_LAUNCH_DEPENDENTS();
  const int half = hd / 2, tph = (half + VEC - 1) / VEC;  // threads per head
  const int row = (int)ktune::bid_x();  // b * T + t
  const int head = (int)(ktune::bid_y() * HPB + ktune::tid_x() / tph);
  const int i = (int)(ktune::tid_x() % tph) * VEC;
  if (head >= nq + 2 * nkv || row >= B * T) return;
  const int b = row / T, t = row % T;
  const ktune::bf16_t* x = qkv + (long long)row * ld + (long long)head * hd;
  ktune::bf16_t* dst;
  if (head < nq) {
    dst = qo + ((long long)row * nq + head) * hd;
  } else {
    const int kh = head < nq + nkv ? head - nq : head - nq - nkv;
    dst = (head < nq + nkv ? kc : vc) + (((long long)b * nkv + kh) * S + pos0 + t) * hd;
  }
  rope_pairs<VEC>(x, dst, cos_t + t * half, sin_t + t * half, i, half, head < nq + nkv);
}

// One block per (query token, query head, batch). Its warps split the key positions and keep an
// online softmax each (lane l owns dims [l * DPL, (l + 1) * DPL)); the block merges them last.
template <int DPL>
KTUNE_DEVICE void attn_body(const ktune::bf16_t* __restrict__ q, long long ldq,
                            const ktune::bf16_t* __restrict__ kc,
                            const ktune::bf16_t* __restrict__ vc, ktune::bf16_t* __restrict__ out,
                            long long ldo, int T, int nq, int nkv, int hd, int S, int pos0,
                            float scale, float* s_m, float* s_l,
                            float (*s_acc)[8 * KTUNE_WARP_SIZE]) {
  const int t = (int)ktune::bid_x(), h = (int)ktune::bid_y(), b = (int)ktune::bid_z();
  const int warp = (int)(ktune::tid_x() / KTUNE_WARP_SIZE), lane = (int)ktune::lane_id();
  const int kh = h / (nq / nkv), n = pos0 + t + 1;
  const ktune::Vec<ktune::bf16_t, DPL> qv =
      ktune::load_vec<DPL>(q + (long long)(b * T + t) * ldq + (long long)h * hd + lane * DPL);
  float qf[DPL], acc[DPL];
#pragma unroll
  for (int d = 0; d < DPL; ++d) {
    qf[d] = ktune::to_float(qv[d]) * scale;
    acc[d] = 0.f;
  }
  const long long base = ((long long)b * nkv + kh) * S * hd + lane * DPL;
  float m = -3.0e38f, l = 0.f;
  for (int j = warp; j < n; j += WARPS) {
    const long long at = base + (long long)j * hd;
    const ktune::Vec<ktune::bf16_t, DPL> kv = ktune::load_vec<DPL>(kc + at);
    const ktune::Vec<ktune::bf16_t, DPL> vv = ktune::load_vec<DPL>(vc + at);
    float s = 0.f;
#pragma unroll
    for (int d = 0; d < DPL; ++d) s += qf[d] * ktune::to_float(kv[d]);
    s = ktune::warp_reduce_sum(s);
    const float mn = s > m ? s : m;
    const float corr = ktune::exp_fast(m - mn), p = ktune::exp_fast(s - mn);
    l = l * corr + p;
#pragma unroll
    for (int d = 0; d < DPL; ++d) acc[d] = acc[d] * corr + p * ktune::to_float(vv[d]);
    m = mn;
  }
  if (lane == 0) {
    s_m[warp] = m;
    s_l[warp] = l;
  }
#pragma unroll
  for (int d = 0; d < DPL; ++d) s_acc[warp][lane * DPL + d] = acc[d];
  ktune::sync_threads();
  float mx = s_m[0];
  for (int w = 1; w < WARPS; ++w) mx = s_m[w] > mx ? s_m[w] : mx;
  for (int d = (int)ktune::tid_x(); d < hd; d += WARPS * KTUNE_WARP_SIZE) {
    float sum = 0.f, o = 0.f;
    for (int w = 0; w < WARPS; ++w) {
      const float f = ktune::exp_fast(s_m[w] - mx);
      sum += s_l[w] * f;
      o += s_acc[w][d] * f;
    }
    out[(long long)(b * T + t) * ldo + (long long)h * hd + d] =
        ktune::from_float<ktune::bf16_t>(o / sum);
  }
}

KTUNE_KERNEL void llama_attn(const ktune::bf16_t* __restrict__ q, long long ldq,
                             const ktune::bf16_t* __restrict__ kc,
                             const ktune::bf16_t* __restrict__ vc, ktune::bf16_t* __restrict__ out,
                             long long ldo, int B, int T, int nq, int nkv, int hd, int S, int pos0,
                             float scale) {
  (void)B;
  KTUNE_PDL_WAIT();
  KTUNE_PDL_LAUNCH_DEPENDENTS();
  // One set of shared arrays for every instantiation (each declaring its own would add up).
  __shared__ float s_m[WARPS], s_l[WARPS], s_acc[WARPS][8 * KTUNE_WARP_SIZE];
#define KTUNE_LLAMA_ATTN(D) \
  attn_body<D>(q, ldq, kc, vc, out, ldo, T, nq, nkv, hd, S, pos0, scale, s_m, s_l, s_acc)
  switch (hd / KTUNE_WARP_SIZE) {  // hd is 1, 2, 4 or 8 warps wide (llama.cc's shapes)
    case 1: KTUNE_LLAMA_ATTN(1); break;
    case 2: KTUNE_LLAMA_ATTN(2); break;
    case 4: KTUNE_LLAMA_ATTN(4); break;
    default: KTUNE_LLAMA_ATTN(8); break;
  }
}
)";

// The integer arguments both kernels share, after their pointers (the names the key and launch
// expressions use).
inline void addShapeArgs(std::vector<ktune::ArgSpec>& a) {
  for (const char* n : {"B", "T", "nq", "nkv", "hd", "S", "pos0"})
    a.push_back({n, ktune::ArgType::kI32});
}

inline ktune::KernelSpec ropeKvSpec() {
  using ktune::ArgType;
  ktune::KernelSpec s;
  s.name = "llama_rope_kv";
  s.source = kKernelSource;
  s.entry = "llama_rope_kv";
  // HPB heads per block; cdiv(hd / 2, VEC) threads per head, each rotating VEC pairs. Four
  // configs: up to 32 rows every config of HPB 1-8 x VEC 1-8 ran at the launch floor (within
  // the measurement's noise), and at 128 and 2048 rows HPB 8 with VEC 4 won (VEC 8 tied it, HPB
  // 1-2 lost by 1.3-6x); the other twelve cost a tuning run about a second of compiles.
  s.space_json =
      R"({"params": {"HPB": [4, 8], "VEC": [1, 4]}, "default": {"HPB": 4, "VEC": 1}})";
  s.args = {{"qkv", ArgType::kPtr}, {"ld", ArgType::kI64}, {"qo", ArgType::kPtr},
            {"kc", ArgType::kPtr}, {"vc", ArgType::kPtr}, {"cos", ArgType::kPtr},
            {"sin", ArgType::kPtr}};
  addShapeArgs(s.args);
  s.key = {"pow2(B * T)", "nq", "nkv", "hd"};
  s.grid = {"B * T", "cdiv(nq + 2 * nkv, HPB)"};
  s.block = {"HPB * cdiv(hd / 2, VEC)"};
  s.no_verify = true;  // llama --check compares the whole model with a CPU reference
  s.programmatic_wait = true;  // KTUNE_PDL_WAIT first: calls overlap the previous kernel's tail
  return s;
}

inline ktune::KernelSpec attnSpec() {
  using ktune::ArgType;
  ktune::KernelSpec s;
  s.name = "llama_attn";
  s.source = kKernelSource;
  s.entry = "llama_attn";
  s.space_json = R"({"params": {"WARPS": [2, 4, 8, 16]}, "default": {"WARPS": 8}})";
  s.args = {{"q", ArgType::kPtr}, {"ldq", ArgType::kI64}, {"kc", ArgType::kPtr},
            {"vc", ArgType::kPtr}, {"out", ArgType::kPtr}, {"ldo", ArgType::kI64}};
  addShapeArgs(s.args);
  s.args.push_back({"scale", ArgType::kF32});
  s.key = {"pow2(B)", "T", "nq", "nkv", "hd", "pow2(pos0 + T)"};
  s.grid = {"T", "nq", "B"};
  s.block = {"WARPS * warp_size"};
  s.no_verify = true;
  s.programmatic_wait = true;
  return s;
}

}  // namespace llama
