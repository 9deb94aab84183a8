// do_bench (autotune/benchmarker.h) on the simulated backend: statistics, the run count from the
// measurement budget, events that exclude the L2 flush, early rejection of a candidate slower
// than the best so far, and failures as Status.
#include "autotune/benchmarker.h"

#include <gtest/gtest.h>

#include <cmath>

#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"

namespace ktune {
namespace {

TEST(Benchmarker, StatsAndEarlyRejection) {
  EXPECT_DOUBLE_EQ(computeStats({3, 1, 2, 5, 4}).median_ms, 3);
  EXPECT_DOUBLE_EQ(computeStats({3, 1, 2, 5, 4}).p20_ms, 1.8);
  EXPECT_DOUBLE_EQ(computeStats({1, 2, 3, 4, 5}).std_ms, std::sqrt(2.5));

  SimOptions o;
  o.device.arch = "sm_90a";
  o.device.l2_bytes = 1 << 20;  // small, so the flush buffer stays cheap
  o.memory_bytes_per_ms = 1e9;
  auto b = std::make_shared<SimBackend>(o);
  b->registerKernel("k", SimKernel{nullptr, [](const SimLaunch&) { return 0.02; }, nullptr});
  CompileRequest r;
  r.entry = "k";
  r.arch = "sm_90a";
  auto co = SimCompiler().compile(r);
  ASSERT_TRUE(co.ok()) << co.status().toString();
  auto f = *b->getFunction(*b->loadModule(co->binary), "k");
  KernelArgs a;
  auto fn = [&] { return b->launch(f, {1}, {32}, 0, a.data()); };
  BenchOptions bo;
  bo.warmup_ms = 0.1;
  bo.rep_ms = 1.0;
  Benchmarker bench(*b, o.device);
  const int64_t memsets = b->memsetCount(), memset_bytes = b->memsetBytes();
  auto s = bench.measure({}, fn, bo);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_NEAR(s->median_ms, 0.02, 1e-6);  // flush time excluded from the events
  EXPECT_EQ(s->runs, 50);
  // The L2 flush: before every timed run (the estimate's runs and the measured ones), one write
  // of 2x the device's L2 (DESIGN.md), outside the events (the median above would grow by the
  // flush's time otherwise).
  const int timed_runs = bo.estimate_runs + s->runs;
  EXPECT_EQ(b->memsetCount() - memsets, timed_runs);
  EXPECT_EQ(b->memsetBytes() - memset_bytes, int64_t(timed_runs) * 2 * o.device.l2_bytes);
  BenchOptions no_flush = bo;
  no_flush.flush_l2 = false;
  const int64_t memsets_before = b->memsetCount();
  ASSERT_TRUE(bench.measure({}, fn, no_flush).ok());
  EXPECT_EQ(b->memsetCount(), memsets_before);
  bo.best_ms = 0.02 / 3;  // this candidate is 3x slower than the best
  TimingStats partial;
  int64_t before = b->launchCount("k");
  auto slow = bench.measure({}, fn, bo, nullptr, &partial);
  ASSERT_FALSE(slow.ok());
  EXPECT_TRUE(isSlowerThanBest(slow.status())) << slow.status().toString();
  EXPECT_LT(b->launchCount("k") - before, 10);  // stopped after the estimate
  EXPECT_GT(partial.runs, 0);
  auto failing = measure(*b, {}, [] { return Status::LaunchError("nope"); }, bo);
  EXPECT_EQ(failing.status().code(), Code::kLaunchError);
}

}  // namespace
}  // namespace ktune
