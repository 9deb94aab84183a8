// A one-shot gate for tests that must control the order in which threads reach a point (the
// simulated compiler's hook, a progress callback) instead of hoping a sleep is long enough.
// wait() blocks until open() was called; it gives up after a bound far beyond any real wait
// (the test then fails on the false it returns, rather than hanging CI).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace ktune::testsupport {

class Gate {
 public:
  void open() {
    {
      std::lock_guard<std::mutex> l(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  bool isOpen() const {
    std::lock_guard<std::mutex> l(mu_);
    return open_;
  }
  // True once open; false if it stayed closed for `limit`.
  bool wait(std::chrono::seconds limit = std::chrono::seconds(120)) const {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, limit, [&] { return open_; });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool open_ = false;
};

// Opens once `n` threads have arrived: arrive() blocks each caller until the n-th arrives (or the
// bound passes: false). Proves that n threads were inside the same region at the same time.
class Rendezvous {
 public:
  explicit Rendezvous(int n) : n_(n) {}
  bool arrive(std::chrono::seconds limit = std::chrono::seconds(120)) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (++arrived_ >= n_) all_.open();
    }
    return all_.wait(limit);
  }

 private:
  std::mutex mu_;
  int n_, arrived_ = 0;
  Gate all_;
};

}  // namespace ktune::testsupport
