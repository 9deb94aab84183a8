#include "tools/tune_lookahead.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "autotune/compile_pool.h"

namespace ktune::cli {

GemmLookahead::GemmLookahead(GemmOp& op, std::vector<gemm::GemmShape> shapes)
    : op_(op), shapes_(std::move(shapes)) {}

GemmLookahead::~GemmLookahead() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void GemmLookahead::start(size_t from) {
  if (thread_.joinable() || from >= shapes_.size()) return;
  const int threads = std::max(1, CompilePool::usableCores() - 1);
  thread_ = std::thread([this, from, threads] {
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = from; i < shapes_.size() && !stop_; ++i) {
      // A key that cannot be compiled here fails again, with its reason, in its own tuning run.
      auto n = op_.precompile(shapes_[i], threads);
      if (n.ok()) compiled_ += *n;
    }
    wall_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  });
}

}  // namespace ktune::cli
