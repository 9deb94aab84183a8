// The same-run peers and the clean L2 flush (bench/fair/peers.h) on the simulated backend: the
// peer is the fastest of the copy kernels and the driver copy, every timed run is preceded by the
// read-based flush (and no memset), and bandwidths are bytes over simulated device time.
#include "bench/fair/peers.h"

#include <gtest/gtest.h>

#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"
#include "templates/rowwise.h"

namespace ktune {
namespace {

constexpr double kKernelBytesPerMs = 3.0e9;  // the copy kernels at their best block size
constexpr double kMemcpyBytesPerMs = 2.5e9;  // the driver copy, slower here

struct Sim {
  std::shared_ptr<SimBackend> backend;
  SimCompiler compiler;
  DeviceInfo dev;
  Sim() {
    SimOptions o;
    o.device.name = "sim";
    o.device.arch = "sm_90a";
    o.device.multiprocessors = 4;
    o.device.warp_size = 32;
    o.device.max_threads_per_block = 1024;
    o.device.max_threads_per_sm = 2048;
    o.device.l2_bytes = 4 << 20;
    o.memory_bytes_per_ms = kMemcpyBytesPerMs;
    backend = std::make_shared<SimBackend>(o);
    dev = (*backend->devices())[0];
    SimKernel flush;
    flush.cost = [](const SimLaunch& l) { return 16.0 * double(l.arg<long long>(1)) / 4e9; };
    backend->registerKernel(StreamPeers::kFlushEntry, flush);
    SimKernel copy;  // THREADS=256 at full speed, others slower
    copy.cost = [](const SimLaunch& l) {
      const double eff = l.define("THREADS") == 256 ? 1.0 : 0.8;
      return 2.0 * double(l.arg<long long>(2)) / kKernelBytesPerMs / eff;
    };
    backend->registerKernel(rowwise::kCopyEntry, copy);
    SimKernel r2;
    r2.cost = [](const SimLaunch& l) {
      const double eff = l.define("THREADS") == 512 ? 1.0 : 0.5;
      return 48.0 * double(l.arg<long long>(3)) / kKernelBytesPerMs / eff;
    };
    backend->registerKernel(StreamPeers::kRead2Write1Entry, r2);
  }
};

TEST(StreamPeers, CopyPeerIsTheFastestCopyAndEveryRunIsFlushedByReads) {
  Sim s;
  auto peers = StreamPeers::create(*s.backend, s.compiler, s.dev);
  ASSERT_TRUE(peers.ok()) << peers.status().toString();
  auto peer = (*peers)->copyPeer(16 << 20, 3);
  ASSERT_TRUE(peer.ok()) << peer.status().toString();
  EXPECT_NE(peer->what.find("THREADS=256"), std::string::npos) << peer->what;
  EXPECT_EQ(peer->bytes, 16 << 20);
  const int64_t flushes = s.backend->launchCount(StreamPeers::kFlushEntry);
  const int64_t memsets = s.backend->memsetCount();
  auto bw = (*peers)->bandwidth(*peer, 7);
  ASSERT_TRUE(bw.ok()) << bw.status().toString();
  EXPECT_EQ(s.backend->launchCount(StreamPeers::kFlushEntry) - flushes, 7);
  EXPECT_EQ(s.backend->memsetCount(), memsets);
  EXPECT_EQ(bw->n, 7);
  EXPECT_NEAR(bw->median, kKernelBytesPerMs * 1e3, kKernelBytesPerMs * 1e3 * 1e-3);
  // Another size: the copy kernels are reused, not compiled again.
  const int compiles = s.compiler.compileCount();
  auto again = (*peers)->copyPeer(32 << 20, 3);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->bytes, 32 << 20);
  EXPECT_EQ(s.compiler.compileCount(), compiles);
}

TEST(StreamPeers, DriverCopyWinsWhenTheKernelsAreSlower) {
  Sim s;
  SimKernel slow;
  slow.cost = [](const SimLaunch& l) { return 2.0 * double(l.arg<long long>(2)) / 1e9; };
  s.backend->registerKernel(rowwise::kCopyEntry, slow);
  auto peers = StreamPeers::create(*s.backend, s.compiler, s.dev);
  ASSERT_TRUE(peers.ok()) << peers.status().toString();
  auto peer = (*peers)->copyPeer(8 << 20, 3);
  ASSERT_TRUE(peer.ok()) << peer.status().toString();
  EXPECT_EQ(peer->what, "memcpyDtoD");
  auto bw = (*peers)->bandwidth(*peer, 5);
  ASSERT_TRUE(bw.ok());
  EXPECT_NEAR(bw->median, kMemcpyBytesPerMs * 1e3, kMemcpyBytesPerMs * 1e3 * 1e-3);
}

TEST(StreamPeers, ReadTwoWriteOneCountsThreeStreams) {
  Sim s;
  auto peers = StreamPeers::create(*s.backend, s.compiler, s.dev);
  ASSERT_TRUE(peers.ok()) << peers.status().toString();
  auto peer = (*peers)->read2Write1Peer(24 << 20, 3);
  ASSERT_TRUE(peer.ok()) << peer.status().toString();
  EXPECT_NE(peer->what.find("THREADS=512"), std::string::npos) << peer->what;
  EXPECT_EQ(peer->bytes, 24 << 20);
  auto bw = (*peers)->bandwidth(*peer, 5);
  ASSERT_TRUE(bw.ok());
  EXPECT_NEAR(bw->median, kKernelBytesPerMs * 1e3, kKernelBytesPerMs * 1e3 * 1e-3);
}

TEST(StreamPeers, NoFlushKernelIsAnError) {
  SimOptions o;
  o.device.arch = "sm_90a";
  SimBackend b(o);
  SimCompiler c;
  auto peers = StreamPeers::create(b, c, (*b.devices())[0]);
  EXPECT_FALSE(peers.ok());
}

}  // namespace
}  // namespace ktune
