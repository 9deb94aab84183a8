// GEMM benchmark: ktune's best JIT config among a small curated set vs cuBLASLt's default
// (heuristic #0), same run, same buffers. GPU time from device events, L2 flushed (a memset of
// 2x the L2 size) before every timed run, random bf16 inputs, median of the timed runs.
//
//   gemm_bench [--wgmma] [--sweep] [--benchmark_filter=...]        (+ Google Benchmark flags)
//
// For each shape a short pre-pass times every curated config (and the skinny kernel for small M)
// and picks the fastest; then Google Benchmark reports "<shape>/ktune" and "<shape>/cublaslt" with
// TFLOP/s counters, and a summary table with the ratio ktune/cuBLASLt is printed at the end.
// Skips everything (exit 0, message on stderr) when no CUDA device, NVRTC or cuBLASLt is present.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "autotune/compile_pool.h"
#include "autotune/ops/buffers.h"
#include "base/dtype.h"
#include "autotune/ops/gemm.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"
#include "autotune/vendor/cublaslt.h"
#include "templates/gemm.h"

namespace ktune {
namespace {

struct Ctx {
  std::unique_ptr<Backend> be;
  std::unique_ptr<Compiler> cc;
  DeviceInfo dev;
  std::unique_ptr<GemmRunner> runner;
  std::unique_ptr<cublaslt::CublasLt> lt;
  DevicePtr flush = 0, ws = 0;
  size_t flush_bytes = 0;
  int64_t ws_bytes = 64 << 20;
  EventHandle e0, e1;
};
Ctx* g = nullptr;
bool g_wgmma = false;  // --wgmma: also try the Hopper kernels (wgmma, tma)
// --kinds=mma,tma,...: only these kernel kinds (default: mma, skinny, and with --wgmma wgmma, tma)
std::vector<gemm::KernelKind> g_kinds;
std::string g_shape_filter;  // --shapes=large (M >= 1024) | small | MxNxK,...

bool kindEnabled(gemm::KernelKind k) {
  if (!g_kinds.empty()) return std::find(g_kinds.begin(), g_kinds.end(), k) != g_kinds.end();
  if (k == gemm::KernelKind::kWgmma || k == gemm::KernelKind::kTma) return g_wgmma;
  return k == gemm::KernelKind::kMma || k == gemm::KernelKind::kSkinny;
}
constexpr gemm::KernelKind kNvidiaKinds[] = {gemm::KernelKind::kMma, gemm::KernelKind::kSkinny,
                                             gemm::KernelKind::kWgmma, gemm::KernelKind::kTma};
bool g_sweep = false;  // --sweep: also time a spread of each kernel's space (printed per config)

// The configs timed in the pre-pass: the curated set, plus with --sweep a spread of the space
// (skinny: every accepted config with the problem's A tile; wgmma: every accepted config that
// applies). Every candidate's time goes to stderr ("cand ..." lines) so a run documents them all.
std::vector<Config> candidates(gemm::KernelKind k, const gemm::GemmShape& s) {
  auto out = gemm::curatedConfigs(k, s);
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
};

struct Row {
  std::string name, best_config, rot_best_config;
  double flops = 0, ktune_us = 0, lt_us = 0;
  double rot_ktune_us = 0, rot_lt_us = 0;  // rotating input copies, no memset flush
  double read_us = 0, rot_read_us = 0;      // the weight-read bound (small M), see readBoundUs
  double b_bytes = 0;
};
std::vector<Row> g_rows;

// Median device time (us) of fn(i) over `runs` runs. flush: an L2 flush (memset of 2x L2) before
// every run. Otherwise back-to-back: each sample is 20 consecutive launches over rotating input
// copies (fn(i) picks copy i % copies) between two events, divided by 20 — the decode pattern,
// with no dirty L2 (a memset leaves L2 full of dirty lines whose write-back competes with the
// kernel's reads) and no host launch gap inside the timed region.
template <class F>
double timeUs(F&& fn, int runs, bool flush = true) {
  std::vector<float> t;
  for (int i = 0; i < 3; ++i) (void)fn(i);  // warm-up
  constexpr int kBatch = 20;
  const int samples = flush ? runs : std::max(3, runs / 4);
  for (int i = 0; i < samples; ++i) {
    if (flush) (void)g->be->memset8(g->flush, static_cast<uint8_t>(i), g->flush_bytes);
    (void)g->be->recordEvent(g->e0);
    Status s = Status::Ok();
    if (flush) s = fn(i + 3);
    else
      for (int j = 0; j < kBatch && s.ok(); ++j) s = fn(3 + i * kBatch + j);
    (void)g->be->recordEvent(g->e1);
    (void)g->be->synchronizeEvent(g->e1);
    if (!s.ok()) return -1;
    auto ms = g->be->elapsedMs(g->e0, g->e1);
    if (!ms.ok()) return -1;
    t.push_back(*ms / (flush ? 1 : kBatch));
  }
  std::sort(t.begin(), t.end());
  return 1000.0 * t[t.size() / 2];
}

struct Bufs {
  DevicePtr a = 0, b = 0, c = 0;
};

Status fillRandom(DevicePtr p, int64_t count, uint32_t seed) {
  return ktune::fillRandom(*g->be, p, DType::kBF16, count, seed);
}

// The weight-streaming bound of a decode GEMM: the fastest pure read of the weight matrix B
// (16-byte loads, grid-stride, a per-thread sum stored once so nothing is optimised away), over a
// few grid/block/unroll choices, timed exactly like the GEMMs (same flush or same rotation). A
// GEMM that must read B cannot beat it.
const char* kReadSrc = R"(
extern "C" __global__ void __launch_bounds__(THREADS) ktune_read_bound(const uint4* __restrict__ p,
                                                                     long long n, unsigned* out) {
  unsigned acc = 0;
  const long long stride = (long long)gridDim.x * THREADS * UNROLL;
  for (long long base = (long long)blockIdx.x * THREADS * UNROLL + threadIdx.x; base < n;
       base += stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long i = base + (long long)u * THREADS;
      v[u] = i < n ? __ldcs(p + i) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x9e3779b9u) out[blockIdx.x * THREADS + threadIdx.x] = acc;
}
)";

struct ReadKernel {
  FunctionHandle fn{};
  int threads = 0, unroll = 0;
};
std::vector<ReadKernel> g_read_kernels;
DevicePtr g_read_out = 0;

void buildReadKernels() {
  for (int threads : {256, 512, 1024})
    for (int unroll : {2, 4, 8}) {
      CompileRequest r;
      r.source = kReadSrc;
      r.source_name = "read_bound.cu";
      r.entry = "ktune_read_bound";
      r.arch = g->dev.arch;
      r.defines = {{"THREADS", std::to_string(threads)}, {"UNROLL", std::to_string(unroll)}};
      auto co = g->cc->compile(r);
      if (!co.ok()) {
        std::fprintf(stderr, "read bound: %s\n", co.status().toString().c_str());
        continue;
      }
      auto m = g->be->loadModule(co->binary);
      if (!m.ok()) continue;
      auto f = g->be->getFunction(*m, co->lowered_entry.empty() ? r.entry : co->lowered_entry);
      if (f.ok()) g_read_kernels.push_back({*f, threads, unroll});
    }
  auto out = g->be->alloc(static_cast<size_t>(4) * 1024 * 1024 * 4);
  if (out.ok()) g_read_out = *out;
}

// Best pure-read time (us) of `bytes` at each of `ptrs` (rotation when flush is false).
double readBoundUs(const std::vector<DevicePtr>& ptrs, int64_t bytes, bool flush, std::string* how) {
  double best = -1;
  const long long n = bytes / 16;
  for (const ReadKernel& k : g_read_kernels)
    for (int per_sm : {1, 2, 4, 8}) {
      const unsigned grid = static_cast<unsigned>(
          std::min<long long>(per_sm * std::max(1, g->dev.multiprocessors) * (1024 / k.threads),
                              (n + k.threads - 1) / k.threads));
      if (grid * static_cast<long long>(k.threads) > 4 * 1024 * 1024) continue;
      const double us = timeUs([&](int i) {
        KernelArgs a;
        a.add(ptrs[static_cast<size_t>(i) % ptrs.size()]).add(static_cast<long long>(n)).add(g_read_out);
        return g->be->launch(k.fn, Dim3{grid, 1, 1}, Dim3{static_cast<unsigned>(k.threads), 1, 1}, 0,
                             a.data());
      }, 10, flush);
      if (us > 0 && (best < 0 || us < best)) {
        best = us;
        *how = "read " + std::to_string(k.threads) + "x" + std::to_string(k.unroll) + ", grid " +
               std::to_string(grid);
      }
    }
  return best;
}

void runShape(const ShapeSpec& sp) {
  using gemm::KernelKind;
  gemm::GemmShape s =
      gemm::denseShape(sp.layout, gemm::ElemType::kBF16, gemm::ElemType::kBF16, sp.m, sp.n, sp.k);
  const std::string name = std::string(gemm::layoutName(sp.layout)) + "_" + std::to_string(sp.m) +
                           "x" + std::to_string(sp.n) + "x" + std::to_string(sp.k);
  // Small-M (weight-streaming) shapes are also timed back to back over rotating copies of A and B
  // (enough that the copies not in use exceed 2x L2) instead of after a memset flush.
  const bool rotate = sp.m <= 128;
  const int64_t ab_bytes = (sp.m + sp.n) * sp.k * 2;
  const int copies = rotate ? static_cast<int>(std::min<int64_t>(
                                  16, (2 * g->dev.l2_bytes + ab_bytes - 1) / ab_bytes + 1))
                            : 1;
  std::vector<GemmBuffers> sets;
  auto c = g->be->alloc(static_cast<size_t>(sp.m * sp.n * 2));
  if (!c.ok()) return;
  for (int i = 0; i < copies; ++i) {
    auto a = g->be->alloc(static_cast<size_t>(sp.m * sp.k * 2));
    auto bb = g->be->alloc(static_cast<size_t>(sp.n * sp.k * 2));
    if (!a.ok() || !bb.ok()) {
      std::fprintf(stderr, "%s: allocation failed\n", name.c_str());
      return;
    }
    (void)fillRandom(*a, sp.m * sp.k, 1 + 2 * i);
    (void)fillRandom(*bb, sp.n * sp.k, 2 + 2 * i);
    sets.push_back(GemmBuffers{*a, *bb, *c, 0});
  }
  const GemmBuffers buf = sets[0];

  // Pre-pass: every curated config of every applicable kernel; keep the fastest.
  struct Cand { KernelKind k; Config c; double us; };
  auto pick = [&](bool flush) {
    std::vector<Cand> cands;
    for (KernelKind k : kNvidiaKinds) {
      if (k == KernelKind::kSkinny && sp.m > 128) continue;
      if (!kindEnabled(k)) continue;
      for (const Config& cfg : candidates(k, s)) {
        const double us = timeUs([&](int i) {
          return g->runner->launch(k, cfg, s, flush ? buf : sets[i % copies]);
        }, 10, flush);
        std::fprintf(stderr, "cand %s %s %s %s %.2f\n", name.c_str(), flush ? "flush" : "rot",
                     gemm::kernelKindName(k), cfg.toString().c_str(), us);
        if (us > 0) cands.push_back({k, cfg, us});
        else std::fprintf(stderr, "%s: %s %s failed\n", name.c_str(), gemm::kernelKindName(k),
                          cfg.toString().c_str());
      }
    }
    if (cands.empty()) return Cand{KernelKind::kMma, Config(), -1};
    return *std::min_element(cands.begin(), cands.end(),
                             [](const Cand& x, const Cand& y) { return x.us < y.us; });
  };
  const Cand best = pick(true);
  if (best.us < 0) return;
  const Cand rbest = rotate ? pick(false) : best;
  double read_us = 0, rot_read_us = 0;
  if (rotate && !g_read_kernels.empty()) {
    std::vector<DevicePtr> bs;
    for (const auto& u : sets) bs.push_back(u.b);
    std::string how, rhow;
    read_us = readBoundUs({buf.b}, sp.n * sp.k * 2, true, &how);
    rot_read_us = readBoundUs(bs, sp.n * sp.k * 2, false, &rhow);
    std::fprintf(stderr, "read-bound %s flush %.2f us (%s), rot %.2f us (%s)\n", name.c_str(),
                 read_us, how.c_str(), rot_read_us, rhow.c_str());
  }
  auto lp = toLtProblem(s);
  cublaslt::LtAlgo lt_algo;
  bool have_lt = false;
  if (lp.ok()) {
    auto algos = g->lt->heuristics(*lp, 1, g->ws_bytes);
    if (algos.ok()) {
      lt_algo = algos->front();
      have_lt = true;
    }
  }
  Row row;
  row.name = name;
  row.best_config = std::string(gemm::kernelKindName(best.k)) + ":" + best.c.toString();
  row.rot_best_config = std::string(gemm::kernelKindName(rbest.k)) + ":" + rbest.c.toString();
  row.flops = 2.0 * sp.m * sp.n * sp.k;
  row.read_us = read_us;
  row.b_bytes = 2.0 * sp.n * sp.k;
  row.rot_read_us = rot_read_us;
  g_rows.push_back(row);
  const size_t idx = g_rows.size() - 1;

  for (bool flush : {true, false}) {
    if (!flush && !rotate) continue;
    const std::string mode = flush ? "" : "_rot";
    const Cand bc = flush ? best : rbest;
    benchmark::RegisterBenchmark((name + "/ktune" + mode).c_str(), [=](benchmark::State& st) {
      const double us = timeUs([&](int i) {
        return g->runner->launch(bc.k, bc.c, s, flush ? buf : sets[i % copies]);
      }, 30, flush);
      for (auto _ : st) st.SetIterationTime(us * 1e-6);
      st.counters["TFLOP/s"] = row.flops / (us * 1e-6) / 1e12;
      st.counters["us"] = us;
      st.SetLabel(flush ? row.best_config : row.rot_best_config);
      (flush ? g_rows[idx].ktune_us : g_rows[idx].rot_ktune_us) = us;
    })->UseManualTime()->Iterations(1);
    if (!have_lt) continue;
    benchmark::RegisterBenchmark((name + "/cublaslt" + mode).c_str(), [=](benchmark::State& st) {
      const double us = timeUs([&](int i) {
        const GemmBuffers& u = flush ? buf : sets[i % copies];
        return g->lt->run(*lp, &lt_algo, u.a, u.b, u.c, 0, g->ws, g->ws_bytes);
      }, 30, flush);
      for (auto _ : st) st.SetIterationTime(us * 1e-6);
      st.counters["TFLOP/s"] = row.flops / (us * 1e-6) / 1e12;
      st.counters["us"] = us;
      (flush ? g_rows[idx].lt_us : g_rows[idx].rot_lt_us) = us;
    })->UseManualTime()->Iterations(1);
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
  g->flush_bytes = static_cast<size_t>(std::max<int64_t>(2 * g->dev.l2_bytes, 64 << 20));
  auto f = g->be->alloc(g->flush_bytes);
  auto w = g->be->alloc(static_cast<size_t>(g->ws_bytes));
  auto e0 = g->be->createEvent();
  auto e1 = g->be->createEvent();
  if (!f.ok() || !w.ok() || !e0.ok() || !e1.ok()) return false;
  g->flush = *f;
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
    auto s = gemm::denseShape(sp.layout, gemm::ElemType::kBF16, gemm::ElemType::kBF16, sp.m, sp.n, sp.k);
    for (auto k : kNvidiaKinds) {
      if (k == gemm::KernelKind::kSkinny && sp.m > 128) continue;
      if (!kindEnabled(k)) continue;
      for (auto& c : candidates(k, s)) jobs.push_back({k, {c, s}});
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
  using ktune::gemm::Layout;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--wgmma") ktune::g_wgmma = true;
    else if (std::string(argv[i]) == "--sweep") ktune::g_sweep = true;
    else if (std::string(argv[i]).rfind("--kinds=", 0) == 0) {
      std::string list = std::string(argv[i]).substr(8) + ",";
      for (size_t p = 0, q; (q = list.find(',', p)) != std::string::npos; p = q + 1)
        for (auto k : ktune::kNvidiaKinds)
          if (list.substr(p, q - p) == ktune::gemm::kernelKindName(k)) ktune::g_kinds.push_back(k);
    } else if (std::string(argv[i]).rfind("--shapes=", 0) == 0) {
      ktune::g_shape_filter = std::string(argv[i]).substr(9);
    }
    else argv[kept++] = argv[i];
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (!ktune::setup()) return 0;
  const std::vector<ktune::ShapeSpec> shapes = {
      {8192, 8192, 8192, Layout::kNT},  {4096, 4096, 4096, Layout::kNT},
      {4096, 4096, 4096, Layout::kNN},  {1024, 14336, 4096, Layout::kNT},
      {4096, 4096, 14336, Layout::kNT}, {4096, 6144, 4096, Layout::kNT},
      {1, 4096, 4096, Layout::kNT},     {16, 4096, 4096, Layout::kNT},
      {128, 4096, 4096, Layout::kNT},   {16, 14336, 4096, Layout::kNT},
  };
  std::vector<ktune::ShapeSpec> chosen;
  // --shapes=large | small | MxNxK[:LAYOUT][,...] (shapes of the list above; NT without a layout).
  const std::string list = "," + ktune::g_shape_filter + ",";
  for (const auto& s : shapes) {
    const std::string id = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    if (ktune::g_shape_filter.empty() ||
        (ktune::g_shape_filter == "large" && s.m >= 1024) ||
        (ktune::g_shape_filter == "small" && s.m < 1024) ||
        (s.layout == Layout::kNT && list.find("," + id + ",") != std::string::npos) ||
        list.find("," + id + ":" + ktune::gemm::layoutName(s.layout) + ",") != std::string::npos)
      chosen.push_back(s);
  }
  ktune::precompile(chosen);
  ktune::buildReadKernels();
  for (const auto& s : chosen) ktune::runShape(s);
  benchmark::RunSpecifiedBenchmarks();
  std::printf("\n%-22s %10s %10s %10s %10s %8s  %s\n", "shape", "ktune_us", "ktune_TF", "cublas_us",
              "cublas_TF", "speedup", "best ktune config");
  for (const auto& r : ktune::g_rows)
    std::printf("%-22s %10.2f %10.1f %10.2f %10.1f %8.3f  %s\n", r.name.c_str(), r.ktune_us,
                r.flops / (r.ktune_us * 1e-6) / 1e12, r.lt_us,
                r.lt_us > 0 ? r.flops / (r.lt_us * 1e-6) / 1e12 : 0.0,
                r.lt_us > 0 && r.ktune_us > 0 ? r.lt_us / r.ktune_us : 0.0, r.best_config.c_str());
  std::printf("\nback-to-back, 20 launches over rotating input copies, no memset (small M):\n%-22s %10s %10s %8s  %s\n", "shape",
              "ktune_us", "cublas_us", "speedup", "best ktune config");
  for (const auto& r : ktune::g_rows)
    if (r.rot_ktune_us > 0)
      std::printf("%-22s %10.2f %10.2f %8.3f  %s\n", r.name.c_str(), r.rot_ktune_us, r.rot_lt_us,
                  r.rot_lt_us > 0 ? r.rot_lt_us / r.rot_ktune_us : 0.0, r.rot_best_config.c_str());
  std::printf("\nweight-read bound (pure 16-byte reads of B, same timing; a GEMM reading B cannot beat"
              " it):\n%-22s %10s %10s %10s %12s %12s\n", "shape", "flush_us", "rot_us", "B_GB/s_rot",
              "1.5x_cublas", "1.5x_cublas_rot");
  for (const auto& r : ktune::g_rows)
    if (r.read_us > 0)
      std::printf("%-22s %10.2f %10.2f %10.1f %12.2f %12.2f\n", r.name.c_str(), r.read_us,
                  r.rot_read_us, r.rot_read_us > 0 ? r.b_bytes / r.rot_read_us * 1e-3 : 0.0,
                  r.lt_us / 1.5, r.rot_lt_us / 1.5);
  benchmark::Shutdown();
  return 0;
}
