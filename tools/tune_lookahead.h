// `ktune tune gemm` over several keys (a suite, a range of M): while one key tunes, a background
// thread compiles the next keys' first kernels into the code-object store (GemmOp::precompile),
// one key after another, so a later key's tuning run finds them there. The first key's own compiles
// take every core, so the look-ahead starts once it is tuned; a key the look-ahead is still
// compiling when its tuning starts shares those compiles (the store runs one compile per object).
// Then, for the later keys the decode kernel runs (a few rows), deeper into their race's order,
// kDeepStep configs at a time: their races go on well past the first wave (the stall after the
// leader: 33-54 of ~112 candidates raced at the LLM suite's 16-row keys), and their compiles then
// waited until each key's turn, after the prefill keys' benchmarks had left the cores idle.
// --no-lookahead turns it off; --shallow-lookahead keeps it to the first waves.
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
  // nice 10 (the benchmarks and the current key's own compiles come first), then the deeper
  // passes (unless `shallow`). Once only; no-op with fewer than one key left.
  void start(size_t from, bool shallow = false);
  // The key being tuned now: the deeper passes leave it and the next one alone (its race compiles
  // its own; what the look-ahead still ran when the suite ends would be waited for).
  void at(size_t key) { current_ = key; }
  // Configs it compiled so far (store misses).
  size_t compiled() const { return compiled_.load(); }

 private:
  GemmOp& op_;
  std::vector<gemm::GemmShape> shapes_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> compiled_{0};
  std::atomic<size_t> current_{0};
};

}  // namespace ktune::cli
