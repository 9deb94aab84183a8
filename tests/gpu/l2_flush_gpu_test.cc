// The engine harness's L2 flush (autotune/l2_flush.h) on a real GPU: the read kernel compiles
// with the device's compiler and runs before every timed run (no fallback to the memset), the
// memset stays available on request, and the peers share the same kernel. Prints the device
// time of a 64 MiB device copy after each flush (a RESULT line, not asserted: the memset's dirty
// lines are written back inside the timed copy). Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>

#include "autotune/benchmarker.h"
#include "bench/fair/peers.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"

namespace ktune {
namespace {

class L2FlushGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = openBackend("auto");
    if (!b.ok()) GTEST_SKIP() << "no GPU: " << b.status().toString();
    backend_ = std::shared_ptr<Backend>(std::move(*b));
    auto devs = backend_->devices();
    if (!devs.ok() || devs->empty()) GTEST_SKIP() << "no GPU: no device";
    ASSERT_TRUE(backend_->setDevice(0).ok());
    dev_ = devs->front();
    auto c = compilerForArch(dev_.arch);
    ASSERT_TRUE(c.ok()) << c.status().toString();
    compiler_ = std::move(*c);
  }
  std::shared_ptr<Backend> backend_;
  std::unique_ptr<Compiler> compiler_;
  DeviceInfo dev_;
};

TEST_F(L2FlushGpu, HarnessReadsByDefaultAndMemsetsOnRequest) {
  constexpr size_t kBytes = size_t(64) << 20;
  auto src = backend_->alloc(kBytes), dst = backend_->alloc(kBytes);
  ASSERT_TRUE(src.ok() && dst.ok());
  ASSERT_TRUE(backend_->memset8(*src, 1, kBytes).ok());
  std::ostringstream log;
  double ms[2] = {0, 0};
  {
    Benchmarker bench(*backend_, dev_, compiler_.get(), &log);
    auto copy = [&] { return backend_->copyDeviceToDevice(*dst, *src, kBytes); };
    BenchOptions bo;
    bo.warmup_ms = 2;
    bo.rep_ms = 20;
    for (FlushKind k : {FlushKind::kRead, FlushKind::kMemset}) {
      bo.flush_read = k == FlushKind::kRead;
      auto s = bench.measure({}, copy, bo);
      ASSERT_TRUE(s.ok()) << s.status().toString();
      ASSERT_EQ(bench.lastFlush(), k) << flushKindName(k);
      EXPECT_GT(s->median_ms, 0);
      ms[k == FlushKind::kRead ? 0 : 1] = s->median_ms;
    }
  }
  EXPECT_EQ(log.str(), "");  // no fallback said
  std::printf("RESULT l2flush copy_64MiB read_ms %.4f memset_ms %.4f memset/read %.3f\n", ms[0],
              ms[1], ms[1] / ms[0]);
  (void)backend_->free(*src);
  (void)backend_->free(*dst);
}

TEST_F(L2FlushGpu, PeersFlushWithTheSameKernel) {
  auto peers = StreamPeers::create(*backend_, *compiler_, dev_);
  ASSERT_TRUE(peers.ok()) << peers.status().toString();
  ASSERT_TRUE((*peers)->flushL2().ok());
  auto ms = (*peers)->timeOnceMs([&] { return (*peers)->flushL2(); });
  ASSERT_TRUE(ms.ok()) << ms.status().toString();
  EXPECT_GT(*ms, 0);
  ASSERT_TRUE(backend_->synchronize().ok());
}

}  // namespace
}  // namespace ktune
