// rowwise_bench's machinery: the CUDA context with its compiled-kernel cache, random inputs, the
// config sweep, the interleaved rounds of best / default / copy / read-2-write-1, and the loop
// both kernels share (sweep, time, verify, report). Included by bench/rowwise_bench.cc only.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autotune/compile_pool.h"
#include "bench/fair/fair_timing.h"
#include "bench/fair/peers.h"
#include "bench/rowwise_rows.h"
#include "compiler/compiler.h"
#include "ops/buffers.h"
#include "runtime/backend.h"
#include "templates/rowwise.h"

namespace ktune::rowwise_bench {

using namespace ktune::rowwise;

using Defines = std::vector<std::pair<std::string, std::string>>;

struct Ctx {
  std::unique_ptr<Backend> b;
  std::unique_ptr<Compiler> c;
  DeviceInfo dev;
  std::unique_ptr<StreamPeers> peers;  // read-based L2 flush, copy and read-2/write-1 peers
  std::map<std::string, FunctionHandle> fns;
  std::string error;
};

inline Ctx& ctx() {
  static Ctx* c = [] {
    auto* x = new Ctx;
    auto b = openBackend("auto");
    if (!b.ok()) { x->error = b.status().toString(); return x; }
    auto devs = (*b)->devices();
    if (!devs.ok() || devs->empty()) { x->error = "no GPU device"; return x; }
    (void)(*b)->setDevice(0);
    x->dev = (*devs)[0];
    auto comp = compilerForArch(x->dev.arch);
    if (!comp.ok()) { x->error = comp.status().toString(); return x; }
    x->b = std::move(*b);
    x->c = std::move(*comp);
    auto peers = StreamPeers::create(*x->b, *x->c, x->dev);
    if (!peers.ok()) { x->error = peers.status().toString(); return x; }
    x->peers = std::move(peers).value();
    return x;
  }();
  return *c;
}

inline std::string keyOf(const std::string& entry, const Defines& d) {
  std::string k = entry;
  for (const auto& [a, v] : d) k += "," + a + "=" + v;
  return k;
}

// Compiles (in parallel) and loads every (source, entry, defines) not loaded yet.
inline void compileAll(const std::string& src, const std::string& entry, const std::vector<Defines>& ds) {
  auto& X = ctx();
  std::vector<const Defines*> todo;
  for (const auto& d : ds)
    if (!X.fns.count(keyOf(entry, d))) todo.push_back(&d);
  std::vector<Expected<CodeObject>> out(todo.size(), Status::Internal("not compiled"));
  CompilePool::parallelFor(todo.size(), CompilePool::threadsFor(todo.size(), 16, false),
                           [&](size_t i) {
                             CompileRequest r;
                             r.source = src;
                             r.source_name = entry;
                             r.entry = entry;
                             r.defines = *todo[i];
                             r.arch = X.dev.arch;
                             out[i] = X.c->compile(r);
                           });
  for (size_t i = 0; i < todo.size(); ++i) {
    if (!out[i].ok()) {
      std::fprintf(stderr, "compile failed: %s\n", out[i].status().toString().c_str());
      continue;
    }
    if (out[i]->resources.spills()) continue;  // as the tuner's static pruning would
    auto m = X.b->loadModule(out[i]->binary);
    if (!m.ok()) continue;
    auto f = X.b->getFunction(*m, out[i]->lowered_entry.empty() ? entry : out[i]->lowered_entry);
    if (f.ok()) X.fns[keyOf(entry, *todo[i])] = *f;
  }
}

// Median device time (ms) of `launch`, L2 flushed (by reads) before each run; -1 on failure.
inline double medianMs(const std::function<Status()>& launch, int reps) {
  auto t = ctx().peers->samplesMs(launch, reps);
  return t.ok() && !t->empty() ? fair::medianInterval(*t).median : -1;
}

// Fills a device buffer with random values of dtype in [lo, hi) (the ops' toolkit fill).
inline void fillRandom(DevicePtr p, size_t bytes, RowDType t, uint64_t seed, double lo, double hi) {
  const DType d = t == RowDType::kF32 ? DType::kF32 : t == RowDType::kF16 ? DType::kF16 : DType::kBF16;
  (void)ktune::fillRandom(*ctx().b, p, d, static_cast<int64_t>(bytes / sizeOf(t)), seed, lo, hi);
}

struct Buf {
  DevicePtr p = 0;
  explicit Buf(size_t n) {
    auto r = ctx().b->alloc(n);
    if (r.ok()) p = *r;
  }
  ~Buf() {
    if (p) (void)ctx().b->free(p);
  }
};

inline std::string clocksNow() {
  auto c = fair::readGpuClocks(0);
  return c.ok() ? c->toString() : "clocks unavailable";
}

using bench::Row;
using bench::rowId;
using bench::rows;
using bench::printRow;

// Sweeps configs: every config timed with a few runs, the best 4 re-timed with more. Returns the
// best config (row.best_config names it).
template <class LaunchFn>
Config sweep(Row& row, const std::vector<Config>& cs, LaunchFn&& launch_of) {
  std::vector<std::pair<double, size_t>> t;
  for (size_t i = 0; i < cs.size(); ++i) {
    auto fn = launch_of(cs[i]);
    if (!fn) continue;
    const double ms = medianMs(fn, 8);
    if (ms > 0) t.push_back({ms, i});
  }
  std::sort(t.begin(), t.end());
  row.configs = int(t.size());
  double best_ms = 0;
  Config best;
  for (size_t k = 0; k < std::min<size_t>(4, t.size()); ++k) {
    const double ms = medianMs(launch_of(cs[t[k].second]), 30);
    if (ms > 0 && (best_ms == 0 || ms < best_ms)) {
      best_ms = ms;
      best = cs[t[k].second];
      row.best_config = best.toString();
    }
  }
  return best;
}

inline constexpr int kRounds = 15;

// The kernel's best and default configs and the same-run peers timed in interleaved rounds (each
// first in turn), every run after a read flush. Peer times are scaled to the kernel's byte count,
// so "peer time / kernel time" is the kernel's fraction of the peer's bandwidth.
inline void timeRounds(Row& row, const std::function<Status()>& best, const std::function<Status()>& dflt,
                bool read2write1) {
  auto& X = ctx();
  std::vector<std::function<Status()>> fns = {best, dflt ? dflt : best};
  std::vector<double> scale = {1, 1};
  auto copy = X.peers->copyPeer(int64_t(row.bytes));
  if (copy.ok()) {
    fns.push_back(copy->launch);
    scale.push_back(row.bytes / double(copy->bytes));
    row.copy_what = copy->what;
  }
  auto r2 = read2write1 ? X.peers->read2Write1Peer(int64_t(row.bytes)) : Expected<StreamPeers::Peer>(Status::NotFound(""));
  if (r2.ok()) {
    fns.push_back(r2->launch);
    scale.push_back(row.bytes / double(r2->bytes));
    row.r2w1_what = r2->what;
  }
  for (auto& f : fns)
    for (int i = 0; i < 3; ++i) (void)f();
  const std::string before = X.peers ? clocksNow() : "";
  auto t = fair::interleave(int(fns.size()), kRounds, [&](int v) {
    auto ms = X.peers->timeOnceMs(fns[size_t(v)]);
    return ms.ok() ? *ms * 1e3 * scale[size_t(v)] : -1.0;
  });
  row.clocks = before + " | " + clocksNow();
  row.best = fair::medianInterval(t[0]);
  row.dflt = fair::medianInterval(t[1]);
  size_t v = 2;
  if (copy.ok()) {
    row.copy = fair::medianInterval(t[v]);
    row.best_vs_copy = fair::ratioInterval(t[v], t[0]);
    row.dflt_vs_copy = fair::ratioInterval(t[v], t[1]);
    ++v;
  }
  if (r2.ok()) {
    row.r2w1 = fair::medianInterval(t[v]);
    row.best_vs_r2w1 = fair::ratioInterval(t[v], t[0]);
  }
  printRow(row);
}

// The benchmark loop shared by both kernels: sweep the space, time best/default/peers, report.
// verify(launch): bench/rowwise_verify.h's check of one launch on the timed buffers.
using Verify = std::function<std::string(const std::function<Status()>&)>;

template <class LaunchOf>
void sweepAndReport(benchmark::State& state, Row& row, const std::vector<Config>& cs,
                    const Config& def, LaunchOf& launch_of, const Verify& verify,
                    bool read2write1 = false) {
  for (auto _ : state) {
    const Config best = sweep(row, cs, launch_of);
    const std::function<Status()> best_fn = row.best_config.empty() ? nullptr : launch_of(best);
    if (!best_fn) return state.SkipWithError("no config of the space ran");
    timeRounds(row, best_fn, launch_of(def), read2write1);
    std::printf("VERIFY rowwise %s best %s\n", rowId(row).c_str(), verify(best_fn).c_str());
    if (auto d = launch_of(def))
      std::printf("VERIFY rowwise %s default %s\n", rowId(row).c_str(), verify(d).c_str());
    state.SetIterationTime(row.best.median / 1e6);
  }
  state.counters["GB/s"] = row.gbs(row.best.median);
  state.counters["copy_GB/s"] = row.gbs(row.copy.median);
  state.counters["ratio_vs_copy"] = row.best_vs_copy.median;
  state.counters["default_ratio"] = row.dflt_vs_copy.median;
  state.SetLabel(row.best_config);
  rows().push_back(row);
}

}  // namespace ktune::rowwise_bench
