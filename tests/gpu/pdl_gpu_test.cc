// Programmatic dependent launches on a real GPU (sm_90+): a chain of tuned calls where each kernel
// reads what the one before wrote (RMSNorm -> decode GEMM -> SiLU·Mul, four times over, the last
// output feeding the next norm) gives bit-identical results launched with the attribute
// (TunerOptions::pdl on), eagerly and captured into a CUDA graph and replayed, and launched without
// it (pdl off). A kernel that touched memory before its KTUNE_PDL_WAIT would race its predecessor
// here. Also prints the graph's replay time with and without (information, not asserted).
// Skips without an NVIDIA GPU of compute capability 9.0 or newer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "ops/gemm.h"
#include "ops/rowwise.h"
#include "runtime/backend.h"
#include "tests/gpu/cuda_graph_api.h"

namespace ktune {
namespace {

constexpr int64_t kRows = 4, kK = 4096, kN = 2 * kK;  // gate/up of width 2K, SiLU·Mul back to K
constexpr int kLinks = 4;

struct Tuned {
  std::shared_ptr<Engine> engine;
  std::unique_ptr<GemmOp> gemm;
};

class PdlGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = openBackend("cuda");
    if (!b.ok()) GTEST_SKIP() << "no CUDA GPU: " << b.status().toString();
    backend_ = std::shared_ptr<Backend>(std::move(*b));
    ASSERT_TRUE(backend_->setDevice(0).ok());
    auto devs = backend_->devices();
    ASSERT_TRUE(devs.ok());
    if (devs->front().cc_major < 9)
      GTEST_SKIP() << "programmatic dependent launch needs compute capability 9.0+";
    if (!graphs_.open()) GTEST_SKIP() << "no CUDA graph entry points in libcuda";
    dir_ = std::filesystem::temp_directory_path() / ("ktune_pdl_gpu_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    s_ = backend_->createStream().value();
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> small(-60, 60);
    const auto bf16 = [](float f) {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return uint16_t(u >> 16);
    };
    x0_.resize(static_cast<size_t>(kRows * kK));
    for (auto& v : x0_) v = bf16(float(small(rng)) / 32.0f);
    std::vector<uint16_t> w(static_cast<size_t>(kN * kK)), nw(static_cast<size_t>(kK));
    for (auto& v : w) v = bf16(float(small(rng)) / 2048.0f);
    for (auto& v : nw) v = bf16(1.0f + float(small(rng)) / 256.0f);
    x_ = backend_->alloc(size_t(kRows * kK * 2)).value();
    h_ = backend_->alloc(size_t(kRows * kK * 2)).value();
    g_ = backend_->alloc(size_t(kRows * kN * 2)).value();
    w_ = backend_->alloc(w.size() * 2).value();
    nw_ = backend_->alloc(nw.size() * 2).value();
    ASSERT_TRUE(backend_->copyToDevice(w_, w.data(), w.size() * 2).ok());
    ASSERT_TRUE(backend_->copyToDevice(nw_, nw.data(), nw.size() * 2).ok());
  }
  void TearDown() override {
    if (!backend_) return;
    for (DevicePtr p : {x_, h_, g_, w_, nw_}) {
      if (p) {
        EXPECT_TRUE(backend_->free(p).ok());
      }
    }
    if (s_.p) (void)backend_->destroyStream(s_);
    std::filesystem::remove_all(dir_);
  }

  // An engine over the test's database, without vendor algorithms and with the GEMM op restricted
  // to its decode kernels: the engine with `tuning` tunes the chain's keys (a decode winner), the
  // other runs the same winners from the database.
  Tuned engine(bool pdl, bool tuning) {
    Tuned t;
    EngineOptions o;
    o.options.cache_dir = dir_.string();
    o.options.tuning = tuning;
    o.options.warmup_ms = 1;
    o.options.rep_ms = 3;
    o.options.vendor_algos = 0;
    o.options.pdl = pdl;
    auto e = Engine::create(backend_, o);
    EXPECT_TRUE(e.ok()) << e.status().toString();
    if (!e.ok()) return t;
    t.engine = std::shared_ptr<Engine>(std::move(*e));
    GemmOp::OpOptions go;
    go.kinds = {gemm::KernelKind::kDecode};
    auto g = GemmOp::create(t.engine, go);
    EXPECT_TRUE(g.ok()) << g.status().toString();
    if (g.ok()) t.gemm = std::move(*g);
    return t;
  }

  GemmCall gemmCall() const {
    GemmCall c;
    c.shape = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16,
                               kRows, kN, kK);
    c.buf.a = h_, c.buf.b = w_, c.buf.c = g_;
    return c;
  }

  // kLinks x (x -> RMSNorm -> h -> GEMM -> g -> SiLU·Mul -> x) on the stream.
  void chain(Tuned& t) {
    RmsNormArgs ra;
    ra.rows = kRows, ra.cols = kK, ra.x = x_, ra.y = h_, ra.weight = nw_;
    SiluMulArgs sa;
    sa.rows = kRows, sa.d = kK, sa.x = g_, sa.out = x_;
    const GemmCall gc = gemmCall();
    for (int i = 0; i < kLinks; ++i) {
      ASSERT_TRUE(rmsnorm(*t.engine, ra, s_).ok());
      Status st = (*t.gemm)(gc, s_);
      ASSERT_TRUE(st.ok()) << st.toString();
      ASSERT_TRUE(siluMul(*t.engine, sa, s_).ok());
    }
  }
  void resetX() {
    ASSERT_TRUE(backend_->synchronize(s_).ok());
    ASSERT_TRUE(backend_->copyToDevice(x_, x0_.data(), x0_.size() * 2).ok());
    ASSERT_TRUE(backend_->memset8(h_, 0xff, size_t(kRows * kK * 2), s_).ok());  // NaN
    ASSERT_TRUE(backend_->memset8(g_, 0xff, size_t(kRows * kN * 2), s_).ok());
  }
  std::vector<uint16_t> readX() {
    std::vector<uint16_t> v(x0_.size());
    EXPECT_TRUE(backend_->synchronize(s_).ok());
    EXPECT_TRUE(backend_->copyToHost(v.data(), x_, v.size() * 2).ok());
    return v;
  }
  // The chain captured into a graph (instantiated; the caller destroys it with destroyGraph).
  void* capture(Tuned& t) {
    EXPECT_EQ(graphs_.begin(s_.p, 0 /* global mode */), 0);
    chain(t);
    void* graph = nullptr;
    EXPECT_EQ(graphs_.end(s_.p, &graph), 0) << "the capture was invalidated";
    void* exec = nullptr;
    EXPECT_EQ(graphs_.instantiate(&exec, graph, 0), 0);
    EXPECT_EQ(graphs_.destroy(graph), 0);
    return exec;
  }
  // Median of 5 timed batches of 20 replays, in µs per replay.
  double replayUs(void* exec) {
    auto a = backend_->createEvent().value(), b = backend_->createEvent().value();
    std::vector<double> us;
    for (int r = 0; r < 6; ++r) {
      EXPECT_TRUE(backend_->recordEvent(a, s_).ok());
      for (int i = 0; i < 20; ++i) EXPECT_EQ(graphs_.launch(exec, s_.p), 0);
      EXPECT_TRUE(backend_->recordEvent(b, s_).ok());
      EXPECT_TRUE(backend_->synchronizeEvent(b).ok());
      if (r > 0) us.push_back(double(backend_->elapsedMs(a, b).value()) * 1e3 / 20);
    }
    (void)backend_->destroyEvent(a);
    (void)backend_->destroyEvent(b);
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  }

  GraphApi graphs_;
  std::shared_ptr<Backend> backend_;
  std::filesystem::path dir_;
  StreamHandle s_{};
  std::vector<uint16_t> x0_;
  DevicePtr x_ = 0, h_ = 0, g_ = 0, w_ = 0, nw_ = 0;
};

TEST_F(PdlGpu, CapturedProgrammaticChainReplaysBitIdenticalToOrdinaryLaunches) {
  Tuned on = engine(/*pdl=*/true, /*tuning=*/true);
  ASSERT_TRUE(on.gemm);
  resetX();
  chain(on);  // tunes the three keys (and loads every kernel before the captures)
  Tuned off = engine(/*pdl=*/false, /*tuning=*/false);
  ASSERT_TRUE(off.gemm);
  auto report = on.gemm->lookup(gemmCall());
  ASSERT_TRUE(report.ok()) << report.status().toString();
  EXPECT_NE(report->winner.find("KIND=decode"), std::string::npos) << report->winner;
  auto report_off = off.gemm->lookup(gemmCall());
  ASSERT_TRUE(report_off.ok()) << report_off.status().toString();
  ASSERT_EQ(report_off->winner, report->winner) << "both engines must run the same GEMM config";

  resetX();
  chain(off);
  const std::vector<uint16_t> want = readX();
  size_t finite = 0;
  for (uint16_t v : want) finite += (v & 0x7f80) != 0x7f80;
  ASSERT_EQ(finite, want.size()) << "the reference chain produced NaN or Inf";

  resetX();
  chain(on);  // eager, with the attribute
  EXPECT_EQ(readX(), want) << "eager programmatic launches differ";

  void* exec_on = capture(on);
  void* exec_off = capture(off);
  ASSERT_NE(exec_on, nullptr);
  ASSERT_NE(exec_off, nullptr);
  for (int replay = 0; replay < 3; ++replay) {
    resetX();
    ASSERT_EQ(graphs_.launch(exec_on, s_.p), 0);
    EXPECT_EQ(readX(), want) << "graph replay " << replay << " with programmatic launches differs";
  }
  const double us_on = replayUs(exec_on), us_off = replayUs(exec_off);
  std::printf("[pdl] %d-kernel chain graph replay: %.2f us with programmatic launches, %.2f us "
              "without (%.3fx); GEMM config %s\n",
              3 * kLinks, us_on, us_off, us_off / us_on, report->winner.c_str());
  EXPECT_EQ(graphs_.exec_destroy(exec_on), 0);
  EXPECT_EQ(graphs_.exec_destroy(exec_off), 0);
}

}  // namespace
}  // namespace ktune
