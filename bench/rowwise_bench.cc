// Row-wise kernels at the bandwidth limit: RMSNorm and SiLU·Mul (bf16) on the target shapes,
// each as the best config of its whole space (a tuning sweep done here with runtime + compiler
// directly) and as the untuned default config, against same-run peers of the same byte count:
// the copy peer (best ktune_copy config or cuMemcpyDtoD) and, for SiLU·Mul (which reads twice
// what it writes), a read-2/write-1 stream (bench/fair/peers.h, shared with `ktune tune`).
//
// Shapes: RMSNorm x [R, C] -> y [R, C] with weight [C]: 4096x4096, 16384x8192, 32768x4096, plus
// the fused residual add at 4096x4096. SiLU·Mul follows vLLM: x [R, 2d] -> out [R, d] with
// d = 14336 (Llama-3-8B MLP), R = 4096 and 16384, and 4096 x 2 x 2048 (the Python bench's small
// shape, where the moved bytes fit in an H100's L2).
// Bytes counted: the minimum traffic (each input read once, each output written once), see
// rmsNormBytes / siluMulBytes. Timing: device events around one launch, the L2 evicted before
// every timed run by a read of 2x L2 (clean lines), warm-up first. The sweep picks the best
// config; then best, default and the peers are timed in interleaved rounds (each first in turn)
// and reported as medians with intervals, with per-round ratios (peer time / kernel time = the
// kernel's fraction of the peer's bandwidth): RESULT/RATIO/CLOCKS lines as gemm_bench prints.
// The timed best and default configs are verified on the timed shape (VERIFY lines, sampled rows
// against the float64 reference, bench/rowwise_verify.h).
// The MLIR-written RMSNorm and SiLU·Mul (templates/mlir/, compiled by the IR front door) run on
// the same shapes as rows named "mlir ...", for the ratio to copy and to the C++ kernels (last
// lines: "mlir/C++ bandwidth"). Without mlir-opt-19 (the GPU machine) they run the PTX that
// `rowwise_bench --lower-mlir=DIR` (dev/mlir_lower.sh) wrote elsewhere: --mlir-ptx=DIR
// (default .mlirptx).
// Output: Google Benchmark counters per shape, then a summary table (last lines of the output).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "autotune/compile_pool.h"
#include "ops/buffers.h"
#include "bench/fair/fair_timing.h"
#include "bench/fair/peers.h"
#include "bench/rowwise_rows.h"
#include "bench/rowwise_verify.h"
#include "base/fs.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"
#include "templates/mlir/mlir_kernels.h"
#include "templates/rowwise.h"

using namespace ktune;
using namespace ktune::rowwise;

namespace {

using Defines = std::vector<std::pair<std::string, std::string>>;

struct Ctx {
  std::unique_ptr<Backend> b;
  std::unique_ptr<Compiler> c;
  DeviceInfo dev;
  std::unique_ptr<StreamPeers> peers;  // read-based L2 flush, copy and read-2/write-1 peers
  std::map<std::string, FunctionHandle> fns;
  std::string error;
};

Ctx& ctx() {
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

std::string keyOf(const std::string& entry, const Defines& d) {
  std::string k = entry;
  for (const auto& [a, v] : d) k += "," + a + "=" + v;
  return k;
}

// Compiles (in parallel) and loads every (source, entry, defines) not loaded yet.
void compileAll(const std::string& src, const std::string& entry, const std::vector<Defines>& ds) {
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
double medianMs(const std::function<Status()>& launch, int reps) {
  auto t = ctx().peers->samplesMs(launch, reps);
  return t.ok() && !t->empty() ? fair::medianInterval(*t).median : -1;
}

// Fills a device buffer with random values of dtype in [lo, hi) (the ops' toolkit fill).
void fillRandom(DevicePtr p, size_t bytes, RowDType t, uint64_t seed, double lo, double hi) {
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

std::string clocksNow() {
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

constexpr int kRounds = 15;

// The kernel's best and default configs and the same-run peers timed in interleaved rounds (each
// first in turn), every run after a read flush. Peer times are scaled to the kernel's byte count,
// so "peer time / kernel time" is the kernel's fraction of the peer's bandwidth.
void timeRounds(Row& row, const std::function<Status()>& best, const std::function<Status()>& dflt,
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

void BM_RmsNorm(benchmark::State& state, int64_t R, int64_t C, bool residual) {
  auto& X = ctx();
  if (!X.error.empty()) {
    state.SkipWithError(("no GPU: " + X.error).c_str());
    return;
  }
  RmsNormProblem p;
  p.dtype = RowDType::kBF16;
  p.rows = R;
  p.cols = C;
  p.has_residual = residual;
  const size_t n = size_t(R * C) * 2;
  Buf x(n), y(n), w(size_t(C) * 2), r(residual ? n : 16), ro(residual ? n : 16);
  fillRandom(x.p, n, p.dtype, 1, -2, 2);
  fillRandom(w.p, size_t(C) * 2, p.dtype, 2, 0.5, 1.5);
  if (residual) fillRandom(r.p, n, p.dtype, 3, -2, 2);
  const auto lim = limitsFor(X.dev);
  auto cs = rmsNormSpace(p.dtype, lim).enumerate(lim.backend).accepted;
  const Config def = rmsNormDefaultConfig(p.dtype, lim);
  std::vector<Defines> ds;
  for (const auto& c : cs) ds.push_back(rmsNormDefines(c, p));
  ds.push_back(rmsNormDefines(def, p));
  compileAll(std::string(rmsNormSource()), kRmsNormEntry, ds);
  Row row;
  row.name = std::string("rmsnorm") + (residual ? "+res" : "") + " bf16 " + std::to_string(R) +
             "x" + std::to_string(C);
  row.bytes = double(rmsNormBytes(p));
  KernelArgs a;
  const long long rr = R, cc = C;
  const auto st = kernelStrides(p);
  a.add(y.p).add(x.p).add(w.p).add(r.p).add(ro.p).add(rr).add(cc).add((long long)st.x)
      .add((long long)st.y).add((long long)st.r).add((long long)st.ro).add(1e-6f);
  auto launch_of = [&](const Config& c) -> std::function<Status()> {
    auto it = X.fns.find(keyOf(kRmsNormEntry, rmsNormDefines(c, p)));
    if (it == X.fns.end()) return nullptr;
    const auto l = rmsNormLaunch(c, p, X.dev);
    const FunctionHandle f = it->second;
    return [&, f, l] { return X.b->launch(f, l.grid, l.block, l.shared, a.data()); };
  };
  sweepAndReport(state, row, cs, def, launch_of, [&](const std::function<Status()>& l) {
    return bench::verifyRmsNorm(*X.b, p, x.p, w.p, r.p, y.p, l);
  });
}

void BM_SiluMul(benchmark::State& state, int64_t R, int64_t d) {
  auto& X = ctx();
  if (!X.error.empty()) {
    state.SkipWithError(("no GPU: " + X.error).c_str());
    return;
  }
  SiluMulProblem p;
  p.dtype = RowDType::kBF16;
  p.rows = R;
  p.d = d;
  const size_t nx = size_t(R * 2 * d) * 2, no = size_t(R * d) * 2;
  Buf x(nx), o(no);
  fillRandom(x.p, nx, p.dtype, 4, -4, 4);
  const auto lim = limitsFor(X.dev);
  auto cs = siluMulSpace(p.dtype, lim).enumerate(lim.backend).accepted;
  const Config def = siluMulDefaultConfig(p.dtype, lim);
  std::vector<Defines> ds;
  for (const auto& c : cs) ds.push_back(siluMulDefines(c, p));
  compileAll(std::string(siluMulSource()), kSiluMulEntry, ds);
  Row row;
  row.name = "silu_mul bf16 " + std::to_string(R) + "x" + std::to_string(d);
  row.bytes = double(siluMulBytes(p));
  KernelArgs a;
  const long long rr = R, dd = d;
  const auto st = kernelStrides(p);
  a.add(o.p).add(x.p).add(rr).add(dd).add((long long)st.x).add((long long)st.out);
  auto launch_of = [&](const Config& c) -> std::function<Status()> {
    auto it = X.fns.find(keyOf(kSiluMulEntry, siluMulDefines(c, p)));
    if (it == X.fns.end()) return nullptr;
    const auto l = siluMulLaunch(c, p, X.dev);
    const FunctionHandle f = it->second;
    return [&, f, l] { return X.b->launch(f, l.grid, l.block, l.shared, a.data()); };
  };
  sweepAndReport(state, row, cs, def, launch_of, [&](const std::function<Status()>& l) {
    return bench::verifySiluMul(*X.b, p, x.p, o.p, l);
  }, true);
}

// ---- The MLIR-written kernels (templates/mlir/), through the IR front door ----------------
// Same shapes, buffers, flush and copy peer as the C++ kernels above; rows must be VEC-aligned
// (these shapes are), and the config space is templates::mlirRowwiseConfigs.

Config toConfig(const templates::MlirRowwiseConfig& m) {
  return Config{{"VEC", m.vec}, {"THREADS", m.threads}, {"ROWS_PER_BLOCK", m.rows_per_block}};
}
// The module's config for rows of `d` elements (RMSNorm: its register items follow d).
templates::MlirRowwiseConfig fromConfig(const std::string& name, const Config& c, int64_t d) {
  return templates::mlirConfigFor(
      name, d, {"bf16", int(c.getInt("VEC")), int(c.getInt("THREADS")),
                int(c.getInt("ROWS_PER_BLOCK"))});
}

// Where the MLIR kernels' modules lowered to PTX elsewhere are read from (--mlir-ptx=DIR): a GPU
// machine without mlir-opt-19 runs what dev/mlir_lower.sh wrote there.
std::string& mlirPtxDir() {
  static std::string d = ".mlirptx";
  return d;
}

// The module of MLIR kernel `name` with config `m`: the lowered PTX when --mlir-ptx has it, else
// the MLIR text (compiled here, with mlir-opt-19).
Expected<CompileRequest> mlirRequest(const std::string& name, const templates::MlirRowwiseConfig& m,
                                     const std::string& arch) {
  CompileRequest r;
  r.entry = templates::mlirKernelEntry(name);
  r.arch = arch;
  const std::string ptx = mlirPtxDir() + "/" + templates::mlirKernelFileName(name, arch, m, "ptx");
  if (pathExists(ptx)) return requestFromFile(ptx, arch, r.entry, "ptx");
  r.language = Language::kMlir;
  KTUNE_ASSIGN_OR_RETURN(r.source, templates::mlirKernelSource(name, arch, m));
  return r;
}

// The loaded function of MLIR kernel `name` for config `m` (key "mlir:<name>,<m>").
std::string mlirKey(const std::string& name, const templates::MlirRowwiseConfig& m) {
  return "mlir:" + name + "," + m.toString();
}

// Compiles and loads every config of MLIR kernel `name` for rows of `d` elements not loaded yet.
std::vector<Config> compileMlir(const std::string& name, int64_t d) {
  auto& X = ctx();
  std::vector<Config> cs;
  auto ir = openIrCompiler();
  if (!ir.ok()) return cs;
  for (const auto& m0 : templates::mlirRowwiseConfigs(name, X.dev.arch)) {
    const Config c = toConfig(m0);
    const auto m = templates::mlirConfigFor(name, d, m0);
    const std::string key = mlirKey(name, m);
    if (!X.fns.count(key)) {
      auto r = mlirRequest(name, m, X.dev.arch);
      auto co = r.ok() ? (*ir)->compile(*r) : Expected<CodeObject>(r.status());
      if (!co.ok()) {
        std::fprintf(stderr, "MLIR kernel compile failed: %s\n", co.status().toString().c_str());
        continue;
      }
      auto mod = X.b->loadModule(co->binary);
      auto f = mod.ok() ? X.b->getFunction(*mod, co->lowered_entry) : Expected<FunctionHandle>(mod.status());
      if (!f.ok()) continue;
      X.fns[key] = *f;
    }
    cs.push_back(c);
  }
  return cs;
}

// --lower-mlir=DIR: writes the PTX of every bf16 config of both MLIR kernels for `arch` to DIR,
// RMSNorm with each register item count (1, 2, 4, 8: every row length maps to one) (no GPU
// needed; needs mlir-opt-19). Returns the process exit code.
int lowerMlir(const std::string& dir, const std::string& arch) {
  auto ir = openIrCompiler();
  if (!ir.ok() || !makeDirs(dir, 0755).ok()) {
    std::fprintf(stderr, "cannot lower: %s\n", ir.ok() ? ("cannot create " + dir).c_str()
                                                       : ir.status().toString().c_str());
    return 1;
  }
  std::vector<std::pair<std::string, templates::MlirRowwiseConfig>> todo;
  for (const auto& name : templates::mlirKernelNames())
    for (auto m : templates::mlirRowwiseConfigs(name, arch, "bf16")) {
      if (name != "rmsnorm") {
        todo.push_back({name, m});
        continue;
      }
      for (m.items = 1; m.items <= templates::kMlirRmsNormMaxItems; m.items *= 2)
        todo.push_back({name, m});
    }
  std::atomic<int> failed{0};
  CompilePool::parallelFor(todo.size(), CompilePool::threadsFor(todo.size(), 16, false), [&](size_t i) {
    const auto& [name, m] = todo[i];
    CompileRequest r;
    r.language = Language::kMlir;
    r.entry = templates::mlirKernelEntry(name);
    r.arch = arch;
    r.dumps = kDumpPtx;
    auto text = templates::mlirKernelSource(name, arch, m);
    if (text.ok()) r.source = *text;
    auto co = text.ok() ? (*ir)->compile(r) : Expected<CodeObject>(text.status());
    const std::string path = dir + "/" + templates::mlirKernelFileName(name, arch, m, "ptx");
    if (!co.ok() || co->dumps["ptx"].empty() ||
        !writeFileAtomic(path, co->dumps["ptx"], 0644).ok()) {
      std::fprintf(stderr, "%s %s: %s\n", name.c_str(), m.toString().c_str(),
                   co.ok() ? "no PTX written" : co.status().toString().c_str());
      ++failed;
    }
  });
  std::printf("lowered %zu MLIR kernel configs for %s into %s (%d failed)\n", todo.size(),
              arch.c_str(), dir.c_str(), failed.load());
  return failed.load() == 0 ? 0 : 1;
}

// MLIR's memref calling convention for a 1-D memref: base, aligned, offset, size, stride.
void addMemref(KernelArgs& a, DevicePtr p, int64_t n) {
  a.add(p).add(p).add(int64_t(0)).add(n).add(int64_t(1));
}

void BM_MlirRmsNorm(benchmark::State& state, int64_t R, int64_t C) {
  auto& X = ctx();
  if (!X.error.empty()) {
    state.SkipWithError(("no GPU: " + X.error).c_str());
    return;
  }
  RmsNormProblem p;
  p.rows = R;
  p.cols = C;
  const size_t n = size_t(R * C) * 2;
  Buf x(n), y(n), w(size_t(C) * 2);
  fillRandom(x.p, n, p.dtype, 1, -2, 2);
  fillRandom(w.p, size_t(C) * 2, p.dtype, 2, 0.5, 1.5);
  const auto cs = compileMlir("rmsnorm", C);
  Row row;
  row.name = "mlir rmsnorm bf16 " + std::to_string(R) + "x" + std::to_string(C);
  row.bytes = double(rmsNormBytes(p));
  std::map<std::string, KernelArgs> args;  // per VEC (dv differs)
  auto launch_of = [&](const Config& c) -> std::function<Status()> {
    const auto m = fromConfig("rmsnorm", c, C);
    auto it = X.fns.find(mlirKey("rmsnorm", m));
    if (it == X.fns.end()) return nullptr;
    KernelArgs& a = args[c.toString()];
    if (a.count() == 0) {
      const int64_t dv = C / m.vec;
      addMemref(a, x.p, R * dv);
      addMemref(a, w.p, dv);
      addMemref(a, y.p, R * dv);
      a.add(R).add(C).add(float(1.0 / double(C))).add(1e-6f);
    }
    const auto shape = templates::mlirKernelLaunch("rmsnorm", m, R, C);
    const FunctionHandle f = it->second;
    return [&, f, shape, key = c.toString()] {
      return X.b->launch(f, shape.grid, shape.block, 0, args[key].data());
    };
  };
  if (cs.empty()) {
    state.SkipWithError("no MLIR config compiled");
    return;
  }
  sweepAndReport(state, row, cs, toConfig({}), launch_of, [&](const std::function<Status()>& l) {
    return bench::verifyRmsNorm(*X.b, p, x.p, w.p, 0, y.p, l);
  });
}

void BM_MlirSiluMul(benchmark::State& state, int64_t R, int64_t d) {
  auto& X = ctx();
  if (!X.error.empty()) {
    state.SkipWithError(("no GPU: " + X.error).c_str());
    return;
  }
  SiluMulProblem p;
  p.rows = R;
  p.d = d;
  const size_t nx = size_t(R * 2 * d) * 2, no = size_t(R * d) * 2;
  Buf x(nx), o(no);
  fillRandom(x.p, nx, p.dtype, 4, -4, 4);
  const auto cs = compileMlir("silu_mul", d);
  Row row;
  row.name = "mlir silu_mul bf16 " + std::to_string(R) + "x" + std::to_string(d);
  row.bytes = double(siluMulBytes(p));
  std::map<std::string, KernelArgs> args;
  auto launch_of = [&](const Config& c) -> std::function<Status()> {
    const auto m = fromConfig("silu_mul", c, d);
    auto it = X.fns.find(mlirKey("silu_mul", m));
    if (it == X.fns.end()) return nullptr;
    const int64_t dv = d / m.vec;
    KernelArgs& a = args[c.toString()];
    if (a.count() == 0) {
      addMemref(a, o.p, R * dv);
      addMemref(a, x.p, R * 2 * dv);
      a.add(R).add(d);
    }
    const auto shape = templates::mlirKernelLaunch("silu_mul", m, R, d);
    const FunctionHandle f = it->second;
    return [&, f, shape, key = c.toString()] {
      return X.b->launch(f, shape.grid, shape.block, 0, args[key].data());
    };
  };
  if (cs.empty()) {
    state.SkipWithError("no MLIR config compiled");
    return;
  }
  sweepAndReport(state, row, cs, toConfig({}), launch_of, [&](const std::function<Status()>& l) {
    return bench::verifySiluMul(*X.b, p, x.p, o.p, l);
  }, true);
}

}  // namespace

// Removes "--name=value" from argv and returns the value ("" when absent).
std::string takeFlag(int* argc, char** argv, const std::string& name) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < *argc; ++i) {
    if (std::string(argv[i]).rfind(prefix, 0) != 0) continue;
    std::string v = argv[i] + prefix.size();
    for (int j = i; j + 1 < *argc; ++j) argv[j] = argv[j + 1];
    --*argc;
    return v;
  }
  return "";
}

// The MLIR rows next to their C++ rows: the ratio of best bandwidths (target: within 3%).
void printMlirVsCpp() {
  for (const auto& m : rows()) {
    if (m.name.rfind("mlir ", 0) != 0) continue;
    for (const auto& c : rows()) {
      if (c.name != m.name.substr(5) || c.best.median <= 0 || m.best.median <= 0) continue;
      std::printf("%-30s mlir/C++ bandwidth %.3f (mlir %s, C++ %s)\n", m.name.c_str(),
                  c.best.median / m.best.median, m.best_config.c_str(), c.best_config.c_str());
    }
  }
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a run cut by a timeout keeps its lines
  const std::string lower_dir = takeFlag(&argc, argv, "lower-mlir");
  const std::string lower_arch = takeFlag(&argc, argv, "arch");
  if (std::string d = takeFlag(&argc, argv, "mlir-ptx"); !d.empty()) mlirPtxDir() = d;
  if (!lower_dir.empty()) return lowerMlir(lower_dir, lower_arch.empty() ? "sm_90a" : lower_arch);
  const int64_t kD = 14336;
  struct R { int64_t r, c; bool res; };
  for (R s : {R{4096, 4096, false}, R{16384, 8192, false}, R{32768, 4096, false}, R{4096, 4096, true}}) {
    const std::string n = std::string("RmsNorm") + (s.res ? "Residual" : "") + "/bf16/" +
                          std::to_string(s.r) + "x" + std::to_string(s.c);
    benchmark::RegisterBenchmark(n.c_str(), BM_RmsNorm, s.r, s.c, s.res)
        ->Iterations(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  // 4096 x 2 x 2048 (48 MB moved, under the L2 size of an H100) is the Python bench's small shape.
  for (auto [r, d] : {std::pair<int64_t, int64_t>{4096, kD}, {16384, kD}, {4096, 2048}}) {
    const std::string n = "SiluMul/bf16/" + std::to_string(r) + "x2x" + std::to_string(d);
    benchmark::RegisterBenchmark(n.c_str(), BM_SiluMul, r, d)
        ->Iterations(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  for (R s : {R{4096, 4096, false}, R{16384, 8192, false}}) {
    const std::string n = "MlirRmsNorm/bf16/" + std::to_string(s.r) + "x" + std::to_string(s.c);
    benchmark::RegisterBenchmark(n.c_str(), BM_MlirRmsNorm, s.r, s.c)
        ->Iterations(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  for (int64_t r : {int64_t(4096), int64_t(16384)}) {
    const std::string n = "MlirSiluMul/bf16/" + std::to_string(r) + "x2x" + std::to_string(kD);
    benchmark::RegisterBenchmark(n.c_str(), BM_MlirSiluMul, r, kD)
        ->Iterations(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  bench::printTable(ctx().dev.name, ctx().dev.arch, kRounds);
  printMlirVsCpp();
  return 0;
}
