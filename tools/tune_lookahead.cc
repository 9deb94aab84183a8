#include "tools/tune_lookahead.h"

#include <algorithm>
#include <utility>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "autotune/compile_pool.h"
#include "templates/gemm.h"

namespace ktune::cli {

namespace {
constexpr int kNice = 10;  // CFS weight about a tenth of a nice-0 thread's
// The deeper passes: the first kDeepFirst configs of each decode key's race order, then kDeepStep
// more per pass up to kDeepLast (the decode first wave is 18 on a 16-core host; the stall's 16
// after a leader in that wave reach 34).
constexpr size_t kDeepFirst = 26, kDeepStep = 8, kDeepLast = 42;

// Whether the decode kernel runs this shape (its races go deep: GemmLookahead).
bool decodeKey(const gemm::GemmShape& shape) {
  gemm::GemmShape s = shape;
  s.aligned16 = true;
  return !gemm::curatedConfigs(gemm::KernelKind::kDecode, s).empty();
}
}  // namespace

GemmLookahead::GemmLookahead(GemmOp& op, std::vector<gemm::GemmShape> shapes)
    : op_(op), shapes_(std::move(shapes)) {}

GemmLookahead::~GemmLookahead() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void GemmLookahead::start(size_t from, bool shallow) {
  if (thread_.joinable() || from >= shapes_.size()) return;
  const int threads = std::max(1, CompilePool::usableCores() - 1);
  thread_ = std::thread([this, from, threads, shallow] {
    // Below the benchmarks: a descheduled launch thread records its end event late and inflates a
    // few-µs kernel's time, and the key being tuned compiles first. The compile threads this thread
    // starts inherit its nice value (Linux: per thread). Best effort: an error leaves it at 0.
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), kNice);
    for (size_t i = from; i < shapes_.size() && !stop_; ++i) {
      // A key that cannot be compiled here fails again, with its reason, in its own tuning run.
      auto n = op_.precompile(shapes_[i], threads);
      if (n.ok()) compiled_ += *n;
    }
    for (size_t depth = kDeepFirst; !shallow && depth <= kDeepLast && !stop_; depth += kDeepStep)
      for (size_t i = from; i < shapes_.size() && !stop_; ++i) {
        if (i <= current_ + 1 || !decodeKey(shapes_[i])) continue;
        auto n = op_.precompile(shapes_[i], threads, depth);
        if (n.ok()) compiled_ += *n;
      }
  });
}

}  // namespace ktune::cli
