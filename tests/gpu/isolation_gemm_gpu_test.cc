// The tunable GEMM op under isolation on a GPU (label gpu): its candidates are benchmarked in the
// ktune-worker (which rebuilds the problem from args_json), never in this process; the winner
// computes the right product here; keys recorded with tuning off are tuned offline through the
// worker too. Skips without a GPU.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "base/dtype.h"
#include "ops/gemm.h"
#include "base/fs.h"

namespace ktune {
namespace {

struct GpuEnv {
  std::shared_ptr<Backend> backend;
  std::string dir, why;
  std::ostringstream log;
  GpuEnv() {
    auto b = openBackend("auto");
    if (!b.ok()) {
      why = b.status().toString();
      return;
    }
    backend = std::shared_ptr<Backend>(std::move(b).value());
    auto d = backend->devices();
    if (!d.ok() || d->empty()) {
      why = d.ok() ? "no device" : d.status().toString();
      backend.reset();
      return;
    }
    char tmpl[] = "/tmp/ktune-isolation-gemm-XXXXXX";
    dir = ::mkdtemp(tmpl);
  }
  ~GpuEnv() {
    if (!dir.empty()) (void)removeTree(dir);
  }
  EngineOptions options() {
    EngineOptions t;
    t.options.cache_dir = dir;
    t.options.isolate = true;
    t.options.worker_path = KTUNE_WORKER_PATH;
    // A worker that cannot serve GEMM must fail the test, not silently run candidates here.
    t.isolation.fallback_in_process = false;
    t.log = &log;
    return t;
  }
};

// Max |C - A·Bᵀ| violation on every row (NT: A is M x K, B is N x K), "" when within tolerance.
std::string checkNt(Backend& b, const GemmCall& call) {
  const auto& s = call.shape;
  const DType ab = s.ab == gemm::ElemType::kF16 ? DType::kF16 : DType::kBF16;
  std::vector<unsigned char> a(size_t(s.m * s.lda) * 2), bb(size_t(s.n * s.ldb) * 2),
      c(size_t(s.m * s.ldc) * 2);
  if (!b.synchronize().ok() || !b.copyToHost(a.data(), call.buf.a, a.size()).ok() ||
      !b.copyToHost(bb.data(), call.buf.b, bb.size()).ok() ||
      !b.copyToHost(c.data(), call.buf.c, c.size()).ok())
    return "copy back failed";
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < s.k; ++k) {
        const double x =
            loadAsDouble(a.data(), ab, i * s.lda + k) * loadAsDouble(bb.data(), ab, j * s.ldb + k);
        ref += x;
        mag += std::fabs(x);
      }
      ref *= s.alpha;
      const double got = loadAsDouble(c.data(), ab, i * s.ldc + j);
      // bf16 output rounding (2^-8 relative) plus fp32 accumulation over K terms.
      const double tol = std::ldexp(std::fabs(ref), -7) + 1e-5 * mag + 1e-3;
      if (!(std::fabs(got - ref) <= tol)) {
        std::ostringstream os;
        os << "C[" << i << "][" << j << "] = " << got << ", want " << ref;
        return os.str();
      }
    }
  }
  return "";
}

TEST(IsolationGemmGpu, CandidatesRunInTheWorkerAndTheWinnerIsCorrect) {
  GpuEnv env;
  if (!env.backend) GTEST_SKIP() << "no GPU: " << env.why;
  auto created = Engine::create(env.backend, env.options());
  ASSERT_TRUE(created.ok()) << created.status().toString();
  std::shared_ptr<Engine> tuner(std::move(created).value());
  auto op = GemmOp::create(tuner);
  ASSERT_TRUE(op.ok()) << op.status().toString();

  const auto shape = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16,
                                      gemm::ElemType::kBF16, 256, 256, 256);
  // The caller's own data (another seed than the worker's rebuilt problem uses).
  auto mine = makeGemmProblem(*env.backend, tuner->device(), shape, 1234);
  ASSERT_TRUE(mine.ok()) << mine.status().toString();
  const GemmCall& call = **mine;

  auto rep = (*op)->tune(call);
  ASSERT_TRUE(rep.ok()) << rep.status().toString() << "\n" << env.log.str();
  std::printf("%s\n", rep->tree().c_str());
  ASSERT_FALSE(rep->winner.empty()) << env.log.str();

  const IsolationStats st = tuner->isolationStats();
  EXPECT_GE(st.starts, 1);
  EXPECT_EQ(st.fallbacks, 0) << env.log.str();
  EXPECT_EQ(st.crashes, 0);
  EXPECT_GT(st.candidates_sent, 0);
  ASSERT_FALSE(st.pids.empty());
  EXPECT_NE(st.pids.front(), ::getpid());
  EXPECT_EQ(env.log.str().find("benchmarking in-process"), std::string::npos) << env.log.str();

  // Measured candidates only: the ones the guided search never reached were never sent.
  int ok = 0;
  bool winner_ok = false;
  for (const auto& c : rep->candidates) {
    if (!c.measured()) continue;
    ++ok;
    if (c.config == rep->winner && c.source == rep->winner_source) {
      winner_ok = true;
      EXPECT_GT(c.stats.median_ms, 0.0);
    }
  }
  EXPECT_TRUE(winner_ok) << rep->winner;
  EXPECT_GT(ok, 1);
  // Every candidate measured in the worker counts once.
  EXPECT_GE(st.candidates_sent, ok);

  // The winner, launched here on the caller's buffers, computes A·Bᵀ.
  ASSERT_TRUE((**op)(call).ok());
  EXPECT_EQ(checkNt(*env.backend, call), "");
  auto sel = (*op)->lookup(call);
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->winner, rep->winner);
}

TEST(IsolationGemmGpu, RecordedUntunedKeysAreTunedOfflineThroughTheWorker) {
  GpuEnv env;
  if (!env.backend) GTEST_SKIP() << "no GPU: " << env.why;
  const std::string untuned = env.dir + "/untuned.jsonl";
  auto shape = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16, 16,
                                512, 256);
  std::string key;
  {
    // Tuning off: the default config runs and the key is recorded with its shape.
    EngineOptions o = env.options();
    o.options.tuning = false;
    o.options.record_untuned_path = untuned;
    auto t = Engine::create(env.backend, o);
    ASSERT_TRUE(t.ok()) << t.status().toString();
    std::shared_ptr<Engine> tuner(std::move(t).value());
    auto op = GemmOp::create(tuner);
    ASSERT_TRUE(op.ok()) << op.status().toString();
    auto call = makeGemmProblem(*env.backend, tuner->device(), shape, 5);
    ASSERT_TRUE(call.ok());
    // A misaligned A: the offline run must rebuild the same (unaligned) key.
    GemmCall odd = **call;
    auto spare = makeGemmProblem(
        *env.backend, tuner->device(),
        [&] {
          auto s = shape;
          s.aligned16 = false;
          return s;
        }(),
        5);
    ASSERT_TRUE(spare.ok());
    odd.buf.a = (*spare)->buf.a;
    ASSERT_TRUE((**op)(**call).ok());
    ASSERT_TRUE((**op)(odd).ok());
    ASSERT_TRUE(env.backend->synchronize().ok());
  }
  auto text = readFile(untuned);
  ASSERT_TRUE(text.ok()) << text.status().toString();
  EXPECT_NE(text->find("\"aligned16\":false"), std::string::npos) << *text;

  auto t = Engine::create(env.backend, env.options());
  ASSERT_TRUE(t.ok());
  std::shared_ptr<Engine> tuner(std::move(t).value());
  auto op = GemmOp::create(tuner);
  ASSERT_TRUE(op.ok());
  auto r = tuner->tuneFromFile(untuned);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  std::string msgs;
  for (const auto& m : r->messages) msgs += m + "\n";
  EXPECT_EQ(r->tuned, 2) << msgs << env.log.str();
  EXPECT_EQ(r->skipped, 0) << msgs;
  EXPECT_EQ(msgs.find("re-created as"), std::string::npos) << msgs;
  const IsolationStats st = tuner->isolationStats();
  EXPECT_GT(st.candidates_sent, 0);
  EXPECT_EQ(st.fallbacks, 0) << env.log.str();
}

}  // namespace
}  // namespace ktune
