// `ktune tune gemm`'s early first wave (tools/tune_early_wave.h): the device predicted from NVML's
// facts (Hopper only, every GPU alike), the fields a first wave depends on, and, on the simulated
// device, that the wave compiled through an engine of its own (into an empty store: the only case
// it runs in) leaves the tuner's own first wave
// nothing to compile (each object compiled once, the tuner's look-ahead finding it in the store
// or joining its compile), while a wrong prediction only compiles more.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "autotune/autotuner.h"
#include "base/fs.h"
#include "ops/gemm.h"
#include "tools/sim_gpu.h"
#include "tools/tune_early_wave.h"
#include "tools/tune_request.h"
#include "tools/tune_worker_start.h"

namespace ktune {
namespace {

using cli::NvmlGpu;

NvmlGpu h200() { return NvmlGpu{"NVIDIA H200", 9, 0, 16896}; }

TEST(EarlyWavePrediction, HopperFromNvmlFacts) {
  auto d = cli::predictDevice({h200()}, 0);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->vendor, Vendor::kNvidia);
  EXPECT_EQ(d->arch, "sm_90a");
  EXPECT_EQ(d->multiprocessors, 132);
  EXPECT_EQ(d->shared_per_block_optin, 232448);
  EXPECT_EQ(d->shared_per_sm, 233472);
  EXPECT_EQ(d->max_threads_per_sm, 2048);
  EXPECT_EQ(d->name, "NVIDIA H200");
  // A 114-SM part; the second of two alike.
  auto p =
      cli::predictDevice({{"NVIDIA H100 PCIe", 9, 0, 14592}, {"NVIDIA H100 PCIe", 9, 0, 14592}}, 1);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->multiprocessors, 114);
  EXPECT_EQ(p->ordinal, 1);
}

TEST(EarlyWavePrediction, NoneWhereTheDriversDeviceIsNotCertain) {
  EXPECT_FALSE(cli::predictDevice({}, 0));                                      // no NVML
  EXPECT_FALSE(cli::predictDevice({h200()}, 1));                                // no such ordinal
  EXPECT_FALSE(cli::predictDevice({h200(), {"NVIDIA H100", 9, 0, 16896}}, 0));  // GPUs differ
  EXPECT_FALSE(cli::predictDevice({{"NVIDIA A100", 8, 0, 6912}}, 0));           // limits not tabled
  EXPECT_FALSE(cli::predictDevice({{"odd", 9, 0, 1000}}, 0));  // cores not SMs x 128
}

TEST(EarlyWavePrediction, MissNamesTheFirstFieldThatDiffers) {
  auto d = cli::predictDevice({h200()}, 0);
  ASSERT_TRUE(d);
  DeviceInfo real = *d;
  real.l2_bytes = 60 << 20;  // the driver's own fields are no part of a wave
  real.clock_khz = 1980000;
  EXPECT_EQ(cli::predictionMiss(*d, real), "");
  real.multiprocessors = 114;
  EXPECT_EQ(cli::predictionMiss(*d, real), "multiprocessors");
  real = *d;
  real.shared_per_block_optin -= 1024;
  EXPECT_EQ(cli::predictionMiss(*d, real), "shared memory");
}

// The simulated compiler, counting the compiles that reach it.
class CountingCompiler : public Compiler {
 public:
  explicit CountingCompiler(std::shared_ptr<Compiler> c) : c_(std::move(c)) {}
  std::string name() const override { return c_->name(); }
  std::string version() const override { return c_->version(); }
  bool supportsArch(const std::string& arch) const override { return c_->supportsArch(arch); }
  Expected<CodeObject> compile(const CompileRequest& req) override {
    ++n;
    return c_->compile(req);
  }
  std::atomic<int> n{0};

 private:
  std::shared_ptr<Compiler> c_;
};

struct Dir {
  std::string path;
  Dir() {
    char t[] = "/tmp/ktune-early-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~Dir() { (void)removeTree(path); }
};

// The tuner's first wave (as GemmLookahead::startFirst compiles it) after the early wave.
struct Tuner {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<GemmOp> op;
  Tuner(const cli::SimGpu& gpu, std::shared_ptr<Compiler> c, const std::string& dir) {
    EngineOptions o;
    o.options.cache_dir = dir;
    o.compiler = std::move(c);
    auto e = Engine::create(gpu.backend, o);
    EXPECT_TRUE(e.ok()) << e.status().toString();
    if (!e.ok()) return;
    engine = std::move(*e);
    auto g = GemmOp::create(*engine);
    EXPECT_TRUE(g.ok()) << g.status().toString();
    if (g.ok()) op = std::move(*g);
  }
};

gemm::GemmShape big() {
  return gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16, 4096,
                          4096, 4096);
}

TEST(EarlyWave, TheTunersFirstWaveFindsItCompiled) {
  Dir dir;
  cli::SimGpu gpu = cli::openSimGpu();
  auto counting = std::make_shared<CountingCompiler>(gpu.compiler);
  auto devs = gpu.backend->devices();
  ASSERT_TRUE(devs.ok());
  Options opts;
  opts.cache_dir = dir.path;
  EXPECT_FALSE(cli::storeHoldsObjects(dir.path));  // a cold run: the early wave's case
  cli::EarlyWave wave;
  wave.start(opts, devs->front(), big(), GemmOp::OpOptions{}, false, counting);
  const size_t early = wave.awaitCompiled();
  EXPECT_GE(early, 8u);                           // a first wave
  EXPECT_TRUE(cli::storeHoldsObjects(dir.path));  // the next run's store is warm: no early wave
  EXPECT_EQ(counting->n.load(), static_cast<int>(early));
  Tuner t(gpu, counting, dir.path);
  ASSERT_NE(t.op, nullptr);
  auto own = t.op->precompile(big());
  ASSERT_TRUE(own.ok()) << own.status().toString();
  EXPECT_EQ(*own, 0u);  // every one in the store
  EXPECT_EQ(counting->n.load(), static_cast<int>(early));
}

TEST(EarlyWave, AWrongPredictionOnlyCompilesMore) {
  Dir dir;
  cli::SimGpu gpu = cli::openSimGpu();
  auto counting = std::make_shared<CountingCompiler>(gpu.compiler);
  auto devs = gpu.backend->devices();
  ASSERT_TRUE(devs.ok());
  DeviceInfo wrong = devs->front();
  wrong.multiprocessors = 40;  // another SM count: another prior, another wave
  Options opts;
  opts.cache_dir = dir.path;
  cli::EarlyWave wave;
  wave.start(opts, wrong, big(), GemmOp::OpOptions{}, false, counting);
  const size_t early = wave.awaitCompiled();
  Tuner t(gpu, counting, dir.path);
  ASSERT_NE(t.op, nullptr);
  auto own = t.op->precompile(big());
  ASSERT_TRUE(own.ok()) << own.status().toString();
  EXPECT_GT(*own, 0u);  // its own wave has configs the early one did not compile
  EXPECT_EQ(counting->n.load(), static_cast<int>(early + *own));
  // The tuner's own device decides: its whole first wave is in the store now.
  auto again = t.op->precompile(big());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0u);
}

}  // namespace
}  // namespace ktune

namespace ktune::cli {
namespace {

// `ktune tune`'s other start-up step before the driver: CUDA_VISIBLE_DEVICES=0 where the run uses
// device 0 of a CUDA host alone and the environment chose nothing (tools/tune_worker_start.h).
TEST(TuneStart, ShowsOneGpuOnlyForDeviceZeroAloneOnACudaHost) {
  auto request = [](std::vector<std::string> argv) {
    TuneRequest t;
    argv.insert(argv.begin(), {"gemm", "--m", "64", "--n", "64", "--k", "64"});
    EXPECT_LT(parseTuneRequest(argv, &t), 0);
    return t;
  };
  Options o;
  const TuneRequest plain = request({});
  EXPECT_TRUE(showsOneGpu(o, plain, false, true));
  EXPECT_FALSE(showsOneGpu(o, plain, true, true)) << "the environment's choice stays";
  EXPECT_FALSE(showsOneGpu(o, plain, false, false)) << "not a CUDA host";
  EXPECT_FALSE(showsOneGpu(o, request({"--devices", "0,1"}), false, true));
  EXPECT_FALSE(showsOneGpu(o, request({"--no-gpu"}), false, true));
  Options other = o;
  other.device = 1;  // its ordinal would become 0
  EXPECT_FALSE(showsOneGpu(other, plain, false, true));
  for (const char* b : {"sim", "hip"}) {
    Options ob = o;
    ob.backend = b;
    EXPECT_FALSE(showsOneGpu(ob, plain, false, true)) << b;
  }
}

}  // namespace
}  // namespace ktune::cli
