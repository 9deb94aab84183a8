// Tuned row-wise ops (ops/rowwise.h) without a GPU: input validation, and the whole
// op path on the simulated backend, whose "kernels" are host implementations of ktune_rmsnorm /
// ktune_silu_mul driven by the compiled-in defines. The simulated cost prefers one config, one
// config writes wrong values (verification must reject it), and an in-place fused residual call
// must be applied exactly once despite the tuning runs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "autotune/autotuner.h"
#include "ops/rowwise.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"
#include "templates/rowwise.h"
#include "tools/sim_gpu.h"

namespace ktune {
namespace {

namespace rw = rowwise;

TEST(RowwiseOpsValidate, RejectsBadInputsWithClearMessages) {
  RmsNormArgs a;
  a.dtype = DType::kBF16;
  a.rows = 4;
  a.cols = 64;
  a.x = 0x1000;
  a.y = 0x2000;
  EXPECT_TRUE(validate(a).ok()) << validate(a).toString();

  auto bad = a;
  bad.x = 0;
  EXPECT_EQ(validate(bad).code(), Code::kInvalidArgument);
  EXPECT_NE(validate(bad).message().find("x is null"), std::string::npos);
  bad = a;
  bad.y = 0x2001;  // not 2-byte aligned
  EXPECT_NE(validate(bad).message().find("not aligned"), std::string::npos);
  bad = a;
  bad.rows = 0;
  EXPECT_NE(validate(bad).message().find("rows"), std::string::npos);
  bad = a;
  bad.cols = -5;
  EXPECT_EQ(validate(bad).code(), Code::kInvalidArgument);
  bad = a;
  bad.dtype = DType::kF64;
  EXPECT_EQ(validate(bad).code(), Code::kUnsupported);
  EXPECT_NE(validate(bad).message().find("f64"), std::string::npos);
  bad = a;
  bad.weight = 0x3000;
  bad.weight_dtype = DType::kF32;
  EXPECT_NE(validate(bad).message().find("weight dtype"), std::string::npos);
  bad = a;
  bad.residual = 0x4000;  // without residual_out
  EXPECT_NE(validate(bad).message().find("residual_out"), std::string::npos);
  bad = a;
  bad.x_stride = 10;  // < cols
  EXPECT_NE(validate(bad).message().find("x_stride"), std::string::npos);

  SiluMulArgs s;
  s.rows = 2;
  s.d = 8;
  s.x = 0x1000;
  s.out = 0;
  EXPECT_NE(validate(s).message().find("out is null"), std::string::npos);
  s.out = 0x2000;
  EXPECT_TRUE(validate(s).ok());
  s.dtype = DType::kI8;
  EXPECT_EQ(validate(s).code(), Code::kUnsupported);
}

TEST(RowwiseOpsValidate, ProblemCarriesMisalignment) {
  RmsNormArgs a;
  a.rows = 2;
  a.cols = 4096;
  a.x = 0x1004;
  a.y = 0x2000;
  a.weight = 0x3000;
  const auto p = toProblem(a);
  EXPECT_EQ(p.x_misalign, 4);
  EXPECT_TRUE(p.has_weight);
  EXPECT_FALSE(p.has_residual);
  EXPECT_EQ(rw::alignmentBytes(p), 4);
}

// ---------------------------------------------------------------------------------------------
// Simulated backend: host implementations of the kernels
// ---------------------------------------------------------------------------------------------
rw::RowDType dtOf(const SimLaunch& l) { return static_cast<rw::RowDType>(l.define("DTYPE")); }

std::vector<double> readBuf(SimBackend* b, DevicePtr p, rw::RowDType t, size_t n) {
  return rw::unpack(t, b->hostPtr(p), n);
}
void writeBuf(SimBackend* b, DevicePtr p, rw::RowDType t, const std::vector<double>& v) {
  auto bytes = rw::pack(t, v);
  std::memcpy(b->hostPtr(p), bytes.data(), bytes.size());
}

Status hostRmsNorm(const SimLaunch& l) {
  KTUNE_RETURN_IF_ERROR(cli::simRmsNorm(l));
  if (l.define("THREADS") == 1024) {  // the "wrong result" config
    auto y0 = readBuf(l.backend, l.arg<DevicePtr>(0), dtOf(l), 1);
    writeBuf(l.backend, l.arg<DevicePtr>(0), dtOf(l), {y0[0] + 1.0});
  }
  return Status::Ok();
}

Status hostSiluMul(const SimLaunch& l) { return cli::simSiluMul(l); }

class RowwiseOpsSim : public ::testing::Test {
 protected:
  void SetUp() override {
    SimOptions so;
    so.device.name = "sim-h100-like";
    so.device.arch = "sm_90a";
    so.device.warp_size = 32;
    so.device.max_threads_per_block = 1024;
    so.device.multiprocessors = 132;
    so.device.max_threads_per_sm = 2048;
    so.device.shared_per_block = 48 << 10;
    so.device.l2_bytes = 1 << 20;
    sim_ = std::make_shared<SimBackend>(so);
    // Preferred configs cost 1 ms, everything else 2 ms.
    SimKernel rk;
    rk.run = hostRmsNorm;
    rk.cost = [](const SimLaunch& l) {
      return l.define("THREADS") == 128 && l.define("ROWS_PER_BLOCK") == 2 ? 1.0 : 2.0;
    };
    sim_->registerKernel(rw::kRmsNormEntry, rk);
    SimKernel sk;
    sk.run = hostSiluMul;
    sk.cost = [](const SimLaunch& l) {
      return l.define("THREADS") == 512 && l.define("UNROLL") == 1 ? 1.0 : 2.0;
    };
    sim_->registerKernel(rw::kSiluMulEntry, sk);
    dir_ = std::filesystem::temp_directory_path() /
           ("ktune_rowwise_ops_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    EngineOptions to;
    to.options.cache_dir = dir_.string();
    // One config 2x faster than every other, which look alike: no prior can find such a needle
    // without timing everything, and the tests assert every candidate's result.
    to.options.search = "exhaustive";
    to.options.warmup_ms = 1;
    to.options.rep_ms = 5;
    to.compiler = std::make_shared<SimCompiler>();
    to.bench.flush_l2 = false;
    to.options.warmup_ms = 1;
    to.options.rep_ms = 5;
    to.bench.min_runs = 3;
    to.bench.max_runs = 5;
    auto t = Engine::create(sim_, to);
    ASSERT_TRUE(t.ok()) << t.status().toString();
    tuner_ = std::move(*t);
  }
  void TearDown() override {
    tuner_.reset();
    std::filesystem::remove_all(dir_);
  }
  DevicePtr upload(rw::RowDType t, const std::vector<double>& v) {
    auto p = sim_->alloc(v.size() * rw::sizeOf(t));
    EXPECT_TRUE(p.ok());
    writeBuf(sim_.get(), *p, t, v);
    return *p;
  }
  std::vector<double> random(size_t n, uint64_t seed, rw::RowDType t) {
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<double> u(-2, 2);
    std::vector<double> v(n);
    for (auto& x : v) x = rw::roundTo(t, u(g));
    return v;
  }

  std::shared_ptr<SimBackend> sim_;
  std::unique_ptr<Engine> tuner_;
  std::filesystem::path dir_;
};

TEST_F(RowwiseOpsSim, RmsNormTunesVerifiesAndRunsInPlaceResidualOnce) {
  const auto t = rw::RowDType::kBF16;
  const int64_t R = 5, C = 64;
  auto x = random(size_t(R * C), 1, t), r = random(size_t(R * C), 2, t), w = random(size_t(C), 3, t);
  RmsNormArgs a;
  a.dtype = DType::kBF16;
  a.rows = R;
  a.cols = C;
  a.x = upload(t, x);
  a.y = upload(t, std::vector<double>(size_t(R * C), 0));
  a.weight = upload(t, w);
  a.residual = upload(t, r);
  a.residual_out = a.residual;  // in place, as vLLM does
  ASSERT_TRUE(rmsnorm(*tuner_, a).ok());

  rw::RmsNormProblem p = toProblem(a);
  std::vector<double> y(size_t(R * C)), ro(size_t(R * C));
  rw::rmsNormReference(p, x.data(), w.data(), r.data(), y.data(), ro.data());
  const auto got_ro = readBuf(sim_.get(), a.residual_out, t, size_t(R * C));
  const auto got_y = readBuf(sim_.get(), a.y, t, size_t(R * C));
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_EQ(got_ro[i], ro[i]) << "residual applied more than once at " << i;
    ASSERT_NEAR(got_y[i], y[i], 2e-2 * (1 + std::fabs(y[i]))) << i;
  }
  auto sel = lookupRmsnorm(*tuner_, a);
  ASSERT_TRUE(sel.ok()) << sel.status().toString();
  EXPECT_NE(sel->winner.find("THREADS=128"), std::string::npos) << sel->winner;
  EXPECT_NE(sel->winner.find("ROWS_PER_BLOCK=2"), std::string::npos) << sel->winner;
  EXPECT_NE(sel->key.find("cols=64"), std::string::npos) << sel->key;

  // The wrong-result config was tried and rejected by verification.
  auto rep = tuneRmsnorm(*tuner_, a);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  int wrong = 0;
  for (const auto& c : rep->candidates) {
    if (c.config.find("THREADS=1024") != std::string::npos) {
      EXPECT_EQ(c.status, Code::kWrongResult) << c.config << ": " << c.reason;
      ++wrong;
    }
  }
  EXPECT_GT(wrong, 0);

  // Rows 5 and 7 share a bucket (8): same key.
  auto b = a;
  b.rows = 7;
  EXPECT_EQ(lookupRmsnorm(*tuner_, b)->key, sel->key);
}

TEST_F(RowwiseOpsSim, SiluMulTunesAndMatchesReference) {
  const auto t = rw::RowDType::kF16;
  const int64_t R = 3, D = 40;
  auto x = random(size_t(R * 2 * D), 4, t);
  SiluMulArgs a;
  a.dtype = DType::kF16;
  a.rows = R;
  a.d = D;
  a.x = upload(t, x);
  a.out = upload(t, std::vector<double>(size_t(R * D), 0));
  ASSERT_TRUE(siluMul(*tuner_, a).ok());
  std::vector<double> ref(size_t(R * D));
  rw::siluMulReference(toProblem(a), x.data(), ref.data());
  const auto got = readBuf(sim_.get(), a.out, t, ref.size());
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(got[i], ref[i], 1e-2 * (1 + std::fabs(ref[i])));
  auto sel = lookupSiluMul(*tuner_, a);
  ASSERT_TRUE(sel.ok());
  EXPECT_NE(sel->winner.find("THREADS=512"), std::string::npos) << sel->winner;
  EXPECT_NE(sel->winner.find("UNROLL=1"), std::string::npos) << sel->winner;
  // Invalid input: clear error, nothing launched.
  const auto before = sim_->totalLaunches();
  auto bad = a;
  bad.out = 0;
  EXPECT_EQ(siluMul(*tuner_, bad).code(), Code::kInvalidArgument);
  EXPECT_EQ(sim_->totalLaunches(), before);
}


// RowwiseOps (the op object, issue 11): it registers the six families on its Engine, shares them
// with the free functions (one tuning per key, whichever is called), and a second Engine gets its
// own families (no process-global registry: the Engine owns them).
TEST_F(RowwiseOpsSim, RowwiseOpsObjectSharesTheTunersFamilies) {
  auto ops = RowwiseOps::create(*tuner_);
  ASSERT_TRUE(ops.ok()) << ops.status().toString();
  for (const char* name : {"rmsnorm_f32", "rmsnorm_f16", "rmsnorm_bf16", "silu_mul_f32",
                           "silu_mul_f16", "silu_mul_bf16"})
    EXPECT_NE(tuner_->database(name), nullptr) << name;
  const auto t = rw::RowDType::kF16;
  SiluMulArgs a;
  a.dtype = DType::kF16;
  a.rows = 2;
  a.d = 64;
  a.x = upload(t, random(size_t(2 * 2 * 64), 5, t));
  a.out = upload(t, std::vector<double>(size_t(2 * 64), 0));
  ASSERT_TRUE((*ops)->siluMul(a).ok());
  auto sel = (*ops)->lookup(a);
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->origin, "memory");
  auto free_sel = lookupSiluMul(*tuner_, a);  // the same family, already tuned
  ASSERT_TRUE(free_sel.ok());
  EXPECT_EQ(free_sel->winner, sel->winner);
  EXPECT_EQ(free_sel->origin, "memory");
  auto again = RowwiseOps::create(*tuner_);  // takes the families already registered
  ASSERT_TRUE(again.ok()) << again.status().toString();
  EXPECT_EQ((*again)->lookup(a)->winner, sel->winner);
  auto bad = a;
  bad.out = 0;
  EXPECT_EQ((*ops)->siluMul(bad).code(), Code::kInvalidArgument);
  // A family name taken by another problem type is refused, not reinterpreted.
  EXPECT_EQ(tuner_->family<RmsNormArgs>("silu_mul_f16").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(tuner_->family<RmsNormArgs>("no_such_family").status().code(), Code::kNotFound);
}

// Tuning off records the key (with its args JSON); offline tuning rebuilds the problem with its own
// buffers from that line and tunes it; the op then runs the tuned config.
TEST_F(RowwiseOpsSim, OfflineTuningFromRecordedKeys) {
  const auto t = rw::RowDType::kBF16;
  const int64_t R = 5, D = 48;
  SiluMulArgs a;
  a.dtype = DType::kBF16;
  a.rows = R;
  a.d = D;
  a.x = upload(t, random(size_t(R * 2 * D), 7, t));
  a.out = upload(t, std::vector<double>(size_t(R * D), 0));
  const std::string untuned = (dir_ / "untuned.jsonl").string();
  EngineOptions off = tuner_->options();
  off.options.tuning = false;
  off.options.record_untuned_path = untuned;
  auto t_off = Engine::create(sim_, off);
  ASSERT_TRUE(t_off.ok()) << t_off.status().toString();
  ASSERT_TRUE(siluMul(**t_off, a).ok());
  auto sel_off = lookupSiluMul(**t_off, a);
  ASSERT_TRUE(sel_off.ok());
  EXPECT_EQ(sel_off->origin, "default");
  ASSERT_TRUE(registerRowwiseOps(*tuner_).ok());
  auto rep = tuner_->tuneFromFile(untuned);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->tuned, 1) << (rep->messages.empty() ? "" : rep->messages.front());
  auto sel = lookupSiluMul(*tuner_, a);
  ASSERT_TRUE(sel.ok());
  EXPECT_NE(sel->origin, "default");
  EXPECT_NE(sel->winner.find("THREADS=512"), std::string::npos) << sel->winner;
}

}  // namespace
}  // namespace ktune
