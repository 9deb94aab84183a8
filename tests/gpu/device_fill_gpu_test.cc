// The device fill of fillRandom (ops/device_fill.h) on a real GPU: the kernel, compiled beside
// the first fills (which stay the host's) and then used, writes the host generator's values bit
// for bit for f32, f16 and bf16, over ragged counts, several seeds and ranges; a second
// enableDeviceFill finds the kernel in the store. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <tuple>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/store/store.h"
#include "ops/buffers.h"
#include "ops/device_fill.h"
#include "runtime/backend.h"
#include "tests/unit/fill_reference.h"

namespace ktune {
namespace {

TEST(DeviceFillGpu, SameBitsAsTheHostAndFoundInTheStoreNextTime) {
  auto b = openBackend("auto");
  if (!b.ok()) GTEST_SKIP() << "no GPU: " << b.status().toString();
  std::shared_ptr<Backend> backend(std::move(*b));
  auto devs = backend->devices();
  if (!devs.ok() || devs->empty()) GTEST_SKIP() << "no GPU: no device";
  if (backend->vendor() != Vendor::kNvidia) GTEST_SKIP() << "the device fill is NVIDIA's only";
  ASSERT_TRUE(backend->setDevice(0).ok());
  const DeviceInfo dev = devs->front();
  auto c = compilerForArch(dev.arch);
  ASSERT_TRUE(c.ok()) << c.status().toString();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ktune-device-fill-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto store = CodeObjectStore::open(dir.string());
  ASSERT_TRUE(store.ok()) << store.status().toString();

  enableDeviceFill(*backend, **c, store->get(), dev);  // a miss: compiled beside
  awaitDeviceFill();
  ASSERT_TRUE(deviceFillReady());
  const std::vector<std::tuple<DType, int64_t, uint64_t, double, double>> cases = {
      {DType::kBF16, (int64_t(3) << 20) + 5, 11, -1.0, 1.0},
      {DType::kBF16, 1, 12, -1.0, 1.0},
      {DType::kF16, 100003, 13, -2.0, 3.0},
      {DType::kF16, 4096, 5, -1e-4, 1e-4},  // fp16 subnormals
      {DType::kF32, (int64_t(2) << 20) + 1, 14, 0.5, 1.5},
      {DType::kF32, 777, 99, -1.0, 1.0}};
  for (const auto& [t, count, seed, lo, hi] : cases) {
    SCOPED_TRACE(std::string(dtypeName(t)) + " x " + std::to_string(count));
    const size_t bytes = static_cast<size_t>(count) * sizeOf(t);
    auto p = backend->alloc(bytes);
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(backend->memset8(*p, 0xff, bytes).ok());  // poisoned
    Status st;
    ASSERT_TRUE(deviceFillRandom(*backend, *p, t, count, seed, lo, hi - lo, &st));
    ASSERT_TRUE(st.ok()) << st.toString();
    std::vector<unsigned char> got(bytes);
    ASSERT_TRUE(backend->copyToHost(got.data(), *p, bytes).ok());
    const std::vector<unsigned char> want = serialFillReference(t, count, seed, lo, hi);
    size_t first_diff = bytes;
    for (size_t i = 0; i < bytes && first_diff == bytes; ++i)
      if (got[i] != want[i]) first_diff = i;
    EXPECT_EQ(first_diff, bytes) << "first byte that differs";
    ASSERT_TRUE(backend->free(*p).ok());
  }
  disableDeviceFill();
  // The compile was put in the store: the next process reads it and fills at once.
  enableDeviceFill(*backend, **c, store->get(), dev);
  EXPECT_TRUE(deviceFillReady());
  disableDeviceFill();
  EXPECT_FALSE(deviceFillReady());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ktune
