// rowwise_bench's MLIR rows: the MLIR-written RMSNorm and SiLU·Mul (templates/mlir/) compiled by
// the IR front door (or, without mlir-opt-19, from the PTX --lower-mlir wrote), timed like the C++
// kernels. Included by bench/rowwise_bench.cc only.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/fs.h"
#include "bench/rowwise_bench_common.h"
#include "bench/rowwise_verify.h"
#include "templates/mlir/mlir_kernels.h"

namespace ktune::rowwise_bench {

using namespace ktune::rowwise;

// ---- The MLIR-written kernels (templates/mlir/), through the IR front door ----------------
// Same shapes, buffers, flush and copy peer as the C++ kernels above; rows must be VEC-aligned
// (these shapes are), and the config space is templates::mlirRowwiseConfigs.

inline Config toConfig(const templates::MlirRowwiseConfig& m) {
  return Config{{"VEC", m.vec}, {"THREADS", m.threads}, {"ROWS_PER_BLOCK", m.rows_per_block}};
}
// The module's config for rows of `d` elements (RMSNorm: its register items follow d).
inline templates::MlirRowwiseConfig fromConfig(const std::string& name, const Config& c, int64_t d) {
  return templates::mlirConfigFor(
      name, d, {"bf16", int(c.getInt("VEC")), int(c.getInt("THREADS")),
                int(c.getInt("ROWS_PER_BLOCK"))});
}

// Where the MLIR kernels' modules lowered to PTX elsewhere are read from (--mlir-ptx=DIR): a GPU
// machine without mlir-opt-19 runs what dev/mlir_lower.sh wrote there.
inline std::string& mlirPtxDir() {
  static std::string d = ".mlirptx";
  return d;
}

// The module of MLIR kernel `name` with config `m`: the lowered PTX when --mlir-ptx has it, else
// the MLIR text (compiled here, with mlir-opt-19).
inline Expected<CompileRequest> mlirRequest(const std::string& name, const templates::MlirRowwiseConfig& m,
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
inline std::string mlirKey(const std::string& name, const templates::MlirRowwiseConfig& m) {
  return "mlir:" + name + "," + m.toString();
}

// Compiles and loads every config of MLIR kernel `name` for rows of `d` elements not loaded yet.
inline std::vector<Config> compileMlir(const std::string& name, int64_t d) {
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
inline int lowerMlir(const std::string& dir, const std::string& arch) {
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
inline void addMemref(KernelArgs& a, DevicePtr p, int64_t n) {
  a.add(p).add(p).add(int64_t(0)).add(n).add(int64_t(1));
}

// The launch of MLIR config `c` of `kernel` over R rows of `cols` columns (null when that config
// did not compile): its arguments are added once per config by `add_args(a, vector width)` into
// `args` (which must outlive the launch).
inline std::function<Status()> mlirLaunch(
    const std::string& kernel, const Config& c, int64_t R, int64_t cols,
    std::map<std::string, KernelArgs>& args,
    const std::function<void(KernelArgs&, int64_t)>& add_args) {
  auto& X = ctx();
  const auto m = fromConfig(kernel, c, cols);
  auto it = X.fns.find(mlirKey(kernel, m));
  if (it == X.fns.end()) return nullptr;
  const std::string key = c.toString();
  KernelArgs& a = args[key];
  if (a.count() == 0) add_args(a, m.vec);
  const auto shape = templates::mlirKernelLaunch(kernel, m, R, cols);
  const FunctionHandle f = it->second;
  Backend* b = X.b.get();
  return [&args, b, f, shape, key] {
    return b->launch(f, shape.grid, shape.block, 0, args[key].data());
  };
}

inline void BM_MlirRmsNorm(benchmark::State& state, int64_t R, int64_t C) {
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
  auto launch_of = [&](const Config& c) {
    return mlirLaunch("rmsnorm", c, R, C, args, [&](KernelArgs& a, int64_t vec) {
      const int64_t dv = C / vec;
      addMemref(a, x.p, R * dv);
      addMemref(a, w.p, dv);
      addMemref(a, y.p, R * dv);
      a.add(R).add(C).add(float(1.0 / double(C))).add(1e-6f);
    });
  };
  if (cs.empty()) {
    state.SkipWithError("no MLIR config compiled");
    return;
  }
  sweepAndReport(state, row, cs, toConfig({}), launch_of, [&](const std::function<Status()>& l) {
    return bench::verifyRmsNorm(*X.b, p, x.p, w.p, 0, y.p, l);
  });
}

inline void BM_MlirSiluMul(benchmark::State& state, int64_t R, int64_t d) {
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
  auto launch_of = [&](const Config& c) {
    return mlirLaunch("silu_mul", c, R, d, args, [&](KernelArgs& a, int64_t vec) {
      const int64_t dv = d / vec;
      addMemref(a, o.p, R * dv);
      addMemref(a, x.p, R * 2 * dv);
      a.add(R).add(d);
    });
  };
  if (cs.empty()) {
    state.SkipWithError("no MLIR config compiled");
    return;
  }
  sweepAndReport(state, row, cs, toConfig({}), launch_of, [&](const std::function<Status()>& l) {
    return bench::verifySiluMul(*X.b, p, x.p, o.p, l);
  }, true);
}

}  // namespace ktune::rowwise_bench
