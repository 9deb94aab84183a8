// GEMM benchmark: ktune's best JIT config among a small curated set vs cuBLASLt's default
// (heuristic #0) and the best of cuBLASLt's first algorithms, same run, same buffers, timed
// interleaved (each variant goes first in turn, --rounds rounds). GPU time from device events,
// random bf16 inputs. Two timings:
//   flush: the L2 evicted before every timed run by a read of 2x L2 (clean lines, nothing to
//          write back inside the timed region; bench/fair/peers.h);
//   rot:   (M <= 128, decode; the primary figure there) 20 back-to-back launches over rotating
//          input copies whose total exceeds 2x L2, divided by 20, after a read flush outside the
//          timed region (--rot_reset=0: none, the figures before the twenty-fifth session); the
//          weight-read bound (a pure read of B, same rotation) is a variant of the same rounds.
// Every timed config (and the best cuBLASLt algorithm) is verified against cuBLASLt #0 on the
// timed shape in the same run. Per shape and mode it prints machine-readable lines,
//   RESULT gemm <shape>/<mode> <variant> <median_us> <lo> <hi> <n>
//   RATIO  gemm <shape>/<mode> <num>/<den> <median> <lo> <hi> <n>     (per-round time ratios)
//   VERIFY gemm <shape> <what> ok|FAIL <summary>
//   CLOCKS gemm <shape> <before> | <after>
// which dev/bench_table.py combines over repeated processes (dev/bench_device.sh).
//
//   gemm_bench [--wgmma] [--sweep] [--rounds=N] [--shapes=large|small|decode|fp8|prefill|MxNxK,...]
//              [--only=CONFIG;...] [--twin=CONFIG;...] [--curated=FILE] [--profile] [--profile_lt=I,J,...]
//              [--trace=N] [--tuner_method=R [--sustain_ms=T]] [--compile_only] [--rot_reset=0|1]
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
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "autotune/compile_pool.h"
#include "bench/gemm_bench_modes.h"
#include "bench/gemm_bench_state.h"
#include "bench/gemm_bench_timing.h"
#include "bench/gemm_bench_tuner.h"

// The context, flags and rows: bench/gemm_bench_state.h; timing and verification:
// bench/gemm_bench_timing.h; the interleaved rounds and --profile: bench/gemm_bench_modes.h.
namespace ktune::gemm_bench {

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
  if (g_trace > 0) {
    traceShape(name, s, sets);
    return;
  }
  // Pre-pass: every curated config of every applicable kernel; keep the fastest.
  struct Cand { KernelKind k; Config c; double us; };
  auto pick = [&](bool flush, const gemm::GemmShape& shape) {
    std::vector<Cand> cands;
    for (KernelKind k : kNvidiaKinds) {
      if ((k == KernelKind::kSkinny || k == KernelKind::kDecode) && sp.m > 128) continue;
      if (!kindEnabled(k) || (shape.act == gemm::Activation::kSiluMul && k != KernelKind::kDecode &&
                              k != KernelKind::kTma))
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
  const bool gate_up = (kindEnabled(KernelKind::kDecode) || kindEnabled(KernelKind::kTma)) &&
                       sp.m <= 128 && sp.n % 2 == 0 && sp.layout == gemm::Layout::kNT;
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
  // --only is a probe: every listed config that ran is checked, not only the fastest; so is every
  // --twin timed beside the pick.
  std::vector<Config> checked = g_only.empty() ? std::vector<Config>{} : candidates(best.k, s);
  for (const Cand& pk : {best, rbest})
    for (const Config& cfg : twins(pk.k, s, pk.c, /*why=*/false))
      if (std::find(checked.begin(), checked.end(), cfg) == checked.end()) checked.push_back(cfg);
  for (const Config& cfg : checked)
    if (!(cfg == best.c) && !(cfg == rbest.c))
      verifyOne(run, std::string(gemm::kernelKindName(best.k)) + ":" + cfg.toString(), algos->front(),
                [&](const GemmBuffers& u) { return g->runner->launch(best.k, cfg, s, u); });
  // --tuner_method: the tuner's do_bench beside gemm_bench's sampling (bench/gemm_bench_tuner.h).
  if (g_tuner_method > 0) tunerMethod(run, best.k, candidates(best.k, s), *algos);
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
    registerMode(run, flush, bc.k, bc.c, algos->front(), ltbest, rb, gc.k, gc.us > 0 ? gc.c : Config());
  }
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
      auto cs = candidates(k, s);
      for (const Config& t : twins(k, s, Config(), /*why=*/false))
        if (std::find(cs.begin(), cs.end(), t) == cs.end()) cs.push_back(t);
      for (auto& c : cs) {
        jobs.push_back({k, {c, s}});
        // The gate/up variant timed beside the winner (the decode and tma kinds' configs that take it).
        if (sp.m > 128 || sp.n % 2 || sp.layout != gemm::Layout::kNT ||
            !gemm::applicable(k, c, gatedShape(s)).ok())
          continue;
        jobs.push_back({k, {c, gatedShape(s)}});
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

}  // namespace ktune::gemm_bench

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a run cut by a timeout keeps its lines
  using ktune::gemm::Layout;
  namespace gb = ktune::gemm_bench;
  int kept = 1;
  bool compile_only = false;  // --compile_only: the kernels of the chosen shapes into the cache, no timing
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--wgmma") gb::g_wgmma = true;
    else if (std::string(argv[i]) == "--sweep") gb::g_sweep = true;
    else if (std::string(argv[i]) == "--profile") gb::g_profile = true;
    else if (std::string(argv[i]) == "--compile_only") compile_only = true;
    else if (std::string(argv[i]).rfind("--trace=", 0) == 0) gb::g_trace = std::max(1, std::atoi(argv[i] + 8));
    else if (std::string(argv[i]).rfind("--rot_reset=", 0) == 0) gb::g_rot_reset = std::atoi(argv[i] + 12) != 0;
    else if (std::string(argv[i]).rfind("--profile_lt=", 0) == 0) {
      gb::g_profile_lt.clear();
      std::string list = std::string(argv[i]).substr(13) + ",";
      for (size_t p = 0, q; (q = list.find(',', p)) != std::string::npos; p = q + 1)
        if (q > p) gb::g_profile_lt.push_back(list.substr(p, q - p));
    }
    else if (std::string(argv[i]).rfind("--only=", 0) == 0) {
      std::string list = std::string(argv[i]).substr(7) + ";";
      for (size_t p = 0, q; (q = list.find(';', p)) != std::string::npos; p = q + 1)
        if (q > p) gb::g_only.push_back(list.substr(p, q - p));
    }
    else if (std::string(argv[i]).rfind("--twin=", 0) == 0) {
      std::string list = std::string(argv[i]).substr(7) + ";";
      for (size_t p = 0, q; (q = list.find(';', p)) != std::string::npos; p = q + 1)
        if (q > p) gb::g_twin.push_back(list.substr(p, q - p));
    }
    else if (std::string(argv[i]).rfind("--kinds=", 0) == 0) {
      std::string list = std::string(argv[i]).substr(8) + ",";
      for (size_t p = 0, q; (q = list.find(',', p)) != std::string::npos; p = q + 1)
        for (auto k : gb::kNvidiaKinds)
          if (list.substr(p, q - p) == ktune::gemm::kernelKindName(k)) gb::g_kinds.push_back(k);
    } else if (std::string(argv[i]).rfind("--rounds=", 0) == 0) {
      gb::g_rounds_flag = std::max(3, std::atoi(argv[i] + 9));
    } else if (std::string(argv[i]).rfind("--tuner_method=", 0) == 0) {
      gb::g_tuner_method = std::max(1, std::atoi(argv[i] + 15));
    } else if (std::string(argv[i]).rfind("--sustain_ms=", 0) == 0) {
      gb::g_sustain_ms = std::atof(argv[i] + 13);
    } else if (std::string(argv[i]).rfind("--curated=", 0) == 0) {
      gb::g_curated = std::string(argv[i]).substr(10);
    } else if (std::string(argv[i]).rfind("--shapes=", 0) == 0) {
      gb::g_shape_filter = std::string(argv[i]).substr(9);
    }
    else argv[kept++] = argv[i];
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (!gb::setup()) return 0;
  if (gb::g_rounds_flag > 0) gb::g->rounds = gb::g_rounds_flag;
  std::vector<gb::ShapeSpec> shapes = {
      {8192, 8192, 8192, Layout::kNT},  {4096, 4096, 4096, Layout::kNT},
      {4096, 4096, 4096, Layout::kNN},  {1024, 14336, 4096, Layout::kNT},
      {4096, 4096, 14336, Layout::kNT}, {4096, 6144, 4096, Layout::kNT},
  };
  // Decode (issue 32): M = 1..128 (powers of two) over the five LLM weight shapes; each row
  // reports its weight-read bound (read/ktune) and its gate/up epilogue (silu_mul/ktune: the
  // fastest decode or tma config of the pair against the plain pick). --shapes=small (M < 1024) or decode (M <= 128) selects them.
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
  for (size_t p = 0; p < gb::g_shape_filter.size();) {
    const size_t q = std::min(gb::g_shape_filter.find(',', p), gb::g_shape_filter.size());
    long long m = 0, n = 0, k = 0;
    char tail = 0;
    const std::string tok = gb::g_shape_filter.substr(p, q - p);
    p = q + 1;
    if (std::sscanf(tok.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m <= 0 || n <= 0 || k <= 0)
      continue;
    if (std::none_of(shapes.begin(), shapes.end(), [&](const gb::ShapeSpec& s) {
          return s.m == m && s.n == n && s.k == k && s.layout == Layout::kNT && !ktune::isFp8(s.ab);
        }))
      shapes.push_back({m, n, k, Layout::kNT});
  }
  std::vector<gb::ShapeSpec> chosen;
  // --shapes=large | small | MxNxK[:LAYOUT][,...] (shapes of the list above; NT without a layout).
  const std::string list = "," + gb::g_shape_filter + ",";
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& s = shapes[i];
    const std::string id = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    const bool fp8 = ktune::isFp8(s.ab);
    const bool prefill = i >= extra || (s.m >= 1024 && !fp8 && s.layout == Layout::kNT);
    if ((gb::g_shape_filter.empty() && i < extra) ||
        (gb::g_shape_filter == "prefill" && prefill) ||
        (gb::g_shape_filter == "fp8" && s.layout == Layout::kNT && s.m == s.n && s.n == s.k &&
         (s.m == 4096 || s.m == 8192)) ||
        (fp8 && list.find(",fp8,") != std::string::npos) ||
        (gb::g_shape_filter == "large" && s.m >= 1024 && !fp8 && i < extra) ||
        (gb::g_shape_filter == "small" && s.m < 1024) ||
        (gb::g_shape_filter == "decode" && s.m <= 128) ||
        (s.layout == Layout::kNT && !fp8 && list.find("," + id + ",") != std::string::npos) ||
        list.find("," + id + ":" + ktune::gemm::layoutName(s.layout) + ",") != std::string::npos)
      chosen.push_back(s);
  }
  gb::precompile(chosen);
  if (compile_only) return 0;
  gb::g_read = ktune::bench::buildReadKernels(*gb::g->be, *gb::g->cc, gb::g->dev);
  for (const auto& s : chosen) gb::runShape(s);
  benchmark::RunSpecifiedBenchmarks();
  std::printf("\n%d interleaved rounds; median [interval] in us; ratio = peer time / ktune time per"
              " round (> 1: ktune faster)\n%-26s %-5s %-24s %-24s %-24s %-22s %-22s %s\n",
              gb::g->rounds, "shape", "mode", "ktune_us", "cublaslt0_us", "cublaslt_best_us",
              "lt0/ktune", "ltbest/ktune", "read/ktune");
  auto iv = [](const ktune::fair::Interval& x, const char* f) {
    char b[64];
    std::snprintf(b, sizeof b, f, x.median, x.lo, x.hi);
    return std::string(x.n > 0 ? b : "-");
  };
  for (const auto& r : gb::g_rows)
    std::printf("%-26s %-5s %-24s %-24s %-24s %-22s %-22s %s\n  ktune %s, best cuBLASLt %s; "
                "silu_mul/ktune %s; %s\n",
                r.name.c_str(), r.mode.c_str(), iv(r.ktune, "%.2f [%.2f,%.2f]").c_str(),
                iv(r.lt0, "%.2f [%.2f,%.2f]").c_str(), iv(r.ltbest, "%.2f [%.2f,%.2f]").c_str(),
                iv(r.lt0_ratio, "%.3f [%.3f,%.3f]").c_str(), iv(r.ltbest_ratio, "%.3f [%.3f,%.3f]").c_str(),
                iv(r.read_ratio, "%.3f [%.3f,%.3f]").c_str(), r.config.c_str(), r.lt_best.c_str(),
                iv(r.gated_ratio, "%.3f [%.3f,%.3f]").c_str(), r.clocks.c_str());
  // FP8 against the bf16 JIT kernel of the same size, same run (target >= 1.6x).
  for (const auto& f : gb::g_rows) {
    if (f.name.rfind("f8", 0) != 0) continue;
    const std::string bf = f.name.substr(f.name.find('_') + 1);
    for (const auto& b : gb::g_rows)
      if (b.name == bf && b.mode == f.mode && f.ktune.n > 0 && b.ktune.n > 0)
        std::printf("FP8 gemm %s fp8_jit_tflops %.1f bf16_jit_tflops %.1f fp8/bf16 %.3f "
                    "ltbest_fp8/ktune_fp8 %.3f\n",
                    bf.c_str(), f.flops / f.ktune.median * 1e-6, b.flops / b.ktune.median * 1e-6,
                    b.ktune.median / f.ktune.median, f.ltbest_ratio.median);
  }
  benchmark::Shutdown();
  return 0;
}
