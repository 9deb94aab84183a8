// CUDA backend on a real GPU (label `gpu`). Every test skips, visibly, when openCudaBackend()
// fails (no driver, no device). The kernels are hand-written PTX so no NVRTC is needed: the
// driver JITs them, which also exercises loadModule's PTX path and its error log.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/backend.h"

namespace ktune {
namespace {

// saxpy: y[i] = fma(a, x[i], y[i]) for i < n.  oob_load: reads address 0x10 (always unmapped).
constexpr const char* kPtx = R"(
.version 7.0
.target sm_75
.address_size 64

.visible .entry saxpy(
    .param .u64 saxpy_x,
    .param .u64 saxpy_y,
    .param .f32 saxpy_a,
    .param .u32 saxpy_n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [saxpy_x];
    ld.param.u64 %rd2, [saxpy_y];
    ld.param.f32 %f1, [saxpy_a];
    ld.param.u32 %r1, [saxpy_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd3, %rd5;
    add.s64 %rd7, %rd4, %rd5;
    ld.global.f32 %f2, [%rd6];
    ld.global.f32 %f3, [%rd7];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    st.global.f32 [%rd7], %f4;
DONE:
    ret;
}

.visible .entry oob_load(
    .param .u64 oob_load_out)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<4>;

    ld.param.u64 %rd1, [oob_load_out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u64 %rd3, 16;
    ld.volatile.global.u32 %r1, [%rd3];
    st.global.u32 [%rd2], %r1;
    ret;
}
)";

class CudaGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = openCudaBackend();
    if (!b.ok()) GTEST_SKIP() << "no GPU: " << b.status().toString();
    backend_ = std::move(b).value();
    Status s = backend_->setDevice(0);
    ASSERT_TRUE(s.ok()) << s.toString();
  }

  // Loads kPtx and returns the named function (module kept for the test's lifetime).
  FunctionHandle function(const std::string& name) {
    if (module_.p == nullptr) {
      auto m = backend_->loadModule(kPtx);
      EXPECT_TRUE(m.ok()) << m.status().toString();
      if (!m.ok()) return {};
      module_ = *m;
    }
    auto f = backend_->getFunction(module_, name);
    EXPECT_TRUE(f.ok()) << f.status().toString();
    return f.ok() ? *f : FunctionHandle{};
  }

  void TearDown() override {
    if (backend_ && module_.p != nullptr) {
      EXPECT_TRUE(backend_->unloadModule(module_).ok());
    }
  }

  std::unique_ptr<Backend> backend_;
  ModuleHandle module_;
};

TEST_F(CudaGpuTest, DeviceInfoIsSane) {
  auto devs = backend_->devices();
  ASSERT_TRUE(devs.ok()) << devs.status().toString();
  ASSERT_FALSE(devs->empty());
  const DeviceInfo& d = (*devs)[0];
  EXPECT_EQ(d.vendor, Vendor::kNvidia);
  EXPECT_EQ(d.ordinal, 0);
  EXPECT_FALSE(d.name.empty());
  EXPECT_EQ(d.arch.rfind("sm_", 0), 0u) << d.arch;
  if (d.cc_major == 9 && d.cc_minor == 0) {
    EXPECT_EQ(d.arch, "sm_90a");
  }
  EXPECT_GE(d.cc_major, 7);
  EXPECT_GT(d.multiprocessors, 0);
  EXPECT_EQ(d.warp_size, 32);
  EXPECT_GT(d.l2_bytes, 0);
  EXPECT_GT(d.global_mem_bytes, int64_t{1} << 30);
  EXPECT_GT(d.shared_per_block, 0);
  EXPECT_GE(d.shared_per_block_optin, d.shared_per_block);
  EXPECT_GE(d.shared_per_sm, d.shared_per_block_optin);
  EXPECT_GT(d.regs_per_block, 0);
  EXPECT_GE(d.regs_per_sm, d.regs_per_block);
  EXPECT_GE(d.max_threads_per_block, 512);
  EXPECT_GE(d.max_threads_per_sm, d.max_threads_per_block);
  EXPECT_GT(d.max_blocks_per_sm, 0);
  EXPECT_GT(d.mem_bus_width_bits, 0);
  EXPECT_FALSE(d.driver_version.empty());
  EXPECT_FALSE(d.pci_bus_id.empty());
  EXPECT_EQ(backend_->name(), "cuda");
  EXPECT_EQ(backend_->version(), d.driver_version);
  std::printf("device 0: %s %s, %d SMs, L2 %lld B, smem/block opt-in %lld B, driver %s, bus %s\n",
              d.name.c_str(), d.arch.c_str(), d.multiprocessors,
              static_cast<long long>(d.l2_bytes),
              static_cast<long long>(d.shared_per_block_optin), d.driver_version.c_str(),
              d.pci_bus_id.c_str());
  EXPECT_EQ(backend_->setDevice(static_cast<int>(devs->size())).code(), Code::kInvalidArgument);
}

TEST_F(CudaGpuTest, MemoryRoundTrip) {
  constexpr size_t kBytes = (1 << 20) + 3;
  std::mt19937 rng(123);
  std::vector<unsigned char> src(kBytes), back(kBytes, 0);
  for (auto& c : src) c = static_cast<unsigned char>(rng());

  auto a = backend_->alloc(kBytes);
  auto b = backend_->alloc(kBytes);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(backend_->copyToDevice(*a, src.data(), kBytes).ok());
  ASSERT_TRUE(backend_->copyDeviceToDevice(*b, *a, kBytes).ok());
  ASSERT_TRUE(backend_->synchronize().ok());
  ASSERT_TRUE(backend_->copyToHost(back.data(), *b, kBytes).ok());
  EXPECT_EQ(std::memcmp(src.data(), back.data(), kBytes), 0);

  ASSERT_TRUE(backend_->memset8(*a, 0xA5, kBytes).ok());
  ASSERT_TRUE(backend_->synchronize().ok());
  ASSERT_TRUE(backend_->copyToHost(back.data(), *a, kBytes).ok());
  for (size_t i = 0; i < kBytes; ++i) ASSERT_EQ(back[i], 0xA5) << i;

  constexpr size_t kWords = 4097;
  ASSERT_TRUE(backend_->memset32(*b, 0xDEADBEEFu, kWords).ok());
  ASSERT_TRUE(backend_->synchronize().ok());
  std::vector<uint32_t> words(kWords + 1, 0);
  ASSERT_TRUE(backend_->copyToHost(words.data(), *b, (kWords + 1) * 4).ok());
  for (size_t i = 0; i < kWords; ++i) ASSERT_EQ(words[i], 0xDEADBEEFu) << i;
  EXPECT_NE(words[kWords], 0xDEADBEEFu);  // memset32 stopped at count (source data was random)

  EXPECT_EQ(backend_->alloc(0).status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(backend_->free(0).ok());
  EXPECT_EQ(backend_->memset32(*a + 1, 0, 4).code(), Code::kInvalidArgument);
  EXPECT_TRUE(backend_->free(*a).ok());
  EXPECT_TRUE(backend_->free(*b).ok());
}

struct Saxpy {
  size_t n;
  std::vector<float> x, y;
  explicit Saxpy(size_t n_, uint32_t seed) : n(n_), x(n_), y(n_) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-2.f, 2.f);
    for (size_t i = 0; i < n; ++i) {
      x[i] = dist(rng);
      y[i] = dist(rng);
    }
  }
};

TEST_F(CudaGpuTest, PtxSaxpyOnOddSizeMatchesHostAndIsTimed) {
  FunctionHandle f = function("saxpy");
  ASSERT_NE(f.p, nullptr);
  Saxpy s(1000003, 7);
  const float a = 1.7f;
  auto dx = backend_->alloc(s.n * 4);
  auto dy = backend_->alloc(s.n * 4);
  ASSERT_TRUE(dx.ok() && dy.ok());
  ASSERT_TRUE(backend_->copyToDevice(*dx, s.x.data(), s.n * 4).ok());
  ASSERT_TRUE(backend_->copyToDevice(*dy, s.y.data(), s.n * 4).ok());

  auto stream = backend_->createStream();
  ASSERT_TRUE(stream.ok()) << stream.status().toString();
  auto e0 = backend_->createEvent();
  auto e1 = backend_->createEvent();
  ASSERT_TRUE(e0.ok() && e1.ok());

  KernelArgs args;
  args.add(*dx).add(*dy).add(a).add(static_cast<uint32_t>(s.n));
  Dim3 block{256, 1, 1};
  Dim3 grid{static_cast<unsigned>((s.n + 255) / 256), 1, 1};
  ASSERT_TRUE(backend_->recordEvent(*e0, *stream).ok());
  Status st = backend_->launch(f, grid, block, 0, args.data(), *stream);
  ASSERT_TRUE(st.ok()) << st.toString();
  ASSERT_TRUE(backend_->recordEvent(*e1, *stream).ok());
  ASSERT_TRUE(backend_->synchronize(*stream).ok());
  EXPECT_TRUE(backend_->checkError().ok());
  auto ms = backend_->elapsedMs(*e0, *e1);
  ASSERT_TRUE(ms.ok()) << ms.status().toString();
  EXPECT_GT(*ms, 0.f);
  EXPECT_LT(*ms, 1000.f);

  std::vector<float> out(s.n);
  ASSERT_TRUE(backend_->copyToHost(out.data(), *dy, s.n * 4).ok());
  size_t bad = 0;
  for (size_t i = 0; i < s.n; ++i) {
    float want = std::fma(a, s.x[i], s.y[i]);  // the kernel uses fma.rn.f32: bit-exact
    if (out[i] != want && ++bad < 5) {
      ADD_FAILURE() << "element " << i << ": " << out[i] << " vs " << want;
    }
  }
  EXPECT_EQ(bad, 0u) << "mismatches out of " << s.n;

  EXPECT_TRUE(backend_->destroyEvent(*e0).ok());
  EXPECT_TRUE(backend_->destroyEvent(*e1).ok());
  EXPECT_TRUE(backend_->destroyStream(*stream).ok());
  EXPECT_TRUE(backend_->free(*dx).ok());
  EXPECT_TRUE(backend_->free(*dy).ok());
}

TEST_F(CudaGpuTest, LaunchFromAnotherThreadWithoutSetDevice) {
  FunctionHandle f = function("saxpy");
  ASSERT_NE(f.p, nullptr);
  Saxpy s(4099, 9);
  auto dx = backend_->alloc(s.n * 4);
  auto dy = backend_->alloc(s.n * 4);
  ASSERT_TRUE(dx.ok() && dy.ok());
  ASSERT_TRUE(backend_->copyToDevice(*dx, s.x.data(), s.n * 4).ok());
  ASSERT_TRUE(backend_->copyToDevice(*dy, s.y.data(), s.n * 4).ok());
  Status launched, synced;
  std::thread t([&] {
    KernelArgs args;
    args.add(*dx).add(*dy).add(2.0f).add(static_cast<uint32_t>(s.n));
    launched = backend_->launch(f, {static_cast<unsigned>((s.n + 127) / 128), 1, 1}, {128, 1, 1},
                                0, args.data());
    synced = backend_->synchronize();
  });
  t.join();
  ASSERT_TRUE(launched.ok()) << launched.toString();
  ASSERT_TRUE(synced.ok()) << synced.toString();
  std::vector<float> out(s.n);
  ASSERT_TRUE(backend_->copyToHost(out.data(), *dy, s.n * 4).ok());
  for (size_t i = 0; i < s.n; ++i) ASSERT_EQ(out[i], std::fma(2.0f, s.x[i], s.y[i])) << i;
  EXPECT_TRUE(backend_->free(*dx).ok());
  EXPECT_TRUE(backend_->free(*dy).ok());
}

TEST_F(CudaGpuTest, AttributesOccupancyAndSharedLimits) {
  FunctionHandle f = function("saxpy");
  ASSERT_NE(f.p, nullptr);
  auto attr = backend_->attributes(f);
  ASSERT_TRUE(attr.ok()) << attr.status().toString();
  EXPECT_GT(attr->num_regs, 0);
  EXPECT_GT(attr->max_threads_per_block, 0);
  EXPECT_LE(attr->max_threads_per_block, 1024);
  EXPECT_EQ(attr->static_shared_bytes, 0);
  EXPECT_GT(attr->binary_version, 0);
  EXPECT_GT(attr->ptx_version, 0);

  auto occ = backend_->occupancyBlocksPerSm(f, 256, 0);
  ASSERT_TRUE(occ.ok()) << occ.status().toString();
  EXPECT_GE(*occ, 1);
  EXPECT_EQ(backend_->occupancyBlocksPerSm(f, 0, 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(backend_->occupancyBlocksPerSm(f, 4096, 0).status().code(), Code::kInvalidArgument);

  auto devs = backend_->devices();
  ASSERT_TRUE(devs.ok());
  const int64_t optin = (*devs)[0].shared_per_block_optin;
  EXPECT_EQ(backend_->setMaxDynamicShared(f, optin + 1).code(), Code::kOutOfResources);
  EXPECT_EQ(backend_->setMaxDynamicShared(f, -1).code(), Code::kInvalidArgument);

  // Above the default 48 KiB a launch needs the opt-in; after it, the same launch works.
  auto dx = backend_->alloc(1024 * 4);
  ASSERT_TRUE(dx.ok());
  KernelArgs args;
  args.add(*dx).add(*dx).add(1.0f).add(uint32_t{0});  // n = 0: touches no memory
  const size_t big = static_cast<size_t>(optin);
  if (big > 48 * 1024) {
    Status refused = backend_->launch(f, {1, 1, 1}, {32, 1, 1}, big, args.data());
    EXPECT_FALSE(refused.ok());
    EXPECT_NE(refused.code(), Code::kDeviceFault) << refused.toString();
    EXPECT_NE(refused.message().find("cuLaunchKernel"), std::string::npos) << refused.toString();
  }
  ASSERT_TRUE(backend_->setMaxDynamicShared(f, optin).ok());
  auto raised = backend_->attributes(f);
  ASSERT_TRUE(raised.ok());
  EXPECT_EQ(raised->max_dynamic_shared_bytes, optin);
  Status ok = backend_->launch(f, {1, 1, 1}, {32, 1, 1}, big, args.data());
  EXPECT_TRUE(ok.ok()) << ok.toString();
  EXPECT_TRUE(backend_->synchronize().ok());
  EXPECT_EQ(backend_->launch(f, {1, 1, 1}, {32, 1, 1}, big + 1, args.data()).code(),
            Code::kOutOfResources);
  EXPECT_TRUE(backend_->free(*dx).ok());
}

TEST_F(CudaGpuTest, BadLaunchesAreRejectedBeforeTheDriver) {
  FunctionHandle f = function("saxpy");
  ASSERT_NE(f.p, nullptr);
  KernelArgs args;
  args.add(DevicePtr{0}).add(DevicePtr{0}).add(1.0f).add(uint32_t{0});
  Status s = backend_->launch(f, {0, 1, 1}, {128, 1, 1}, 0, args.data());
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.toString();
  EXPECT_EQ(backend_->launch(f, {1, 1, 1}, {2048, 1, 1}, 0, args.data()).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(backend_->launch(f, {1, 1, 1}, {0, 1, 1}, 0, args.data()).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(backend_->launch(FunctionHandle{}, {1, 1, 1}, {1, 1, 1}, 0, args.data()).code(),
            Code::kInvalidArgument);
  // The context is still healthy afterwards.
  EXPECT_TRUE(backend_->checkError().ok());
  EXPECT_TRUE(backend_->synchronize().ok());
}

TEST_F(CudaGpuTest, ModuleErrorsCarryTheDriverMessage) {
  EXPECT_EQ(backend_->loadModule("").status().code(), Code::kInvalidArgument);
  auto bad = backend_->loadModule(".version 7.0\n.target sm_75\n.address_size 64\n"
                                  ".visible .entry broken() { this is not ptx; }\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cuModuleLoadData"), std::string::npos)
      << bad.status().toString();
  std::printf("bad PTX -> %s\n", bad.status().toString().c_str());
  ASSERT_NE(function("saxpy").p, nullptr);
  auto missing = backend_->getFunction(module_, "no_such_kernel");
  EXPECT_EQ(missing.status().code(), Code::kNotFound) << missing.status().toString();
  // Looking a function up twice gives the same handle.
  EXPECT_EQ(function("saxpy").p, function("saxpy").p);
  EXPECT_TRUE(backend_->checkError().ok());
}

// Runs in a fresh process (threadsafe death-test style re-executes the binary), so the poisoned
// context never reaches the other tests. Exit code 0 = the fault was reported as it should be.
[[noreturn]] void faultingChild() {
  auto b = openCudaBackend();
  if (!b.ok()) {
    std::fprintf(stderr, "child: %s\n", b.status().toString().c_str());
    std::_Exit(2);
  }
  Backend& be = **b;
  auto m = be.loadModule(kPtx);
  auto f = m.ok() ? be.getFunction(*m, "oob_load") : Expected<FunctionHandle>(m.status());
  auto out = be.alloc(4);
  if (!f.ok() || !out.ok()) {
    std::fprintf(stderr, "child setup failed\n");
    std::_Exit(3);
  }
  KernelArgs args;
  args.add(*out);
  Status launched = be.launch(*f, {1, 1, 1}, {1, 1, 1}, 0, args.data());
  Status synced = launched.ok() ? be.synchronize() : launched;
  Status later = be.checkError();
  std::fprintf(stderr, "child: launch=%s sync=%s checkError=%s\n", launched.toString().c_str(),
               synced.toString().c_str(), later.toString().c_str());
  bool fault_reported = synced.code() == Code::kDeviceFault || synced.code() == Code::kLaunchError;
  bool sticky = later.code() == Code::kDeviceFault || later.code() == Code::kLaunchError;
  bool has_message = synced.message().find("CUDA_ERROR") != std::string::npos;
  std::fflush(stderr);
  std::_Exit(fault_reported && sticky && has_message ? 0 : 1);
}

TEST(CudaGpuFault, OutOfBoundsLoadIsADeviceFault) {
  {
    auto b = openCudaBackend();
    if (!b.ok()) GTEST_SKIP() << "no GPU: " << b.status().toString();
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(faultingChild(), ::testing::ExitedWithCode(0),
              "sync=(device_fault|launch_error): .*CUDA_ERROR");
}

}  // namespace
}  // namespace ktune
