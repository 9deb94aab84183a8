// The CUDA backend against a fake libcuda.so.1 (CI has no GPU, so this is where the backend's own
// logic is exercised: entry-point resolution through cuGetProcAddress_v2 with the right ABI
// version, device-info reading, primary-context binding with the thread_local fast path, launch
// checks before the driver, and how driver errors become Status codes and messages).
//
// The fake is tests/unit/fake_cuda_driver.h's, one per process (the backend's driver connection is
// a process-wide singleton, as in production).
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/fs.h"
#include "base/subprocess.h"
#include "runtime/backend.h"
#include "templates/gemm.h"
#include "tests/support/tools.h"
#include "tests/unit/fake_cuda_driver.h"

namespace ktune {
namespace {

class FakeCudaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fakeCudaForSuite(&skip_reason_);
    if (dir_.empty()) return;
    lib_ = ::dlopen((dir_ + "/libcuda.so.1").c_str(), RTLD_NOW | RTLD_GLOBAL);
    ASSERT_NE(lib_, nullptr) << ::dlerror();
  }

  void SetUp() override {
    if (!skip_reason_.empty()) KTUNE_SKIP_WITHOUT_TOOL(skip_reason_);
    ASSERT_NE(lib_, nullptr);
    auto b = openCudaBackend();
    ASSERT_TRUE(b.ok()) << b.status().toString();
    backend_ = std::move(b).value();
  }

  template <typename T>
  static T& fake(const char* name) {
    return *static_cast<T*>(::dlsym(lib_, name));
  }

  void TearDown() override {
    for (ModuleHandle m : modules_) EXPECT_TRUE(backend_->unloadModule(m).ok());
  }

  static void TearDownTestSuite() {
    // The fake stays mapped (the backend keeps it for the process); only its files go.
    if (!dir_.empty()) {
      ::unlink((dir_ + "/libcuda.so.1").c_str());
      ::unlink((dir_ + "/fake_cuda.c").c_str());
      ::rmdir(dir_.c_str());
    }
  }

  FunctionHandle kernel(const char* name = "k") {
    auto m = backend_->loadModule(".version 8.0\n.target sm_90a\n");
    EXPECT_TRUE(m.ok()) << m.status().toString();
    modules_.push_back(*m);
    auto f = backend_->getFunction(*m, name);
    EXPECT_TRUE(f.ok()) << f.status().toString();
    return *f;
  }

  static inline std::string dir_, skip_reason_;
  static inline void* lib_ = nullptr;
  std::unique_ptr<Backend> backend_;
  std::vector<ModuleHandle> modules_;
};

TEST_F(FakeCudaTest, ResolvesThroughGetProcAddressWithTheDriversVersion) {
  // The fake driver is 12.4: the backend must ask for min(12040, 13000), and cuEventElapsedTime
  // (renamed _v2 in 13.0) must resolve to the 12.x entry point.
  EXPECT_EQ(fake<int>("fake_requested_version"), 12040);
  EXPECT_EQ(backend_->version(), "12.4");
  EXPECT_EQ(backend_->name(), "cuda");
}

TEST_F(FakeCudaTest, DeviceInfoReadFromAttributes) {
  auto devs = backend_->devices();
  ASSERT_TRUE(devs.ok()) << devs.status().toString();
  ASSERT_EQ(devs->size(), 1u);
  const DeviceInfo& d = (*devs)[0];
  EXPECT_EQ(d.vendor, Vendor::kNvidia);
  EXPECT_EQ(d.name, "Fake H100");
  EXPECT_EQ(d.arch, "sm_90a");
  EXPECT_EQ(d.multiprocessors, 132);
  EXPECT_EQ(d.warp_size, 32);
  EXPECT_EQ(d.shared_per_block, 49152);
  EXPECT_EQ(d.shared_per_block_optin, 232448);
  EXPECT_EQ(d.shared_per_sm, 233472);
  EXPECT_EQ(d.regs_per_sm, 65536);
  EXPECT_EQ(d.max_threads_per_sm, 2048);
  EXPECT_EQ(d.max_blocks_per_sm, 32);
  EXPECT_EQ(d.l2_bytes, 52428800);
  EXPECT_EQ(d.global_mem_bytes, int64_t{80} << 30);
  EXPECT_EQ(d.clock_khz, 1980000);
  EXPECT_EQ(d.mem_bus_width_bits, 5120);
  EXPECT_EQ(d.pci_bus_id, "0000:19:00.0");
  EXPECT_EQ(d.driver_version, "12.4");
  EXPECT_EQ(backend_->setDevice(1).code(), Code::kInvalidArgument);
  EXPECT_EQ(backend_->setDevice(-1).code(), Code::kInvalidArgument);
}

TEST_F(FakeCudaTest, MemoryAndEvents) {
  auto p = backend_->alloc(64);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  std::vector<uint32_t> in(16), out(16, 0);
  for (int i = 0; i < 16; ++i) in[i] = 0x01010101u * i;
  ASSERT_TRUE(backend_->copyToDevice(*p, in.data(), 64).ok());
  ASSERT_TRUE(backend_->copyToHost(out.data(), *p, 64).ok());
  EXPECT_EQ(in, out);
  ASSERT_TRUE(backend_->memset32(*p, 7, 16).ok());
  ASSERT_TRUE(backend_->copyToHost(out.data(), *p, 64).ok());
  EXPECT_EQ(out, std::vector<uint32_t>(16, 7));
  EXPECT_EQ(backend_->alloc(0).status().code(), Code::kInvalidArgument);
  auto huge = backend_->alloc(size_t{1} << 41);
  EXPECT_EQ(huge.status().code(), Code::kOutOfResources) << huge.status().toString();
  EXPECT_NE(huge.status().message().find("cuMemAlloc"), std::string::npos);
  EXPECT_EQ(backend_->copyToHost(nullptr, *p, 4).code(), Code::kInvalidArgument);
  EXPECT_TRUE(backend_->free(*p).ok());

  auto e0 = backend_->createEvent();
  auto e1 = backend_->createEvent();
  ASSERT_TRUE(e0.ok() && e1.ok());
  ASSERT_TRUE(backend_->recordEvent(*e0).ok());
  FunctionHandle f = kernel();
  KernelArgs args;
  args.add(int{1});
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(backend_->launch(f, {1, 1, 1}, {32, 1, 1}, 0, args.data()).ok());
  }
  ASSERT_TRUE(backend_->recordEvent(*e1).ok());
  auto ms = backend_->elapsedMs(*e0, *e1);
  ASSERT_TRUE(ms.ok()) << ms.status().toString();
  EXPECT_FLOAT_EQ(*ms, 2.0f);  // the fake's clock: half a "ms" per launch
  EXPECT_EQ(backend_->elapsedMs(*e0, EventHandle{}).status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(backend_->destroyEvent(*e0).ok());
  EXPECT_TRUE(backend_->destroyEvent(*e1).ok());
}

// A thread beside another thread's capture must not touch the legacy stream (a capture of a
// blocking stream fails on any legacy-stream operation): with a thread stream set, its host copies
// and default-stream launches go to that stream; other threads keep the legacy stream.
TEST_F(FakeCudaTest, AThreadStreamTakesTheThreadsCopiesAndDefaultStreamWork) {
  auto p = backend_->alloc(64);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  auto s = backend_->createStream();
  ASSERT_TRUE(s.ok()) << s.status().toString();
  FunctionHandle f = kernel();
  KernelArgs args;
  args.add(int{1});
  std::vector<uint32_t> in(16, 5), out(16, 0);
  const int legacy_before = fake<int>("fake_legacy_copies");
  ASSERT_TRUE(backend_->setThreadStream(*s).ok());
  ASSERT_TRUE(backend_->copyToDevice(*p, in.data(), 64).ok());
  EXPECT_EQ(fake<void*>("fake_last_copy_stream"), s->p);
  ASSERT_TRUE(backend_->copyToHost(out.data(), *p, 64).ok());
  EXPECT_EQ(fake<void*>("fake_last_copy_stream"), s->p);
  EXPECT_EQ(in, out);
  ASSERT_TRUE(backend_->launch(f, {1, 1, 1}, {32, 1, 1}, 0, args.data()).ok());
  EXPECT_EQ(fake<void*>("fake_last_launch_stream"), s->p);
  EXPECT_EQ(fake<int>("fake_legacy_copies"), legacy_before) << "a copy went to the legacy stream";
  std::thread t([&] {  // another thread: still the legacy stream
    EXPECT_TRUE(backend_->copyToDevice(*p, in.data(), 64).ok());
    EXPECT_TRUE(backend_->launch(f, {1, 1, 1}, {32, 1, 1}, 0, args.data()).ok());
    EXPECT_EQ(fake<void*>("fake_last_launch_stream"), nullptr);
  });
  t.join();
  EXPECT_EQ(fake<int>("fake_legacy_copies"), legacy_before + 1);
  ASSERT_TRUE(backend_->setThreadStream(StreamHandle{}).ok());
  ASSERT_TRUE(backend_->copyToHost(out.data(), *p, 64).ok());
  EXPECT_EQ(fake<int>("fake_legacy_copies"), legacy_before + 2);
  EXPECT_TRUE(backend_->destroyStream(*s).ok());
  EXPECT_TRUE(backend_->free(*p).ok());
}

TEST_F(FakeCudaTest, LaunchBindsTheContextOncePerThread) {
  FunctionHandle f = kernel();
  KernelArgs args;
  args.add(DevicePtr{0}).add(1.5f);
  int before = fake<int>("fake_ctx_set_calls");
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(backend_->launch(f, {3, 2, 1}, {128, 2, 1}, 1024, args.data()).ok());
  }
  EXPECT_EQ(fake<int>("fake_ctx_set_calls"), before) << "context re-bound on the hot path";
  EXPECT_EQ(fake<unsigned[3]>("fake_last_grid")[1], 2u);
  EXPECT_EQ(fake<unsigned[3]>("fake_last_block")[0], 128u);
  EXPECT_EQ(fake<unsigned>("fake_last_shared"), 1024u);
  std::thread t([&] {
    for (int i = 0; i < 100; ++i) {
      EXPECT_TRUE(backend_->launch(f, {1, 1, 1}, {32, 1, 1}, 0, args.data()).ok());
    }
  });
  t.join();
  EXPECT_EQ(fake<int>("fake_ctx_set_calls"), before + 1) << "a new thread binds exactly once";
}

TEST_F(FakeCudaTest, LaunchChecksAndDriverErrors) {
  FunctionHandle f = kernel();
  KernelArgs args;
  int launches = fake<int>("fake_launches");
  EXPECT_EQ(backend_->launch(f, {0, 1, 1}, {32, 1, 1}, 0, args.data()).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(backend_->launch(f, {1, 65536, 1}, {32, 1, 1}, 0, args.data()).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(backend_->launch(f, {1, 1, 1}, {32, 1, 65}, 0, args.data()).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(backend_->launch(f, {1, 1, 1}, {1024, 2, 1}, 0, args.data()).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(backend_->launch(f, {1, 1, 1}, {32, 1, 1}, 232449, args.data()).code(),
            Code::kOutOfResources);
  EXPECT_EQ(fake<int>("fake_launches"), launches) << "bad configs must not reach the driver";

  // Within the device's opt-in limit but above the function's: the driver refuses.
  Status refused = backend_->launch(f, {1, 1, 1}, {32, 1, 1}, 100000, args.data());
  EXPECT_EQ(refused.code(), Code::kLaunchError) << refused.toString();
  EXPECT_NE(refused.message().find("cuLaunchKernel: CUDA_ERROR_INVALID_VALUE"), std::string::npos)
      << refused.message();
  EXPECT_EQ(backend_->setMaxDynamicShared(f, 232449).code(), Code::kOutOfResources);
  ASSERT_TRUE(backend_->setMaxDynamicShared(f, 100000).ok());
  EXPECT_TRUE(backend_->launch(f, {1, 1, 1}, {32, 1, 1}, 100000, args.data()).ok());
  auto a = backend_->attributes(f);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->num_regs, 40);
  EXPECT_EQ(a->max_dynamic_shared_bytes, 100000);
  EXPECT_EQ(a->binary_version, 90);
  auto occ = backend_->occupancyBlocksPerSm(f, 256, 0);
  ASSERT_TRUE(occ.ok());
  EXPECT_EQ(*occ, 8);
  // Resident clusters: cuOccupancyMaxActiveClusters with the cluster as launch attribute and a
  // grid of one cluster; a persistent grid of four-block clusters shrinks to them (120 blocks).
  auto clusters = backend_->maxActiveClusters(f, {4, 1, 1}, 256, 100000);
  ASSERT_TRUE(clusters.ok()) << clusters.status().toString();
  EXPECT_EQ(*clusters, 30);
  const unsigned* q = &fake<unsigned>("fake_cluster_query");
  EXPECT_EQ(q[0], 4u);
  EXPECT_EQ(q[1] * q[2], 1u);
  EXPECT_EQ(q[3], 256u);
  EXPECT_EQ(q[4], 100000u);
  EXPECT_EQ(residentClusterGrid(*backend_, f, {132, 1, 1}, {256, 1, 1}, 100000, 4).x, 120u);
  EXPECT_EQ(residentClusterGrid(*backend_, f, {8, 1, 1}, {256, 1, 1}, 100000, 4).x, 8u);
  // No answer (0 clusters: the launch says why), no cluster, no function: the grid as given.
  EXPECT_EQ(residentClusterGrid(*backend_, f, {132, 1, 1}, {384, 1, 1}, 0, 4).x, 132u);
  EXPECT_EQ(residentClusterGrid(*backend_, f, {132, 1, 1}, {256, 1, 1}, 0, 1).x, 132u);
  EXPECT_EQ(backend_->maxActiveClusters({}, {4, 1, 1}, 256, 0).status().code(),
            Code::kInvalidArgument);
  fake<int>("fake_dyn_shared_attr") = 48 * 1024;
}

// A tensor map's L2 promotion reaches the driver as CUtensorMapL2promotion (NONE/64B/128B/256B =
// 0..3; 256 B unless the descriptor says otherwise); other sizes are refused before the driver.
TEST_F(FakeCudaTest, TensorMapL2PromotionReachesTheDriver) {
  TensorMap2DDesc d;
  EXPECT_EQ(d.l2_promotion_bytes, 256);
  d.base = 4096;
  d.rows = 64;
  d.cols = 128;
  d.row_stride_bytes = 256;
  const std::pair<int, int> cases[] = {{256, 3}, {128, 2}, {64, 1}, {0, 0}};
  for (auto [bytes, code] : cases) {
    d.l2_promotion_bytes = bytes;
    auto m = backend_->encodeTensorMap2D(d);
    ASSERT_TRUE(m.ok()) << m.status().toString();
    EXPECT_EQ(fake<int>("fake_tmap_l2"), code) << bytes;
    EXPECT_EQ(fake<int>("fake_tmap_swizzle"), 3);  // 128 B
    EXPECT_EQ(m->opaque[0], 4096u);
  }
  fake<int>("fake_tmap_l2") = -1;
  d.l2_promotion_bytes = 32;
  auto bad = backend_->encodeTensorMap2D(d);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("L2 promotion"), std::string::npos) << bad.status().toString();
  EXPECT_EQ(fake<int>("fake_tmap_l2"), -1);
}

// A kTma config's maps reach the driver in boxes of its tiles (gemm::tmaBoxRows): the ping-pong
// 128 x 176 tile's B in one box of 176 rows, its A in one of 128, C in 64; 256 rows (the TMA's
// box limit) encode too; with the box probe knobs TMA_ABOX / TMA_BBOX = 64, 64.
TEST_F(FakeCudaTest, TmaConfigBoxesReachTheDriver) {
  using namespace gemm;
  const GemmShape s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 1024, 14336, 4096);
  Config p176{{"BLOCK_N", int64_t{176}},  {"CONSUMERS", int64_t{2}}, {"WG_M", int64_t{2}},
              {"NUM_STAGES", int64_t{4}}, {"GROUP_M", int64_t{16}},  {"CLUSTER_M", int64_t{1}},
              {"EPI_TMA", int64_t{1}},    {"SPLIT_K", int64_t{1}},   {"PINGPONG", int64_t{1}}};
  TmaDescriptors d = tmaDescriptors(s, 0x10000, 0x20000, 0x30000, kTmaL2Promotion, tmaBoxRows(p176, s));
  const std::pair<const TensorMap2DDesc*, unsigned> cases[] = {{&d.a, 128u}, {&d.b, 176u}, {&d.c, 64u}};
  for (auto [m, box] : cases) {
    ASSERT_TRUE(backend_->encodeTensorMap2D(*m).ok());
    EXPECT_EQ(fake<int>("fake_tmap_rank"), 2);
    EXPECT_EQ(fake<unsigned>("fake_tmap_outer_box"), box);
  }
  p176.set("BLOCK_N", int64_t{256});
  p176.set("WG_M", int64_t{1});
  d = tmaDescriptors(s, 0x10000, 0x20000, 0x30000, kTmaL2Promotion, tmaBoxRows(p176, s));
  ASSERT_TRUE(backend_->encodeTensorMap2D(d.b).ok());
  EXPECT_EQ(fake<unsigned>("fake_tmap_outer_box"), 256u);
  d.b.box_rows = 264;  // past the limit: refused before the driver
  EXPECT_EQ(backend_->encodeTensorMap2D(d.b).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(fake<unsigned>("fake_tmap_outer_box"), 256u);
  // The box probe knobs: A and B in 64-row boxes again (the kernel's copies follow the same knobs).
  p176.set("TMA_ABOX", int64_t{64});
  p176.set("TMA_BBOX", int64_t{64});
  d = tmaDescriptors(s, 0x10000, 0x20000, 0x30000, kTmaL2Promotion, tmaBoxRows(p176, s));
  for (const TensorMap2DDesc* m : {&d.a, &d.b}) {
    ASSERT_TRUE(backend_->encodeTensorMap2D(*m).ok());
    EXPECT_EQ(fake<unsigned>("fake_tmap_outer_box"), 64u);
  }
}

// planes > 1: a 3-D map (the decode gate/up pair's [2][N/2][K]), its plane stride and box planes
// reaching the driver; a plane stride shorter than the rows' span is refused before it.
TEST_F(FakeCudaTest, TensorMapPlanesMakeA3DMap) {
  TensorMap2DDesc d;
  d.base = 4096;
  d.rows = 63;
  d.cols = 100;
  d.row_stride_bytes = 208;
  ASSERT_TRUE(backend_->encodeTensorMap2D(d).ok());
  EXPECT_EQ(fake<int>("fake_tmap_rank"), 2);
  d.planes = 2;
  d.box_planes = 2;
  d.box_rows = 32;
  d.plane_stride_bytes = 63 * 208;
  auto m = backend_->encodeTensorMap2D(d);
  ASSERT_TRUE(m.ok()) << m.status().toString();
  EXPECT_EQ(fake<int>("fake_tmap_rank"), 3);
  EXPECT_EQ(fake<unsigned long long>("fake_tmap_outer_dim"), 2u);
  EXPECT_EQ(fake<unsigned long long>("fake_tmap_outer_stride"), 63u * 208u);
  EXPECT_EQ(fake<unsigned>("fake_tmap_outer_box"), 2u);
  d.plane_stride_bytes = 62 * 208;
  auto bad = backend_->encodeTensorMap2D(d);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("plane stride"), std::string::npos) << bad.status().toString();
  d.plane_stride_bytes = 63 * 208;
  d.box_planes = 3;
  EXPECT_EQ(backend_->encodeTensorMap2D(d).status().code(), Code::kInvalidArgument);
}

TEST_F(FakeCudaTest, ModuleErrors) {
  auto bad = backend_->loadModule(".version 8.0\nBROKEN\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kCompileError);
  EXPECT_NE(bad.status().message().find("cuModuleLoadData: CUDA_ERROR_INVALID_PTX"),
            std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("syntax error"), std::string::npos)
      << "the JIT error log must be in the message: " << bad.status().message();
  auto m = backend_->loadModule("x");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(backend_->getFunction(*m, "missing").status().code(), Code::kNotFound);
  EXPECT_EQ(backend_->getFunction(ModuleHandle{}, "k").status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(backend_->unloadModule(*m).ok());
  EXPECT_TRUE(backend_->unloadModule(ModuleHandle{}).ok());
  EXPECT_EQ(backend_->attributes(FunctionHandle{}).status().code(), Code::kInvalidArgument);
}

// Last (gtest runs tests in declaration order within a file): the fault is sticky in the fake.
TEST_F(FakeCudaTest, ZZStickyFaultBecomesDeviceFault) {
  FunctionHandle f = kernel();
  KernelArgs args;
  EXPECT_TRUE(backend_->checkError().ok());
  ASSERT_TRUE(backend_->launch(f, {13, 1, 1}, {32, 1, 1}, 0, args.data()).ok());
  Status s = backend_->synchronize();
  EXPECT_EQ(s.code(), Code::kDeviceFault) << s.toString();
  EXPECT_NE(s.message().find("cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(backend_->checkError().code(), Code::kDeviceFault);
  EXPECT_EQ(backend_->launch(f, {1, 1, 1}, {32, 1, 1}, 0, args.data()).code(),
            Code::kDeviceFault);
  fake<int>("fake_sticky") = 0;
}

}  // namespace
}  // namespace ktune
