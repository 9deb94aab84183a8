// The compile pool (autotune/compile_pool.h): every job runs once, finished jobs reach the
// consumer as they come (each index once), the done callback counts monotonically, and the
// caller's thread works too in runAll. No timing: a gate holds jobs back where order matters.
#include "autotune/compile_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <vector>

namespace ktune {
namespace {

TEST(CompilePool, RunAllRunsEveryJobOnceAndCountsFinishes) {
  constexpr size_t kJobs = 50;
  std::vector<std::atomic<int>> runs(kJobs);
  std::vector<size_t> finished_counts;
  CompilePool pool(
      kJobs, 3, [&](size_t i) { ++runs[i]; },
      [&](size_t, size_t finished) { finished_counts.push_back(finished); });  // under the lock
  pool.runAll();
  EXPECT_TRUE(pool.finished());
  for (size_t i = 0; i < kJobs; ++i) EXPECT_EQ(runs[i].load(), 1) << i;
  ASSERT_EQ(finished_counts.size(), kJobs);
  for (size_t i = 0; i < kJobs; ++i) EXPECT_EQ(finished_counts[i], i + 1);
  std::set<size_t> taken;
  for (std::vector<size_t> got; !(got = pool.take()).empty();)
    for (size_t i : got) EXPECT_TRUE(taken.insert(i).second) << "job " << i << " handed out twice";
  EXPECT_EQ(taken.size(), kJobs);
  EXPECT_TRUE(pool.take().empty());
}

// Started in the background, the consumer gets the first finished job while the others are
// still held at a gate: benchmarking can start before compiling ends.
TEST(CompilePool, TakeHandsOutJobsWhileOthersStillRun) {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  CompilePool pool(4, 2, [&](size_t i) {
    if (i == 0) return;  // job 0 finishes at once
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return open; });
  });
  pool.start();
  std::vector<size_t> first = pool.take();
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first.front(), 0u);
  EXPECT_FALSE(pool.finished());
  {
    std::lock_guard<std::mutex> l(mu);
    open = true;
  }
  cv.notify_all();
  size_t total = first.size();
  for (std::vector<size_t> got; !(got = pool.take()).empty();) total += got.size();
  EXPECT_EQ(total, 4u);
  EXPECT_TRUE(pool.finished());
}

// Lazy mode (the guided race): with a window, job i starts only once i < taken + window, so jobs
// the consumer never asks for never start; cancel() drops the rest, and take() then hands out
// what was running and ends.
TEST(CompilePool, WindowPacesJobsAndCancelDropsTheRest) {
  constexpr size_t kJobs = 40, kWindow = 4;
  std::atomic<size_t> ran{0};
  CompilePool pool(kJobs, 2, [&](size_t) { ++ran; });
  pool.setWindow(kWindow);
  pool.start();
  size_t taken = 0;
  while (taken < 6) {
    auto got = pool.take();
    ASSERT_FALSE(got.empty());
    taken += got.size();
    EXPECT_LE(pool.started(), taken + kWindow);  // never more than the window ahead
  }
  pool.cancel();
  for (std::vector<size_t> got; !(got = pool.take()).empty();) taken += got.size();
  EXPECT_TRUE(pool.finished());
  EXPECT_EQ(taken, pool.started());  // every started job handed out once
  EXPECT_EQ(ran.load(), pool.started());
  EXPECT_LE(pool.started(), 6 + 2 * kWindow);
  EXPECT_LT(pool.started(), kJobs);  // the rest never ran
}

// resume() undoes cancel() (a race that stopped, then learnt from a compile still running that it
// wants more): the jobs not started run again under the window, each once, and the threads that
// returned after cancel() are replaced; one job is held at a gate across cancel and resume.
TEST(CompilePool, ResumeAfterCancelRunsTheRestOnce) {
  constexpr size_t kJobs = 30, kWindow = 4;
  std::vector<std::atomic<int>> runs(kJobs);
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  CompilePool pool(kJobs, 2, [&](size_t i) {
    ++runs[i];
    if (i != 3) return;
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return open; });
  });
  pool.setWindow(kWindow);
  pool.start();
  size_t taken = 0;
  while (taken < 2) taken += pool.take().size();
  pool.cancel();
  const size_t started = pool.started();
  while (taken + 1 < started) taken += pool.take().size();  // all but the held job 3
  pool.resume();
  {
    std::lock_guard<std::mutex> l(mu);
    open = true;
  }
  cv.notify_all();
  for (std::vector<size_t> got; !(got = pool.take()).empty();) taken += got.size();
  EXPECT_EQ(taken, kJobs);
  EXPECT_TRUE(pool.finished());
  for (size_t i = 0; i < kJobs; ++i) EXPECT_EQ(runs[i].load(), 1) << i;
  pool.resume();  // not cancelled: nothing to do
  EXPECT_TRUE(pool.take().empty());
}

// With a floor, the first `floor` jobs start at once, the rest only `window` ahead of take().
TEST(CompilePool, FloorStartsTheFirstJobsAtOnce) {
  constexpr size_t kFloor = 6, kWindow = 1;
  std::mutex mu;
  std::condition_variable cv;
  size_t running_max = 0, ran = 0;
  CompilePool pool(30, 8, [&](size_t) {
    std::lock_guard<std::mutex> l(mu);
    running_max = std::max(running_max, ++ran);
    cv.notify_all();
  });
  pool.setWindow(kWindow, kFloor);
  pool.start();
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return ran >= kFloor; });  // no take() yet: the floor's jobs ran anyway
  }
  EXPECT_EQ(pool.started(), kFloor);
  size_t taken = 0;
  while (taken < kFloor + 3) {
    taken += pool.take().size();
    EXPECT_LE(pool.started(), std::max(kFloor, taken + kWindow));
  }
  pool.cancel();
  for (std::vector<size_t> got; !(got = pool.take()).empty();) taken += got.size();
  EXPECT_EQ(taken, pool.started());
}

// Cheap jobs (store hits) ahead of an expensive one (a compile): the expensive job starts only
// once the consumer has taken every cheap job before it and come back for more, so a consumer
// that stops after the cheap ones (a warm store's race) starts no compile. Regression: with the
// window alone, jobs 4-5 started as soon as the hits were handed out, and a warm run waited
// seconds for two compiles its race did not want.
TEST(CompilePool, ExpensiveJobsWaitUntilTheCheapOnesBeforeThemAreJudged) {
  for (bool go_on : {false, true}) {
    std::atomic<size_t> ran{0};
    CompilePool pool(8, 4, [&](size_t) { ++ran; });
    pool.setWindow(4, 2);
    pool.setCheap({1, 1, 1, 1, 0, 0, 0, 0});
    pool.start();
    std::set<size_t> taken;
    while (taken.size() < 4) {
      for (size_t i : pool.take()) taken.insert(i);
      EXPECT_LE(pool.started(), 4u) << "a compile started before the hits were judged";
    }
    EXPECT_EQ(taken, (std::set<size_t>{0, 1, 2, 3}));
    EXPECT_EQ(pool.started(), 4u);
    if (go_on) {  // the consumer wants more: the compiles start, the window ahead of it
      auto got = pool.take();
      ASSERT_FALSE(got.empty());
      EXPECT_GE(*std::min_element(got.begin(), got.end()), 4u);
      EXPECT_GT(pool.started(), 4u);
    }
    pool.cancel();
    for (std::vector<size_t> got; !(got = pool.take()).empty();) {}
    EXPECT_EQ(ran.load(), pool.started());
    if (!go_on) {
      EXPECT_EQ(ran.load(), 4u);
    }
  }
}

// Past the first wave (the floor), nothing starts until the consumer has taken all of it and
// come back: a consumer that stops after the first wave waits for no speculative compile.
TEST(CompilePool, NothingPastTheFirstWaveStartsBeforeItIsJudged) {
  std::atomic<size_t> ran{0};
  CompilePool pool(10, 4, [&](size_t) { ++ran; });
  pool.setWindow(4, 3);
  pool.start();
  std::set<size_t> taken;
  while (taken.size() < 3) {
    for (size_t i : pool.take()) taken.insert(i);
    // The workers start the wave's jobs at their own pace: a job can be taken before its
    // neighbours have started, so here only "never past the wave" holds.
    EXPECT_LE(pool.started(), 3u);
  }
  EXPECT_EQ(pool.started(), 3u);  // every job taken had started
  pool.cancel();
  EXPECT_TRUE(pool.take().empty());
  EXPECT_EQ(ran.load(), 3u);
}

// promote(): the named jobs not started yet start next, ahead of the rest (the guided race's
// coverage picks); the window still paces them, and a started job is left where it is.
TEST(CompilePool, PromotedJobsStartNext) {
  std::mutex mu;
  std::vector<size_t> order;
  CompilePool pool(20, 1, [&](size_t i) {
    std::lock_guard<std::mutex> l(mu);
    order.push_back(i);
  });
  pool.setWindow(1, 2);
  pool.start();
  std::set<size_t> taken;
  while (taken.size() < 2)
    for (size_t i : pool.take()) taken.insert(i);
  pool.promote({17, 0, 12});  // 0 ran already
  EXPECT_EQ(pool.slotOf(17), 2u);
  EXPECT_EQ(pool.slotOf(12), 3u);
  EXPECT_EQ(pool.slotOf(2), 4u);
  EXPECT_TRUE(pool.wasStarted(0));
  EXPECT_FALSE(pool.wasStarted(17));
  while (taken.size() < 5)
    for (size_t i : pool.take()) taken.insert(i);
  EXPECT_EQ(taken, (std::set<size_t>{0, 1, 17, 12, 2}));
  pool.cancel();
  for (std::vector<size_t> got; !(got = pool.take()).empty();) {}
  std::lock_guard<std::mutex> l(mu);
  ASSERT_GE(order.size(), 5u);
  EXPECT_EQ(std::vector<size_t>(order.begin() + 2, order.begin() + 5),
            (std::vector<size_t>{17, 12, 2}));
  EXPECT_LE(pool.started(), 6u);  // the window: one ahead of the five taken
}

// A lazy pool destroyed with jobs held back by its window does not wait for them.
TEST(CompilePool, LazyPoolDestroyedEarlyDoesNotHang) {
  std::atomic<size_t> ran{0};
  {
    CompilePool pool(100, 2, [&](size_t) { ++ran; });
    pool.setWindow(2);
    pool.start();
    EXPECT_FALSE(pool.take().empty());
  }
  EXPECT_LT(ran.load(), 100u);
}

TEST(CompilePool, NoJobsAndThreadCounts) {
  CompilePool none(0, 4, [](size_t) { ADD_FAILURE() << "no job to run"; });
  none.start();
  EXPECT_TRUE(none.take().empty());
  EXPECT_TRUE(none.finished());
  EXPECT_EQ(CompilePool::threadsFor(3, 8, false), 3);   // never more than the jobs
  EXPECT_EQ(CompilePool::threadsFor(10, 2, true), 2);   // as requested
  EXPECT_EQ(CompilePool::threadsFor(0, 0, false), 1);   // at least one
  EXPECT_GE(CompilePool::threadsFor(100, 0, false), 1);
  // Sized to the cores this process may use (affinity, cgroup quota), not to the host's CPUs.
  EXPECT_GE(CompilePool::usableCores(), 1);
  EXPECT_LE(CompilePool::usableCores(),
            static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  EXPECT_LE(CompilePool::threadsFor(1000, 0, false), CompilePool::usableCores());
  std::atomic<int> n{0};
  CompilePool::parallelFor(7, 16, [&](size_t) { ++n; });
  EXPECT_EQ(n.load(), 7);
}

}  // namespace
}  // namespace ktune
