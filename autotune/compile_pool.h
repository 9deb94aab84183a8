// The compile pool: runs N independent jobs (compiles) on a few threads and hands finished job
// indices to one consumer as they come, so benchmarking can start while compiles still run.
// Used by the tuning run, the CLI's compile-only analysis and the benchmark programs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ktune {

class CompilePool {
 public:
  // job(i) runs on a pool thread for every i in [0, jobs). done(i, finished), when given, runs
  // under the pool's lock right after job i, with the number of jobs finished so far (monotonic:
  // a progress count); it must not call back into the pool.
  using Job = std::function<void(size_t index)>;
  using Done = std::function<void(size_t index, size_t finished)>;

  // Threads for `jobs` jobs: `requested` when > 0, else every core, less one on machines with
  // more than four when `leave_core` (work running beside the compiles, e.g. timing launches,
  // must not wait for a time slice); never more than jobs, never less than one.
  static int threadsFor(size_t jobs, int requested, bool leave_core);
  // Cores this process may run on: the online CPUs, fewer when the affinity mask (a cpuset) or a
  // cgroup v2 CPU quota (cpu.max) allows fewer. A container on a large host sees every CPU of the
  // host in hardware_concurrency(); compiles sized to that oversubscribe its share.
  static int usableCores();

  CompilePool(size_t jobs, int threads, Job job, Done done = {});
  // Joins the threads (waits for the jobs that run).
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Starts the threads and returns at once; take() hands out finished jobs.
  void start();
  // Runs every job, on the threads and on the calling thread, and returns when all are done.
  void runAll();
  // Finished jobs not taken yet, in finishing order; waits for at least one. Empty once every
  // job has been taken.
  std::vector<size_t> take();
  // Lazy mode (call before start()): job i starts only once i < max(floor, taken + window), where
  // taken counts the jobs take() handed out: the first `floor` jobs (the first wave) run at once,
  // the rest at most `window` ahead of the consumer, and only once the consumer has taken every
  // job of the first wave and come back to take() after that. Jobs it never asks for are never
  // started.
  void setWindow(size_t window, size_t floor = 0);
  // Lazy mode, jobs known to be cheap (a code object the store already holds: loading it is
  // milliseconds, compiling is seconds): an expensive job past the floor also waits until every
  // cheap job before it has been handed out and the consumer has come back to take() after that.
  // The consumer decides whether to go on between two take() calls, so the cheap jobs ahead are
  // judged before an expensive one is started (a compile cannot be stopped once it runs). Call
  // before start(); cheap.size() == jobs (anything else: no job is cheap).
  void setCheap(std::vector<char> cheap);
  // No job starts after this; the ones running finish. take() then returns the finished ones not
  // taken yet, and empty once every started job is taken.
  void cancel();
  // Undoes cancel(): the jobs not started may start again, under the same rules (a consumer that
  // stopped, then learnt from a job that was still running that it wants more). Threads that
  // returned after cancel() are replaced.
  void resume();
  // Lazy mode: the given jobs not started yet start next, in the given order, ahead of the other
  // jobs not started (a consumer that learnt which jobs it wants first; the window and the cheap
  // rule then apply to the new order). Jobs started already are left as they are.
  void promote(const std::vector<size_t>& jobs);
  // A job's place in the order jobs start in (its index until promote() moves it).
  size_t slotOf(size_t job) const;
  // Jobs started so far (all of them run to the end, cancel() or not), and whether `job` is one.
  size_t started() const;
  bool wasStarted(size_t job) const;
  // Whether every job has finished (after cancel(): every started one).
  bool finished() const;
  // Milliseconds from start()/runAll() to the last job's end (0 while jobs run).
  double wallMs() const;

  // Runs job(i) for every i in [0, jobs) on `threads` threads (the caller's included) and returns
  // when all are done.
  static void parallelFor(size_t jobs, int threads, const Job& job);

 private:
  void loop();
  void join();
  size_t jobs_;
  int threads_;
  Job job_;
  Done done_;
  std::vector<std::thread> pool_;
  mutable std::mutex mu_;
  std::condition_variable cv_, room_;
  std::deque<size_t> ready_;
  size_t next_ = 0, finished_ = 0, taken_ = 0;  // next_: the next slot to start
  std::vector<size_t> seq_, slot_;  // slot -> job (the start order), job -> slot
  size_t window_ = 0, floor_ = 0;  // window_ 0: no limit
  std::vector<char> cheap_;         // setCheap(); empty: no job is cheap
  std::vector<char> taken_flag_, asked_past_;  // per job: handed out; handed out before a take()
  bool mayStart(size_t slot) const;  // locked
  bool cancelled_ = false;
  int live_ = 0;  // threads in loop() (locked)
  size_t limit() const { return cancelled_ ? next_ : jobs_; }  // jobs that will finish (locked)
  std::chrono::steady_clock::time_point t0_;
  double wall_ms_ = 0;
};

}  // namespace ktune
