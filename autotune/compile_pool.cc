#include "autotune/compile_pool.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

namespace ktune {

namespace {

// The cgroup v2 quota in CPUs ("200000 100000" in cpu.max: 2), 0 when unlimited or unknown.
int cgroupQuotaCpus() {
  std::ifstream in("/sys/fs/cgroup/cpu.max");
  std::string quota, period;
  if (!(in >> quota >> period) || quota == "max") return 0;
  const double q = std::atof(quota.c_str()), p = std::atof(period.c_str());
  if (q <= 0 || p <= 0) return 0;
  return std::max(1, static_cast<int>(std::ceil(q / p)));
}

}  // namespace

int CompilePool::usableCores() {
  static const int cores = [] {
    int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
      n = std::min(n, CPU_COUNT(&set));
    if (const int quota = cgroupQuotaCpus(); quota > 0) n = std::min(n, quota);
    return n;
  }();
  return cores;
}

int CompilePool::threadsFor(size_t jobs, int requested, bool leave_core) {
  const int hw = usableCores();
  int n = requested > 0 ? requested : (leave_core && hw > 4 ? hw - 1 : hw);
  return std::max(1, std::min<int>(n, static_cast<int>(std::min<size_t>(jobs, 1 << 16))));
}

CompilePool::CompilePool(size_t jobs, int threads, Job job, Done done)
    : jobs_(jobs), threads_(std::max(1, threads)), job_(std::move(job)), done_(std::move(done)),
      seq_(jobs), slot_(jobs) {
  for (size_t i = 0; i < jobs; ++i) seq_[i] = slot_[i] = i;
}

CompilePool::~CompilePool() {
  cancel();  // jobs not started yet are dropped (a lazy pool's would wait for take() forever)
  join();
}

void CompilePool::join() {
  for (auto& t : pool_)
    if (t.joinable()) t.join();
}

void CompilePool::loop() {
  for (;;) {
    size_t i;
    {
      std::unique_lock<std::mutex> l(mu_);
      room_.wait(l, [&] { return cancelled_ || next_ >= jobs_ || mayStart(next_); });
      if (cancelled_ || next_ >= jobs_) {
        --live_;
        return;
      }
      i = seq_[next_++];
    }
    job_(i);
    {
      std::lock_guard<std::mutex> l(mu_);
      ready_.push_back(i);
      if (++finished_ == limit())
        wall_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_)
                       .count();
      if (done_) done_(i, finished_);
    }
    cv_.notify_all();
  }
}

bool CompilePool::mayStart(size_t slot) const {
  if (window_ == 0 || slot < floor_) return true;
  if (slot >= taken_ + window_) return false;
  // Past the first wave only once the consumer has judged all of it: a run that stops there
  // (the common case: the first wave covers what the consumer takes anyway) waits for no
  // compile it started on speculation.
  for (size_t j = 0; j < floor_ && j < asked_past_.size(); ++j)
    if (!asked_past_[seq_[j]]) return false;
  if (cheap_.empty() || cheap_[seq_[slot]]) return true;
  for (size_t j = 0; j < slot; ++j)
    if (cheap_[seq_[j]] && !asked_past_[seq_[j]]) return false;
  return true;
}

void CompilePool::promote(const std::vector<size_t>& jobs) {
  {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<char> moved(jobs_, 0);
    std::vector<size_t> tail;
    for (size_t j : jobs)
      if (j < jobs_ && slot_[j] >= next_ && !moved[j]) moved[j] = 1, tail.push_back(j);
    for (size_t s = next_; s < jobs_; ++s)
      if (!moved[seq_[s]]) tail.push_back(seq_[s]);
    for (size_t k = 0; k < tail.size(); ++k) seq_[next_ + k] = tail[k], slot_[tail[k]] = next_ + k;
  }
  room_.notify_all();
}

size_t CompilePool::slotOf(size_t job) const {
  std::lock_guard<std::mutex> l(mu_);
  return job < jobs_ ? slot_[job] : job;
}

bool CompilePool::wasStarted(size_t job) const {
  std::lock_guard<std::mutex> l(mu_);
  return job < jobs_ && slot_[job] < next_;
}

void CompilePool::setCheap(std::vector<char> cheap) {
  std::lock_guard<std::mutex> l(mu_);
  if (cheap.size() != jobs_) cheap.clear();
  cheap_ = std::move(cheap);
}

void CompilePool::setWindow(size_t window, size_t floor) {
  std::lock_guard<std::mutex> l(mu_);
  window_ = window;
  floor_ = floor;
  taken_flag_.assign(jobs_, 0);
  asked_past_.assign(jobs_, 0);
}

void CompilePool::cancel() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    if (finished_ == limit() && wall_ms_ == 0)
      wall_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_)
                     .count();
  }
  room_.notify_all();
  cv_.notify_all();
}

size_t CompilePool::started() const {
  std::lock_guard<std::mutex> l(mu_);
  return next_;
}

void CompilePool::start() {
  t0_ = std::chrono::steady_clock::now();
  live_ = threads_;
  for (int t = 0; t < threads_; ++t) pool_.emplace_back([this] { loop(); });
}

void CompilePool::resume() {
  int more = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!cancelled_) return;
    cancelled_ = false;
    wall_ms_ = 0;
    more = threads_ - live_;
    live_ = threads_;
  }
  for (int t = 0; t < more; ++t) pool_.emplace_back([this] { loop(); });
  room_.notify_all();
}

void CompilePool::runAll() {
  t0_ = std::chrono::steady_clock::now();
  live_ = threads_;
  for (int t = 1; t < threads_; ++t) pool_.emplace_back([this] { loop(); });
  loop();
  join();
}

std::vector<size_t> CompilePool::take() {
  std::vector<size_t> got;
  {
    std::unique_lock<std::mutex> l(mu_);
    asked_past_ = taken_flag_;  // the consumer is back: what it took before is judged
    room_.notify_all();
    if (taken_ >= limit()) return {};
    cv_.wait(l, [&] { return !ready_.empty() || taken_ >= limit(); });
    got.assign(ready_.begin(), ready_.end());
    ready_.clear();
    taken_ += got.size();
    if (!taken_flag_.empty())
      for (size_t i : got) taken_flag_[i] = 1;
  }
  room_.notify_all();
  return got;
}

bool CompilePool::finished() const {
  std::lock_guard<std::mutex> l(mu_);
  return finished_ == limit();
}

double CompilePool::wallMs() const {
  std::lock_guard<std::mutex> l(mu_);
  return wall_ms_;
}

void CompilePool::parallelFor(size_t jobs, int threads, const Job& job) {
  CompilePool pool(jobs, threads, job);
  pool.runAll();
}

}  // namespace ktune
