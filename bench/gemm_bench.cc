// GEMM benchmark: ktune's best JIT config among a small curated set vs cuBLASLt's default
// (heuristic #0) and the best of cuBLASLt's first algorithms, same run, same buffers, timed
// interleaved (each variant goes first in turn, --rounds rounds). GPU time from device events,
// random bf16 inputs. Two timings:
//   flush: the L2 evicted before every timed run by a read of 2x L2 (clean lines, nothing to
//          write back inside the timed region; bench/fair/peers.h);
//   rot:   (M <= 128, decode; the primary figure there) 20 back-to-back launches over rotating
//          input copies whose total exceeds 2x L2, no flush, divided by 20; the weight-read
//          bound (a pure read of B, same rotation) is a variant of the same rounds.
// Every timed config (and the best cuBLASLt algorithm) is verified against cuBLASLt #0 on the
// timed shape in the same run. Per shape and mode it prints machine-readable lines,
//   RESULT gemm <shape>/<mode> <variant> <median_us> <lo> <hi> <n>
//   RATIO  gemm <shape>/<mode> <num>/<den> <median> <lo> <hi> <n>     (per-round time ratios)
//   VERIFY gemm <shape> <what> ok|FAIL <summary>
//   CLOCKS gemm <shape> <before> | <after>
// which dev/bench_table.py combines over repeated processes (dev/bench_device.sh).
//
//   gemm_bench [--wgmma] [--sweep] [--rounds=N] [--shapes=large|small|decode|fp8|prefill|MxNxK,...]
//              [--only=CONFIG;...] [--curated=FILE] [--profile] [--profile_lt=I,J,...]
//              [--benchmark_filter=...]
// An MxNxK of --shapes that is not in the built-in list is added as a bf16 NT shape.
//
// FP8 (issue 33): e4m3 x e4m3 -> bf16 at 4096^3 and 8192^3 (NT, unit scales) on the tma kind's fp8
// wgmma against cuBLASLt's FP8 algorithms (fast accumulation, the JIT kernel's numerics); cuBLASLt
// #0 FP8 is the verification reference. --shapes=fp8 runs them with the bf16 NT shapes of the
// same sizes, and an "FP8 gemm" line gives fp8 JIT TFLOP/s over bf16 JIT TFLOP/s.
//
// The pre-pass times every curated config (and the skinny kernel for small M) and picks the
// fastest. Skips everything (exit 0, message on stderr) when no CUDA device, NVRTC or cuBLASLt.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "autotune/compile_pool.h"
#include "ops/buffers.h"
#include "bench/fair/fair_timing.h"
#include "bench/fair/peers.h"
#include "autotune/verifier.h"
#include "bench/gemm_read_bound.h"
#include "base/dtype.h"
#include "ops/gemm.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"
#include "ops/vendor/cublaslt.h"
#include "templates/gemm.h"

namespace ktune {
namespace {

struct Ctx {
  std::unique_ptr<Backend> be;
  std::unique_ptr<Compiler> cc;
  DeviceInfo dev;
  std::unique_ptr<GemmRunner> runner;
  std::unique_ptr<cublaslt::CublasLt> lt;
  std::unique_ptr<StreamPeers> peers;  // the read-based L2 flush
  DevicePtr ws = 0;
  // The GEMM op's cuBLASLt workspace (cublaslt::kWorkspaceBytes, the one size everywhere), so heuristic #0
  // here is the op's vendor default.
  int64_t ws_bytes = cublaslt::kWorkspaceBytes;
  EventHandle e0, e1;
  int rounds = 15;
};
Ctx* g = nullptr;
bool g_wgmma = false;  // --wgmma: also try the Hopper kernels (wgmma, tma)
// --kinds=mma,tma,...: only these kernel kinds (default: mma, skinny, decode, and with --wgmma
// wgmma, tma)
std::vector<gemm::KernelKind> g_kinds;
std::string g_shape_filter;  // --shapes=large (M >= 1024) | small | decode (M <= 128) | MxNxK,...

bool kindEnabled(gemm::KernelKind k) {
  if (!g_kinds.empty()) return std::find(g_kinds.begin(), g_kinds.end(), k) != g_kinds.end();
  if (k == gemm::KernelKind::kWgmma || k == gemm::KernelKind::kTma) return g_wgmma;
  return k == gemm::KernelKind::kMma || k == gemm::KernelKind::kSkinny ||
         k == gemm::KernelKind::kDecode;
}
constexpr gemm::KernelKind kNvidiaKinds[] = {gemm::KernelKind::kMma, gemm::KernelKind::kSkinny,
                                             gemm::KernelKind::kWgmma, gemm::KernelKind::kTma,
                                             gemm::KernelKind::kDecode};
int g_rounds_flag = 0;  // --rounds=N (>= 3)
bool g_sweep = false;  // --sweep: also time a spread of each kernel's space (printed per config)
// --only=CONFIG;CONFIG...: the JIT candidates are exactly these configs (where they apply);
// --profile: launch each candidate and cuBLASLt #0 once per shape, no timing (for ncu);
// --profile_lt=I,J,...: the cuBLASLt heuristic ranks launched there instead of #0 alone (an
// entry "I@MxNxK" for that shape only; --profile_lt= launches none).
std::vector<std::string> g_only;
bool g_profile = false;
std::vector<std::string> g_profile_lt = {"0"};

// An --only or --profile_lt entry "X@MxNxK" applies to that shape only; "X" to every shape.
bool forShape(const std::string& entry, const gemm::GemmShape& s) {
  const size_t at = entry.find('@');
  return at == std::string::npos || entry.substr(at + 1) == std::to_string(s.m) + "x" +
                                        std::to_string(s.n) + "x" + std::to_string(s.k);
}

// The configs timed in the pre-pass: the curated set, plus with --sweep a spread of the space
// (skinny: every accepted config with the problem's A tile; wgmma: every accepted config that
// applies). Every candidate's time goes to stderr ("cand ..." lines) so a run documents them all.
std::string g_curated;  // --curated=FILE: a curated-table overlay (probe configs), before the shipped list
std::vector<Config> candidates(gemm::KernelKind k, const gemm::GemmShape& s) {
  if (!g_only.empty()) {
    std::vector<Config> out;
    for (const std::string& t : g_only) {
      if (!forShape(t, s)) continue;
      auto c = Config::parse(t.substr(0, t.find('@')));
      if (c.ok() && gemm::applicable(k, *c, s).ok()) out.push_back(*c);
    }
    return out;
  }
  auto overlaid = gemm::curatedConfigs(k, s, g->dev, g_curated);
  if (!overlaid.ok()) std::fprintf(stderr, "--curated: %s\n", overlaid.status().toString().c_str());
  auto out = overlaid.ok() ? *overlaid : gemm::curatedConfigs(k, s);
  if (!g_sweep || k == gemm::KernelKind::kMma) return out;
  const int64_t mt = std::clamp<int64_t>((s.m + 7) / 8, 1, 8);
  for (const Config& c : gemm::configSpace(k).enumerate("cuda", g->dev.shared_per_block_optin).accepted) {
    if (!gemm::applicable(k, c, s).ok()) continue;
    if (k == gemm::KernelKind::kSkinny &&
        (s.m > 16 || c.getInt("SK_MT") != mt || c.getInt("SK_NT") > 2 ||
         (c.getInt("NUM_WARPS") != 8 && c.getInt("SK_PF") != 1) ||
         (c.getInt("SK_PF") == 2 && c.getInt("SK_DEPTH") != 4)))
      continue;
    if (k == gemm::KernelKind::kWgmma && c.getInt("SPLIT_K") > 1 && s.m * s.n > 1024 * 1024) continue;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

struct ShapeSpec {
  int64_t m, n, k;
  gemm::Layout layout;
  gemm::ElemType ab = gemm::ElemType::kBF16;  // A and B (C is bf16)
};

// One (shape, mode) of the summary table: every variant's median with its interval, and the
// per-round ratios of each peer to ktune (> 1: ktune faster).
struct Row {
  std::string name, mode, config, lt_best;
  double flops = 0;
  fair::Interval ktune, lt0, ltbest, read, gated;  // us; gated: the same config with act silu_mul
  fair::Interval lt0_ratio, ltbest_ratio, read_ratio, gated_ratio;  // peer time / ktune time
  std::string clocks;
};
std::vector<Row> g_rows;

// One sample (us) of fn: with flush, the L2 evicted by reads, then one timed launch fn(i);
// otherwise 20 back-to-back launches fn(i * 20 + j) over rotating copies, divided by 20 (the
// decode pattern: no dirty L2, no host launch gap inside the timed region). -1 on failure.
template <class F>
double sampleUs(F&& fn, int i, bool flush) {
  constexpr int kBatch = 20;
  if (flush && !g->peers->flushL2().ok()) return -1;
  (void)g->be->recordEvent(g->e0);
  Status s = Status::Ok();
  if (flush) s = fn(i);
  else
    for (int j = 0; j < kBatch && s.ok(); ++j) s = fn(i * kBatch + j);
  (void)g->be->recordEvent(g->e1);
  (void)g->be->synchronizeEvent(g->e1);
  if (!s.ok()) return -1;
  auto ms = g->be->elapsedMs(g->e0, g->e1);
  if (!ms.ok()) return -1;
  return 1000.0 * *ms / (flush ? 1 : kBatch);
}

// Median of `runs` samples (fewer batches when back to back) after 3 warm-up launches.
template <class F>
double timeUs(F&& fn, int runs, bool flush = true) {
  for (int i = 0; i < 3; ++i) (void)fn(i);  // warm-up
  std::vector<double> t;
  const int samples = flush ? runs : std::max(3, runs / 4);
  for (int i = 0; i < samples; ++i) {
    const double us = sampleUs(fn, i + 1, flush);
    if (us < 0) return -1;
    t.push_back(us);
  }
  return fair::medianInterval(std::move(t)).median;
}

struct Bufs {
  DevicePtr a = 0, b = 0, c = 0;
};

Status fillRandom(DevicePtr p, DType t, int64_t count, uint32_t seed) {
  return ktune::fillRandom(*g->be, p, t, count, seed);
}

bench::ReadKernels g_read;  // the weight-read bound's kernels (bench/gemm_read_bound.h)

// The fastest pure read of `bytes` at `ptrs` (rotation when flush is false), timed like the GEMMs.
bench::ReadChoice readBound(const std::vector<DevicePtr>& ptrs, int64_t bytes, bool flush) {
  bench::ReadChoice best;
  for (bench::ReadChoice& c : bench::readLaunches(*g->be, g->dev, g_read, ptrs, bytes)) {
    c.us = timeUs(c.fn, 10, flush);
    if (c.us > 0 && (best.us < 0 || c.us < best.us)) best = c;
  }
  return best;
}

// What one shape's timing needs: its problem, cuBLASLt view and buffers (sets: rotating copies).
struct ShapeRun {
  std::string name;
  ShapeSpec sp;
  gemm::GemmShape s;
  cublaslt::LtProblem lp;
  GemmBuffers buf;
  std::vector<GemmBuffers> sets;
  double flops = 0;
};

Status ltLaunch(const ShapeRun& r, const cublaslt::LtAlgo& a, bool flush, int i) {
  const GemmBuffers& u = flush ? r.buf : r.sets[static_cast<size_t>(i) % r.sets.size()];
  return g->lt->run(r.lp, &a, u.a, u.b, u.c, 0, g->ws, g->ws_bytes);
}

// Runs `launch` into a NaN-poisoned C on the first input set and compares all of C with cuBLASLt
// #0's result on the same inputs (bf16 tolerance for a K-long fp32 reduction, scaled by sqrt(K)
// for the magnitude of unit-scale random products). Prints a VERIFY line.
void verifyOne(const ShapeRun& r, const std::string& what, const cublaslt::LtAlgo& lt0,
               const std::function<Status(const GemmBuffers&)>& launch) {
  const int64_t mn = r.sp.m * r.sp.n;
  auto ref = g->be->alloc(static_cast<size_t>(mn * 2));
  auto out = g->be->alloc(static_cast<size_t>(mn * 2));
  std::string verdict = "FAIL", detail;
  if (ref.ok() && out.ok()) {
    GemmBuffers rb = r.buf, ob = r.buf;
    rb.c = *ref;
    ob.c = *out;
    Status st = poisonNaN(*g->be, *out, DType::kBF16, mn);
    if (st.ok()) st = g->lt->run(r.lp, &lt0, rb.a, rb.b, rb.c, 0, g->ws, g->ws_bytes);
    if (st.ok()) st = launch(ob);
    if (st.ok()) st = g->be->synchronize();
    Tolerance tol = toleranceFor(DType::kBF16, r.sp.k);
    tol.atol *= std::sqrt(static_cast<double>(r.sp.k));
    auto v = st.ok() ? compareDeviceToTrusted(*g->be, *out, *ref, DType::kBF16, mn, tol)
                     : Expected<VerifyResult>(st);
    if (v.ok() && v->ok) verdict = "ok";
    detail = v.ok() ? v->summary() : v.status().toString();
  } else {
    detail = "allocation failed";
  }
  if (ref.ok()) (void)g->be->free(*ref);
  if (out.ok()) (void)g->be->free(*out);
  std::printf("VERIFY gemm %s %s %s %s\n", r.name.c_str(), what.c_str(), verdict.c_str(), detail.c_str());
}

void verifyLt(const ShapeRun& r, const cublaslt::LtAlgo& lt0, const cublaslt::LtAlgo& a) {
  verifyOne(r, "cublaslt:idx=" + std::to_string(a.index), lt0, [&](const GemmBuffers& u) {
    return g->lt->run(r.lp, &a, u.a, u.b, u.c, 0, g->ws, g->ws_bytes);
  });
}

template <class Cand>
void verifyTimed(const ShapeRun& r, const cublaslt::LtAlgo& lt0, const Cand& best, const Cand& rbest) {
  for (const Cand* c : {&best, &rbest}) {
    if (c == &rbest && rbest.k == best.k && rbest.c == best.c) break;
    verifyOne(r, std::string(gemm::kernelKindName(c->k)) + ":" + c->c.toString(), lt0,
              [&](const GemmBuffers& u) { return g->runner->launch(c->k, c->c, r.s, u); });
  }
}

std::string clocksNow() {
  auto c = fair::readGpuClocks(0);
  return c.ok() ? c->toString() : "clocks unavailable";
}

// The gate/up variant of a shape (act silu_mul over the same N weight rows, N/2 columns of C).
gemm::GemmShape gatedShape(gemm::GemmShape s) {
  s.act = gemm::Activation::kSiluMul;
  s.ldc = s.n / 2;
  return s;
}

// Registers the interleaved measurement of one (shape, mode): ktune's config, cuBLASLt #0, the
// best cuBLASLt algorithm and (when given) the weight-read bound, g->rounds rounds, each variant
// first in turn; RESULT/RATIO/CLOCKS lines and a summary row.
// `gated`: the fastest decode config of the gate/up variant (empty: none applies).
void registerMode(const ShapeRun& r, bool flush, gemm::KernelKind k, const Config& c,
                  const cublaslt::LtAlgo& lt0, const cublaslt::LtAlgo& ltbest, const bench::ReadChoice& rb,
                  const Config& gated) {
  const std::string mode = flush ? "flush" : "rot";
  benchmark::RegisterBenchmark((r.name + "/" + mode).c_str(), [=](benchmark::State& st) {
    std::vector<std::function<Status(int)>> fns = {
        [&](int i) { return g->runner->launch(k, c, r.s, flush ? r.buf : r.sets[size_t(i) % r.sets.size()]); },
        [&](int i) { return ltLaunch(r, lt0, flush, i); },
        [&](int i) { return ltLaunch(r, ltbest, flush, i); }};
    Row row;
    std::vector<const char*> names = {"ktune", "cublaslt0", "cublaslt_best"};
    std::vector<fair::Interval*> t = {&row.ktune, &row.lt0, &row.ltbest};
    std::vector<fair::Interval*> ratios = {&row.lt0_ratio, &row.ltbest_ratio};
    if (rb.fn) {
      fns.push_back(rb.fn);
      names.push_back("read_bound");
      t.push_back(&row.read);
      ratios.push_back(&row.read_ratio);
    }
    // The gate/up epilogue over the same weights (B = [gate; up], C gets N/2 columns) with its own
    // fastest decode config: what fusing SiLU*Mul into the GEMM costs (issue 32: <= 1.03x the
    // plain GEMM's best).
    const gemm::GemmShape gs = gatedShape(r.s);
    if (!gated.empty()) {
      fns.push_back([&, gs](int i) {
        return g->runner->launch(gemm::KernelKind::kDecode, gated, gs,
                                 flush ? r.buf : r.sets[size_t(i) % r.sets.size()]);
      });
      names.push_back("silu_mul");
      t.push_back(&row.gated);
      ratios.push_back(&row.gated_ratio);
    }
    for (auto& f : fns)
      for (int i = 0; i < 3; ++i) (void)f(i);  // warm-up
    const std::string before = clocksNow();
    int counter = 0;
    auto samples = fair::interleave(static_cast<int>(fns.size()), g->rounds,
                                    [&](int v) { return sampleUs(fns[size_t(v)], ++counter, flush); });
    row.name = r.name;
    row.mode = mode;
    row.config = std::string(gemm::kernelKindName(k)) + ":" + c.toString() +
                 (gated.empty() ? "" : "; silu_mul decode:" + gated.toString());
    row.lt_best = "idx=" + std::to_string(ltbest.index);
    row.flops = r.flops;
    for (size_t v = 0; v < fns.size(); ++v) {
      *t[v] = fair::medianInterval(samples[v]);
      std::printf("RESULT gemm %s/%s %s %.3f %.3f %.3f %d\n", r.name.c_str(), mode.c_str(), names[v],
                  t[v]->median, t[v]->lo, t[v]->hi, t[v]->n);
    }
    for (size_t v = 1; v < fns.size(); ++v) {
      *ratios[v - 1] = fair::ratioInterval(samples[v], samples[0]);
      std::printf("RATIO gemm %s/%s %s/ktune %.4f %.4f %.4f %d\n", r.name.c_str(), mode.c_str(),
                  names[v], ratios[v - 1]->median, ratios[v - 1]->lo, ratios[v - 1]->hi, ratios[v - 1]->n);
    }
    row.clocks = before + " | " + clocksNow();
    std::printf("CLOCKS gemm %s/%s %s\n", r.name.c_str(), mode.c_str(), row.clocks.c_str());
    for (auto _ : st) st.SetIterationTime(row.ktune.median * 1e-6);
    st.counters["ktune_us"] = row.ktune.median;
    st.counters["lt0_over_ktune"] = row.lt0_ratio.median;
    st.counters["ltbest_over_ktune"] = row.ltbest_ratio.median;
    st.counters["TFLOP/s"] = r.flops / (row.ktune.median * 1e-6) / 1e12;
    st.SetLabel(row.config);
    g_rows.push_back(row);
  })->UseManualTime()->Iterations(1);
}

// --profile: one launch of every candidate and of the --profile_lt cuBLASLt algorithms (#0 by
// default), in that order (PROFILE lines name them), so `ncu -k regex:...` sees each kernel once.
void profileShape(const std::string& name, const gemm::GemmShape& s, const GemmBuffers& buf) {
  for (gemm::KernelKind k : kNvidiaKinds) {
    if (!kindEnabled(k)) continue;
    for (const Config& cfg : candidates(k, s)) {
      const Status st = g->runner->launch(k, cfg, s, buf);
      std::printf("PROFILE %s %s %s %s\n", name.c_str(), gemm::kernelKindName(k), cfg.toString().c_str(),
                  st.ok() ? "ok" : st.toString().c_str());
    }
  }
  // The weight read alone, one fixed variant of the read bound (512 threads x 4 loads, 2 blocks per
  // SM), so a profile compares the GEMM's DRAM traffic with a linear read of the same bytes.
  for (const bench::ReadChoice& rc :
       bench::readLaunches(*g->be, g->dev, g_read, {buf.b}, s.n * s.k * gemm::elemBytes(s.ab)))
    if (rc.how.rfind("read 512x4,", 0) == 0) {
      const Status st = rc.fn(0);
      std::printf("PROFILE %s %s %s\n", name.c_str(), rc.how.c_str(), st.ok() ? "ok" : st.toString().c_str());
      break;
    }
  auto lp = toLtProblem(s);
  std::vector<int> ranks;
  for (const std::string& e : g_profile_lt)
    if (forShape(e, s)) ranks.push_back(std::max(0, std::atoi(e.c_str())));
  const int want = ranks.empty() ? 1 : 1 + *std::max_element(ranks.begin(), ranks.end());
  auto algos = lp.ok() ? g->lt->heuristics(*lp, want, g->ws_bytes) : Expected<std::vector<cublaslt::LtAlgo>>(lp.status());
  for (int idx : ranks) {
    if (!algos.ok() || idx >= static_cast<int>(algos->size())) continue;
    const auto& al = (*algos)[static_cast<size_t>(idx)];
    const Status st = g->lt->run(*lp, &al, buf.a, buf.b, buf.c, 0, g->ws, g->ws_bytes);
    std::printf("PROFILE %s cublaslt idx=%d %s\n", name.c_str(), idx, st.ok() ? "ok" : st.toString().c_str());
  }
  (void)g->be->synchronize();
}

void runShape(const ShapeSpec& sp) {
  using gemm::KernelKind;
  gemm::GemmShape s = gemm::denseShape(sp.layout, sp.ab, gemm::ElemType::kBF16, sp.m, sp.n, sp.k);
  const int64_t eb = gemm::elemBytes(sp.ab);
  const std::string name = (isFp8(sp.ab) ? std::string(gemm::elemTypeName(sp.ab)) + "_" : "") +
                           gemm::layoutName(sp.layout) + "_" + std::to_string(sp.m) + "x" +
                           std::to_string(sp.n) + "x" + std::to_string(sp.k);
  // Small-M (weight-streaming) shapes are also timed back to back over rotating copies of A and B
  // (enough that the copies not in use exceed 2x L2) instead of after a flush.
  const bool rotate = sp.m <= 128;
  const int64_t ab_bytes = (sp.m + sp.n) * sp.k * eb;
  const int copies = rotate ? static_cast<int>(std::min<int64_t>(
                                  16, (2 * g->dev.l2_bytes + ab_bytes - 1) / ab_bytes + 1))
                            : 1;
  std::vector<GemmBuffers> sets;
  auto c = g->be->alloc(static_cast<size_t>(sp.m * sp.n * 2));
  if (!c.ok()) return;
  for (int i = 0; i < copies; ++i) {
    auto a = g->be->alloc(static_cast<size_t>(sp.m * sp.k * eb));
    auto bb = g->be->alloc(static_cast<size_t>(sp.n * sp.k * eb));
    if (!a.ok() || !bb.ok()) {
      std::fprintf(stderr, "%s: allocation failed\n", name.c_str());
      return;
    }
    (void)fillRandom(*a, sp.ab, sp.m * sp.k, 1 + 2 * i);
    (void)fillRandom(*bb, sp.ab, sp.n * sp.k, 2 + 2 * i);
    sets.push_back(GemmBuffers{*a, *bb, *c, 0});
  }
  const GemmBuffers buf = sets[0];

  if (g_profile) {
    profileShape(name, s, buf);
    return;
  }
  // Pre-pass: every curated config of every applicable kernel; keep the fastest.
  struct Cand { KernelKind k; Config c; double us; };
  auto pick = [&](bool flush, const gemm::GemmShape& shape) {
    std::vector<Cand> cands;
    for (KernelKind k : kNvidiaKinds) {
      if ((k == KernelKind::kSkinny || k == KernelKind::kDecode) && sp.m > 128) continue;
      if (!kindEnabled(k) || (shape.act == gemm::Activation::kSiluMul && k != KernelKind::kDecode))
        continue;
      for (const Config& cfg : candidates(k, shape)) {
        const double us = timeUs([&](int i) {
          return g->runner->launch(k, cfg, shape, flush ? buf : sets[i % copies]);
        }, 10, flush);
        std::fprintf(stderr, "cand %s %s %s%s %s %.2f\n", name.c_str(), flush ? "flush" : "rot",
                     gemm::kernelKindName(k), shape.act == gemm::Activation::kSiluMul ? " silu_mul" : "",
                     cfg.toString().c_str(), us);
        if (us > 0) cands.push_back({k, cfg, us});
        else std::fprintf(stderr, "%s: %s %s failed\n", name.c_str(), gemm::kernelKindName(k),
                          cfg.toString().c_str());
      }
    }
    if (cands.empty()) return Cand{KernelKind::kMma, Config(), -1};
    return *std::min_element(cands.begin(), cands.end(),
                             [](const Cand& x, const Cand& y) { return x.us < y.us; });
  };
  const Cand best = pick(true, s);
  if (best.us < 0) return;
  const Cand rbest = rotate ? pick(false, s) : best;
  const bool gate_up = kindEnabled(KernelKind::kDecode) && sp.m <= 128 && sp.n % 2 == 0 &&
                       sp.layout == gemm::Layout::kNT;
  const Cand gbest = gate_up ? pick(true, gatedShape(s)) : Cand{KernelKind::kDecode, Config(), -1};
  const Cand grbest = gate_up && rotate ? pick(false, gatedShape(s)) : gbest;
  auto lp = toLtProblem(s);
  if (!lp.ok()) return;
  auto algos = g->lt->heuristics(*lp, 8, g->ws_bytes);
  if (!algos.ok()) {
    std::fprintf(stderr, "%s: cuBLASLt: %s\n", name.c_str(), algos.status().toString().c_str());
    return;
  }
  const ShapeRun run{name, sp, s, *lp, buf, sets, 2.0 * sp.m * sp.n * sp.k};
  verifyTimed(run, algos->front(), best, rbest);
  // --only is a probe: every listed config that ran is checked, not only the fastest.
  if (!g_only.empty())
    for (const Config& cfg : candidates(best.k, s))
      if (!(cfg == best.c) && !(cfg == rbest.c))
        verifyOne(run, std::string(gemm::kernelKindName(best.k)) + ":" + cfg.toString(), algos->front(),
                  [&](const GemmBuffers& u) { return g->runner->launch(best.k, cfg, s, u); });
  for (bool flush : {true, false}) {
    if (!flush && !rotate) continue;
    const Cand bc = flush ? best : rbest;
    // The best cuBLASLt algorithm under this mode's timing (pre-pass), #0 included.
    cublaslt::LtAlgo ltbest = algos->front();
    double ltbest_us = -1;
    for (const auto& al : *algos) {
      const double us = timeUs([&](int i) { return ltLaunch(run, al, flush, i); }, 10, flush);
      std::fprintf(stderr, "cand %s %s cublaslt idx=%d %.2f\n", name.c_str(), flush ? "flush" : "rot",
                   al.index, us);
      if (us > 0 && (ltbest_us < 0 || us < ltbest_us)) {
        ltbest_us = us;
        ltbest = al;
      }
    }
    if (ltbest.index != 0) verifyLt(run, algos->front(), ltbest);
    bench::ReadChoice rb;
    if (rotate && !g_read.kernels.empty()) {
      std::vector<DevicePtr> bs;
      for (const auto& u : sets) bs.push_back(u.b);
      rb = readBound(flush ? std::vector<DevicePtr>{buf.b} : bs, sp.n * sp.k * eb, flush);
    }
    const Cand& gc = flush ? gbest : grbest;
    registerMode(run, flush, bc.k, bc.c, algos->front(), ltbest, rb, gc.us > 0 ? gc.c : Config());
  }
}

bool setup() {
  g = new Ctx();
  auto be = openCudaBackend();
  if (!be.ok()) {
    std::fprintf(stderr, "gemm_bench: skipped, no GPU: %s\n", be.status().toString().c_str());
    return false;
  }
  g->be = std::move(be).value();
  auto devs = g->be->devices();
  if (!devs.ok() || devs->empty() || !g->be->setDevice(0).ok()) {
    std::fprintf(stderr, "gemm_bench: skipped, no CUDA device\n");
    return false;
  }
  g->dev = (*devs)[0];
  auto cc = compilerForArch(g->dev.arch);
  if (!cc.ok()) {
    std::fprintf(stderr, "gemm_bench: skipped: %s\n", cc.status().toString().c_str());
    return false;
  }
  g->cc = std::move(cc).value();
  auto lt = cublaslt::CublasLt::open();
  if (!lt.ok()) {
    std::fprintf(stderr, "gemm_bench: skipped: %s\n", lt.status().toString().c_str());
    return false;
  }
  g->lt = std::move(lt).value();
  g->runner = std::make_unique<GemmRunner>(*g->be, *g->cc, g->dev);
  auto peers = StreamPeers::create(*g->be, *g->cc, g->dev);
  if (!peers.ok()) {
    std::fprintf(stderr, "gemm_bench: skipped: L2 flush kernel: %s\n", peers.status().toString().c_str());
    return false;
  }
  g->peers = std::move(peers).value();
  auto w = g->be->alloc(static_cast<size_t>(g->ws_bytes));
  auto e0 = g->be->createEvent();
  auto e1 = g->be->createEvent();
  if (!w.ok() || !e0.ok() || !e1.ok()) return false;
  g->ws = *w;
  g->e0 = *e0;
  g->e1 = *e1;
  std::fprintf(stderr, "gemm_bench: %s (%s), %s\n", g->dev.name.c_str(), g->dev.arch.c_str(),
               g->lt->version().c_str());
  return true;
}

// Compiles every candidate of every shape up front on all cores (NVRTC takes seconds per GEMM
// instance); later launches hit the runner's cache.
void precompile(const std::vector<ShapeSpec>& shapes) {
  std::vector<std::pair<gemm::KernelKind, std::pair<Config, gemm::GemmShape>>> jobs;
  for (const auto& sp : shapes) {
    auto s = gemm::denseShape(sp.layout, sp.ab, gemm::ElemType::kBF16, sp.m, sp.n, sp.k);
    for (auto k : kNvidiaKinds) {
      if ((k == gemm::KernelKind::kSkinny || k == gemm::KernelKind::kDecode) && sp.m > 128) continue;
      if (!kindEnabled(k)) continue;
      for (auto& c : candidates(k, s)) {
        jobs.push_back({k, {c, s}});
        if (k != gemm::KernelKind::kDecode || sp.n % 2) continue;
        jobs.push_back({k, {c, gatedShape(s)}});  // the gate/up variant timed beside the winner
      }
    }
  }
  CompilePool::parallelFor(jobs.size(), CompilePool::threadsFor(jobs.size(), 0, false), [&](size_t j) {
    auto r = g->runner->compile(jobs[j].first, jobs[j].second.first, jobs[j].second.second);
    if (!r.ok())
      std::fprintf(stderr, "compile failed: %s %s: %s\n", gemm::kernelKindName(jobs[j].first),
                   jobs[j].second.first.toString().c_str(), r.status().toString().c_str());
  });
}

}  // namespace
}  // namespace ktune

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a run cut by a timeout keeps its lines
  using ktune::gemm::Layout;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--wgmma") ktune::g_wgmma = true;
    else if (std::string(argv[i]) == "--sweep") ktune::g_sweep = true;
    else if (std::string(argv[i]) == "--profile") ktune::g_profile = true;
    else if (std::string(argv[i]).rfind("--profile_lt=", 0) == 0) {
      ktune::g_profile_lt.clear();
      std::string list = std::string(argv[i]).substr(13) + ",";
      for (size_t p = 0, q; (q = list.find(',', p)) != std::string::npos; p = q + 1)
        if (q > p) ktune::g_profile_lt.push_back(list.substr(p, q - p));
    }
    else if (std::string(argv[i]).rfind("--only=", 0) == 0) {
      std::string list = std::string(argv[i]).substr(7) + ";";
      for (size_t p = 0, q; (q = list.find(';', p)) != std::string::npos; p = q + 1)
        if (q > p) ktune::g_only.push_back(list.substr(p, q - p));
    }
    else if (std::string(argv[i]).rfind("--kinds=", 0) == 0) {
      std::string list = std::string(argv[i]).substr(8) + ",";
      for (size_t p = 0, q; (q = list.find(',', p)) != std::string::npos; p = q + 1)
        for (auto k : ktune::kNvidiaKinds)
          if (list.substr(p, q - p) == ktune::gemm::kernelKindName(k)) ktune::g_kinds.push_back(k);
    } else if (std::string(argv[i]).rfind("--rounds=", 0) == 0) {
      ktune::g_rounds_flag = std::max(3, std::atoi(argv[i] + 9));
    } else if (std::string(argv[i]).rfind("--curated=", 0) == 0) {
      ktune::g_curated = std::string(argv[i]).substr(10);
    } else if (std::string(argv[i]).rfind("--shapes=", 0) == 0) {
      ktune::g_shape_filter = std::string(argv[i]).substr(9);
    }
    else argv[kept++] = argv[i];
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (!ktune::setup()) return 0;
  if (ktune::g_rounds_flag > 0) ktune::g->rounds = ktune::g_rounds_flag;
  std::vector<ktune::ShapeSpec> shapes = {
      {8192, 8192, 8192, Layout::kNT},  {4096, 4096, 4096, Layout::kNT},
      {4096, 4096, 4096, Layout::kNN},  {1024, 14336, 4096, Layout::kNT},
      {4096, 4096, 14336, Layout::kNT}, {4096, 6144, 4096, Layout::kNT},
  };
  // Decode (issue 32): M = 1..128 (powers of two) over the five LLM weight shapes; each row
  // reports its weight-read bound (read/ktune) and, where the decode kernel wins, its gate/up
  // epilogue (silu_mul/ktune). --shapes=small (M < 1024) or decode (M <= 128) selects them.
  const std::pair<int64_t, int64_t> weights[] = {
      {4096, 4096}, {6144, 4096}, {14336, 4096}, {4096, 14336}, {28672, 4096}};
  for (const auto& [n, k] : weights)
    for (int64_t m = 1; m <= 128; m *= 2) shapes.push_back({m, n, k, Layout::kNT});
  // FP8 (issue 33): e4m3 -> bf16, NT (the one layout fp8 wgmma reads).
  for (int64_t d : {4096, 8192}) shapes.push_back({d, d, d, Layout::kNT, ktune::gemm::ElemType::kF8E4M3});
  // --shapes=prefill: issue 33's bf16 prefill targets (the large NT shapes above and these).
  const size_t extra = shapes.size();
  shapes.push_back({2048, 28672, 8192, Layout::kNT});
  shapes.push_back({3000, 5000, 1000, Layout::kNT});
  shapes.push_back({3000, 5000, 1000, Layout::kNN});
  // Any other MxNxK of the list (e.g. a K sweep): bf16 NT.
  for (size_t p = 0; p < ktune::g_shape_filter.size();) {
    const size_t q = std::min(ktune::g_shape_filter.find(',', p), ktune::g_shape_filter.size());
    long long m = 0, n = 0, k = 0;
    char tail = 0;
    const std::string tok = ktune::g_shape_filter.substr(p, q - p);
    p = q + 1;
    if (std::sscanf(tok.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m <= 0 || n <= 0 || k <= 0)
      continue;
    if (std::none_of(shapes.begin(), shapes.end(), [&](const ktune::ShapeSpec& s) {
          return s.m == m && s.n == n && s.k == k && s.layout == Layout::kNT && !ktune::isFp8(s.ab);
        }))
      shapes.push_back({m, n, k, Layout::kNT});
  }
  std::vector<ktune::ShapeSpec> chosen;
  // --shapes=large | small | MxNxK[:LAYOUT][,...] (shapes of the list above; NT without a layout).
  const std::string list = "," + ktune::g_shape_filter + ",";
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& s = shapes[i];
    const std::string id = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    const bool fp8 = ktune::isFp8(s.ab);
    const bool prefill = i >= extra || (s.m >= 1024 && !fp8 && s.layout == Layout::kNT);
    if ((ktune::g_shape_filter.empty() && i < extra) ||
        (ktune::g_shape_filter == "prefill" && prefill) ||
        (ktune::g_shape_filter == "fp8" && s.layout == Layout::kNT && s.m == s.n && s.n == s.k &&
         (s.m == 4096 || s.m == 8192)) ||
        (fp8 && list.find(",fp8,") != std::string::npos) ||
        (ktune::g_shape_filter == "large" && s.m >= 1024 && !fp8 && i < extra) ||
        (ktune::g_shape_filter == "small" && s.m < 1024) ||
        (ktune::g_shape_filter == "decode" && s.m <= 128) ||
        (s.layout == Layout::kNT && !fp8 && list.find("," + id + ",") != std::string::npos) ||
        list.find("," + id + ":" + ktune::gemm::layoutName(s.layout) + ",") != std::string::npos)
      chosen.push_back(s);
  }
  ktune::precompile(chosen);
  ktune::g_read = ktune::bench::buildReadKernels(*ktune::g->be, *ktune::g->cc, ktune::g->dev);
  for (const auto& s : chosen) ktune::runShape(s);
  benchmark::RunSpecifiedBenchmarks();
  std::printf("\n%d interleaved rounds; median [interval] in us; ratio = peer time / ktune time per"
              " round (> 1: ktune faster)\n%-26s %-5s %-24s %-24s %-24s %-22s %-22s %s\n",
              ktune::g->rounds, "shape", "mode", "ktune_us", "cublaslt0_us", "cublaslt_best_us",
              "lt0/ktune", "ltbest/ktune", "read/ktune");
  auto iv = [](const ktune::fair::Interval& x, const char* f) {
    char b[64];
    std::snprintf(b, sizeof b, f, x.median, x.lo, x.hi);
    return std::string(x.n > 0 ? b : "-");
  };
  for (const auto& r : ktune::g_rows)
    std::printf("%-26s %-5s %-24s %-24s %-24s %-22s %-22s %s\n  ktune %s, best cuBLASLt %s; "
                "silu_mul/ktune %s; %s\n",
                r.name.c_str(), r.mode.c_str(), iv(r.ktune, "%.2f [%.2f,%.2f]").c_str(),
                iv(r.lt0, "%.2f [%.2f,%.2f]").c_str(), iv(r.ltbest, "%.2f [%.2f,%.2f]").c_str(),
                iv(r.lt0_ratio, "%.3f [%.3f,%.3f]").c_str(), iv(r.ltbest_ratio, "%.3f [%.3f,%.3f]").c_str(),
                iv(r.read_ratio, "%.3f [%.3f,%.3f]").c_str(), r.config.c_str(), r.lt_best.c_str(),
                iv(r.gated_ratio, "%.3f [%.3f,%.3f]").c_str(), r.clocks.c_str());
  // FP8 against the bf16 JIT kernel of the same size, same run (target >= 1.6x).
  for (const auto& f : ktune::g_rows) {
    if (f.name.rfind("f8", 0) != 0) continue;
    const std::string bf = f.name.substr(f.name.find('_') + 1);
    for (const auto& b : ktune::g_rows)
      if (b.name == bf && b.mode == f.mode && f.ktune.n > 0 && b.ktune.n > 0)
        std::printf("FP8 gemm %s fp8_jit_tflops %.1f bf16_jit_tflops %.1f fp8/bf16 %.3f "
                    "ltbest_fp8/ktune_fp8 %.3f\n",
                    bf.c_str(), f.flops / f.ktune.median * 1e-6, b.flops / b.ktune.median * 1e-6,
                    b.ktune.median / f.ktune.median, f.ltbest_ratio.median);
  }
  benchmark::Shutdown();
  return 0;
}
