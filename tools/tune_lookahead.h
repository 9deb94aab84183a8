// `ktune tune gemm` over several keys (a suite, a range of M): while one key tunes, a background
// thread compiles the next keys' first kernels into the code-object store (GemmOp::precompile),
// one key after another, so a later key's tuning run finds them there. The first key's own compiles
// take every core, so the look-ahead starts once it is tuned; a key the look-ahead is still
// compiling when its tuning starts shares those compiles (the store runs one compile per object).
// --no-lookahead turns it off.
#pragma once

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

#include "ops/gemm.h"

namespace ktune::cli {

class GemmLookahead {
 public:
  // Keys in tuning order; nothing runs before start().
  GemmLookahead(GemmOp& op, std::vector<gemm::GemmShape> shapes);
  // Stops after the key being compiled (it is waited for).
  ~GemmLookahead();
  GemmLookahead(const GemmLookahead&) = delete;
  GemmLookahead& operator=(const GemmLookahead&) = delete;

  // Compiles the first kernels of keys [from, end) on a background thread, on all cores but one, at
  // nice 10 (the benchmarks and the current key's own compiles come first). Once only; no-op with
  // fewer than one key left.
  void start(size_t from);
  // Configs it compiled so far (store misses).
  size_t compiled() const { return compiled_.load(); }

 private:
  GemmOp& op_;
  std::vector<gemm::GemmShape> shapes_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> compiled_{0};
};

}  // namespace ktune::cli
