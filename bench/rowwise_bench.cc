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

#include <cstdio>
#include <functional>
#include <string>
#include <utility>

#include "bench/rowwise_bench_common.h"
#include "bench/rowwise_bench_mlir.h"
#include "bench/rowwise_rows.h"
#include "bench/rowwise_verify.h"

using namespace ktune;
using namespace ktune::rowwise;
using namespace ktune::rowwise_bench;

// The sweep, the rounds and the shared loop: bench/rowwise_bench_common.h; the MLIR rows:
// bench/rowwise_bench_mlir.h.
namespace ktune::rowwise_bench {

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

}  // namespace ktune::rowwise_bench

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
