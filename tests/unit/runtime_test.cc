// Runtime layer tests that run everywhere (CI has no GPU): argument packing, launch-config checks,
// the pure helpers of the CUDA/HIP backends, and the factories' behaviour without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/backend.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/hip/hip_backend.h"
#include "runtime/launch_check.h"

namespace ktune {
namespace {

template <typename T>
T readArg(void** data, size_t i) {
  T v;
  std::memcpy(&v, data[i], sizeof(T));
  return v;
}

TEST(KernelArgs, PacksValuesWithTheirAlignment) {
  KernelArgs a;
  a.add(uint8_t{7}).add(double{3.5}).add(uint16_t{0xBEEF}).add(uint64_t{0x0123456789ABCDEFull});
  ASSERT_EQ(a.count(), 4u);
  void** d = a.data();
  EXPECT_EQ(readArg<uint8_t>(d, 0), 7);
  EXPECT_EQ(readArg<double>(d, 1), 3.5);
  EXPECT_EQ(readArg<uint16_t>(d, 2), 0xBEEF);
  EXPECT_EQ(readArg<uint64_t>(d, 3), 0x0123456789ABCDEFull);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d[1]) % alignof(double), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d[2]) % alignof(uint16_t), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d[3]) % alignof(uint64_t), 0u);
  // Offsets are relative to one buffer: the double after a byte starts 8 bytes in.
  EXPECT_EQ(static_cast<unsigned char*>(d[1]) - static_cast<unsigned char*>(d[0]), 8);
}

TEST(KernelArgs, StructsAndDevicePointers) {
  struct alignas(16) Params {
    float scale;
    int n;
    uint64_t ptr;
  };
  KernelArgs a;
  DevicePtr p = 0xDEAD0000BEEF0000ull;
  a.add(int32_t{-5}).add(Params{2.0f, 1000003, 42}).add(p);
  void** d = a.data();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d[1]) % 16, 0u);
  Params back = readArg<Params>(d, 1);
  EXPECT_EQ(back.scale, 2.0f);
  EXPECT_EQ(back.n, 1000003);
  EXPECT_EQ(back.ptr, 42u);
  EXPECT_EQ(readArg<int32_t>(d, 0), -5);
  EXPECT_EQ(readArg<DevicePtr>(d, 2), p);
}

TEST(KernelArgs, ManyArgumentsSurviveGrowth) {
  // Enough bytes to force several reallocations of the storage; data() must point into the final
  // buffer, not a freed one.
  KernelArgs a;
  constexpr int kN = 300;
  for (int i = 0; i < kN; ++i) {
    if (i % 3 == 0) a.add(static_cast<uint64_t>(i) * 1000003u);
    else if (i % 3 == 1) a.add(static_cast<float>(i) + 0.25f);
    else a.add(static_cast<uint8_t>(i & 0xFF));
  }
  ASSERT_EQ(a.count(), static_cast<size_t>(kN));
  void** d = a.data();
  for (int i = 0; i < kN; ++i) {
    if (i % 3 == 0) {
      EXPECT_EQ(readArg<uint64_t>(d, i), static_cast<uint64_t>(i) * 1000003u) << i;
    } else if (i % 3 == 1) {
      EXPECT_EQ(readArg<float>(d, i), static_cast<float>(i) + 0.25f) << i;
    } else {
      EXPECT_EQ(readArg<uint8_t>(d, i), static_cast<uint8_t>(i & 0xFF)) << i;
    }
  }
}

TEST(KernelArgs, AddAfterDataRefreshesPointers) {
  KernelArgs a;
  a.add(int{1});
  void** d1 = a.data();
  EXPECT_EQ(readArg<int>(d1, 0), 1);
  for (int i = 0; i < 200; ++i) a.add(uint64_t{static_cast<uint64_t>(i)});
  void** d2 = a.data();
  EXPECT_EQ(readArg<int>(d2, 0), 1);
  EXPECT_EQ(readArg<uint64_t>(d2, 200), 199u);
}

TEST(KernelArgs, ClearKeepsNothingButWorksAgain) {
  KernelArgs a;
  a.add(int{1}).add(int{2});
  a.clear();
  EXPECT_EQ(a.count(), 0u);
  a.add(double{9.0});
  ASSERT_EQ(a.count(), 1u);
  void** d = a.data();
  EXPECT_EQ(readArg<double>(d, 0), 9.0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d[0]) % alignof(double), 0u);
}

// Past the inline storage (many arguments, a large struct) the arguments move to the heap once
// and keep their values and alignment; a copy points at its own bytes; clear() reuses the room.
TEST(KernelArgs, SpillsToTheHeapAndCopiesPointAtTheirOwnBytes) {
  KernelArgs a;
  const size_t n = KernelArgs::kInlineArgs * 2 + 3;
  for (size_t i = 0; i < n; ++i) a.add(static_cast<int64_t>(i * 3));
  struct Big {
    unsigned char b[KernelArgs::kInlineBytes + 40];
  } big;
  for (size_t i = 0; i < sizeof big.b; ++i) big.b[i] = static_cast<unsigned char>(i * 5);
  a.add(big).add(char{'z'});
  ASSERT_EQ(a.count(), n + 2);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(readArg<int64_t>(a.data(), i), int64_t(i * 3)) << i;
  EXPECT_EQ(std::memcmp(a.data()[n], big.b, sizeof big.b), 0);
  EXPECT_EQ(readArg<char>(a.data(), n + 1), 'z');
  KernelArgs b = a;
  KernelArgs c;
  c.add(int{5});
  c = b;
  for (KernelArgs* k : {&b, &c}) {
    ASSERT_EQ(k->count(), a.count());
    for (size_t i = 0; i < k->count(); ++i) EXPECT_NE(k->data()[i], a.data()[i]);
    EXPECT_EQ(readArg<int64_t>(k->data(), n - 1), int64_t((n - 1) * 3));
    EXPECT_EQ(std::memcmp(k->data()[n], big.b, sizeof big.b), 0);
  }
  KernelArgs small;
  small.add(int{1}).add(double{2.5});
  KernelArgs moved = std::move(small);
  EXPECT_EQ(readArg<double>(moved.data(), 1), 2.5);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(moved.data()[1]) % alignof(double), 0u);
  a.clear();
  a.add(int{42});
  EXPECT_EQ(a.count(), 1u);
  EXPECT_EQ(readArg<int>(a.data(), 0), 42);
}

TEST(KernelArgs, AddBytesRawBlob) {
  KernelArgs a;
  unsigned char blob[24];
  for (int i = 0; i < 24; ++i) blob[i] = static_cast<unsigned char>(i * 7);
  a.add(char{'x'});
  a.addBytes(blob, sizeof(blob), 8);
  void** d = a.data();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d[1]) % 8, 0u);
  EXPECT_EQ(std::memcmp(d[1], blob, sizeof(blob)), 0);
}

LaunchLimits h100LikeLimits() {
  LaunchLimits l;
  l.max_block[0] = 1024;
  l.max_block[1] = 1024;
  l.max_block[2] = 64;
  l.max_grid[0] = 2147483647u;
  l.max_grid[1] = 65535;
  l.max_grid[2] = 65535;
  l.max_threads_per_block = 1024;
  l.max_dynamic_shared = 232448;
  return l;
}

TEST(LaunchCheck, AcceptsValidConfigs) {
  LaunchLimits l = h100LikeLimits();
  EXPECT_TRUE(checkLaunch({1, 1, 1}, {1, 1, 1}, 0, l).ok());
  EXPECT_TRUE(checkLaunch({2147483647u, 65535, 65535}, {1024, 1, 1}, 232448, l).ok());
  EXPECT_TRUE(checkLaunch({3907, 1, 1}, {32, 32, 1}, 0, l).ok());
}

TEST(LaunchCheck, RejectsZeroAndOversizedDims) {
  LaunchLimits l = h100LikeLimits();
  Status s = checkLaunch({0, 1, 1}, {128, 1, 1}, 0, l);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("grid"), std::string::npos) << s.message();
  EXPECT_EQ(checkLaunch({1, 0, 1}, {128, 1, 1}, 0, l).code(), Code::kInvalidArgument);
  EXPECT_EQ(checkLaunch({1, 1, 65536}, {128, 1, 1}, 0, l).code(), Code::kInvalidArgument);
  s = checkLaunch({1, 1, 1}, {0, 1, 1}, 0, l);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("block"), std::string::npos) << s.message();
  EXPECT_EQ(checkLaunch({1, 1, 1}, {1, 1, 65}, 0, l).code(), Code::kInvalidArgument);
  s = checkLaunch({1, 1, 1}, {64, 32, 1}, 0, l);  // 2048 threads > 1024
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("2048"), std::string::npos) << s.message();
  // Overflow of x*y*z in 32 bits must not sneak past the thread limit.
  EXPECT_EQ(checkLaunch({1, 1, 1}, {1024, 1024, 64}, 0, l).code(), Code::kInvalidArgument);
}

TEST(LaunchCheck, SharedMemoryOverLimitIsOutOfResources) {
  LaunchLimits l = h100LikeLimits();
  Status s = checkLaunch({1, 1, 1}, {128, 1, 1}, 232449, l);
  EXPECT_EQ(s.code(), Code::kOutOfResources);
  EXPECT_NE(s.message().find("232448"), std::string::npos) << s.message();
}

TEST(CudaHelpers, ArchNames) {
  EXPECT_EQ(cudaArchName(9, 0), "sm_90a");
  EXPECT_EQ(cudaArchName(8, 0), "sm_80");
  EXPECT_EQ(cudaArchName(8, 9), "sm_89");
  EXPECT_EQ(cudaArchName(10, 0), "sm_100");
  EXPECT_EQ(cudaArchName(12, 0), "sm_120");
}

TEST(CudaHelpers, VersionString) {
  EXPECT_EQ(cudaVersionString(13000), "13.0");
  EXPECT_EQ(cudaVersionString(12040), "12.4");
  EXPECT_EQ(cudaVersionString(11080), "11.8");
}

TEST(CudaHelpers, ResultCodes) {
  EXPECT_EQ(cudaResultCode(0, Code::kInternal), Code::kOk);
  EXPECT_EQ(cudaResultCode(700, Code::kInternal), Code::kDeviceFault);  // ILLEGAL_ADDRESS
  EXPECT_EQ(cudaResultCode(719, Code::kLaunchError), Code::kDeviceFault);  // LAUNCH_FAILED
  EXPECT_EQ(cudaResultCode(716, Code::kInternal), Code::kDeviceFault);  // MISALIGNED_ADDRESS
  EXPECT_EQ(cudaResultCode(2, Code::kInternal), Code::kOutOfResources);
  EXPECT_EQ(cudaResultCode(701, Code::kLaunchError), Code::kOutOfResources);
  EXPECT_EQ(cudaResultCode(100, Code::kInternal), Code::kUnavailable);
  EXPECT_EQ(cudaResultCode(218, Code::kInternal), Code::kCompileError);  // INVALID_PTX
  EXPECT_EQ(cudaResultCode(209, Code::kInternal), Code::kUnsupported);  // NO_BINARY_FOR_GPU
  EXPECT_EQ(cudaResultCode(500, Code::kInternal), Code::kNotFound);
  EXPECT_EQ(cudaResultCode(1, Code::kInternal), Code::kInvalidArgument);
  EXPECT_EQ(cudaResultCode(1, Code::kLaunchError), Code::kLaunchError);
  EXPECT_EQ(cudaResultCode(702, Code::kInternal), Code::kTimeout);
  EXPECT_EQ(cudaResultCode(999, Code::kLaunchError), Code::kLaunchError);
}

TEST(HipHelpers, ArchFromGcnArchName) {
  EXPECT_EQ(hipArchFromGcnArchName("gfx90a:sramecc+:xnack-"), "gfx90a");
  EXPECT_EQ(hipArchFromGcnArchName("gfx942:sramecc+:xnack-"), "gfx942");
  EXPECT_EQ(hipArchFromGcnArchName("gfx1100"), "gfx1100");
  EXPECT_EQ(hipArchFromGcnArchName("AMD Instinct MI250X"), "");
  EXPECT_EQ(hipArchFromGcnArchName(""), "");
}

TEST(HipHelpers, VersionString) {
  EXPECT_EQ(hipVersionString(50221153), "5.2.21153");
  EXPECT_EQ(hipVersionString(60342134), "6.3.42134");
}

TEST(HipHelpers, AttributeTable) {
  // Values from ROCm 5.2's hip_runtime_api.h; identical in 6.x.
  for (int major : {5, 6, 7}) {
    auto t = hipAttributeTable(major);
    ASSERT_TRUE(t.ok()) << t.status().toString();
    EXPECT_EQ(t->multiprocessor_count, 63);
    EXPECT_EQ(t->warp_size, 87);
    EXPECT_EQ(t->l2_cache_size, 19);
    EXPECT_EQ(t->max_shared_per_block, 74);
    EXPECT_EQ(t->max_block_dim_x, 26);
    EXPECT_EQ(t->max_grid_dim_z, 31);
    EXPECT_EQ(t->max_threads_per_block, 56);
    EXPECT_EQ(t->max_shared_per_mp_amd, 10002);
  }
  EXPECT_EQ(hipAttributeTable(4).status().code(), Code::kUnsupported);
}

TEST(HipHelpers, ResultCodes) {
  EXPECT_EQ(hipResultCode(700, Code::kInternal), Code::kDeviceFault);
  EXPECT_EQ(hipResultCode(100, Code::kInternal), Code::kUnavailable);
  EXPECT_EQ(hipResultCode(98, Code::kLaunchError), Code::kLaunchError);
  EXPECT_EQ(hipResultCode(98, Code::kInternal), Code::kInvalidArgument);
  EXPECT_EQ(hipResultCode(209, Code::kInternal), Code::kUnsupported);
}

// On a machine without an NVIDIA GPU (CI, the dev box) the factory must fail cleanly and say why;
// on a GPU machine it must hand back a usable backend.
TEST(Factories, CudaWithoutGpuIsUnavailableWithReason) {
  auto b = openCudaBackend();
  if (b.ok()) {
    EXPECT_EQ((*b)->name(), "cuda");
    auto devs = (*b)->devices();
    ASSERT_TRUE(devs.ok()) << devs.status().toString();
    EXPECT_FALSE(devs->empty());
    return;
  }
  EXPECT_EQ(b.status().code(), Code::kUnavailable) << b.status().toString();
  const std::string& m = b.status().message();
  bool names_reason = m.find("libcuda") != std::string::npos ||
                      m.find("no CUDA device") != std::string::npos ||
                      m.find("built without") != std::string::npos;
  EXPECT_TRUE(names_reason) << m;
  // A second call returns the same answer (the driver probe is cached, not retried half-way).
  auto again = openCudaBackend();
  EXPECT_EQ(again.ok(), false);
  EXPECT_EQ(again.status().message(), m);
}

TEST(Factories, HipWithoutGpuIsUnavailableQuickly) {
  auto t0 = std::chrono::steady_clock::now();
  auto b = openHipBackend();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count();
  if (b.ok()) {
    EXPECT_EQ((*b)->name(), "hip");
    return;
  }
  EXPECT_EQ(b.status().code(), Code::kUnavailable) << b.status().toString();
  const std::string& m = b.status().message();
  bool names_reason = m.find("libamdhip64") != std::string::npos ||
                      m.find("no AMD GPU") != std::string::npos ||
                      m.find("built without") != std::string::npos;
  EXPECT_TRUE(names_reason) << m;
  // A hang guard, not a speed claim: far above any load-induced delay of a probe that returns.
  EXPECT_LT(ms, 60000.0) << "probing HIP without a GPU must not hang";
}

TEST(Factories, OpenBackendByName) {
  auto bogus = openBackend("bogus");
  EXPECT_EQ(bogus.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bogus.status().message().find("bogus"), std::string::npos);

  // "sim" either opens the simulated backend or says how to construct it; never anything else.
  auto sim = openBackend("sim");
  if (sim.ok()) {
    EXPECT_EQ((*sim)->name(), "sim");
    EXPECT_EQ((*sim)->vendor(), Vendor::kSimulated);
  } else {
    EXPECT_EQ(sim.status().code(), Code::kInvalidArgument);
    EXPECT_NE(sim.status().message().find("sim_backend.h"), std::string::npos);
  }

  auto any = openBackend("auto");
  if (!any.ok()) {
    EXPECT_EQ(any.status().code(), Code::kUnavailable);
    EXPECT_NE(any.status().message().find("CUDA"), std::string::npos) << any.status().message();
    EXPECT_NE(any.status().message().find("HIP"), std::string::npos) << any.status().message();
  } else {
    EXPECT_NE((*any)->vendor(), Vendor::kSimulated);
  }
}

}  // namespace
}  // namespace ktune
