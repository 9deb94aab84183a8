// cuBLASLt on a real GPU: every handle the wrapper creates is destroyed (counted by
// CublasLt::liveHandles, which follows cublasLtCreate/cublasLtDestroy), also through the GEMM op
// that owns one; run()'s descriptors are built once per problem while pointers change, and the
// cached path gives the same result as the first call.
#include <gtest/gtest.h>

#include <vector>

#include "autotune/autotuner.h"
#include "ops/buffers.h"
#include "ops/gemm.h"
#include "ops/vendor/cublaslt.h"
#include "runtime/backend.h"

namespace ktune {
namespace {

std::shared_ptr<Backend> gpu(std::string* skip) {
  auto b = openCudaBackend();
  if (!b.ok()) {
    *skip = "no GPU: " + b.status().toString();
    return nullptr;
  }
  std::shared_ptr<Backend> be(std::move(b).value());
  auto devs = be->devices();
  if (!devs.ok() || devs->empty() || !be->setDevice(0).ok()) {
    *skip = "no GPU: no CUDA device";
    return nullptr;
  }
  return be;
}

TEST(CublasLtGpu, HandlesAreDestroyedAndDescriptorsReused) {
  std::string skip;
  auto be = gpu(&skip);
  if (!be) GTEST_SKIP() << skip;
  const int live0 = cublaslt::CublasLt::liveHandles();
  {
    auto lt = cublaslt::CublasLt::open();
    if (!lt.ok()) GTEST_SKIP() << "no cuBLASLt: " << lt.status().toString();
    EXPECT_EQ(cublaslt::CublasLt::liveHandles(), live0 + 1);
    cublaslt::LtProblem p;
    p.trans_b = true;
    p.m = 256;
    p.n = 256;
    p.k = 256;
    p.lda = p.ldb = p.ldc = 256;
    const size_t bytes = 256 * 256 * 2;
    std::vector<DevicePtr> a, b;
    for (int i = 0; i < 3; ++i) {
      a.push_back(*be->alloc(bytes));
      b.push_back(*be->alloc(bytes));
      ASSERT_TRUE(fillRandom(*be, a.back(), DType::kBF16, 256 * 256, 1 + i).ok());
      ASSERT_TRUE(fillRandom(*be, b.back(), DType::kBF16, 256 * 256, 7 + i).ok());
    }
    DevicePtr c0 = *be->alloc(bytes), c1 = *be->alloc(bytes), ws = *be->alloc(32 << 20);
    auto algos = (*lt)->heuristics(p, 1, 32 << 20);
    ASSERT_TRUE(algos.ok()) << algos.status().toString();
    ASSERT_TRUE((*lt)->run(p, &algos->front(), a[2], b[2], c0, 0, ws, 32 << 20).ok());
    for (int i = 0; i < 9; ++i)
      ASSERT_TRUE((*lt)->run(p, &algos->front(), a[i % 3], b[i % 3], c1, 0, ws, 32 << 20).ok());
    ASSERT_TRUE(be->synchronize().ok());
    EXPECT_EQ((*lt)->descriptorBuilds(), 1);
    std::vector<uint16_t> h0(256 * 256), h1(256 * 256);
    ASSERT_TRUE(be->copyToHost(h0.data(), c0, bytes).ok());
    ASSERT_TRUE(be->copyToHost(h1.data(), c1, bytes).ok());
    EXPECT_EQ(h0, h1);  // both from set 2 (the last loop call, i = 8): cached path, same result
    for (DevicePtr x : {c0, c1, ws}) (void)be->free(x);
    for (int i = 0; i < 3; ++i) (void)be->free(a[i]), (void)be->free(b[i]);
  }
  EXPECT_EQ(cublaslt::CublasLt::liveHandles(), live0);
}

TEST(CublasLtGpu, GemmOpReleasesItsHandle) {
  std::string skip;
  auto be = gpu(&skip);
  if (!be) GTEST_SKIP() << skip;
  const int live0 = cublaslt::CublasLt::liveHandles();
  {
    EngineOptions o;
    auto t = Engine::create(be, o);
    ASSERT_TRUE(t.ok()) << t.status().toString();
    auto op = GemmOp::create(**t);
    ASSERT_TRUE(op.ok()) << op.status().toString();
    if (!(*op)->hasCublasLt()) GTEST_SKIP() << "no cuBLASLt";
    EXPECT_EQ(cublaslt::CublasLt::liveHandles(), live0 + 1);
  }
  EXPECT_EQ(cublaslt::CublasLt::liveHandles(), live0);
}

}  // namespace
}  // namespace ktune
