// The comparison with a trusted output on a real GPU (autotune/device_compare.h): the kernel,
// compiled beside the first comparisons (which stay the host's), passes its planted cases and then
// gives the host comparison's VerifyResult, field for field and in its summary text, on large
// planted outputs of every type, contiguous and in padded rows, with and without mismatches, on a
// stream; a second enable finds the kernel in the store. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include <unistd.h>

#include "autotune/device_compare.h"
#include "autotune/verifier.h"
#include "compiler/compiler.h"
#include "compiler/store/store.h"
#include "runtime/backend.h"
#include "tests/support/verify_expect.h"

namespace ktune {
namespace {

void expectSame(const VerifyResult& a, const VerifyResult& b, const std::string& what) {
  testsupport::expectSameVerifyResult(a, b, what);
}

TEST(DeviceCompareGpu, SameResultAsTheHostAndFoundInTheStoreNextTime) {
  auto b = openBackend("auto");
  if (!b.ok()) GTEST_SKIP() << "no GPU: " << b.status().toString();
  std::shared_ptr<Backend> backend(std::move(*b));
  auto devs = backend->devices();
  if (!devs.ok() || devs->empty()) GTEST_SKIP() << "no GPU: no device";
  if (backend->vendor() != Vendor::kNvidia) GTEST_SKIP() << "the device comparison is NVIDIA's only";
  ASSERT_TRUE(backend->setDevice(0).ok());
  const DeviceInfo dev = devs->front();
  auto c = compilerForArch(dev.arch);
  ASSERT_TRUE(c.ok()) << c.status().toString();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ktune-device-compare-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto store = CodeObjectStore::open(dir.string());
  ASSERT_TRUE(store.ok()) << store.status().toString();

  enableDeviceCompare(*backend, **c, store->get(), dev);  // a miss: compiled beside
  awaitDeviceCompare();
  ASSERT_TRUE(deviceCompareReady());
  auto stream = backend->createStream();
  ASSERT_TRUE(stream.ok());
  struct Case { DType t; int64_t rows, cols, ld; bool specials; };
  const Case cases[] = {{DType::kBF16, 4096, 4096, 4096, true},  {DType::kBF16, 4096, 4096, 4096, false},
                        {DType::kBF16, 1000, 6144, 6160, true},  {DType::kBF16, 777, 5000, 5008, false},
                        {DType::kF16, 1, 3000017, 3000017, true}, {DType::kF32, 2048, 1000, 1000, true},
                        {DType::kF32, 999, 1003, 1011, false},    {DType::kF64, 1, 1 << 20, 1 << 20, true},
                        {DType::kBF16, 16, 28672, 28672, true},   {DType::kBF16, 1, 1, 1, false}};
  uint32_t seed = 7;
  for (const Case& k : cases) {
    const std::string what = std::string(dtypeName(k.t)) + " " + std::to_string(k.rows) + "x" +
                             std::to_string(k.cols) + " ld " + std::to_string(k.ld) +
                             (k.specials ? " with specials" : "");
    SCOPED_TRACE(what);
    std::vector<unsigned char> o, r;
    plantedCompareCase(k.t, k.rows * k.ld, seed++, k.specials, &o, &r);
    auto po = backend->alloc(o.size()), pr = backend->alloc(r.size());
    ASSERT_TRUE(po.ok() && pr.ok());
    ASSERT_TRUE(backend->copyToDevice(*po, o.data(), o.size()).ok());
    ASSERT_TRUE(backend->copyToDevice(*pr, r.data(), r.size()).ok());
    const Tolerance tol = toleranceFor(k.t, 4096);
    Expected<VerifyResult> dv = Status::Internal("unset");
    ASSERT_TRUE(deviceCompareToTrusted(*backend, *po, *pr, k.t, k.rows, k.cols, k.ld, tol, &dv,
                                       *stream));
    ASSERT_TRUE(dv.ok()) << dv.status().toString();
    EXPECT_TRUE(deviceCompareChecked());
    // The host's view of the same elements: the rows' real columns, packed.
    const size_t es = sizeOf(k.t), rb = static_cast<size_t>(k.cols) * es;
    std::vector<unsigned char> ho(static_cast<size_t>(k.rows) * rb), hr(ho.size());
    for (int64_t i = 0; i < k.rows; ++i) {
      std::memcpy(ho.data() + i * rb, o.data() + i * k.ld * es, rb);
      std::memcpy(hr.data() + i * rb, r.data() + i * k.ld * es, rb);
    }
    const VerifyResult hv = compareHostTrusted(ho.data(), hr.data(), k.t, k.rows * k.cols, tol);
    EXPECT_EQ(hv.ok, !k.specials) << hv.summary();
    expectSame(*dv, hv, what);
    if (hv.first_bad >= 0) {
      EXPECT_EQ(dv->first_bad_out == hv.first_bad_out ||
                    (std::isnan(dv->first_bad_out) && std::isnan(hv.first_bad_out)), true);
    }
    if (k.ld == k.cols) {  // the host path's copy-back (the fallback): the same result
      auto via = compareDeviceToTrusted(*backend, *po, *pr, k.t, k.rows * k.cols, tol);
      ASSERT_TRUE(via.ok());
      expectSame(*via, hv, what + " (compareDeviceToTrusted)");
    }
    ASSERT_TRUE(backend->free(*po).ok());
    ASSERT_TRUE(backend->free(*pr).ok());
  }
  (void)backend->destroyStream(*stream);
  disableDeviceCompare();
  EXPECT_FALSE(deviceCompareChecked());
  // The compile was put in the store: the next process reads it.
  enableDeviceCompare(*backend, **c, store->get(), dev);
  EXPECT_TRUE(deviceCompareReady());
  disableDeviceCompare();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ktune
