// The isolation worker serves the built-in row-wise ops (CI, simulated GPU): a tuner on the CLI's
// simulated GPU (tools/sim_gpu.h) with isolation on sends every RMSNorm / SiLU·Mul candidate to
// ktune-worker, whose plugin (isolation_rowwise_plugin.cc) opens the same simulated GPU and
// registers the row-wise ops. The worker rebuilds each problem from its args JSON with its own
// buffers; the tuner's process runs only the winner, and the winner equals the one an in-process
// tuning picks (the simulated cost is deterministic).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "ops/rowwise.h"
#include "base/fs.h"
#include "runtime/sim/sim_backend.h"
#include "templates/rowwise.h"
#include "tools/sim_gpu.h"

namespace ktune {
namespace {

namespace rw = rowwise;

class IsolationRowwise : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ktune-iso-rowwise-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)removeTree(dir_); }

  struct Run {
    cli::SimGpu gpu;
    std::unique_ptr<Engine> tuner;
  };
  // A tuner on a fresh simulated GPU; its own cache dir per run, so nothing is shared but the
  // deterministic cost model.
  Run open(bool isolate, const std::string& name) {
    Run r;
    r.gpu = cli::openSimGpu();
    EngineOptions o;
    o.options.cache_dir = dir_ + "/" + name;
    o.options.warmup_ms = 0.2;
    o.options.rep_ms = 1;
    o.options.isolate = isolate;
    o.options.worker_path = KTUNE_WORKER_PATH;
    o.options.worker_plugins = {KTUNE_ISOLATION_ROWWISE_PLUGIN};
    o.compiler = r.gpu.compiler;
    o.log = &log_;
    auto t = Engine::create(r.gpu.backend, o);
    EXPECT_TRUE(t.ok()) << t.status().toString();
    if (t.ok()) r.tuner = std::move(t).value();
    return r;
  }
  DevicePtr upload(Backend& b, const std::vector<float>& v) {
    auto p = b.alloc(v.size() * 4);
    EXPECT_TRUE(p.ok());
    EXPECT_TRUE(b.copyToDevice(*p, v.data(), v.size() * 4).ok());
    return *p;
  }
  static std::vector<float> random(size_t n, uint64_t seed) {
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<float> u(-2, 2);
    std::vector<float> v(n);
    for (auto& x : v) x = u(g);
    return v;
  }

  std::string dir_;
  std::ostringstream log_;
};

TEST_F(IsolationRowwise, WorkerBenchmarksRmsNormAndSiluMulCandidates) {
  const int64_t R = 6, C = 256;
  std::string winners[2][2];
  for (int isolated = 0; isolated < 2; ++isolated) {
    SCOPED_TRACE(isolated ? "isolated" : "in-process");
    Run run = open(isolated, isolated ? "iso" : "local");
    ASSERT_TRUE(run.tuner);
    Backend& b = *run.gpu.backend;
    auto& sim = static_cast<SimBackend&>(b);
    ASSERT_TRUE(registerRowwiseOps(*run.tuner).ok());

    const auto x = random(size_t(R * C), 1), w = random(size_t(C), 2);
    RmsNormArgs a;
    a.dtype = DType::kF32;
    a.rows = R;
    a.cols = C;
    a.x = upload(b, x);
    a.y = upload(b, std::vector<float>(size_t(R * C), 0));
    a.weight = upload(b, w);
    a.weight_dtype = DType::kF32;
    ASSERT_TRUE(rmsnorm(*run.tuner, a).ok()) << log_.str();
    std::vector<double> xd(x.begin(), x.end()), wd(w.begin(), w.end()), want(size_t(R * C));
    rw::rmsNormReference(toProblem(a), xd.data(), wd.data(), nullptr, want.data(), nullptr);
    std::vector<float> got(size_t(R * C));
    ASSERT_TRUE(b.copyToHost(got.data(), a.y, got.size() * 4).ok());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << i;

    const auto gu = random(size_t(R * 2 * C), 3);  // per row: gate [0, d), up [d, 2d)
    SiluMulArgs s;
    s.dtype = DType::kF32;
    s.rows = R;
    s.d = C;
    s.x = upload(b, gu);
    s.out = upload(b, std::vector<float>(size_t(R * C), 0));
    ASSERT_TRUE(siluMul(*run.tuner, s).ok()) << log_.str();
    ASSERT_TRUE(b.copyToHost(got.data(), s.out, got.size() * 4).ok());
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t i = 0; i < C; ++i) {
        const double gate = gu[size_t(r * 2 * C + i)], up = gu[size_t(r * 2 * C + C + i)];
        const double want_o = gate / (1 + std::exp(-gate)) * up;
        ASSERT_NEAR(got[size_t(r * C + i)], want_o, 1e-4 * (1 + std::fabs(want_o))) << r << "," << i;
      }
    }

    auto rf = run.tuner->family<RmsNormArgs>("rmsnorm_f32");
    auto sf = run.tuner->family<SiluMulArgs>("silu_mul_f32");
    ASSERT_TRUE(rf.ok()) << rf.status().toString();
    ASSERT_TRUE(sf.ok()) << sf.status().toString();
    auto rsel = rf->lookup(a);
    auto ssel = sf->lookup(s);
    ASSERT_TRUE(rsel.ok() && ssel.ok());
    EXPECT_EQ(rsel->origin, "memory");
    winners[isolated][0] = rsel->winner;
    winners[isolated][1] = ssel->winner;

    const IsolationStats st = run.tuner->isolationStats();
    std::printf("%s: rmsnorm winner %s, silu_mul winner %s, %d candidates through the worker\n",
                isolated ? "isolated" : "in-process", rsel->winner.c_str(), ssel->winner.c_str(),
                st.candidates_sent);
    if (isolated) {
      // One worker served both families; every candidate ran there, none here but the winners.
      EXPECT_EQ(st.starts, 1);
      EXPECT_EQ(st.crashes, 0);
      EXPECT_EQ(st.fallbacks, 0);
      EXPECT_GE(st.candidates_sent, 4) << log_.str();
      EXPECT_EQ(sim.launchCount(rw::kRmsNormEntry), 1);
      EXPECT_EQ(sim.launchCount(rw::kSiluMulEntry), 1);
    } else {
      EXPECT_EQ(st.starts, 0);
      EXPECT_GT(sim.launchCount(rw::kRmsNormEntry), 4);
    }
  }
  EXPECT_FALSE(winners[0][0].empty());
  EXPECT_EQ(winners[1][0], winners[0][0]) << "the worker's timings picked another RMSNorm winner";
  EXPECT_EQ(winners[1][1], winners[0][1]) << "the worker's timings picked another SiLU*Mul winner";
}

}  // namespace
}  // namespace ktune
