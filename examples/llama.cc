// A Llama-3-8B-shaped decoder stack in C++ through ktune's public API only (<ktune/ktune.hpp>):
// the proof that an inference engine written in C++ can embed ktune. Every linear layer is
// ktune::ops::gemm, the norms ktune::ops::rmsnorm (the residual add fused in), SiLU·Mul
// ktune::ops::siluMul or, where ktune has it, the gate/up GEMM's epilogue; rotary + KV-cache write
// and attention are two kernels of this program, registered as ktune families with their own
// config spaces (llama_kernels.h). Weights are random
// bf16 made at start-up (nothing downloaded); no embedding or LM head (the decoder stack alone).
//
//   ktune_llama                     decode at batch 1, 8, 32, 128 (context 1024) and a prefill
//                                   of 2048 tokens, 8 layers: tokens/s per shape (GPU)
//   ktune_llama --check             a tiny model against a CPU reference (decode and prefill);
//                                   on the simulated backend (no GPU) this program's two families
//                                   only, run by host stand-ins (llama_sim.h)
//   ktune_llama --layers 4 --shapes d1,d32,p2048 --budget-s 120
//
// Each shape's first step tunes every key it meets (ktune's GEMM, RMSNorm, SiLU·Mul and the two
// families here; a tuning database from an earlier run, e.g. python/examples/llama.py with the
// same KTUNE_CACHE_DIR, makes it a lookup); that wall time is printed as "first step". The step is
// then timed with Autotuner::benchmark (device events, median of the runs; no cache flush: the
// weights alone are larger than any cache). Exit status: 0 ok, 1 failed check or error, 2 usage.
#include <ktune/ktune.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "llama_kernels.h"
#include "llama_reference.h"
#include "llama_sim.h"

namespace {

using ktune::DevicePtr;
using ktune::Expected;
using ktune::Status;
using ktune::StreamHandle;

using llama::Cfg;
using llama::randomBf16;
using llama::relErr;
using llama::Rng;
constexpr Cfg kLlama3_8B{4096, 14336, 32, 8, 128, 1e-5f, 500000.0};
constexpr Cfg kTiny{256, 512, 8, 2, 32, 1e-5f, 10000.0};

// Device memory of one tuner, freed with it.
class Arena {
 public:
  explicit Arena(ktune::Autotuner& t) : t_(t) {}
  ~Arena() {
    for (DevicePtr p : owned_) (void)t_.free(p);
  }
  Expected<DevicePtr> alloc(size_t bytes) {
    KTUNE_ASSIGN_OR_RETURN(DevicePtr p, t_.alloc(bytes));
    owned_.push_back(p);
    return p;
  }
  template <class T>
  Expected<DevicePtr> upload(const std::vector<T>& v) {
    KTUNE_ASSIGN_OR_RETURN(DevicePtr p, alloc(v.size() * sizeof(T)));
    KTUNE_RETURN_IF_ERROR(t_.copyToDevice(p, v.data(), v.size() * sizeof(T)));
    return p;
  }

 private:
  ktune::Autotuner& t_;
  std::vector<DevicePtr> owned_;
};

// Weights of one layer: wqkv [(nq + 2 nkv) hd][H], wo [H][nq hd], wgu [2I][H] (gate rows first),
// wdown [H][I]; norms [H]. Host copies are kept only for the CPU reference (--check).
struct Layer {
  DevicePtr wqkv = 0, wo = 0, wgu = 0, wdown = 0, attn_norm = 0, mlp_norm = 0;
  std::vector<uint16_t> h_wqkv, h_wo, h_wgu, h_wdown, h_attn_norm, h_mlp_norm;
};

struct Model {
  Cfg c;
  std::vector<Layer> layers;
  DevicePtr final_norm = 0;
  std::vector<uint16_t> h_final_norm;
};

Expected<Model> makeModel(Arena& mem, const Cfg& c, int n_layers, bool keep_host) {
  Model m{c, {}, 0, {}};
  Rng g{0x9E3779B97F4A7C15ull};
  const int qkv_n = (c.nq + 2 * c.nkv) * c.hd;
  auto put = [&](std::vector<uint16_t> v, DevicePtr* dst, std::vector<uint16_t>* host) -> Status {
    KTUNE_ASSIGN_OR_RETURN(*dst, mem.upload(v));
    if (keep_host) *host = std::move(v);
    return Status::Ok();
  };
  for (int i = 0; i < n_layers; ++i) {
    Layer L;
    const float sh = 1.f / std::sqrt(float(c.hidden));
    KTUNE_RETURN_IF_ERROR(put(randomBf16(size_t(qkv_n) * c.hidden, sh, 0, g), &L.wqkv, &L.h_wqkv));
    KTUNE_RETURN_IF_ERROR(put(randomBf16(size_t(c.hidden) * c.nq * c.hd,
                                         1.f / std::sqrt(float(c.nq * c.hd)), 0, g),
                              &L.wo, &L.h_wo));
    KTUNE_RETURN_IF_ERROR(put(randomBf16(size_t(2) * c.inter * c.hidden, sh, 0, g), &L.wgu,
                              &L.h_wgu));
    KTUNE_RETURN_IF_ERROR(put(randomBf16(size_t(c.hidden) * c.inter,
                                         1.f / std::sqrt(float(c.inter)), 0, g),
                              &L.wdown, &L.h_wdown));
    KTUNE_RETURN_IF_ERROR(put(randomBf16(c.hidden, 0.1f, 1, g), &L.attn_norm, &L.h_attn_norm));
    KTUNE_RETURN_IF_ERROR(put(randomBf16(c.hidden, 0.1f, 1, g), &L.mlp_norm, &L.h_mlp_norm));
    m.layers.push_back(std::move(L));
  }
  KTUNE_RETURN_IF_ERROR(put(randomBf16(c.hidden, 0.1f, 1, g), &m.final_norm, &m.h_final_norm));
  return m;
}

// The buffers of one shape: B sequences of T tokens at positions pos0 .. pos0 + T - 1, caches of
// S positions per layer. x_in is never written (layer 0's residual add writes x), so every step
// computes the same thing.
struct Step {
  int B = 0, T = 0, pos0 = 0, S = 0;
  DevicePtr x_in = 0, x = 0, h = 0, qkv = 0, q = 0, attn = 0, o = 0, gu = 0, act = 0, d = 0;
  DevicePtr cos = 0, sin = 0;
  std::vector<DevicePtr> kc, vc;
  std::vector<uint16_t> h_x_in, h_cache0;  // for the CPU reference: input, caches' first fill
  std::vector<float> h_cos, h_sin;
};

Expected<Step> makeStep(Arena& mem, const Model& m, int B, int T, int pos0, bool keep_host) {
  const Cfg& c = m.c;
  Step s;
  s.B = B, s.T = T, s.pos0 = pos0, s.S = pos0 + T;
  const size_t rows = size_t(B) * T, bf = 2;
  Rng g{0x1234567ull + size_t(B) * 131 + T};
  auto x = randomBf16(rows * c.hidden, 1, 0, g);
  KTUNE_ASSIGN_OR_RETURN(s.x_in, mem.upload(x));
  for (DevicePtr* p : {&s.x, &s.h, &s.o, &s.d}) {
    KTUNE_ASSIGN_OR_RETURN(*p, mem.alloc(rows * c.hidden * bf));
  }
  KTUNE_ASSIGN_OR_RETURN(s.qkv, mem.alloc(rows * (c.nq + 2 * c.nkv) * c.hd * bf));
  KTUNE_ASSIGN_OR_RETURN(s.q, mem.alloc(rows * c.nq * c.hd * bf));
  KTUNE_ASSIGN_OR_RETURN(s.attn, mem.alloc(rows * c.nq * c.hd * bf));
  KTUNE_ASSIGN_OR_RETURN(s.gu, mem.alloc(rows * 2 * c.inter * bf));
  KTUNE_ASSIGN_OR_RETURN(s.act, mem.alloc(rows * c.inter * bf));
  const int half = c.hd / 2;
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < half; ++i) {
      double ang = (pos0 + t) * std::pow(c.theta, -2.0 * i / c.hd);
      s.h_cos.push_back(float(std::cos(ang)));
      s.h_sin.push_back(float(std::sin(ang)));
    }
  KTUNE_ASSIGN_OR_RETURN(s.cos, mem.upload(s.h_cos));
  KTUNE_ASSIGN_OR_RETURN(s.sin, mem.upload(s.h_sin));
  // Positions before pos0 hold random keys and values (one fill shared by every layer's caches).
  auto cache = randomBf16(size_t(B) * c.nkv * s.S * c.hd, 1, 0, g);
  for (size_t i = 0; i < m.layers.size(); ++i) {
    KTUNE_ASSIGN_OR_RETURN(DevicePtr k, mem.upload(cache));
    KTUNE_ASSIGN_OR_RETURN(DevicePtr v, mem.upload(cache));
    s.kc.push_back(k), s.vc.push_back(v);
  }
  if (keep_host) s.h_x_in = std::move(x), s.h_cache0 = std::move(cache);
  return s;
}

// The decoder on the device: ktune's ops and this program's two families.
class Llama {
 public:
  Llama(ktune::Autotuner& t, const Model& m, ktune::Kernel rope, ktune::Kernel attn)
      : t_(t), m_(m), rope_(std::move(rope)), attn_(std::move(attn)) {}

  // Gate/up + SiLU·Mul as one GEMM up to this many rows (gateUp says why 4).
  int64_t fused_max_rows = 4;

  // One forward of the whole stack; the final hidden states (normalised) end in s.h.
  Status step(const Step& s, StreamHandle st) const {
    const Cfg& c = m_.c;
    const int64_t rows = int64_t(s.B) * s.T;
    KTUNE_RETURN_IF_ERROR(norm(rows, s.h, s.x_in, m_.layers[0].attn_norm, 0, 0, st));
    for (size_t i = 0; i < m_.layers.size(); ++i) {
      const Layer& L = m_.layers[i];
      const int qkv_n = (c.nq + 2 * c.nkv) * c.hd;
      KTUNE_RETURN_IF_ERROR(linear(rows, qkv_n, c.hidden, s.h, L.wqkv, s.qkv, st));
      KTUNE_RETURN_IF_ERROR(attentionBlock(s, i, st));
      KTUNE_RETURN_IF_ERROR(linear(rows, c.hidden, c.nq * c.hd, s.attn, L.wo, s.o, st));
      KTUNE_RETURN_IF_ERROR(norm(rows, s.h, s.o, L.mlp_norm, i == 0 ? s.x_in : s.x, s.x, st));
      KTUNE_RETURN_IF_ERROR(gateUp(rows, s, L, st));
      KTUNE_RETURN_IF_ERROR(linear(rows, c.hidden, c.inter, s.act, L.wdown, s.d, st));
      DevicePtr next = i + 1 < m_.layers.size() ? m_.layers[i + 1].attn_norm : m_.final_norm;
      KTUNE_RETURN_IF_ERROR(norm(rows, s.h, s.d, next, s.x, s.x, st));
    }
    return Status::Ok();
  }

  // This program's two families on layer `layer`: s.qkv -> rotated q, caches written -> s.attn.
  Status attentionBlock(const Step& s, size_t layer, StreamHandle st) const {
    KTUNE_RETURN_IF_ERROR(ropeKv(s, layer, st));
    return attention(s, layer, st);
  }

 private:
  // out[rows][n] = x[rows][k] · w[n][k]ᵀ (layout NT).
  Status linear(int64_t rows, int64_t n, int64_t k, DevicePtr x, DevicePtr w, DevicePtr out,
                StreamHandle st) const {
    ktune::ops::GemmParams p;
    p.layout = "NT";
    p.m = rows, p.n = n, p.k = k, p.a = x, p.b = w, p.out = out;
    return ktune::ops::gemm(t_, p, st);
  }
  // act = silu(h · w_gateᵀ) * (h · w_upᵀ): one GEMM with the SiLU·Mul epilogue where this ktune
  // has it (activation "silu_mul"), else the GEMM and ktune::ops::siluMul. The epilogue runs on
  // the decode kernel only, which keeps up with cuBLASLt up to M = 16 and falls behind above
  // (bench/NOTES.md, issue 32 and 36), and at 8 rows the fused kernel lost 4.1 µs per layer to
  // the GEMM + SiLU·Mul pair, so it is used up to fused_max_rows rows (--fused-max-rows); a row
  // count that ktune refuses (kInvalidArgument / kUnsupported) runs unfused from then on, the
  // others stay fused.
  Status gateUp(int64_t rows, const Step& s, const Layer& L, StreamHandle st) const {
    const Cfg& c = m_.c;
    if (rows <= fused_max_rows && !unfused_rows_.count(rows)) {
      ktune::ops::GemmParams p;
      p.layout = "NT", p.activation = "silu_mul";
      p.m = rows, p.n = 2 * c.inter, p.k = c.hidden, p.ldc = c.inter;
      p.a = s.h, p.b = L.wgu, p.out = s.act;
      Status r = ktune::ops::gemm(t_, p, st);
      if (r.ok() || (r.code() != ktune::Code::kInvalidArgument &&
                     r.code() != ktune::Code::kUnsupported))
        return r;
      std::printf("gate/up at M=%lld: no fused SiLU·Mul epilogue (%.200s); GEMM + siluMul\n",
                  static_cast<long long>(rows), r.toString().c_str());
      unfused_rows_.insert(rows);
    }
    KTUNE_RETURN_IF_ERROR(linear(rows, 2 * c.inter, c.hidden, s.h, L.wgu, s.gu, st));
    ktune::ops::SiluMulParams sp;
    sp.rows = rows, sp.d = c.inter, sp.out = s.act, sp.x = s.gu;
    return ktune::ops::siluMul(t_, sp, st);
  }
  // y = rmsnorm(x (+ residual, written to residual_out)) * w.
  Status norm(int64_t rows, DevicePtr y, DevicePtr x, DevicePtr w, DevicePtr residual,
              DevicePtr residual_out, StreamHandle st) const {
    ktune::ops::RmsNormParams p;
    p.rows = rows, p.cols = m_.c.hidden, p.y = y, p.x = x, p.weight = w;
    p.residual = residual, p.residual_out = residual_out, p.eps = m_.c.eps;
    return ktune::ops::rmsnorm(t_, p, st);
  }
  void shapeArgs(const Step& s, ktune::Value* v) const {
    const Cfg& c = m_.c;
    for (int x : {s.B, s.T, c.nq, c.nkv, c.hd, s.S, s.pos0}) *v++ = ktune::Value::i32(x);
  }
  Status ropeKv(const Step& s, size_t layer, StreamHandle st) const {
    ktune::Value v[14];
    v[0] = ktune::Value::ptr(s.qkv), v[1] = ktune::Value::i64((m_.c.nq + 2 * m_.c.nkv) * m_.c.hd);
    v[2] = ktune::Value::ptr(s.q), v[3] = ktune::Value::ptr(s.kc[layer]);
    v[4] = ktune::Value::ptr(s.vc[layer]), v[5] = ktune::Value::ptr(s.cos);
    v[6] = ktune::Value::ptr(s.sin);
    shapeArgs(s, v + 7);
    return rope_(v, 14, st);
  }
  Status attention(const Step& s, size_t layer, StreamHandle st) const {
    ktune::Value v[14];
    const int64_t ld = int64_t(m_.c.nq) * m_.c.hd;
    v[0] = ktune::Value::ptr(s.q), v[1] = ktune::Value::i64(ld);
    v[2] = ktune::Value::ptr(s.kc[layer]), v[3] = ktune::Value::ptr(s.vc[layer]);
    v[4] = ktune::Value::ptr(s.attn), v[5] = ktune::Value::i64(ld);
    shapeArgs(s, v + 6);
    v[13] = ktune::Value::f32(1.f / std::sqrt(float(m_.c.hd)));
    return attn_(v, 14, st);
  }

  ktune::Autotuner& t_;
  const Model& m_;
  ktune::Kernel rope_, attn_;
  mutable std::set<int64_t> unfused_rows_;  // single-threaded use: one Llama per thread
};

struct Args {
  bool check = false;
  int layers = 8, context = 1024;
  std::vector<std::string> shapes = {"d1", "d8", "d32", "d128", "p2048"};
  double budget_s = 0, rep_ms = 300;
  int fused_max_rows = 4;  // gate/up + SiLU·Mul in one GEMM up to this many rows
};

// "dN": decode of batch N at position `context`; "pN": prefill of N tokens (batch 1) from 0.
bool shapeOf(const std::string& s, int context, int* B, int* T, int* pos0) {
  const int n = s.size() > 1 ? std::atoi(s.c_str() + 1) : 0;
  if (n <= 0 || (s[0] != 'd' && s[0] != 'p')) return false;
  *B = s[0] == 'd' ? n : 1, *T = s[0] == 'd' ? 1 : n, *pos0 = s[0] == 'd' ? context : 0;
  return true;
}

bool parseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (f == "--check") {
      a->check = true;
      continue;
    }
    if (!v) return false;
    ++i;
    if (f == "--layers") a->layers = std::atoi(v);
    else if (f == "--context") a->context = std::atoi(v);
    else if (f == "--budget-s") a->budget_s = std::atof(v);
    else if (f == "--rep-ms") a->rep_ms = std::atof(v);
    else if (f == "--fused-max-rows") a->fused_max_rows = std::atoi(v);
    else if (f == "--shapes") {
      a->shapes.clear();
      for (std::string rest = v; !rest.empty();) {
        size_t c = rest.find(',');
        a->shapes.push_back(rest.substr(0, c));
        rest = c == std::string::npos ? "" : rest.substr(c + 1);
      }
    } else return false;
  }
  int b = 0, t = 0, p = 0;
  for (const auto& s : a->shapes)
    if (!shapeOf(s, a->context, &b, &t, &p)) return false;
  return a->layers > 0 && a->context > 0 && a->rep_ms > 0;
}

// The device's final hidden states of one step against the CPU reference (relative L2 error).
Expected<double> checkShape(ktune::Autotuner& t, const Model& m, const Llama& net, int B, int T,
                            int pos0) {
  Arena mem(t);
  KTUNE_ASSIGN_OR_RETURN(Step s, makeStep(mem, m, B, T, pos0, true));
  KTUNE_RETURN_IF_ERROR(net.step(s, {}));
  KTUNE_RETURN_IF_ERROR(net.step(s, {}));  // a second step (tuned) must give the same
  KTUNE_RETURN_IF_ERROR(t.synchronize());
  llama::Bf16s h(size_t(B) * T * m.c.hidden);
  KTUNE_RETURN_IF_ERROR(t.copyToHost(h.data(), s.h, h.size() * 2));
  llama::Floats out(h.size());
  for (size_t i = 0; i < h.size(); ++i) out[i] = llama::fromBf16(h[i]);
  std::vector<llama::RefLayer> L;
  for (const Layer& l : m.layers)
    L.push_back({&l.h_wqkv, &l.h_wo, &l.h_wgu, &l.h_wdown, &l.h_attn_norm, &l.h_mlp_norm});
  llama::RefStep rs{B, T, pos0, &s.h_x_in, &s.h_cache0, &s.h_cos, &s.h_sin};
  return relErr(out, llama::refDecoder(m.c, L, m.h_final_norm, rs));
}

// The families' keys of the tiny model's decode step at batch 2, position 16 (stand-in addresses:
// a key reads none); python/tests/test_llama_example.py expects the same rope key from Python.
bool printKeys(const ktune::Kernel& rope, const ktune::Kernel& attn) {
  const ktune::Value p = ktune::Value::ptr(DevicePtr{1} << 20), ld = ktune::Value::i64(256);
  ktune::Value shape[7];
  const int dims[7] = {2, 1, 8, 2, 32, 17, 16};
  for (int i = 0; i < 7; ++i) shape[i] = ktune::Value::i32(dims[i]);
  std::vector<ktune::Value> va = {p, ld, p, p, p, ld}, vr = {p, ld, p, p, p, p, p};
  va.insert(va.end(), shape, shape + 7), vr.insert(vr.end(), shape, shape + 7);
  va.push_back(ktune::Value::f32(0.125f));
  auto ka = attn.key(va.data(), va.size());
  auto kr = rope.key(vr.data(), vr.size());
  if (!ka.ok() || !kr.ok()) {
    std::fprintf(stderr, "key: %s\n", (ka.ok() ? kr.status() : ka.status()).toString().c_str());
    return false;
  }
  std::printf("families registered: llama_rope_kv key %s, llama_attn key %s\n", kr->c_str(),
              ka->c_str());
  return true;
}

// --check on the simulated backend, where ktune's GEMM and RMSNorm do not run: this program's two
// families (tuned and run by their host stand-ins, llama_sim.h) on random qkv rows, against the
// CPU reference's rotary + cache write + attention.
int simCheck(ktune::Autotuner& t, const ktune::Kernel& rope, const ktune::Kernel& attn) {
  Status st = llama::registerSimKernels(t);
  Arena mem(t);
  auto m = makeModel(mem, kTiny, 1, false);
  if (!st.ok() || !m.ok()) {
    std::fprintf(stderr, "%s\n", (st.ok() ? m.status() : st).toString().c_str());
    return 1;
  }
  Llama net(t, *m, rope, attn);
  const Cfg& c = kTiny;
  int failed = 0;
  for (auto [B, T, pos0] : {std::tuple{2, 1, 16}, std::tuple{1, 16, 0}}) {
    auto s = makeStep(mem, *m, B, T, pos0, true);
    if (!s.ok()) return std::fprintf(stderr, "%s\n", s.status().toString().c_str()), 1;
    Rng g{uint64_t(B * 1000 + T)};
    const size_t rows = size_t(B) * T, ld = size_t(c.nq + 2 * c.nkv) * c.hd;
    auto qkv = randomBf16(rows * ld, 1, 0, g);
    llama::Bf16s out(rows * c.nq * c.hd);
    Status r = t.copyToDevice(s->qkv, qkv.data(), qkv.size() * 2);
    if (r.ok()) r = net.attentionBlock(*s, 0, {});
    if (r.ok()) r = t.synchronize();
    if (r.ok()) r = t.copyToHost(out.data(), s->attn, out.size() * 2);
    if (!r.ok()) return std::fprintf(stderr, "%s\n", r.toString().c_str()), 1;
    llama::Floats qf(qkv.size()), of(out.size());
    for (size_t i = 0; i < qkv.size(); ++i) qf[i] = llama::fromBf16(qkv[i]);
    for (size_t i = 0; i < out.size(); ++i) of[i] = llama::fromBf16(out[i]);
    llama::RefStep rs{B, T, pos0, &s->h_x_in, &s->h_cache0, &s->h_cos, &s->h_sin};
    const double err = relErr(of, llama::refAttention(c, rs, qf));
    failed += !(err < 1e-2);
    std::printf("sim check B=%d T=%d pos0=%d: rotary + KV write + attention, rel L2 error vs CPU "
                "reference %.2e %s\n", B, T, pos0, err, err < 1e-2 ? "ok" : "FAILED");
  }
  if (!printKeys(rope, attn)) return 1;
  std::printf("the whole decoder's check (ktune's GEMM and RMSNorm) needs a GPU\n");
  return failed ? 1 : 0;
}

// --check: the tiny model against the CPU reference (decode and prefill shapes).
int runCheck(ktune::Autotuner& t, const ktune::Kernel& rope, const ktune::Kernel& attn) {
  if (t.backendName() == "sim") return simCheck(t, rope, attn);
  Arena mem(t);
  auto m = makeModel(mem, kTiny, 2, true);
  if (!m.ok()) return std::fprintf(stderr, "%s\n", m.status().toString().c_str()), 1;
  Llama net(t, *m, rope, attn);
  int failed = 0;
  for (auto [B, T, pos0] : {std::tuple{2, 1, 16}, std::tuple{3, 1, 45}, std::tuple{1, 16, 0}}) {
    auto err = checkShape(t, *m, net, B, T, pos0);
    if (!err.ok()) return std::fprintf(stderr, "%s\n", err.status().toString().c_str()), 1;
    const bool ok = *err < 2e-2;
    failed += !ok;
    std::printf("check B=%d T=%d pos0=%d: rel L2 error vs CPU reference %.2e %s\n", B, T, pos0,
                *err, ok ? "ok" : "FAILED (tolerance 2e-2)");
  }
  return failed ? 1 : 0;
}

// Tokens/s of every shape: the first step (tuning) timed by the wall clock, then the step timed by
// Autotuner::benchmark.
Status runTiming(ktune::Autotuner& t, const Args& a, const ktune::Kernel& rope,
                 const ktune::Kernel& attn) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto secs = [](Clock::time_point s) {
    return std::chrono::duration<double>(Clock::now() - s).count();
  };
  Arena mem(t);
  KTUNE_ASSIGN_OR_RETURN(Model m, makeModel(mem, kLlama3_8B, a.layers, false));
  Llama net(t, m, rope, attn);
  net.fused_max_rows = a.fused_max_rows;
  std::printf("%s (%s), %d layers of Llama-3-8B shape, bf16, gate/up + SiLU·Mul fused up to %d "
              "rows; weights made in %.1f s\n",
              t.deviceName().c_str(), t.arch().c_str(), a.layers, a.fused_max_rows, secs(t0));
  std::printf("%-7s %11s %22s %12s %13s\n", "shape", "step ms", "[p20, p80]", "tokens/s",
              "first step s");
  for (const auto& name : a.shapes) {
    if (a.budget_s > 0 && secs(t0) > a.budget_s) {
      std::printf("%-7s skipped (%.0f s budget spent)\n", name.c_str(), a.budget_s);
      continue;
    }
    int B = 0, T = 0, pos0 = 0;
    shapeOf(name, a.context, &B, &T, &pos0);
    Arena step_mem(t);
    KTUNE_ASSIGN_OR_RETURN(Step s, makeStep(step_mem, m, B, T, pos0, false));
    const auto f0 = Clock::now();
    KTUNE_RETURN_IF_ERROR(net.step(s, {}));
    KTUNE_RETURN_IF_ERROR(t.synchronize());
    const double first = secs(f0);
    ktune::BenchSettings bs;
    bs.warmup_ms = 20, bs.rep_ms = a.rep_ms, bs.min_runs = 5, bs.flush_l2 = false;
    KTUNE_ASSIGN_OR_RETURN(ktune::BenchStats st, t.benchmark([&] { return net.step(s, {}); }, bs));
    std::printf("%-7s %11.3f [%9.3f, %9.3f] %12.0f %13.2f\n", name.c_str(), st.median_ms,
                st.p20_ms, st.p80_ms, B * T / (st.median_ms * 1e-3), first);
    std::fflush(stdout);
  }
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parseArgs(argc, argv, &a)) {
    std::fprintf(stderr, "usage: %s [--check] [--layers N] [--context N] [--shapes d1,d8,p2048] "
                 "[--budget-s S] [--rep-ms MS] [--fused-max-rows N]\n", argv[0]);
    return 2;
  }
  auto opts = ktune::TunerOptions::fromEnv();
  if (!opts.ok()) return std::fprintf(stderr, "%s\n", opts.status().toString().c_str()), 2;
  if (opts->backend == "sim") {  // simulated costs are exact: a few runs per candidate suffice
    opts->warmup_ms = std::min(opts->warmup_ms, 0.1);
    opts->rep_ms = std::min(opts->rep_ms, 0.5);
  }
  auto tuner = ktune::Autotuner::create(*opts);
  if (!tuner.ok()) {
    std::fprintf(stderr, "no tuner: %s\n", tuner.status().toString().c_str());
    return 1;
  }
  ktune::Autotuner& t = **tuner;
  auto rope = t.addKernel(llama::ropeKvSpec());
  auto attn = t.addKernel(llama::attnSpec());
  if (!rope.ok() || !attn.ok()) {
    std::fprintf(stderr, "register: %s\n",
                 (rope.ok() ? attn.status() : rope.status()).toString().c_str());
    return 1;
  }
  if (a.check) return runCheck(t, *rope, *attn);
  if (t.backendName() == "sim") {
    std::printf("the simulated backend runs no ktune op: tokens/s needs a GPU (try --check)\n");
    return 0;
  }
  Status st = runTiming(t, a, *rope, *attn);
  if (!st.ok()) std::fprintf(stderr, "%s\n", st.toString().c_str());
  return st.ok() ? 0 : 1;
}
