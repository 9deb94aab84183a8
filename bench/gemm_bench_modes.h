// gemm_bench's measurements: the interleaved rounds of one (shape, mode) registered as a Google
// Benchmark (RESULT / RATIO / CLOCKS lines and a summary row), and --profile's single launches.
// Included by bench/gemm_bench.cc only.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/gemm_bench_timing.h"

namespace ktune::gemm_bench {

inline std::string clocksNow() {
  auto c = fair::readGpuClocks(0);
  return c.ok() ? c->toString() : "clocks unavailable";
}

// The gate/up variant of a shape (act silu_mul over the same N weight rows, N/2 columns of C).
inline gemm::GemmShape gatedShape(gemm::GemmShape s) {
  s.act = gemm::Activation::kSiluMul;
  s.ldc = s.n / 2;
  return s;
}

// Registers the interleaved measurement of one (shape, mode): ktune's config, cuBLASLt #0, the
// best cuBLASLt algorithm and (when given) the weight-read bound, g->rounds rounds, each variant
// first in turn; RESULT/RATIO/CLOCKS lines and a summary row.
// `gated`: the fastest config (of kind gk) of the gate/up variant (empty: none applies).
inline void registerMode(const ShapeRun& r, bool flush, gemm::KernelKind k, const Config& c,
                  const cublaslt::LtAlgo& lt0, const cublaslt::LtAlgo& ltbest, const bench::ReadChoice& rb,
                  gemm::KernelKind gk, const Config& gated) {
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
    // fastest decode or tma config: what fusing SiLU*Mul into the GEMM costs (issue 32: <= 1.03x the
    // plain GEMM's best).
    const gemm::GemmShape gs = gatedShape(r.s);
    const size_t silu = fns.size();  // the silu_mul variant's index (when gated is given)
    if (!gated.empty()) {
      fns.push_back([&, gs](int i) {
        return g->runner->launch(gk, gated, gs,
                                 flush ? r.buf : r.sets[size_t(i) % r.sets.size()]);
      });
      names.push_back("silu_mul");
      t.push_back(&row.gated);
      ratios.push_back(&row.gated_ratio);
    }
    // The residual add (beta = 1, C += A*B^T) with the same config at decode sizes: what reading C
    // back costs in the epilogue (a Llama o_proj / down_proj).
    gemm::GemmShape rs = r.s;
    rs.beta = 1.0f;
    if (r.sp.m <= 128) {
      fns.push_back([&, rs](int i) {
        return g->runner->launch(k, c, rs, flush ? r.buf : r.sets[size_t(i) % r.sets.size()]);
      });
      names.push_back("residual");
      t.push_back(&row.resid);
      ratios.push_back(&row.resid_ratio);
    }
    // --twin: other configs of the same kind in the same rounds (their ratios to ktune's pick).
    const std::vector<Config> tw = twins(k, r.s, c);
    std::vector<std::string> twin_names;
    std::vector<fair::Interval> twin_t(tw.size()), twin_ratio(tw.size());
    for (size_t j = 0; j < tw.size(); ++j) twin_names.push_back("twin" + std::to_string(j + 1));
    for (size_t j = 0; j < tw.size(); ++j) {
      fns.push_back([&, j](int i) {
        return g->runner->launch(k, tw[j], r.s, flush ? r.buf : r.sets[size_t(i) % r.sets.size()]);
      });
      names.push_back(twin_names[j].c_str());
      t.push_back(&twin_t[j]);
      ratios.push_back(&twin_ratio[j]);
      std::printf("TWIN gemm %s/%s %s %s:%s\n", r.name.c_str(), mode.c_str(), twin_names[j].c_str(),
                  gemm::kernelKindName(k), tw[j].toString().c_str());
    }
    // The --twin configs that apply to the gate/up variant, timed on it in the same rounds (gtwinN;
    // RATIO gtwinN/silu_mul below): an A/B of the pair's knobs beside the plain GEMM.
    const std::vector<Config> gtw = gated.empty() ? std::vector<Config>{} : twins(gk, gs, gated, false);
    const size_t g0 = fns.size();
    std::vector<std::string> gtwin_names;
    std::vector<fair::Interval> gtwin_t(gtw.size()), gtwin_ratio(gtw.size());
    for (size_t j = 0; j < gtw.size(); ++j) gtwin_names.push_back("gtwin" + std::to_string(j + 1));
    for (size_t j = 0; j < gtw.size(); ++j) {
      fns.push_back([&, j, gs](int i) {
        return g->runner->launch(gk, gtw[j], gs, flush ? r.buf : r.sets[size_t(i) % r.sets.size()]);
      });
      names.push_back(gtwin_names[j].c_str());
      t.push_back(&gtwin_t[j]);
      ratios.push_back(&gtwin_ratio[j]);
      std::printf("TWIN gemm %s/%s %s %s:%s\n", r.name.c_str(), mode.c_str(), gtwin_names[j].c_str(),
                  gemm::kernelKindName(gk), gtw[j].toString().c_str());
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
                 (gated.empty() ? "" : "; silu_mul " + std::string(gemm::kernelKindName(gk)) + ":" +
                                           gated.toString());
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
    for (size_t j = 0; j < gtw.size(); ++j) {
      const fair::Interval x = fair::ratioInterval(samples[g0 + j], samples[silu]);
      std::printf("RATIO gemm %s/%s %s/silu_mul %.4f %.4f %.4f %d\n", r.name.c_str(), mode.c_str(),
                  gtwin_names[j].c_str(), x.median, x.lo, x.hi, x.n);
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
inline void profileShape(const std::string& name, const gemm::GemmShape& s, const GemmBuffers& buf) {
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

// A traced kind's row per block: its words, its lines' tag and the words always printed (the
// kernel's trace header defines the row: templates/gemm/decode/decode_wg_trace.cuh's kTrRow, its
// kTrEvents phase words then the per-stage words, printed up to the last nonzero one;
// templates/gemm/tma/tma_trace.cuh's kTrWords).
struct TraceRow {
  gemm::KernelKind kind;
  int words;
  const char* tag;
  int head;
};
inline constexpr TraceRow kTraceRows[] = {{gemm::KernelKind::kDecode, 274, "DCT", 18},
                                          {gemm::KernelKind::kTma, 106, "TMT", 106}};

// --trace=N (a probe build with a kind's trace on: dev/decode/trace_stage.sh for the decode kernel,
// dev/trace_stage.sh with tma/tma_trace.cuh for the tma kind): every candidate of a traced kind launched N times after a
// read flush and N times as the last of 20 back-to-back launches over the rotating copies, its
// scale_a pointing at a buffer the kernel writes each block's phase stamps into (the kind's trace
// header; a traced kernel reads no scale through it); per launch, device events around that launch
// alone, then one line per block that ran:
//   <tag> <shape> <config> <flush|rot> <i> <event us> <block> <row's raw words>
// and before it the same launch untraced, timed the same way (after its own flush or 19 launches):
//   <tag>K <shape> <config> <flush|rot> <i> <event us>
// (dev/decode/trace_table.py, dev/tma_trace_table.py make the phase split). No timing table.
inline void traceShape(const std::string& name, const gemm::GemmShape& s, const std::vector<GemmBuffers>& sets) {
  constexpr int kBlocks = 4096;  // the trace headers' kTrBlocks
  for (const TraceRow& tr : kTraceRows) {
    if (!kindEnabled(tr.kind)) continue;
    const size_t bytes = sizeof(uint64_t) * kBlocks * static_cast<size_t>(tr.words);
    auto tb = g->be->alloc(bytes);
    if (!tb.ok()) return;
    std::vector<uint64_t> host(static_cast<size_t>(kBlocks) * tr.words);
    const int copies = static_cast<int>(sets.size());
    for (const Config& cfg : candidates(tr.kind, s)) {
      auto launch = [&](int i, bool traced) {
        GemmBuffers u = sets[static_cast<size_t>(i % copies)];
        if (traced) u.scale_a = *tb;
        return g->runner->launch(tr.kind, cfg, s, u);
      };
      // One launch after the mode's prelude, timed by device events: its status and microseconds.
      auto timed = [&](bool flush, bool traced, double& us) {
        if (flush) (void)g->peers->flushL2();
        else
          for (int j = 0; j < 19; ++j) (void)launch(j, false);
        (void)g->be->recordEvent(g->e0);
        const Status st = launch(flush ? 0 : 19, traced);
        (void)g->be->recordEvent(g->e1);
        (void)g->be->synchronizeEvent(g->e1);
        auto ms = g->be->elapsedMs(g->e0, g->e1);
        us = ms.ok() ? 1000.0 * *ms : 0.0;
        return st.ok() && ms.ok() ? st : (st.ok() ? ms.status() : st);
      };
      for (int i = 0; i < 3; ++i) (void)launch(i, false);  // compile, load, warm
      for (bool flush : {true, false})
        for (int i = 0; i < g_trace; ++i) {
          const char* mode = flush ? "flush" : "rot";
          double plain = 0.0, us = 0.0;
          Status st = timed(flush, false, plain);
          if (st.ok()) st = g->be->memset8(*tb, 0, bytes);
          if (st.ok()) st = timed(flush, true, us);
          if (!st.ok() || !g->be->copyToHost(host.data(), *tb, bytes).ok()) {
            std::printf("%s %s %s failed: %s\n", tr.tag, name.c_str(), cfg.toString().c_str(), st.toString().c_str());
            break;
          }
          std::printf("%sK %s %s %s %d %.3f\n", tr.tag, name.c_str(), cfg.toString().c_str(), mode, i, plain);
          for (int b = 0; b < kBlocks; ++b) {
            const uint64_t* r = host.data() + static_cast<size_t>(b) * tr.words;
            if (r[0] == 0) continue;  // the block did not run (or the build does not trace)
            std::printf("%s %s %s %s %d %.3f %d", tr.tag, name.c_str(), cfg.toString().c_str(), mode, i, us, b);
            int end = tr.words;
            while (end > tr.head && r[end - 1] == 0) --end;
            for (int e = 0; e < end; ++e) std::printf(" %llu", static_cast<unsigned long long>(r[e]));
            std::printf("\n");
          }
        }
    }
    (void)g->be->free(*tb);
  }
}

}  // namespace ktune::gemm_bench
