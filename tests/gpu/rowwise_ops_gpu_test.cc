// Tuned row-wise ops through the engine (ops/rowwise.h) on a real GPU: the Engine tunes
// (compile, benchmark, verify) on the caller's buffers, in-place calls are applied exactly once,
// results match the float64 reference, a second call hits the in-memory table. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>
#include <unistd.h>

#include "autotune/autotuner.h"
#include "ops/rowwise.h"
#include "runtime/backend.h"
#include "templates/rowwise.h"

namespace ktune::rowwise {
namespace {

std::string noGpuReason() {
  auto b = openBackend("auto");
  if (!b.ok()) return b.status().toString();
  auto d = (*b)->devices();
  if (!d.ok() || d->empty()) return "no device";
  return "";
}

std::vector<double> randomValues(size_t n, double lo, double hi, uint64_t seed, RowDType t) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = roundTo(t, u(rng));
  return v;
}

// "" or the first element outside 2 eps(dtype) relative (+ tol_scale absolute) of the reference.
std::string compare(RowDType t, const std::vector<unsigned char>& got, const std::vector<double>& ref,
                    double tol_scale) {
  const auto g = unpack(t, got.data(), ref.size());
  const double eps = t == RowDType::kF32 ? std::ldexp(1.0, -23)
                     : t == RowDType::kF16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
  const double rtol = 2 * eps + 1e-5;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(g[i] - ref[i]);
    if (!(err <= rtol * (std::fabs(ref[i]) + tol_scale))) {
      std::ostringstream os;
      os << "element " << i << ": got " << g[i] << ", want " << ref[i];
      return os.str();
    }
  }
  return "";
}

class RowwiseOpsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = noGpuReason(); !why.empty()) GTEST_SKIP() << "no GPU: " << why;
    auto b = openBackend("auto");
    ASSERT_TRUE(b.ok()) << b.status().toString();
    backend_ = std::shared_ptr<Backend>(std::move(*b));
    ASSERT_TRUE(backend_->setDevice(0).ok());
    dir_ = std::filesystem::temp_directory_path() / ("ktune_rowwise_gpu_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    EngineOptions to;
    to.options.cache_dir = dir_.string();
    auto t = Engine::create(backend_, to);
    ASSERT_TRUE(t.ok()) << t.status().toString();
    tuner_ = std::move(*t);
  }
  void TearDown() override {
    tuner_.reset();
    std::filesystem::remove_all(dir_);
  }
  DevicePtr upload(RowDType t, const std::vector<double>& v) {
    auto p = backend_->alloc(v.size() * sizeOf(t));
    EXPECT_TRUE(p.ok());
    EXPECT_TRUE(backend_->copyToDevice(*p, pack(t, v).data(), v.size() * sizeOf(t)).ok());
    ptrs_.push_back(*p);
    return *p;
  }
  std::vector<unsigned char> download(DevicePtr p, size_t bytes) {
    std::vector<unsigned char> out(bytes);
    EXPECT_TRUE(backend_->copyToHost(out.data(), p, bytes).ok());
    return out;
  }
  ~RowwiseOpsGpu() override {
    for (auto p : ptrs_) (void)backend_->free(p);
  }
  std::shared_ptr<Backend> backend_;
  std::unique_ptr<Engine> tuner_;
  std::filesystem::path dir_;
  std::vector<DevicePtr> ptrs_;
};

TEST_F(RowwiseOpsGpu, RmsNormInPlaceResidualTunedOnceAndCorrect) {
  const RowDType t = RowDType::kBF16;
  for (auto [R, C] : {std::pair<int64_t, int64_t>{33, 4097}, {4096, 4096}}) {
    const size_t n = size_t(R * C);
    auto x = randomValues(n, -2, 2, 11, t), r = randomValues(n, -2, 2, 12, t),
         w = randomValues(size_t(C), 0.5, 1.5, 13, t);
    RmsNormArgs a;
    a.dtype = DType::kBF16;
    a.rows = R;
    a.cols = C;
    a.x = upload(t, x);
    a.y = a.x;  // fully in place: y over x, residual_out over residual
    a.weight = upload(t, w);
    a.residual = upload(t, r);
    a.residual_out = a.residual;
    auto rep = tuneRmsnorm(*tuner_, a);
    ASSERT_TRUE(rep.ok()) << rep.status().toString();
    std::printf("[ tuned op ] rmsnorm+res bf16 %lldx%lld: winner %s median %.1f us; %zu candidates, "
                "compile %.0f ms, bench %.0f ms, total %.0f ms\n",
                (long long)R, (long long)C, rep->winner.c_str(), rep->winner_stats.median_ms * 1e3,
                rep->candidates.size(), rep->compile_wall_ms, rep->bench_wall_ms, rep->total_wall_ms);
    ASSERT_FALSE(rep->winner.empty());
    // tune() leaves the inputs restored and then launches once: outputs = one application.
    ASSERT_TRUE(backend_->synchronize().ok());
    RmsNormProblem p = toProblem(a);
    std::vector<double> y(n), ro(n);
    rmsNormReference(p, x.data(), w.data(), r.data(), y.data(), ro.data());
    EXPECT_EQ(compare(t, download(a.residual_out, n * 2), ro, 0.0), "") << "r_out " << R << "x" << C;
    EXPECT_EQ(compare(t, download(a.y, n * 2), y, 1.0), "") << "y " << R << "x" << C;
  }
}

TEST_F(RowwiseOpsGpu, SiluMulTunedOpMatchesReference) {
  const RowDType t = RowDType::kBF16;
  const int64_t R = 256, D = 14336;
  auto x = randomValues(size_t(R * 2 * D), -4, 4, 21, t);
  SiluMulArgs a;
  a.rows = R;
  a.d = D;
  a.x = upload(t, x);
  a.out = upload(t, std::vector<double>(size_t(R * D), 0));
  ASSERT_TRUE(siluMul(*tuner_, a).ok());
  ASSERT_TRUE(backend_->synchronize().ok());
  std::vector<double> ref(size_t(R * D));
  siluMulReference(toProblem(a), x.data(), ref.data());
  EXPECT_EQ(compare(t, download(a.out, ref.size() * 2), ref, 1.0), "");
  auto sel = lookupSiluMul(*tuner_, a);
  ASSERT_TRUE(sel.ok());
  std::printf("[ tuned op ] silu_mul bf16 %lldx%lld key %s -> %s (%s)\n", (long long)R,
              (long long)D, sel->key.c_str(), sel->winner.c_str(), sel->origin.c_str());
  // Second call: memory hit, same result.
  ASSERT_TRUE(siluMul(*tuner_, a).ok());
  ASSERT_TRUE(backend_->synchronize().ok());
  EXPECT_EQ(compare(t, download(a.out, ref.size() * 2), ref, 1.0), "");
}

// The target shapes through the engine: what the tuner picks and its median (the engine's
// do_bench: events, L2 flushed), printed for bench/NOTES.md; the first rows checked here.
TEST_F(RowwiseOpsGpu, RmsNormTargetShapesTuned) {
  const RowDType t = RowDType::kBF16;
  for (auto [R, C] : {std::pair<int64_t, int64_t>{4096, 4096}, {16384, 8192}, {32768, 4096}}) {
    const size_t n = size_t(R * C);
    auto x = randomValues(n, -2, 2, 31, t), w = randomValues(size_t(C), 0.5, 1.5, 32, t);
    RmsNormArgs a;
    a.rows = R;
    a.cols = C;
    a.x = upload(t, x);
    a.y = upload(t, std::vector<double>(n, 0));
    a.weight = upload(t, w);
    auto rep = tuneRmsnorm(*tuner_, a);
    ASSERT_TRUE(rep.ok()) << rep.status().toString();
    const double us = rep->winner_stats.median_ms * 1e3;
    std::printf("[ tuned op ] rmsnorm bf16 %lldx%lld: winner %s median %.1f us = %.0f GB/s; %zu "
                "candidates, compile %.0f ms, bench %.0f ms, total %.0f ms\n",
                (long long)R, (long long)C, rep->winner.c_str(), us,
                double(rmsNormBytes(toProblem(a))) / (us * 1e3), rep->candidates.size(),
                rep->compile_wall_ms, rep->bench_wall_ms, rep->total_wall_ms);
    ASSERT_TRUE(backend_->synchronize().ok());
    RmsNormProblem p = toProblem(a);
    p.rows = 16;
    std::vector<double> y(size_t(16 * C));
    rmsNormReference(p, x.data(), w.data(), nullptr, y.data(), nullptr);
    EXPECT_EQ(compare(t, download(a.y, y.size() * 2), y, 1.0), "") << R << "x" << C;
    for (auto q : ptrs_) (void)backend_->free(q);
    ptrs_.clear();
  }
}

TEST_F(RowwiseOpsGpu, SiluMulTargetShapesTuned) {
  const RowDType t = RowDType::kBF16;
  const int64_t D = 14336;
  for (int64_t R : {int64_t(4096), int64_t(16384)}) {
    const size_t nx = size_t(R * 2 * D);
    std::vector<double> xh = randomValues(size_t(1) << 22, -4, 4, 41, t);
    // Tile a 4M-element random block (generating 470M values on the host takes too long).
    std::vector<unsigned char> blk = pack(t, xh);
    auto xp = backend_->alloc(nx * 2);
    ASSERT_TRUE(xp.ok());
    ptrs_.push_back(*xp);
    for (size_t off = 0; off < nx * 2; off += blk.size())
      ASSERT_TRUE(backend_->copyToDevice(*xp + off, blk.data(), std::min(blk.size(), nx * 2 - off)).ok());
    auto op = backend_->alloc(size_t(R * D) * 2);
    ASSERT_TRUE(op.ok());
    ptrs_.push_back(*op);
    SiluMulArgs a;
    a.rows = R;
    a.d = D;
    a.x = *xp;
    a.out = *op;
    auto rep = tuneSiluMul(*tuner_, a);
    ASSERT_TRUE(rep.ok()) << rep.status().toString();
    const double us = rep->winner_stats.median_ms * 1e3;
    std::printf("[ tuned op ] silu_mul bf16 %lldx(2x%lld): winner %s median %.1f us = %.0f GB/s; "
                "%zu candidates, compile %.0f ms, bench %.0f ms, total %.0f ms\n",
                (long long)R, (long long)D, rep->winner.c_str(), us,
                double(siluMulBytes(toProblem(a))) / (us * 1e3), rep->candidates.size(),
                rep->compile_wall_ms, rep->bench_wall_ms, rep->total_wall_ms);
    ASSERT_TRUE(backend_->synchronize().ok());
    // Row 0 against the reference (x row 0 = the first 2D values of the tiled block).
    SiluMulProblem p = toProblem(a);
    p.rows = 1;
    std::vector<double> x0(xh.begin(), xh.begin() + 2 * D);
    std::vector<double> ref(static_cast<size_t>(D));
    siluMulReference(p, x0.data(), ref.data());
    EXPECT_EQ(compare(t, download(a.out, size_t(D) * 2), ref, 1.0), "") << R;
    for (auto q : ptrs_) (void)backend_->free(q);
    ptrs_.clear();
  }
}

}  // namespace
}  // namespace ktune::rowwise
