// GPU correctness of the MFMA GEMM (gemm_mfma.cuh) on an AMD GPU: every layout, f16 and bf16 in,
// f16/bf16/f32 out, bias + SiLU/GELU + beta epilogues, edge tiles (sizes that are not multiples of
// any tile), each curated config; outputs poisoned with NaN first and compared with a float64
// host reference. No AMD GPU was available to this project: the test skips (visibly) without one
// and has not run yet. On a machine with ROCm: ctest -L gpu -R gemm_mfma_gpu_test.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "base/dtype.h"
#include "ops/gemm.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"
#include "templates/gemm.h"

namespace ktune {
namespace {

using namespace gemm;

struct Env {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Compiler> compiler;
  std::unique_ptr<GemmRunner> runner;
  std::string skip;
};

Env& env() {
  static Env* e = [] {
    auto* e = new Env();
    auto b = openHipBackend();
    if (!b.ok()) return e->skip = "no AMD GPU: " + b.status().toString(), e;
    e->backend = std::move(b).value();
    auto devs = e->backend->devices();
    if (!devs.ok() || devs->empty()) return e->skip = "no AMD GPU: no HIP device", e;
    if (!e->backend->setDevice(0).ok()) return e->skip = "no AMD GPU: setDevice failed", e;
    auto c = compilerForArch((*devs)[0].arch);
    if (!c.ok()) return e->skip = "no compiler for " + (*devs)[0].arch, e;
    e->compiler = std::move(c).value();
    e->runner = std::make_unique<GemmRunner>(*e->backend, *e->compiler, (*devs)[0]);
    return e;
  }();
  return *e;
}

// Uploads random values of `t` (count elements) and returns them as floats.
std::vector<float> upload(DevicePtr* p, ElemType t, int64_t count, std::mt19937& rng) {
  std::vector<unsigned char> bytes(static_cast<size_t>(count * elemBytes(t)));
  std::vector<float> vals(static_cast<size_t>(count));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < count; ++i) {
    storeFromDouble(bytes.data(), dtypeOf(t), i, u(rng));
    vals[i] = static_cast<float>(loadAsDouble(bytes.data(), dtypeOf(t), i));
  }
  auto a = env().backend->alloc(std::max<size_t>(bytes.size(), 16));
  EXPECT_TRUE(a.ok());
  *p = a.ok() ? *a : 0;
  EXPECT_TRUE(env().backend->copyToDevice(*p, bytes.data(), bytes.size()).ok());
  return vals;
}

// Runs one config on one problem and compares with the float64 reference; C is NaN-poisoned when
// beta == 0 so unwritten elements fail.
void check(const Config& cfg, GemmShape s, uint32_t seed) {
  std::mt19937 rng(seed);
  DevicePtr a = 0, b = 0, c = 0, bias = 0;
  const auto av = upload(&a, s.ab, storedRowsA(s) * s.lda, rng);
  const auto bv = upload(&b, s.ab, storedRowsB(s) * s.ldb, rng);
  auto cv = upload(&c, s.c, s.m * s.ldc, rng);
  const auto biasv = upload(&bias, s.c, s.n, rng);
  if (s.beta == 0.0f) {
    std::vector<unsigned char> nan(static_cast<size_t>(s.m * s.ldc * elemBytes(s.c)));
    for (int64_t i = 0; i < s.m * s.ldc; ++i) storeFromDouble(nan.data(), dtypeOf(s.c), i, NAN);
    EXPECT_TRUE(env().backend->copyToDevice(c, nan.data(), nan.size()).ok());
  }
  const std::string what = cfg.toString() + " | " + shapeKey(s);
  Status st = env().runner->launch(KernelKind::kMfma, cfg, s, {a, b, c, s.has_bias ? bias : 0});
  ASSERT_TRUE(st.ok()) << what << ": " << st.toString();
  ASSERT_TRUE(env().backend->synchronize().ok());
  std::vector<unsigned char> out(static_cast<size_t>(s.m * s.ldc * elemBytes(s.c)));
  ASSERT_TRUE(env().backend->copyToHost(out.data(), c, out.size()).ok());
  const auto ref = reference(s, av.data(), bv.data(), cv.data(), biasv.data());
  const double eps = s.c == ElemType::kF32 ? 1e-5 : s.c == ElemType::kBF16 ? 1.0 / 128 : 1.0 / 1024;
  int64_t bad = 0;
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      const double got = loadAsDouble(out.data(), dtypeOf(s.c), i * s.ldc + j);
      const double want = ref[i * s.n + j];
      const double tol = eps * std::fabs(want) + (2e-2 + 1e-3 * std::sqrt(double(s.k)));
      if (!(std::fabs(got - want) <= tol) && bad++ < 3)
        ADD_FAILURE() << what << ": C[" << i << "][" << j << "] = " << got << ", want " << want;
    }
  EXPECT_EQ(bad, 0) << what;
  for (DevicePtr p : {a, b, c, bias}) (void)env().backend->free(p);
}

TEST(GemmMfmaGpu, CuratedConfigsEveryLayoutAndEpilogue) {
  if (!env().skip.empty()) GTEST_SKIP() << env().skip;
  uint32_t seed = 1;
  for (Layout l : {Layout::kNT, Layout::kNN, Layout::kTN, Layout::kTT}) {
    // Sizes that leave partial tiles in M, N and K.
    GemmShape s = denseShape(l, ElemType::kBF16, ElemType::kBF16, 300, 264, 200);
    for (const Config& cfg : curatedConfigs(KernelKind::kMfma, s)) {
      GemmShape t = s;
      t.ab = seed % 2 ? ElemType::kF16 : ElemType::kBF16;
      t.c = static_cast<ElemType>(seed % 3);
      t.has_bias = seed % 2 == 0;
      t.act = static_cast<Activation>(seed % 3);
      t.beta = seed % 4 == 1 ? 0.5f : 0.0f;
      t.alpha = 0.75f;
      check(cfg, t, seed++);
    }
  }
}

TEST(GemmMfmaGpu, DefaultConfigLargeSquare) {
  if (!env().skip.empty()) GTEST_SKIP() << env().skip;
  const GemmShape s = denseShape(Layout::kNN, ElemType::kBF16, ElemType::kF32, 512, 512, 1024);
  check(curatedConfigs(KernelKind::kMfma, s).front(), s, 99);
}

}  // namespace
}  // namespace ktune
