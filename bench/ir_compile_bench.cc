// Compile time of the IR front door against the C++ path, for the same kernel: a template's
// default config compiled from C++ (NVRTC for sm_90a, clang-19 for gfx942), and the LLVM IR that
// clang emits for the same source (and, on sm_90a, NVRTC's own PTX) compiled by the IR compiler.
// This is the cost an embedding compiler pays per config when it hands ktune a module instead of
// C++; and the MLIR-written RMSNorm / SiLU·Mul (templates/mlir/) from MLIR. No GPU needed. Every iteration compiles a text that differs by a comment, so no compiler
// reuses an earlier result (NVRTC does, in-process, for identical programs).
//
//   build/bench/ir_compile_bench --benchmark_min_time=1x --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include "compiler/compiler.h"
#include "compiler/llvm/clang_compiler.h"
#include "templates/catalog.h"
#include "templates/mlir/mlir_kernels.h"
#include "base/device.h"

namespace ktune {
namespace {

enum class Path { kCpp, kLlvmIr, kPtx, kMlir };

CompileRequest templateRequest(const std::string& name, const std::string& arch) {
  CompileRequest req;
  auto t = templates::findTemplate(name);
  if (!t.ok()) return req;
  req.source = std::string(templates::sourceOf(*t));
  req.source_name = t->source_file;
  req.entry = t->entry;
  req.arch = arch;
  auto d = templates::defaultDefines(*t, arch);
  if (d.ok()) req.defines = *d;
  return req;
}

// The request each path compiles: C++ as is, or the module the C++ becomes.
Expected<CompileRequest> requestFor(Path path, const std::string& name, const std::string& arch) {
  if (path == Path::kMlir) {  // the MLIR-written kernel of the same name (templates/mlir/)
    CompileRequest m;
    m.language = Language::kMlir;
    m.arch = arch;
    m.entry = templates::mlirKernelEntry(name);
    // RMSNorm with the register items of a 4096-wide row, as a tuning run compiles it.
    KTUNE_ASSIGN_OR_RETURN(m.source, templates::mlirKernelSource(
                                         name, arch, templates::mlirConfigFor(name, 4096, {})));
    return m;
  }
  CompileRequest cpp = templateRequest(name, arch);
  if (path == Path::kCpp) return cpp;
  CompileRequest ir;
  ir.arch = arch;
  ir.entry = cpp.entry;
  if (path == Path::kLlvmIr) {
    ir.language = Language::kLlvmIr;
    KTUNE_ASSIGN_OR_RETURN(ir.source,
                           clang_detail::emitLlvm(clang_detail::findClang(""), cpp, 300000));
  } else {
    cpp.dumps = kDumpPtx;
    KTUNE_ASSIGN_OR_RETURN(auto c, compilerForArch(arch));
    KTUNE_ASSIGN_OR_RETURN(auto co, c->compile(cpp));
    ir.language = Language::kPtx;
    ir.source = co.dumps["ptx"];
  }
  return ir;
}

void BM_Compile(benchmark::State& state, Path path, std::string name, std::string arch) {
  auto req = requestFor(path, name, arch);
  if (!req.ok()) {
    state.SkipWithError(req.status().message().c_str());
    return;
  }
  auto compiler = compilerFor(*req);
  if (!compiler.ok()) {
    state.SkipWithError(compiler.status().message().c_str());
    return;
  }
  const std::string comment =
      req->language == Language::kLlvmIr ? "\n; ktune bench " : "\n// ktune bench ";
  const std::string base = req->source;
  int64_t n = 0;
  for (auto _ : state) {
    req->source = base + comment + std::to_string(n++) + "\n";
    auto co = (*compiler)->compile(*req);
    if (!co.ok()) {
      state.SkipWithError(co.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(co->binary.data());
  }
}

void registerAll() {
  struct Case {
    const char* tmpl;
    const char* arch;
  };
  for (Case c : {Case{"rmsnorm", "gfx942"}, Case{"silu_mul", "gfx942"}, Case{"gemm_mfma", "gfx942"},
                 Case{"rmsnorm", "sm_90a"}, Case{"silu_mul", "sm_90a"}, Case{"gemm_mma", "sm_90a"}}) {
    const std::string tag = std::string(c.tmpl) + "/" + c.arch;
    benchmark::RegisterBenchmark(("cpp/" + tag).c_str(), BM_Compile, Path::kCpp, c.tmpl, c.arch)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark(("llvm_ir/" + tag).c_str(), BM_Compile, Path::kLlvmIr, c.tmpl,
                                 c.arch)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
    if (std::string(c.tmpl) != "gemm_mfma" && std::string(c.tmpl) != "gemm_mma")
      benchmark::RegisterBenchmark(("mlir/" + tag).c_str(), BM_Compile, Path::kMlir, c.tmpl, c.arch)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
    if (Arch(c.arch).isNvidia())
      benchmark::RegisterBenchmark(("ptx/" + tag).c_str(), BM_Compile, Path::kPtx, c.tmpl, c.arch)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
  }
}

}  // namespace
}  // namespace ktune

int main(int argc, char** argv) {
  ktune::registerAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
