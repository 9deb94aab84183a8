// gemm_bench --tuner_method=R [--sustain_ms=T]: the tuner's way of timing a candidate beside
// gemm_bench's, in one process on the same buffers, so a disagreement between `ktune tune` and
// gemm_bench can be split into its causes. Per round (R rounds, the variants in an order rotated
// by the round, as the finalists' rounds are), each variant -- the --only JIT configs and
// cuBLASLt's algorithms -- is timed three ways, in an order rotated too:
//   gb:  gemm_bench's own sampling (timeUs): 3 warm-up launches, then 16 samples, each a read
//        flush, one launch between two events, and a synchronisation;
//   q1:  the tuner's do_bench (autotune/benchmarker.h) with a finalist round's budgets (the
//        engine's 5 ms warm-up and 20 ms measurement over 6 rounds, run counts from the host's
//        wall cost of a run), each run synchronised alone;
//   q10: the same with the tuner's batches of 10 flushed runs queued per synchronisation.
// A TMETHOD line per (variant, round):  TMETHOD <shape> <variant> <round> <gb> <q1> <q10> (us).
// --sustain_ms=T: then each variant once for T ms of queued runs (q10's method, 5 ms warm-up),
// the SM clock and power read through NVML every 25th run while the queue is busy:
//   SUSTAIN <shape> <variant> <median> <first-quarter median> <last-quarter median> <runs>
//           <mean SM MHz> <mean W> <reads>
// Included by bench/gemm_bench.cc only.
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "autotune/benchmarker.h"
#include "bench/gemm_bench_timing.h"

namespace ktune::gemm_bench {

inline int g_tuner_method = 0;     // --tuner_method=R
inline double g_sustain_ms = 0;    // --sustain_ms=T

struct TimedVariant {
  std::string name;
  std::function<Status(int)> fn;
};

// A finalist round's options (autotune/finalists.cc roundOptions over the engine's defaults):
// runs of `batch` queued flushed launches per synchronisation.
inline BenchOptions tunerRoundOptions(int batch) {
  BenchOptions bo;
  bo.warmup_ms = 5.0 / 6;
  bo.rep_ms = 20.0 / 6;
  bo.min_runs = 5;
  bo.count_overhead = true;
  bo.abort_factor = 1e9;
  bo.check_every = batch;
  return bo;
}

inline double medianUs(std::vector<double> ms) {
  if (ms.empty()) return -1;
  std::sort(ms.begin(), ms.end());
  return 1000.0 * ms[ms.size() / 2];
}

inline void sustainOne(Benchmarker& bm, const std::string& shape, const TimedVariant& v) {
  BenchOptions bo = tunerRoundOptions(10);
  bo.warmup_ms = 5.0;
  bo.rep_ms = g_sustain_ms;
  double mhz = 0, watts = 0;
  int reads = 0;
  std::vector<double> ms;
  auto st = bm.measure({}, [&] { return v.fn(0); }, bo,
                       [&](int i) {
                         if (i < 0 || i % 25 != 5) return Status::Ok();
                         auto c = fair::readGpuClocks(0);
                         if (c.ok()) mhz += c->sm_mhz, watts += c->power_w, ++reads;
                         return Status::Ok();
                       },
                       nullptr, &ms);
  if (!st.ok() || ms.size() < 8) {
    std::printf("SUSTAIN %s %s failed\n", shape.c_str(), v.name.c_str());
    return;
  }
  const size_t q = ms.size() / 4;
  std::printf("SUSTAIN %s %s %.2f %.2f %.2f %zu %.0f %.1f %d\n", shape.c_str(), v.name.c_str(),
              medianUs(ms), medianUs({ms.begin(), ms.begin() + q}), medianUs({ms.end() - q, ms.end()}),
              ms.size(), reads ? mhz / reads : 0.0, reads ? watts / reads : 0.0, reads);
}

// The rounds described above for the JIT configs `jit` of kind k and cuBLASLt's `algos`.
inline void tunerMethod(const ShapeRun& r, gemm::KernelKind k, const std::vector<Config>& jit,
                        const std::vector<cublaslt::LtAlgo>& algos) {
  std::vector<TimedVariant> vs;
  for (const Config& c : jit)
    vs.push_back({c.toString(), [&, c](int) { return g->runner->launch(k, c, r.s, r.buf); }});
  for (const auto& a : algos)
    vs.push_back({"cublaslt:idx=" + std::to_string(a.index), [&r, a](int i) { return ltLaunch(r, a, true, i); }});
  Benchmarker bm(*g->be, g->dev, g->cc.get());
  for (int round = 0; round < g_tuner_method; ++round) {
    for (int v : fair::interleavedOrder(static_cast<int>(vs.size()), round)) {
      double us[3] = {-1, -1, -1};
      for (int m : fair::interleavedOrder(3, round + v)) {
        if (m == 0) {
          us[0] = timeUs(vs[size_t(v)].fn, 16, true);
          continue;
        }
        auto s = bm.measure({}, [&] { return vs[size_t(v)].fn(0); }, tunerRoundOptions(m == 1 ? 1 : 10));
        us[m] = s.ok() ? 1000.0 * s->median_ms : -1;
      }
      std::printf("TMETHOD %s %s %d %.2f %.2f %.2f\n", r.name.c_str(), vs[size_t(v)].name.c_str(), round,
                  us[0], us[1], us[2]);
    }
  }
  if (g_sustain_ms <= 0) return;
  for (int v : fair::interleavedOrder(static_cast<int>(vs.size()), g_tuner_method))
    sustainOne(bm, r.name, vs[size_t(v)]);
}

}  // namespace ktune::gemm_bench
