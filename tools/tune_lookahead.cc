#include "tools/tune_lookahead.h"

#include <algorithm>
#include <utility>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "autotune/compile_pool.h"

namespace ktune::cli {

namespace {
constexpr int kNice = 10;  // CFS weight about a tenth of a nice-0 thread's
}  // namespace

GemmLookahead::GemmLookahead(GemmOp& op, std::vector<gemm::GemmShape> shapes)
    : op_(op), shapes_(std::move(shapes)) {}

GemmLookahead::~GemmLookahead() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (first_.joinable()) first_.join();
  if (defaults_.joinable()) defaults_.join();
}

void GemmLookahead::startFirst() {
  if (first_.joinable() || shapes_.empty()) return;
  first_ = std::thread([this] {
    // An error (a shape no config compiles for) is the tuning run's to report.
    auto n = op_.precompile(shapes_[0]);
    if (n.ok()) first_compiled_ = *n;
  });
  if (shapes_.size() < 2) return;
  defaults_ = std::thread([this] {
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), kNice);
    // The later keys with a default of their own: not the first key's (its wave compiles that one
    // at nice 0; a request from here could come first and run it at nice 10) nor an earlier
    // later key's.
    const std::vector<size_t> keys = distinctDefaults();
    // One thread per key, depth 1: the guided order's first config is the key's default whatever
    // the history (guided.h).
    CompilePool::parallelFor(keys.size(), static_cast<int>(std::min(keys.size(), kDefaultThreads)),
                             [this, &keys](size_t j) {
                               const size_t i = keys[j];
                               if (stop_ || tuning_ >= i) return;
                               auto n = op_.precompile(shapes_[i], 1, 1);
                               if (n.ok()) compiled_ += *n;
                             });
  });
}

std::vector<size_t> GemmLookahead::distinctDefaults() const {
  std::vector<Config> seen;
  std::vector<size_t> keys;
  for (size_t i = 0; i < shapes_.size(); ++i) {
    auto d = op_.defaultConfig(shapes_[i]);
    if (!d.ok() || std::find(seen.begin(), seen.end(), *d) != seen.end()) continue;
    seen.push_back(*d);
    if (i > 0) keys.push_back(i);
  }
  return keys;
}

void GemmLookahead::finish() {
  if (thread_.joinable()) thread_.join();
  if (defaults_.joinable()) defaults_.join();
}

size_t GemmLookahead::awaitFirstCompiled() {
  if (first_.joinable()) first_.join();
  return first_compiled_.load();
}

void GemmLookahead::start(size_t from) {
  if (thread_.joinable() || from >= shapes_.size()) return;
  const int threads = std::max(1, CompilePool::usableCores() - 1);
  thread_ = std::thread([this, from, threads] {
    // Below the benchmarks: a descheduled launch thread records its end event late and inflates a
    // few-µs kernel's time, and the key being tuned compiles first. The compile threads this thread
    // starts inherit its nice value (Linux: per thread). Best effort: an error leaves it at 0.
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), kNice);
    for (size_t i = from; i < shapes_.size() && !stop_; ++i) {
      // A key that cannot be compiled here fails again, with its reason, in its own tuning run.
      auto n = op_.precompile(shapes_[i], threads);
      if (n.ok()) compiled_ += *n;
    }
    for (size_t i = from; i < shapes_.size() && !stop_; ++i) {
      if (shapes_[i].m > kDeepRows) continue;
      for (size_t d = kDeepStep; d <= kDeepConfigs && !stop_ && tuning_ < i; d += kDeepStep) {
        auto n = op_.precompile(shapes_[i], threads, d);
        if (!n.ok()) break;
        compiled_ += *n;
      }
    }
  });
}

}  // namespace ktune::cli
