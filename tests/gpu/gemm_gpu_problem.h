// What the GEMM GPU test files share (gemm_gpu_test.cc and its part gemm_gpu_decode_part.cc, one
// program): host matrices with exactly representable values, the comparison against a float64
// reference, one problem's host and device buffers, and the config/shape shorthands.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "ops/gemm.h"
#include "templates/gemm.h"
#include "tests/gpu/gemm_gpu_env.h"

namespace ktune::gemm_gpu {

using gemm::Activation;
using gemm::ElemType;
using gemm::GemmShape;
using gemm::KernelKind;
using gemm::Layout;

inline DType toDType(ElemType t) {
  return t == ElemType::kF16 ? DType::kF16 : t == ElemType::kBF16 ? DType::kBF16 : DType::kF32;
}

// Host matrix: storage bytes (of type t) plus the exactly representable float values.
struct HostMat {
  ElemType t;
  std::vector<unsigned char> bytes;
  std::vector<float> vals;
};

inline HostMat randomMat(ElemType t, int64_t count, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  HostMat m{t, std::vector<unsigned char>(static_cast<size_t>(count) * gemm::elemBytes(t)),
            std::vector<float>(static_cast<size_t>(count))};
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < count; ++i) {
    storeFromDouble(m.bytes.data(), toDType(t), i, u(rng));
    m.vals[i] = static_cast<float>(loadAsDouble(m.bytes.data(), toDType(t), i));
  }
  return m;
}

struct CompareResult {
  bool ok = true;
  int64_t bad = 0, nans = 0;
  double max_abs = 0, rel_norm = 0;
  std::string first;
};

inline double epsOf(ElemType t) {
  return t == ElemType::kBF16 ? 1.0 / 256 : t == ElemType::kF16 ? 1.0 / 2048 : 1e-6;
}

// Elementwise |out - ref| <= 2*eps*|ref| + atol, atol = (2*eps + 4e-6*sqrt(K)) * rms(ref) + 1e-6;
// and ||out - ref|| / ||ref|| <= 2*eps + 1e-5.
inline CompareResult compare(const std::vector<double>& out, const std::vector<double>& ref, ElemType t,
                      int64_t k) {
  CompareResult r;
  double ss_ref = 0, ss_err = 0;
  for (double v : ref) ss_ref += v * v;
  const double rms = std::sqrt(ss_ref / std::max<size_t>(1, ref.size()));
  const double eps = epsOf(t);
  const double atol = (2 * eps + 4e-6 * std::sqrt(static_cast<double>(k))) * rms + 1e-6;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = std::fabs(out[i] - ref[i]);
    if (!std::isfinite(out[i])) {
      ++r.nans;
    } else {
      ss_err += d * d;
      r.max_abs = std::max(r.max_abs, d);
    }
    if (!(d <= 2 * eps * std::fabs(ref[i]) + atol)) {
      if (r.bad == 0)
        r.first = "index " + std::to_string(i) + ": out " + std::to_string(out[i]) + " ref " +
                  std::to_string(ref[i]);
      ++r.bad;
    }
  }
  r.rel_norm = std::sqrt(ss_err / std::max(ss_ref, 1e-30));
  r.ok = r.bad == 0 && r.nans == 0 && r.rel_norm <= 2 * eps + 1e-5;
  return r;
}

inline std::string describe(KernelKind k, const Config& c, const GemmShape& s) {
  return std::string(gemm::kernelKindName(k)) + " " + c.toString() + " | " + gemm::shapeKey(s);
}

// Inputs and buffers of one problem, on host and device.
struct Problem {
  GemmShape s;
  HostMat a, b, c, bias;
  DevBuf da, db, dc, dbias;
  Problem(const GemmShape& shape, uint32_t seed)
      : s(shape),
        da(static_cast<size_t>(gemm::storedRowsA(shape) * shape.lda * gemm::elemBytes(shape.ab))),
        db(static_cast<size_t>(gemm::storedRowsB(shape) * shape.ldb * gemm::elemBytes(shape.ab))),
        dc(static_cast<size_t>(shape.m * shape.ldc * gemm::elemBytes(shape.c))),
        dbias(static_cast<size_t>(shape.n * gemm::elemBytes(shape.c))) {
    std::mt19937 rng(seed);
    a = randomMat(s.ab, gemm::storedRowsA(s) * s.lda, rng);
    b = randomMat(s.ab, gemm::storedRowsB(s) * s.ldb, rng);
    c = randomMat(s.c, s.m * s.ldc, rng);
    bias = randomMat(s.c, s.n, rng);
    Backend& be = *env().backend;
    EXPECT_TRUE(be.copyToDevice(da.p, a.bytes.data(), a.bytes.size()).ok());
    EXPECT_TRUE(be.copyToDevice(db.p, b.bytes.data(), b.bytes.size()).ok());
    EXPECT_TRUE(be.copyToDevice(dbias.p, bias.bytes.data(), bias.bytes.size()).ok());
  }
  GemmBuffers buffers() const { return {da.p, db.p, dc.p, s.has_bias ? dbias.p : 0}; }
  // C <- input values (beta != 0) or NaN (beta == 0, so unwritten elements fail).
  void resetC() {
    Backend& be = *env().backend;
    if (s.beta != 0.0f) {
      EXPECT_TRUE(be.copyToDevice(dc.p, c.bytes.data(), c.bytes.size()).ok());
    } else {
      std::vector<unsigned char> nan(c.bytes.size());
      for (int64_t i = 0; i < s.m * s.ldc; ++i) storeFromDouble(nan.data(), toDType(s.c), i, NAN);
      EXPECT_TRUE(be.copyToDevice(dc.p, nan.data(), nan.size()).ok());
    }
  }
  std::vector<double> download() {
    std::vector<unsigned char> h(c.bytes.size());
    EXPECT_TRUE(env().backend->synchronize().ok());
    EXPECT_TRUE(env().backend->copyToHost(h.data(), dc.p, h.size()).ok());
    const int64_t cols = gemm::outCols(s);  // N/2 for the gate/up pair
    std::vector<double> out(static_cast<size_t>(s.m * cols));
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < cols; ++j)
        out[i * cols + j] = loadAsDouble(h.data(), toDType(s.c), i * s.ldc + j);
    return out;
  }
  std::vector<double> hostReference() const {
    return gemm::reference(s, a.vals.data(), b.vals.data(), c.vals.data(), bias.vals.data());
  }
  // cuBLASLt's result (needs act == none); empty when cuBLASLt is unavailable.
  std::vector<double> cublasReference() {
    if (!env().lt) return {};
    auto lp = toLtProblem(s);
    EXPECT_TRUE(lp.ok()) << lp.status().toString();
    if (!lp.ok()) return {};
    DevBuf ws(64 << 20);
    resetC();
    Status st = env().lt->run(*lp, nullptr, da.p, db.p, dc.p, s.has_bias ? dbias.p : 0, ws.p,
                              static_cast<int64_t>(ws.bytes));
    EXPECT_TRUE(st.ok()) << st.toString();
    return download();
  }
};

// Runs (kind, config) `repeats` times on `p` and compares each result with `ref`.
inline void expectMatches(KernelKind kind, const Config& cfg, Problem& p, const std::vector<double>& ref,
                   int repeats = 1) {
  for (int r = 0; r < repeats; ++r) {
    p.resetC();
    Status st = env().runner->launch(kind, cfg, p.s, p.buffers());
    ASSERT_TRUE(st.ok()) << describe(kind, cfg, p.s) << ": " << st.toString();
    ASSERT_TRUE(env().backend->synchronize().ok());
    ASSERT_TRUE(env().backend->checkError().ok());
    auto out = p.download();
    auto cr = compare(out, ref, p.s.c, p.s.k);
    EXPECT_TRUE(cr.ok) << describe(kind, cfg, p.s) << " run " << r << ": " << cr.bad
                       << " bad, " << cr.nans << " NaN, max abs " << cr.max_abs << ", rel norm "
                       << cr.rel_norm << "; first " << cr.first;
  }
}

inline Config mmaConfig(int64_t bm, int64_t bn, int64_t bk, int64_t wm, int64_t wn, int64_t st,
                 int64_t split = 1) {
  return Config{{"BLOCK_M", bm}, {"BLOCK_N", bn},     {"BLOCK_K", bk},
                {"WARPS_M", wm}, {"WARPS_N", wn},     {"NUM_STAGES", st},
                {"GROUP_M", int64_t{8}}, {"SPLIT_K", split}, {"MIN_BLOCKS", int64_t{0}}};
}

inline GemmShape shapeOf(Layout l, ElemType ab, ElemType c, int64_t m, int64_t n, int64_t k) {
  return gemm::denseShape(l, ab, c, m, n, k);
}

inline constexpr Layout kLayouts[] = {Layout::kNN, Layout::kNT, Layout::kTN, Layout::kTT};

}  // namespace ktune::gemm_gpu
