// GPU correctness of the FP8 GEMM (e4m3 / e5m2 inputs, per-tensor scales, bf16 out) on sm_90a:
// the JIT kernel (tma kind, fp8 wgmma) and cuBLASLt's FP8 algorithm against a float64 reference of
// the dequantised inputs. Skips (visibly) without an sm_90a device, NVRTC or cuBLASLt.
//
// Tolerance, from the formats: the fp8 inputs are exact floats and their products exact in fp32
// (4-bit significands), so the errors are (1) rounding C to bf16, at most half an ulp = 2^-9 of
// |C| (we allow 2^-8 |ref|), and (2) the accumulation: Hopper's fp8 wgmma adds into its fp32
// accumulator keeping about 14 significant bits (DeepSeek-V3 report, section 3.3.2), so each of
// the K/32 additions errs by at most 2^-14 of a partial sum, itself at most S = sum_k |a_ik b_kj|.
// Those errors are not independent: the accumulator truncates, so while a partial sum keeps its
// sign they all pull the same way and add linearly (a random-walk sqrt(K/32) bound was exceeded,
// 1.01x, by one element of a 1280x5120x256 case once its seed changed). The bound is therefore
//   |out - ref| <= 2^-8 |ref| + (K / 32) * 2^-14 * |alpha sa sb| * S              (elementwise).
// cuBLASLt's FP8 with fast accumulation has the same bound. For the random inputs here the partial
// sums are far below S, so the observed ratio (printed) is small; a 2x scale error, a missing
// 128-wide k-tile or a wrong tile edge still puts elements far past it (the check fails on any one).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "autotune/autotuner.h"
#include "base/dtype.h"
#include "compiler/compiler.h"
#include "ops/gemm.h"
#include "ops/vendor/cublaslt.h"
#include "runtime/backend.h"
#include "templates/gemm.h"
#include "tests/gpu/gemm_gpu_env.h"

namespace ktune {
namespace gemm_gpu {
Env& env() {
  static Env* e = openEnv([](const DeviceInfo& d) {
    return d.arch != "sm_90a" ? "fp8 GEMM needs sm_90a, device is " + d.arch : std::string();
  });
  return *e;
}
}  // namespace gemm_gpu
namespace {

using gemm::ElemType;
using gemm::GemmShape;
using gemm::KernelKind;
using gemm::Layout;

using gemm_gpu::env;

using gemm_gpu::DevBuf;
using gemm_gpu::precompile;

// Random values of type t (uniform in [-1, 1] before rounding): their bytes and exact values.
void randomValues(DType t, int64_t n, std::mt19937& rng, std::vector<unsigned char>& bytes,
                  std::vector<float>& vals) {
  bytes.assign(static_cast<size_t>(n) * sizeOf(t), 0);
  vals.resize(static_cast<size_t>(n));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < n; ++i) {
    storeFromDouble(bytes.data(), t, i, u(rng));
    vals[size_t(i)] = static_cast<float>(loadAsDouble(bytes.data(), t, i));
  }
}

// One fp8 NT problem (bf16 C and bias) with its scales, on host and device.
struct Fp8Problem {
  GemmShape s;
  float sa, sb;
  std::vector<unsigned char> ab, bb, cb, biasb;
  std::vector<float> av, bv, cv, biasv;
  DevBuf da, db, dc, dbias, dsa, dsb;  // the scales in allocations of their own (16-byte aligned)
  Fp8Problem(const GemmShape& shape, float scale_a, float scale_b, uint32_t seed)
      : s(shape), sa(scale_a), sb(scale_b),
        da(size_t(shape.m * shape.lda)), db(size_t(shape.n * shape.ldb)),
        dc(size_t(shape.m * shape.ldc * 2)), dbias(size_t(shape.n * 2)), dsa(4), dsb(4) {
    std::mt19937 rng(seed);
    randomValues(s.ab, s.m * s.lda, rng, ab, av);
    randomValues(s.ab, s.n * s.ldb, rng, bb, bv);
    randomValues(DType::kBF16, s.m * s.ldc, rng, cb, cv);
    randomValues(DType::kBF16, s.n, rng, biasb, biasv);
    Backend& be = *env().backend;

    EXPECT_TRUE(be.copyToDevice(da.p, ab.data(), ab.size()).ok());
    EXPECT_TRUE(be.copyToDevice(db.p, bb.data(), bb.size()).ok());
    EXPECT_TRUE(be.copyToDevice(dbias.p, biasb.data(), biasb.size()).ok());
    EXPECT_TRUE(be.copyToDevice(dsa.p, &sa, sizeof(float)).ok());
    EXPECT_TRUE(be.copyToDevice(dsb.p, &sb, sizeof(float)).ok());
  }
  GemmBuffers buffers() const {
    return {da.p, db.p, dc.p, s.has_bias ? dbias.p : 0, dsa.p, dsb.p};
  }
  void resetC() {  // the input C (beta != 0) or NaN everywhere (unwritten elements fail)
    std::vector<unsigned char> c = cb;
    if (s.beta == 0.0f)
      for (size_t i = 0; i < c.size() / 2; ++i) storeFromDouble(c.data(), DType::kBF16, int64_t(i), NAN);
    EXPECT_TRUE(env().backend->copyToDevice(dc.p, c.data(), c.size()).ok());
  }
  // Compares rows `rows` of the device C with the float64 reference (see the header's tolerance);
  // returns the failures' description ("" = all within) and the largest error / tolerance ratio.
  std::string check(const std::vector<int64_t>& rows, double* worst) {
    std::vector<unsigned char> h(cb.size());
    EXPECT_TRUE(env().backend->synchronize().ok());
    EXPECT_TRUE(env().backend->copyToHost(h.data(), dc.p, h.size()).ok());
    const double alpha = double(s.alpha) * sa * sb;
    const double additions = std::max(1.0, std::ceil(double(s.k) / 32.0));
    int64_t bad = 0;
    std::string first;
    *worst = 0;
    for (int64_t i : rows)
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = 0, abs_sum = 0;
        for (int64_t k = 0; k < s.k; ++k) {
          const double p = double(av[size_t(i * s.lda + k)]) * bv[size_t(j * s.ldb + k)];
          acc += p;
          abs_sum += std::fabs(p);
        }
        double ref = alpha * acc + (s.has_bias ? biasv[size_t(j)] : 0.0);
        if (s.beta != 0.0f) ref += double(s.beta) * cv[size_t(i * s.ldc + j)];
        const double out = loadAsDouble(h.data(), DType::kBF16, i * s.ldc + j);
        const double tol = std::ldexp(std::fabs(ref), -8) +
                           std::ldexp(std::fabs(alpha) * abs_sum, -14) * additions + 1e-6;
        const double err = std::fabs(out - ref);
        *worst = std::max(*worst, std::isfinite(err) ? err / tol : 1e30);
        if (!(err <= tol) && bad++ == 0)
          first = "C[" + std::to_string(i) + "][" + std::to_string(j) + "] = " +
                  std::to_string(out) + ", reference " + std::to_string(ref);
      }
    return bad ? std::to_string(bad) + " elements off, first " + first : "";
  }
};

std::vector<int64_t> allRows(int64_t m) {
  std::vector<int64_t> r(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) r[size_t(i)] = i;
  return r;
}

// Rows on both sides of every multiple of 128 (tile edges) up to a budget, plus the last ones.
std::vector<int64_t> edgeRows(int64_t m, int64_t budget) {
  std::vector<int64_t> r;
  for (int64_t t = 0; t < m && int64_t(r.size()) < budget; t += 128 * 7) {
    r.push_back(t);
    if (t > 0) r.push_back(t - 1);
  }
  r.push_back(m - 1);
  return r;
}

Config tmaConfig(int64_t bn, int64_t cons, int64_t stages, int64_t cluster, int64_t epi, int64_t split,
                 int64_t pingpong = 0, int64_t wg_m = 1) {
  return Config{{"BLOCK_N", bn},        {"CONSUMERS", cons},     {"WG_M", wg_m},
                {"NUM_STAGES", stages}, {"GROUP_M", int64_t{8}}, {"CLUSTER_M", cluster},
                {"EPI_TMA", epi},       {"SPLIT_K", split},      {"PINGPONG", pingpong}};
}

// The JIT fp8 kernel over the code paths (both consumer counts, BLOCK_N 128/176/192/224/256, the
// split tail, clusters, direct, TMA-store and deferred epilogues), e4m3 and e5m2, odd M/N, bias,
// beta and scales.
TEST(GemmFp8Gpu, JitKernelMatchesTheFloat64Reference) {
  REQUIRE_GPU();
  struct Case {
    int64_t m, n, k;
    ElemType t;
    bool bias;
    float beta;
    Config c;
  };
  const std::vector<Case> cases = {
      {200, 264, 512, ElemType::kF8E4M3, false, 0.0f, tmaConfig(256, 2, 4, 1, 1, 1)},
      {1000, 520, 272, ElemType::kF8E5M2, true, 0.5f, tmaConfig(192, 2, 4, 1, 1, 1)},
      {333, 700, 1024, ElemType::kF8E4M3, true, 0.0f, tmaConfig(128, 1, 8, 1, 0, 1)},
      {600, 1000, 2048, ElemType::kF8E4M3, false, 0.0f, tmaConfig(256, 2, 4, 2, 0, 1)},
      {256, 2048, 4096, ElemType::kF8E4M3, false, 0.0f, tmaConfig(128, 1, 8, 1, 1, 2)},
      {128, 4096, 1024, ElemType::kF8E4M3, false, 0.0f, tmaConfig(128, 2, 6, 1, 1, 4)},
      // The deferred epilogue (C stored during the next tile's k-loop) over a stream-K tail.
      {1280, 5120, 256, ElemType::kF8E4M3, true, 0.5f, tmaConfig(256, 2, 4, 1, 2, 2)},
      // A cluster pair (partner's B half multicast, CTA-scope waits) with the deferred epilogue;
      // M = 600 leaves the last pair's second block wholly below M.
      {600, 1000, 1024, ElemType::kF8E4M3, true, 0.5f, tmaConfig(256, 2, 4, 2, 2, 1)},
      // Ping-pong (each consumer on its own tile, alternating): 64x256 tiles, 400 of them, so
      // every block runs 3-4 tiles over both consumers; 128x128 tiles with the direct epilogue,
      // ragged M and N; a single tile (consumer 1 has none: its one order-barrier arrival is
      // consumer 0's go).
      {1280, 5120, 256, ElemType::kF8E4M3, true, 0.5f, tmaConfig(256, 2, 4, 1, 1, 1, 1)},
      {1500, 2000, 384, ElemType::kF8E5M2, false, 0.0f, tmaConfig(128, 2, 6, 1, 0, 1, 1, 2)},
      {64, 256, 512, ElemType::kF8E4M3, true, 0.0f, tmaConfig(256, 2, 4, 1, 1, 1, 1)},
      // 128x192 ping-pong tiles (192 accumulators per thread, one-box C buffers), ragged M and N.
      {1000, 3000, 512, ElemType::kF8E4M3, true, 0.5f, tmaConfig(192, 2, 5, 1, 1, 1, 1, 2)},
      // 224- and 176-wide tiles (not whole 64-column boxes: the last 32 / 48 columns stored
      // directly), the deferred and the TMA-store epilogues, ragged N, bias, beta, a split tail.
      {1000, 3000, 512, ElemType::kF8E4M3, true, 0.5f, tmaConfig(224, 2, 4, 1, 2, 2)},
      {1500, 2000, 384, ElemType::kF8E5M2, false, 0.0f, tmaConfig(176, 2, 4, 1, 1, 1)},
      {1000, 3000, 512, ElemType::kF8E4M3, true, 0.5f, tmaConfig(176, 2, 5, 1, 1, 1, 1, 2)},
  };
  auto shapeOf = [](const Case& cs) {
    GemmShape s = gemm::denseShape(Layout::kNT, cs.t, ElemType::kBF16, cs.m, cs.n, cs.k);
    s.has_bias = cs.bias;
    s.beta = cs.beta;
    s.alpha = 1.5f;
    return s;
  };
  // All compiles first, on every core: one by one they took longer than a device call's budget.
  std::vector<std::tuple<KernelKind, Config, GemmShape>> jobs;
  for (const Case& cs : cases) jobs.emplace_back(KernelKind::kTma, cs.c, shapeOf(cs));
  precompile(jobs);
  uint32_t seed = 7;
  for (const Case& cs : cases) {
    const GemmShape s = shapeOf(cs);
    Fp8Problem p(s, 0.5f, 3.0f, seed++);
    p.resetC();
    const std::string what = cs.c.toString() + " | " + gemm::shapeKey(s);
    Status st = env().runner->launch(KernelKind::kTma, cs.c, s, p.buffers());
    if (!st.ok()) {
      ADD_FAILURE() << what << ": " << st.toString();
      continue;
    }
    double worst = 0;
    const std::string bad = p.check(allRows(s.m), &worst);
    EXPECT_TRUE(bad.empty()) << what << ": " << bad;
    std::printf("fp8 jit %s: worst error / tolerance %.3g\n", what.c_str(), worst);
  }
}

// 4096^3 e4m3 -> bf16 (the bench shape): the curated JIT config and cuBLASLt's heuristic FP8
// algorithm (A/B scale pointers, fast accumulation) both within the tolerance on sampled rows.
TEST(GemmFp8Gpu, LargeJitAndCublasLtFp8MatchTheReference) {
  REQUIRE_GPU();
  GemmShape s = gemm::denseShape(Layout::kNT, ElemType::kF8E4M3, ElemType::kBF16, 4096, 4096, 4096);
  Fp8Problem p(s, 0.25f, 2.0f, 99);
  const auto rows = edgeRows(s.m, 12);
  double worst = 0;
  std::string bad;
  // The tuning-off default, the first curated ping-pong config (8 tiles per block) and the default
  // on 128 x 168 tiles (a width that is not a multiple of 64: B's and C's last boxes overlapping).
  const auto cur = gemm::curatedConfigs(KernelKind::kTma, s);
  std::vector<Config> jit = {cur.front()};
  for (const Config& c : cur)
    if (c.getInt("PINGPONG") == 1) {
      jit.push_back(c);
      break;
    }
  Config w168 = cur.front();
  w168.set("BLOCK_N", int64_t{168});
  w168.set("SPLIT_K", int64_t{1});
  jit.push_back(w168);
  ASSERT_EQ(jit.size(), 3u);
  for (const Config& c : jit) {
    p.resetC();
    ASSERT_TRUE(env().runner->launch(KernelKind::kTma, c, s, p.buffers()).ok());
    bad = p.check(rows, &worst);
    EXPECT_TRUE(bad.empty()) << "jit " << c.toString() << ": " << bad;
    std::printf("fp8 jit 4096^3 %s: worst error / tolerance %.3g\n", c.toString().c_str(), worst);
  }
  if (!env().lt) GTEST_SKIP() << "cuBLASLt unavailable: the JIT part passed";
  auto lp = toLtProblem(s);
  ASSERT_TRUE(lp.ok()) << lp.status().toString();
  const GemmBuffers b = p.buffers();
  lp->scale_a = b.scale_a;
  lp->scale_b = b.scale_b;
  DevBuf ws(size_t(cublaslt::kWorkspaceBytes));
  p.resetC();
  Status st = env().lt->run(*lp, nullptr, b.a, b.b, b.c, 0, ws.p, cublaslt::kWorkspaceBytes);
  if (!st.ok()) {
    // Which part cuBLASLt refuses: the same problem with the scales folded into alpha.
    cublaslt::LtProblem folded = *lp;
    folded.scale_a = folded.scale_b = 0;
    folded.alpha = p.sa * p.sb;
    const Status st2 = env().lt->run(folded, nullptr, b.a, b.b, b.c, 0, ws.p, cublaslt::kWorkspaceBytes);
    FAIL() << "cuBLASLt FP8 with scale pointers: " << st.toString()
           << "; with the scales in alpha instead: " << st2.toString();
  }
  bad = p.check(rows, &worst);
  EXPECT_TRUE(bad.empty()) << "cuBLASLt fp8: " << bad;
  std::printf("fp8 cublaslt 4096^3: worst error / tolerance %.3g\n", worst);
}

// The tuned GEMM op on fp8: JIT tma configs and cuBLASLt's FP8 algorithms are candidates of the same
// run, every one verified against cuBLASLt #0 FP8; nothing computes a wrong result, and the
// non-tma kinds are refused before compiling.
TEST(GemmFp8Gpu, TunedOpRacesJitAgainstCublasLtFp8) {
  REQUIRE_GPU();
  if (!env().lt) GTEST_SKIP() << "cuBLASLt unavailable";
  EngineOptions o = gemm_gpu::opTestOptions("ktune-gemm-fp8-op", 4);
  const std::shared_ptr<Backend>& be = env().backend;
  auto t = Engine::create(be, o);
  ASSERT_TRUE(t.ok()) << t.status().toString();
  std::shared_ptr<Engine> tuner = std::move(t).value();
  auto op = GemmOp::create(tuner);
  ASSERT_TRUE(op.ok()) << op.status().toString();
  const GemmShape s =
      gemm::denseShape(Layout::kNT, ElemType::kF8E4M3, ElemType::kBF16, 2048, 2048, 2048);
  auto call = makeGemmProblem(*be, tuner->device(), s, 3);
  ASSERT_TRUE(call.ok()) << call.status().toString();
  auto rep = (*op)->tune(**call);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  std::cout << rep->tree() << "\n";
  int jit_ok = 0, lt_ok = 0;
  for (const auto& c : rep->candidates) {
    EXPECT_NE(c.status, Code::kWrongResult) << c.config << ": " << c.reason;
    if (!c.measured()) continue;
    if (c.source == "cublaslt") ++lt_ok;
    else if (c.config.find("KIND=tma") != std::string::npos) ++jit_ok;
  }
  EXPECT_GT(jit_ok, 0) << "no fp8 JIT candidate passed";
  EXPECT_GT(lt_ok, 0) << "no cuBLASLt FP8 candidate passed";
  EXPECT_FALSE(rep->winner.empty());
}

}  // namespace
}  // namespace ktune
