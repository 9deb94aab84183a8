// Kernels handed over as PTX and MLIR run on the GPU: saxpy from PTX (NVIDIA) and from MLIR, and
// the MLIR-written RMSNorm and SiLU·Mul against the float64 references the C++ templates are
// checked with (random bf16 data, outputs poisoned with NaN first, several configs). Skips
// without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compiler/compiler.h"
#include "runtime/backend.h"
#include "templates/mlir/mlir_kernels.h"
#include "templates/rowwise.h"
#include "tests/gpu/mlir_gpu_util.h"
#include "tests/unit/ir_test_kernels.h"

namespace ktune {
namespace {

using mlirgpu::addMemref;
using mlirgpu::countBad;

class IrGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = openBackend("auto");
    if (!b.ok()) GTEST_SKIP() << "no GPU: " << b.status().toString();
    auto devs = (*b)->devices();
    if (!devs.ok() || devs->empty()) GTEST_SKIP() << "no GPU device";
    ASSERT_TRUE((*b)->setDevice(0).ok());
    backend_ = std::move(*b);
    arch_ = (*devs)[0].arch;
    auto c = openIrCompiler();
    ASSERT_TRUE(c.ok());
    compiler_ = std::move(*c);
  }
  void TearDown() override {
    for (auto p : allocs_) (void)backend_->free(p);
  }

  FunctionHandle load(Language lang, const std::string& text, const std::string& entry,
                      unsigned dumps = kDumpNone, CodeObject* out = nullptr) {
    CompileRequest req;
    req.language = lang;
    req.source = text;
    req.entry = entry;
    req.arch = arch_;
    req.dumps = dumps;
    auto co = compiler_->compile(req);
    EXPECT_TRUE(co.ok()) << co.status().message();
    if (!co.ok()) return {};
    auto m = backend_->loadModule(co->binary);
    EXPECT_TRUE(m.ok()) << m.status().toString();
    if (!m.ok()) return {};
    auto f = backend_->getFunction(*m, co->lowered_entry);
    EXPECT_TRUE(f.ok()) << f.status().toString();
    if (out) *out = std::move(*co);
    return f.ok() ? *f : FunctionHandle{};
  }
  DevicePtr upload(const void* data, size_t bytes) {
    auto p = backend_->alloc(bytes);
    EXPECT_TRUE(p.ok());
    allocs_.push_back(*p);
    EXPECT_TRUE(backend_->copyToDevice(*p, data, bytes).ok());
    return *p;
  }
  // An MLIR-written rowwise kernel (templates/mlir/) with config `c`, loaded.
  // The MLIR tests need mlir-opt-19/mlir-translate-19 on this machine (the GPU machine may not
  // have them): without them the tests skip, saying so, instead of failing on a missing tool.
  bool mlirToolsMissing(std::string* why) {
    CompileRequest probe;
    probe.language = Language::kMlir;
    probe.source = "module {}";
    probe.entry = "none";
    probe.arch = arch_;
    auto co = compiler_->compile(probe);
    if (!co.ok() && co.status().code() == Code::kUnavailable) {
      *why = co.status().message();
      return true;
    }
    return false;
  }
  FunctionHandle loadMlirKernel(const std::string& name, const templates::MlirRowwiseConfig& c) {
    auto text = templates::mlirKernelSource(name, arch_, c);
    EXPECT_TRUE(text.ok()) << text.status().message();
    return text.ok() ? load(Language::kMlir, *text, templates::mlirKernelEntry(name)) : FunctionHandle{};
  }

  // saxpy y = a*x + y on n elements with `f`; returns the number of wrong elements.
  int runSaxpy(FunctionHandle f, bool memref_args) {
    const int n = 100003;
    std::vector<float> x(n), y(n);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (int i = 0; i < n; ++i) x[i] = dist(rng), y[i] = dist(rng);
    DevicePtr dx = upload(x.data(), n * 4), dy = upload(y.data(), n * 4);
    KernelArgs args;
    const float a = 1.5f;
    if (memref_args) {
      args.add(int32_t(n)).add(a);
      addMemref(args, dx, n);
      addMemref(args, dy, n);
    } else {
      args.add(dx).add(dy).add(a).add(int32_t(n));
    }
    EXPECT_TRUE(backend_->launch(f, {unsigned((n + 255) / 256), 1, 1}, {256, 1, 1}, 0, args.data()).ok());
    EXPECT_TRUE(backend_->synchronize().ok());
    std::vector<float> out(n);
    EXPECT_TRUE(backend_->copyToHost(out.data(), dy, n * 4).ok());
    int bad = 0;
    for (int i = 0; i < n; ++i)
      if (std::fabs(out[i] - (a * x[i] + y[i])) > 1e-5f * (1 + std::fabs(y[i]))) ++bad;
    return bad;
  }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Compiler> compiler_;
  std::string arch_;
  std::vector<DevicePtr> allocs_;
};

TEST_F(IrGpuTest, PtxSaxpy) {
  if (arch_.rfind("sm_", 0) != 0) GTEST_SKIP() << "PTX is NVIDIA only";
  const std::string ptx = R"(
.version 8.0
.target )" + arch_ + R"(
.address_size 64
.visible .entry saxpy_ptx(.param .u64 px, .param .u64 py, .param .f32 pa, .param .u32 pn) {
  .reg .pred %p; .reg .b32 %r<5>; .reg .f32 %f<4>; .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [px]; ld.param.u64 %rd2, [py]; ld.param.f32 %f1, [pa]; ld.param.u32 %r1, [pn];
  mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mov.u32 %r4, %tid.x;
  mad.lo.s32 %r2, %r2, %r3, %r4;
  setp.ge.u32 %p, %r2, %r1;
  @%p bra DONE;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd1, %rd3; add.s64 %rd5, %rd2, %rd3;
  ld.global.f32 %f2, [%rd4]; ld.global.f32 %f3, [%rd5];
  fma.rn.f32 %f3, %f1, %f2, %f3;
  st.global.f32 [%rd5], %f3;
DONE:
  ret;
}
)";
  FunctionHandle f = load(Language::kPtx, ptx, "saxpy_ptx");
  ASSERT_NE(f.p, nullptr);
  EXPECT_EQ(runSaxpy(f, false), 0);
}

TEST_F(IrGpuTest, MlirSaxpy) {
  if (std::string why; mlirToolsMissing(&why)) GTEST_SKIP() << why;
  FunctionHandle f = load(Language::kMlir, kSaxpyMlir, "saxpy");
  ASSERT_NE(f.p, nullptr);
  EXPECT_EQ(runSaxpy(f, true), 0);
}

TEST_F(IrGpuTest, MlirRmsNormMatchesReference) {
  if (std::string why; mlirToolsMissing(&why)) GTEST_SKIP() << why;
  // Register items from the row length (masked past it), too few (the rest loops), none.
  for (const templates::MlirRowwiseConfig& c0 :
       {templates::MlirRowwiseConfig{"bf16", 8, 256, 1}, {"bf16", 4, 128, 2, 1},
        {"bf16", 8, 256, 4, 0}}) {
    rowwise::RmsNormProblem p;
    p.rows = 37;
    p.cols = 4096 + 8 * c0.vec;  // d % VEC == 0, not a multiple of THREADS * VEC
    const auto c = c0.items == 0 && c0.rows_per_block == 1
                       ? templates::mlirConfigFor("rmsnorm", p.cols, c0) : c0;
    SCOPED_TRACE(c.toString());
    FunctionHandle f = loadMlirKernel("rmsnorm", c);
    ASSERT_NE(f.p, nullptr);
    std::mt19937 rng(11);
    std::normal_distribution<double> dist(0, 1);
    std::vector<double> x(p.rows * p.cols), w(p.cols);
    for (auto& v : x) v = rowwise::roundTo(p.dtype, dist(rng));
    for (auto& v : w) v = rowwise::roundTo(p.dtype, 1 + 0.5 * dist(rng));
    std::vector<double> want(x.size());
    rowwise::rmsNormReference(p, x.data(), w.data(), nullptr, want.data(), nullptr);
    auto xb = rowwise::pack(p.dtype, x), wb = rowwise::pack(p.dtype, w);
    std::vector<unsigned char> poison(xb.size(), 0xff);  // bf16 0xffff is NaN
    DevicePtr dx = upload(xb.data(), xb.size()), dw = upload(wb.data(), wb.size()),
              dy = upload(poison.data(), poison.size());
    const int64_t dv = p.cols / c.vec;
    KernelArgs args;
    addMemref(args, dx, p.rows * dv);
    addMemref(args, dw, dv);
    addMemref(args, dy, p.rows * dv);
    args.add(int64_t(p.rows)).add(int64_t(p.cols)).add(float(1.0 / double(p.cols))).add(p.eps);
    const auto shape = templates::mlirKernelLaunch("rmsnorm", c, p.rows, p.cols);
    ASSERT_TRUE(backend_->launch(f, shape.grid, shape.block, 0, args.data()).ok());
    ASSERT_TRUE(backend_->synchronize().ok());
    std::vector<unsigned char> out(poison.size());
    ASSERT_TRUE(backend_->copyToHost(out.data(), dy, out.size()).ok());
    EXPECT_EQ(countBad(rowwise::unpack(p.dtype, out.data(), x.size()), want), 0);
  }
}

TEST_F(IrGpuTest, MlirSiluMulMatchesReference) {
  if (std::string why; mlirToolsMissing(&why)) GTEST_SKIP() << why;
  for (const templates::MlirRowwiseConfig& c :
       {templates::MlirRowwiseConfig{"bf16", 8, 256, 1}, {"bf16", 8, 128, 4}, {"bf16", 2, 64 * 4, 2}}) {
    SCOPED_TRACE(c.toString());
    FunctionHandle f = loadMlirKernel("silu_mul", c);
    ASSERT_NE(f.p, nullptr);
    rowwise::SiluMulProblem p;
    p.rows = 29;
    p.d = 11008;
    std::mt19937 rng(5);
    std::normal_distribution<double> dist(0, 2);
    std::vector<double> x(p.rows * 2 * p.d);
    for (auto& v : x) v = rowwise::roundTo(p.dtype, dist(rng));
    std::vector<double> want(p.rows * p.d);
    rowwise::siluMulReference(p, x.data(), want.data());
    auto xb = rowwise::pack(p.dtype, x);
    std::vector<unsigned char> poison(want.size() * 2, 0xff);
    DevicePtr dx = upload(xb.data(), xb.size()), dout = upload(poison.data(), poison.size());
    const int64_t dv = p.d / c.vec;
    KernelArgs args;
    addMemref(args, dout, p.rows * dv);
    addMemref(args, dx, p.rows * 2 * dv);
    args.add(int64_t(p.rows)).add(int64_t(p.d));
    const auto shape = templates::mlirKernelLaunch("silu_mul", c, p.rows, p.d);
    ASSERT_TRUE(backend_->launch(f, shape.grid, shape.block, 0, args.data()).ok());
    ASSERT_TRUE(backend_->synchronize().ok());
    std::vector<unsigned char> out(poison.size());
    ASSERT_TRUE(backend_->copyToHost(out.data(), dout, out.size()).ok());
    EXPECT_EQ(countBad(rowwise::unpack(p.dtype, out.data(), want.size()), want), 0);
  }
}

}  // namespace
}  // namespace ktune
