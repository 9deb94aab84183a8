// GPU (label gpu; skips without a CUDA device): the compiler's reports match what the driver says
// about the loaded kernels. For every RMSNorm and SiLU·Mul config (bf16; RMSNorm with weight,
// every other config with the fused residual) and the curated mma / skinny / wgmma GEMM configs
// (NT bf16, 4096^3 and decode M = 1/16/128), compiled with NVRTC for the device's arch and loaded:
//   ResourceUsage.registers    == FunctionAttributes.num_regs
//   ResourceUsage.shared_bytes == FunctionAttributes.static_shared_bytes
//   ResourceUsage.stack_bytes  == FunctionAttributes.local_bytes (spills live in the stack frame)
//   analysis blocks/SM (NVIDIA occupancy calculator, the launch's block and dynamic shared)
//                              == Backend::occupancyBlocksPerSm
// Occupancy may legitimately differ only when shared memory limits it: the driver picks the
// shared-memory carveout per kernel, the table assumes the maximum. Then the driver's count must
// be >= 1 and within one block of the analysis (asserted), and the row is marked "carveout".
// Prints one table row per kernel checked.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "compiler/analysis/report.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"
#include "templates/embedded.h"
#include "templates/gemm.h"
#include "templates/rowwise.h"

namespace ktune {
namespace {

struct Gpu {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Compiler> compiler;
  DeviceInfo dev;
  std::string skip;
};

Gpu& gpu() {
  static Gpu* g = [] {
    auto* g = new Gpu;
    auto b = openBackend("cuda");
    if (!b.ok()) {
      g->skip = b.status().toString();
      return g;
    }
    auto devs = (*b)->devices();
    if (!devs.ok() || devs->empty()) {
      g->skip = devs.ok() ? "no CUDA device" : devs.status().toString();
      return g;
    }
    if (auto st = (*b)->setDevice(0); !st.ok()) {
      g->skip = st.toString();
      return g;
    }
    g->dev = (*devs)[0];
    auto c = openNvrtcCompiler();
    if (!c.ok()) {
      g->skip = "no NVRTC: " + c.status().toString();
      return g;
    }
    g->backend = std::move(*b);
    g->compiler = std::move(*c);
    return g;
  }();
  return *g;
}

#define REQUIRE_GPU()                                                  \
  do {                                                                 \
    if (!gpu().skip.empty()) GTEST_SKIP() << "no GPU: " << gpu().skip; \
    ASSERT_TRUE(gpu().backend->setDevice(0).ok());                     \
  } while (0)

struct Item {
  std::string what;
  CompileRequest req;
  int threads = 0;
  int64_t dynamic_shared = 0;
};

// Compiles, loads and compares one kernel (failures are added to the test); prints its row.
void checkItem(const Item& it) {
  Gpu& g = gpu();
  auto co = g.compiler->compile(it.req);
  ASSERT_TRUE(co.ok()) << it.what << ": " << co.status().toString();
  auto mod = g.backend->loadModule(co->binary);
  ASSERT_TRUE(mod.ok()) << it.what << ": " << mod.status().toString();
  auto fn = g.backend->getFunction(*mod, co->lowered_entry);
  ASSERT_TRUE(fn.ok()) << it.what << ": " << fn.status().toString();
  auto attr = g.backend->attributes(*fn);
  ASSERT_TRUE(attr.ok()) << it.what << ": " << attr.status().toString();
  if (it.dynamic_shared > 0) {
    auto st = g.backend->setMaxDynamicShared(*fn, it.dynamic_shared);
    ASSERT_TRUE(st.ok()) << it.what << ": " << st.toString();
  }
  auto drv_occ = g.backend->occupancyBlocksPerSm(*fn, it.threads, size_t(it.dynamic_shared));
  ASSERT_TRUE(drv_occ.ok()) << it.what << ": " << drv_occ.status().toString();
  const KernelReport r = analyzeCodeObject(*co, it.threads, it.dynamic_shared);
  const auto& u = co->resources;
  EXPECT_EQ(u.registers, attr->num_regs) << it.what;
  EXPECT_EQ(u.shared_bytes, attr->static_shared_bytes) << it.what;
  EXPECT_EQ(u.stack_bytes, attr->local_bytes) << it.what;
  if (u.spills()) {
    EXPECT_GT(attr->local_bytes, 0) << it.what;
  }
  const int ana = r.has_occupancy ? r.nv.blocks_per_sm : 0;
  std::string note = "match";
  if (ana != *drv_occ) {
    if (r.has_occupancy && r.nv.limiter == "shared") {
      note = "carveout";
      EXPECT_GE(*drv_occ, 1) << it.what;
      EXPECT_LE(std::abs(ana - *drv_occ), 1)
          << it.what << ": analysis " << ana << ", driver " << *drv_occ << " blocks/SM";
    } else {
      note = "MISMATCH";
      ADD_FAILURE() << it.what << ": analysis " << ana << " blocks/SM (limited by "
                    << (r.has_occupancy ? r.nv.limiter : r.occupancy_note) << "), driver "
                    << *drv_occ;
    }
  }
  std::printf(
      "%-70s regs %3d/%3d  smem %6lld/%6lld  local %4lld/%4lld  dyn %6lld  thr %4d  "
      "blocks/SM %2d/%2d  %s\n",
      it.what.substr(0, 70).c_str(), u.registers, attr->num_regs, (long long)u.shared_bytes,
      (long long)attr->static_shared_bytes, (long long)u.stack_bytes, (long long)attr->local_bytes,
      (long long)it.dynamic_shared, it.threads, ana, *drv_occ, note.c_str());
  (void)g.backend->unloadModule(*mod);
}

TEST(AnalysisGpu, RowwiseReportsMatchDriver) {
  REQUIRE_GPU();
  using namespace rowwise;
  const Gpu& g = gpu();
  const RowwiseLimits lim = limitsFor(g.dev);
  std::printf("device %s (%s); columns: compiler/driver\n", g.dev.name.c_str(), g.dev.arch.c_str());
  int n = 0;
  const auto rms = rmsNormSpace(RowDType::kBF16, lim).enumerate(lim.backend).accepted;
  for (size_t i = 0; i < rms.size(); ++i) {
    RmsNormProblem p;
    p.rows = 4096;
    p.cols = 4096;
    p.has_weight = true;
    p.has_residual = i % 2 == 1;
    const auto l = rmsNormLaunch(rms[i], p, g.dev);
    Item it;
    it.what = "rmsnorm " + rms[i].toString() + (p.has_residual ? " res" : "");
    it.req.source = std::string(rmsNormSource());
    it.req.source_name = kRmsNormSource;
    it.req.entry = kRmsNormEntry;
    it.req.defines = rmsNormDefines(rms[i], p);
    it.req.arch = g.dev.arch;
    it.threads = int(l.block.x * l.block.y * l.block.z);
    it.dynamic_shared = int64_t(l.shared);
    checkItem(it);
    ++n;
  }
  const auto silu = siluMulSpace(RowDType::kBF16, lim).enumerate(lim.backend).accepted;
  for (const Config& c : silu) {
    SiluMulProblem p;
    p.rows = 4096;
    p.d = 14336;
    const auto l = siluMulLaunch(c, p, g.dev);
    Item it;
    it.what = "silu_mul " + c.toString();
    it.req.source = std::string(siluMulSource());
    it.req.source_name = kSiluMulSource;
    it.req.entry = kSiluMulEntry;
    it.req.defines = siluMulDefines(c, p);
    it.req.arch = g.dev.arch;
    it.threads = int(l.block.x * l.block.y * l.block.z);
    it.dynamic_shared = int64_t(l.shared);
    checkItem(it);
    ++n;
  }
  std::printf("row-wise: %d kernels checked (%zu rmsnorm, %zu silu_mul)\n", n, rms.size(),
              silu.size());
}

TEST(AnalysisGpu, CuratedGemmReportsMatchDriver) {
  REQUIRE_GPU();
  using namespace gemm;
  const Gpu& g = gpu();
  int n = 0;
  for (KernelKind k : kernelsForArch(g.dev.arch)) {
    for (int64_t m : {4096, 128, 16, 1}) {
      const GemmShape s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, m, 4096, 4096);
      for (const Config& c : curatedConfigs(k, s)) {
        auto plan = launchPlan(k, c, s, g.dev);
        if (!plan.ok()) continue;  // not launchable here: nothing for the driver to report
        Item it;
        it.what = std::string(kernelKindName(k)) + " M=" + std::to_string(m) + " " + c.toString();
        it.req.source = std::string(kernelSource(k));
        it.req.source_name = sourceFile(k);
        it.req.entry = entryName(k);
        it.req.defines = defines(k, c, s);
        it.req.arch = g.dev.arch;
        it.threads = int(plan->block.x * plan->block.y * plan->block.z);
        it.dynamic_shared = plan->shared_bytes;
        checkItem(it);
        ++n;
      }
    }
  }
  std::printf("GEMM: %d curated kernels checked on %s\n", n, g.dev.arch.c_str());
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace ktune
