// Dev tool: compiles every curated config of the tma and decode kinds (every entry of
// templates/gemm/curated.json that some problem below selects) for sm_90a with NVRTC and writes
// each distinct compile's PTX to DIR (tests/unit/gemm_test_util.h's keepPtx), so a change meant to
// leave those kernels' generated code alone (moving their primitives between files) is checked
// by diffing DIR from a build before the change with DIR from one after it:
//   g++ -std=c++20 -O1 -I. -Iinclude -Ibuild/generated dev/gemm_ptx_sweep.cc build/api/libktune_api.a \
//     build/templates/libktune_templates.a build/compiler/libktune_compiler.a \
//     build/runtime/libktune_runtime.a build/base/libktune_base.a -ldl -pthread -o /tmp/ptx_sweep
//   KTUNE_TEST_PTX_DIR=DIR /tmp/ptx_sweep     (prints the count of compiles and of failures)
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "templates/gemm.h"
#include "tests/unit/gemm_test_util.h"

using namespace ktune;
using namespace ktune::gemm;

int main() {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) {
    std::fprintf(stderr, "NVRTC unavailable: %s\n", cc.status().toString().c_str());
    return 1;
  }
  std::vector<GemmShape> shapes;
  for (int64_t m : {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512, 1024, 4096})
    for (int64_t n : {4096, 14336, 28672}) {
      shapes.push_back(denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, m, n, 4096));
      GemmShape g = shapes.back();  // the gate/up pair: C has N/2 columns
      g.act = Activation::kSiluMul;
      g.ldc = n / 2;
      shapes.push_back(g);
      GemmShape f = denseShape(Layout::kNT, ElemType::kF16, ElemType::kF16, m, n, 4096);
      f.has_bias = true;
      f.act = Activation::kSilu;
      shapes.push_back(f);
      shapes.push_back(denseShape(Layout::kNT, ElemType::kF8E4M3, ElemType::kBF16, m, n, 4096));
    }
  // One job per distinct define list (the PTX depends on nothing else).
  std::map<std::string, testutil::CompileJob> jobs;
  for (KernelKind k : {KernelKind::kTma, KernelKind::kDecode})
    for (const GemmShape& s : shapes)
      for (const Config& c : curatedConfigs(k, s)) {
        if (!applicable(k, c, s).ok()) continue;
        std::string key = kernelKindName(k);
        for (const auto& [n, v] : defines(k, c, s)) key += " " + n + "=" + v;
        jobs.emplace(key, testutil::CompileJob{k, c, s});
      }
  std::vector<testutil::CompileJob> all;
  for (const auto& [key, j] : jobs) all.push_back(j);
  const auto failures = testutil::compileJobs(
      **cc, all, [](const Config&, const GemmShape&, const std::string&) { return std::string(); },
      true);
  for (const auto& f : failures) std::printf("failed: %s\n", f.substr(0, 300).c_str());
  std::printf("%zu compiles, %zu failures\n", all.size(), failures.size());
  return failures.empty() ? 0 : 1;
}
