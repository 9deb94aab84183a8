// examples/llama.cc's model shape, bf16 helpers and its CPU reference: the same decoder in float,
// rounding to bf16 wherever the device stores a bf16 tensor, so --check can hold the device's
// output to a bf16 tolerance.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace llama {

struct Cfg {
  int hidden, inter, nq, nkv, hd;
  float eps;
  double theta;
};

inline uint16_t toBf16(float f) {  // round to nearest even (no NaNs are made here)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float fromBf16(uint16_t h) {
  uint32_t u = uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float rnd(float f) { return fromBf16(toBf16(f)); }

using Bf16s = std::vector<uint16_t>;
using Floats = std::vector<float>;

struct Rng {  // xorshift64*: fast enough for gigabytes of weights
  uint64_t s;
  float uniform() {  // in [-sqrt(3), sqrt(3)): unit variance
    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
    return (static_cast<float>((s * 2685821657736338717ull) >> 40) / 16777216.0f * 2.f - 1.f) *
           1.7320508f;
  }
};

inline std::vector<uint16_t> randomBf16(size_t n, float scale, float offset, Rng& g) {
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = toBf16(offset + scale * g.uniform());
  return v;
}

inline double relErr(const Floats& out, const Floats& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(out[i])) return INFINITY;
    num += double(out[i] - ref[i]) * (out[i] - ref[i]), den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}


struct RefLayer {
  const Bf16s *wqkv, *wo, *wgu, *wdown, *attn_norm, *mlp_norm;
};

// The inputs of one step: B x T tokens at positions pos0.., the caches' first fill, rotary tables.
struct RefStep {
  int B, T, pos0;
  const Bf16s* x_in;
  const Bf16s* cache0;
  const Floats *cos, *sin;
};

// out[r][n] = bf16(sum_k x[r][k] w[n][k]).
inline Floats refLinear(const Floats& x, const Bf16s& w, int rows, int n, int k) {
  Floats out(size_t(rows) * n);
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int i = 0; i < k; ++i)
        acc += double(x[size_t(r) * k + i]) * fromBf16(w[size_t(j) * k + i]);
      out[size_t(r) * n + j] = rnd(float(acc));
    }
  return out;
}

inline Floats refNorm(const Floats& x, const Bf16s& w, int rows, int cols, float eps) {
  Floats y(x.size());
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int i = 0; i < cols; ++i) ss += double(x[size_t(r) * cols + i]) * x[size_t(r) * cols + i];
    const double inv = 1.0 / std::sqrt(ss / cols + eps);
    for (int i = 0; i < cols; ++i)
      y[size_t(r) * cols + i] = rnd(float(x[size_t(r) * cols + i] * inv * fromBf16(w[i])));
  }
  return y;
}

// Rotary + cache write + causal attention of one layer; returns attention's output [rows][nq hd].
inline Floats refAttention(const Cfg& c, const RefStep& s, const Floats& qkv) {
  const int S = s.pos0 + s.T, half = c.hd / 2, ld = (c.nq + 2 * c.nkv) * c.hd;
  Floats kc(s.cache0->size()), vc(s.cache0->size()), q(size_t(s.B) * s.T * c.nq * c.hd);
  for (size_t i = 0; i < kc.size(); ++i) kc[i] = vc[i] = fromBf16((*s.cache0)[i]);
  for (int r = 0; r < s.B * s.T; ++r)
    for (int head = 0; head < c.nq + 2 * c.nkv; ++head) {
      const int b = r / s.T, t = r % s.T;
      const float* x = &qkv[size_t(r) * ld + size_t(head) * c.hd];
      const int kh = head < c.nq + c.nkv ? head - c.nq : head - c.nq - c.nkv;
      const size_t at = ((size_t(b) * c.nkv + kh) * S + s.pos0 + t) * c.hd;
      float* dst = head < c.nq ? &q[(size_t(r) * c.nq + head) * c.hd]
                               : &(head < c.nq + c.nkv ? kc : vc)[at];
      for (int i = 0; i < half; ++i) {
        float y0 = x[i], y1 = x[i + half];
        if (head < c.nq + c.nkv) {
          const float co = (*s.cos)[size_t(t) * half + i], si = (*s.sin)[size_t(t) * half + i];
          y0 = x[i] * co - x[i + half] * si, y1 = x[i + half] * co + x[i] * si;
        }
        dst[i] = rnd(y0), dst[i + half] = rnd(y1);
      }
    }
  Floats out(q.size());
  const double scale = 1.0 / std::sqrt(double(c.hd));
  for (int r = 0; r < s.B * s.T; ++r)
    for (int h = 0; h < c.nq; ++h) {
      const int b = r / s.T, n = s.pos0 + r % s.T + 1, kh = h / (c.nq / c.nkv);
      const float* qp = &q[(size_t(r) * c.nq + h) * c.hd];
      const size_t base = (size_t(b) * c.nkv + kh) * S * c.hd;
      std::vector<double> p(n);
      double mx = -1e300, sum = 0;
      for (int j = 0; j < n; ++j) {
        double d = 0;
        for (int i = 0; i < c.hd; ++i) d += double(qp[i]) * kc[base + size_t(j) * c.hd + i];
        p[j] = d * scale, mx = std::max(mx, p[j]);
      }
      for (auto& v : p) sum += (v = std::exp(v - mx));
      for (int i = 0; i < c.hd; ++i) {
        double o = 0;
        for (int j = 0; j < n; ++j) o += p[j] * vc[base + size_t(j) * c.hd + i];
        out[(size_t(r) * c.nq + h) * c.hd + i] = rnd(float(o / sum));
      }
    }
  return out;
}

// The whole stack; the final normalised hidden states [B*T][hidden].
inline Floats refDecoder(const Cfg& c, const std::vector<RefLayer>& L, const Bf16s& final_norm,
                         const RefStep& s) {
  const int rows = s.B * s.T, H = c.hidden;
  Floats x(s.x_in->size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = fromBf16((*s.x_in)[i]);
  Floats h = refNorm(x, *L[0].attn_norm, rows, H, c.eps);
  for (size_t l = 0; l < L.size(); ++l) {
    Floats qkv = refLinear(h, *L[l].wqkv, rows, (c.nq + 2 * c.nkv) * c.hd, H);
    Floats o = refLinear(refAttention(c, s, qkv), *L[l].wo, rows, H, c.nq * c.hd);
    for (size_t i = 0; i < x.size(); ++i) x[i] = rnd(x[i] + o[i]);
    h = refNorm(x, *L[l].mlp_norm, rows, H, c.eps);
    Floats gu = refLinear(h, *L[l].wgu, rows, 2 * c.inter, H);
    Floats act(size_t(rows) * c.inter);
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < c.inter; ++i) {
        const float* row = &gu[size_t(r) * 2 * c.inter];
        const float g = row[i], u = row[c.inter + i];
        act[size_t(r) * c.inter + i] = rnd(g / (1.f + std::exp(-g)) * u);
      }
    Floats d = refLinear(act, *L[l].wdown, rows, H, c.inter);
    for (size_t i = 0; i < x.size(); ++i) x[i] = rnd(x[i] + d[i]);
    h = refNorm(x, l + 1 < L.size() ? *L[l + 1].attn_norm : final_norm, rows, H, c.eps);
  }
  return h;
}

}  // namespace llama
