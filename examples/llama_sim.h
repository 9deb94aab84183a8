// Host stand-ins of examples/llama_kernels.h's two kernels for ktune's simulated backend, so that
// `ktune_llama --check` without a GPU still runs rotary + KV-cache write + attention through the
// real registration, key, launch rule and argument order (llama.cc's calls), block by block as
// the device kernels index them, and compares the result with the CPU reference. (ktune's own
// GEMM and RMSNorm do not run on the simulated backend, so the whole decoder needs a GPU.)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <ktune/ktune.hpp>

#include "llama_reference.h"

namespace llama {

template <class T>
T simArg(const ktune::SimLaunchView& v, size_t i) {
  T x;
  std::memcpy(&x, v.arg(i), sizeof(T));
  return x;
}

inline uint16_t* simBf16(const ktune::SimLaunchView& v, size_t i) {
  return static_cast<uint16_t*>(v.hostPtr(simArg<ktune::DevicePtr>(v, i)));
}

// llama_rope_kv: one block per (row, HPB heads), cdiv(hd / 2, VEC) threads per head, each
// rotating VEC pairs, as the kernel.
inline ktune::Status simRopeKv(const ktune::SimLaunchView& v) {
  const uint16_t* qkv = simBf16(v, 0);
  const int64_t ld = simArg<int64_t>(v, 1);
  uint16_t *qo = simBf16(v, 2), *kc = simBf16(v, 3), *vc = simBf16(v, 4);
  const float* cs = static_cast<const float*>(v.hostPtr(simArg<ktune::DevicePtr>(v, 5)));
  const float* sn = static_cast<const float*>(v.hostPtr(simArg<ktune::DevicePtr>(v, 6)));
  int d[7];
  for (int i = 0; i < 7; ++i) d[i] = simArg<int32_t>(v, 7 + i);
  const int B = d[0], T = d[1], nq = d[2], nkv = d[3], hd = d[4], S = d[5], pos0 = d[6];
  const int half = hd / 2, hpb = int(v.knob("HPB", 4)), vec = int(v.knob("VEC", 1));
  const int tph = (half + vec - 1) / vec;
  if (!qkv || !qo || !kc || !vc || !cs || !sn || int(v.block(0)) != hpb * tph)
    return ktune::Status::InvalidArgument("llama_rope_kv (sim): bad pointer or block size");
  for (unsigned row = 0; row < v.grid(0); ++row)
    for (unsigned by = 0; by < v.grid(1); ++by)
      for (unsigned tid = 0; tid < v.block(0); ++tid) {
        const int head = int(by) * hpb + int(tid) / tph, i0 = int(tid) % tph * vec;
        if (head >= nq + 2 * nkv || int(row) >= B * T) continue;
        const int b = int(row) / T, t = int(row) % T;
        const uint16_t* x = qkv + int64_t(row) * ld + int64_t(head) * hd;
        const int kh = head < nq + nkv ? head - nq : head - nq - nkv;
        uint16_t* dst = head < nq ? qo + (int64_t(row) * nq + head) * hd
                                  : (head < nq + nkv ? kc : vc) +
                                        ((int64_t(b) * nkv + kh) * S + pos0 + t) * hd;
        for (int i = i0; i < i0 + vec && i < half; ++i) {
          float y0 = fromBf16(x[i]), y1 = fromBf16(x[i + half]);
          if (head < nq + nkv) {
            const float c = cs[t * half + i], s = sn[t * half + i], x0 = y0, x1 = y1;
            y0 = x0 * c - x1 * s, y1 = x1 * c + x0 * s;
          }
          dst[i] = toBf16(y0), dst[i + half] = toBf16(y1);
        }
      }
  return ktune::Status::Ok();
}

// llama_attn: block (t, h, b) = (grid x, y, z) as the kernel; the block's softmax in double.
inline ktune::Status simAttn(const ktune::SimLaunchView& v) {
  const uint16_t *q = simBf16(v, 0), *kc = simBf16(v, 2), *vc = simBf16(v, 3);
  uint16_t* out = simBf16(v, 4);
  const int64_t ldq = simArg<int64_t>(v, 1), ldo = simArg<int64_t>(v, 5);
  int d[7];
  for (int i = 0; i < 7; ++i) d[i] = simArg<int32_t>(v, 6 + i);
  const int T = d[1], nq = d[2], nkv = d[3], hd = d[4], S = d[5], pos0 = d[6];
  const double scale = simArg<float>(v, 13);
  if (!q || !kc || !vc || !out || v.block(0) % 32 != 0)
    return ktune::Status::InvalidArgument("llama_attn (sim): bad pointer or block size");
  std::vector<double> p;
  for (unsigned b = 0; b < v.grid(2); ++b)
    for (unsigned h = 0; h < v.grid(1); ++h)
      for (unsigned t = 0; t < v.grid(0); ++t) {
        const int n = pos0 + int(t) + 1, kh = int(h) / (nq / nkv);
        const uint16_t* qp = q + (int64_t(b) * T + t) * ldq + int64_t(h) * hd;
        const int64_t base = (int64_t(b) * nkv + kh) * S * hd;
        p.assign(n, 0.0);
        double mx = -1e300, sum = 0;
        for (int j = 0; j < n; ++j) {
          for (int i = 0; i < hd; ++i)
            p[j] += double(fromBf16(qp[i])) * fromBf16(kc[base + j * hd + i]);
          p[j] *= scale, mx = std::max(mx, p[j]);
        }
        for (auto& x : p) sum += (x = std::exp(x - mx));
        for (int i = 0; i < hd; ++i) {
          double o = 0;
          for (int j = 0; j < n; ++j) o += p[j] * fromBf16(vc[base + j * hd + i]);
          out[(int64_t(b) * T + t) * ldo + int64_t(h) * hd + i] = toBf16(float(o / sum));
        }
      }
  return ktune::Status::Ok();
}

// Simulated costs that favour one config of each family, so a tuning run has a winner to find.
inline ktune::Status registerSimKernels(ktune::Autotuner& t) {
  KTUNE_RETURN_IF_ERROR(t.registerSimKernel(
      "llama_rope_kv", {simRopeKv, [](const ktune::SimLaunchView& v) {
                          return 0.002 + 0.001 * std::abs(double(v.knob("HPB", 4)) - 2) +
                                 0.0005 * std::abs(double(v.knob("VEC", 1)) - 4);
                        }}));
  return t.registerSimKernel("llama_attn", {simAttn, [](const ktune::SimLaunchView& v) {
                                              return 0.01 + 0.001 * std::abs(
                                                  double(v.knob("WARPS", 8)) - 4);
                                            }});
}

}  // namespace llama
