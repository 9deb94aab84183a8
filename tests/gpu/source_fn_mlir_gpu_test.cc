// The MLIR-written RMSNorm and SiLU·Mul (templates/mlir/), lowered to PTX on a machine with
// mlir-opt-19 (dev/mlir_lower.sh writes .mlirptx/), tuned on the GPU through the per-config
// source callback (FamilyExtras::source_fn, language PTX): every config is compiled through the
// store, benchmarked, and verified against the float64 references of the C++ templates (random
// bf16 data, outputs poisoned with NaN before each run). Skips without a GPU, or when the lowered
// modules for the device's arch are missing (saying how to make them).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <random>

#include "autotune/autotuner.h"
#include "base/fs.h"
#include "runtime/backend.h"
#include "templates/mlir/mlir_kernels.h"
#include "templates/rowwise.h"
#include "tests/gpu/mlir_gpu_util.h"
#include "tests/unit/spec_family.h"

namespace ktune {
namespace {

using mlirgpu::addMemref;
using mlirgpu::countBad;

const std::string kPtxDir = std::string(KTUNE_SOURCE_DIR) + "/.mlirptx";

// One problem of either kernel: device buffers, the reference, the shape.
struct RowProblem {
  std::string kernel;  // "rmsnorm" | "silu_mul"
  int64_t rows = 0, d = 0;  // d: row length (RMSNorm cols; SiLU·Mul output columns)
  DevicePtr x = 0, w = 0, y = 0;
  size_t y_bytes = 0;
  std::vector<double> want;
};

Config toConfig(const templates::MlirRowwiseConfig& m) {
  return Config{{"VEC", m.vec}, {"THREADS", m.threads}, {"ROWS_PER_BLOCK", m.rows_per_block}};
}

class SourceFnMlirGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = openBackend("auto");
    if (!b.ok()) GTEST_SKIP() << "no GPU: " << b.status().toString();
    auto devs = (*b)->devices();
    if (!devs.ok() || devs->empty()) GTEST_SKIP() << "no GPU device";
    arch_ = (*devs)[0].arch;
    const auto first = templates::mlirRowwiseConfigs("silu_mul", arch_).front();
    if (!pathExists(kPtxDir + "/" + templates::mlirKernelFileName("silu_mul", arch_, first, "ptx")))
      GTEST_SKIP() << "no lowered MLIR kernels for " << arch_ << " in " << kPtxDir
                   << " (run `bash dev/mlir_lower.sh build " << arch_
                   << "` where mlir-opt-19 is installed and carry .mlirptx)";
    backend_ = std::shared_ptr<Backend>(std::move(*b));
    dir_ = "/tmp/ktune-srcfn-gpu-" + std::to_string(::getpid());
    EngineOptions eo;
    eo.options.cache_dir = dir_;
    eo.options.tuning = true;
    eo.options.isolate = false;
    eo.options.warmup_ms = 2;
    eo.options.rep_ms = 10;
    eo.options.static_prune = false;  // every config is benchmarked and verified
    eo.bench.abort_factor = 1e9;        // no early rejection: every config is timed whole
    auto t = Engine::create(backend_, eo);
    ASSERT_TRUE(t.ok()) << t.status().toString();
    tuner_ = std::move(*t);
  }
  void TearDown() override {
    tuner_.reset();
    for (DevicePtr p : allocs_) (void)backend_->free(p);
    if (!dir_.empty()) (void)removeTree(dir_);
  }
  DevicePtr upload(const std::vector<unsigned char>& bytes) {
    auto p = backend_->alloc(bytes.size());
    EXPECT_TRUE(p.ok());
    allocs_.push_back(*p);
    EXPECT_TRUE(backend_->copyToDevice(*p, bytes.data(), bytes.size()).ok());
    return *p;
  }

  // The family of MLIR kernel `name`: one PTX module per config, from the lowered files.
  testfamily::SpecFamily<RowProblem> family(const std::string& name) {
    testfamily::SpecFamily<RowProblem> fam;
    auto& [f, x] = fam;
    f.name = "mlir_ptx_" + name;
    f.entry = templates::mlirKernelEntry(name);
    for (const auto& m : templates::mlirRowwiseConfigs(name, arch_)) x.configs.push_back(toConfig(m));
    const std::string arch = arch_;
    // The module follows the problem too: RMSNorm's register items come from the row length.
    x.source_fn = [name, arch](const Config& c, const void* vp) -> Expected<ConfigModule> {
      const RowProblem& p = testfamily::problemOf<RowProblem>(vp);
      const auto m = templates::mlirConfigFor(
          name, p.d, {"bf16", int(c.getInt("VEC")), int(c.getInt("THREADS")),
                      int(c.getInt("ROWS_PER_BLOCK"))});
      ConfigModule mod;
      mod.language = Language::kPtx;
      KTUNE_ASSIGN_OR_RETURN(
          mod.text, readFile(kPtxDir + "/" + templates::mlirKernelFileName(name, arch, m, "ptx")));
      return mod;
    };
    f.key = [](const RowProblem& p, KeyFields& k) { k.add("rows", p.rows).add("d", p.d); };
    f.launch = [](const Knobs& c, const RowProblem& p, const DeviceFacts&) {
      const templates::MlirRowwiseConfig m{"bf16", int(c["VEC"]), int(c["THREADS"]),
                                           int(c["ROWS_PER_BLOCK"])};
      const auto s = templates::mlirKernelLaunch(p.kernel, m, p.rows, p.d);
      Launch l;
      l.grid[0] = s.grid.x;
      l.grid[1] = s.grid.y;
      l.grid[2] = s.grid.z;
      l.block[0] = s.block.x;
      l.block[1] = s.block.y;
      l.block[2] = s.block.z;
      return l;
    };
    // Config-independent arguments (the kernels take d, not d / VEC): one list for every config.
    f.args = [](const RowProblem& p, ArgPack& pack) {
      KernelArgs& a = EngineViews::args(pack);
      if (p.kernel == "rmsnorm") {
        addMemref(a, p.x, p.rows * p.d);
        addMemref(a, p.w, p.d);
        addMemref(a, p.y, p.rows * p.d);
        a.add(p.rows).add(p.d).add(float(1.0 / double(p.d))).add(1e-6f);
      } else {
        addMemref(a, p.y, p.rows * p.d);
        addMemref(a, p.x, p.rows * 2 * p.d);
        a.add(p.rows).add(p.d);
      }
    };
    Backend* b = backend_.get();
    f.before_run = [b](const RowProblem& p, StreamHandle s) {
      return b->memset8(p.y, 0xff, p.y_bytes, s);  // bf16 0xffff is NaN: unwritten fails
    };
    f.before_timed_run = [](const RowProblem&, StreamHandle) { return Status::Ok(); };
    x.verify = [b](const void* vp, StreamHandle) -> Expected<VerifyResult> {
      const RowProblem& p = testfamily::problemOf<RowProblem>(vp);
      std::vector<unsigned char> out(p.y_bytes);
      KTUNE_RETURN_IF_ERROR(b->copyToHost(out.data(), p.y, out.size()));
      VerifyResult r;
      r.checked = static_cast<int64_t>(p.want.size());
      r.mismatches = countBad(rowwise::unpack(rowwise::RowDType::kBF16, out.data(), p.want.size()),
                              p.want);
      r.ok = r.mismatches == 0;
      return r;
    };
    return fam;
  }

  // Tunes `f` for `p`: every config must compile, run and verify; then the tuned call.
  void tuneAndCheck(testfamily::SpecFamily<RowProblem> f, const RowProblem& p) {
    const size_t configs = f.extras.configs.size();
    auto fam = addFamily(*tuner_, std::move(f));
    ASSERT_TRUE(fam.ok()) << fam.status().toString();
    auto rep = fam->tune(p);
    ASSERT_TRUE(rep.ok()) << rep.status().toString();
    EXPECT_FALSE(rep->winner.empty()) << rep->tree();
    EXPECT_EQ(rep->candidates.size(), configs);
    for (const auto& c : rep->candidates)
      EXPECT_TRUE(c.status == Code::kOk || c.reason.find("identical binary") != std::string::npos)
          << c.config << ": " << codeName(c.status) << ": " << c.reason;
    std::printf("%s: winner %s, median %.2f us over %zu configs\n", fam->name().c_str(),
                rep->winner.c_str(), rep->winner_stats.median_ms * 1e3, configs);
    // The tuned call runs the winner: checked once more.
    ASSERT_TRUE((*fam)(p).ok());
    ASSERT_TRUE(backend_->synchronize().ok());
    std::vector<unsigned char> out(p.y_bytes);
    ASSERT_TRUE(backend_->copyToHost(out.data(), p.y, out.size()).ok());
    EXPECT_EQ(countBad(rowwise::unpack(rowwise::RowDType::kBF16, out.data(), p.want.size()), p.want), 0);
  }

  std::shared_ptr<Backend> backend_;
  std::unique_ptr<Engine> tuner_;
  std::string arch_, dir_;
  std::vector<DevicePtr> allocs_;
};

TEST_F(SourceFnMlirGpu, RmsNormModulesTunedAndVerified) {
  rowwise::RmsNormProblem rp;
  rp.rows = 96;
  rp.cols = 4096 + 64;  // a multiple of every VEC, not of THREADS * VEC
  std::mt19937 rng(11);
  std::normal_distribution<double> dist(0, 1);
  std::vector<double> x(rp.rows * rp.cols), w(rp.cols);
  for (auto& v : x) v = rowwise::roundTo(rp.dtype, dist(rng));
  for (auto& v : w) v = rowwise::roundTo(rp.dtype, 1 + 0.5 * dist(rng));
  RowProblem p;
  p.kernel = "rmsnorm";
  p.rows = rp.rows;
  p.d = rp.cols;
  p.want.resize(x.size());
  rp.eps = 1e-6f;
  rowwise::rmsNormReference(rp, x.data(), w.data(), nullptr, p.want.data(), nullptr);
  p.x = upload(rowwise::pack(rp.dtype, x));
  p.w = upload(rowwise::pack(rp.dtype, w));
  p.y_bytes = x.size() * 2;
  p.y = upload(std::vector<unsigned char>(p.y_bytes, 0xff));
  tuneAndCheck(family("rmsnorm"), p);
}

TEST_F(SourceFnMlirGpu, SiluMulModulesTunedAndVerified) {
  rowwise::SiluMulProblem sp;
  sp.rows = 67;
  sp.d = 11008;
  std::mt19937 rng(5);
  std::normal_distribution<double> dist(0, 2);
  std::vector<double> x(sp.rows * 2 * sp.d);
  for (auto& v : x) v = rowwise::roundTo(sp.dtype, dist(rng));
  RowProblem p;
  p.kernel = "silu_mul";
  p.rows = sp.rows;
  p.d = sp.d;
  p.want.resize(sp.rows * sp.d);
  rowwise::siluMulReference(sp, x.data(), p.want.data());
  p.x = upload(rowwise::pack(sp.dtype, x));
  p.y_bytes = p.want.size() * 2;
  p.y = upload(std::vector<unsigned char>(p.y_bytes, 0xff));
  tuneAndCheck(family("silu_mul"), p);
}

}  // namespace
}  // namespace ktune
