// `ktune tune gemm` over several keys (a suite, a range of M): while one key tunes, a background
// thread compiles the next keys' first kernels into the code-object store (GemmOp::precompile),
// one key after another, so a later key's tuning run finds them there. The first key's own compiles
// take every core, so the look-ahead starts once it is tuned; a key the look-ahead is still
// compiling when its tuning starts shares those compiles (the store runs one compile per object).
// The first key's own first wave starts before the device's context (startFirst). --no-lookahead
// turns both off.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
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
  // nice 10 (the benchmarks and the current key's own compiles come first); then, for the keys of
  // at most kDeepRows rows, the first kDeepConfigs of their guided order (below). Once only; no-op
  // with fewer than one key left.
  void start(size_t from);
  // Few-row keys: at M <= 16 on sm_90a the guided search races the decode and skinny kinds only
  // (51 configs at 16 rows), and on the GPU a cold suite's 16-row keys raced 35-51 of them, the
  // first of those keys compiling 16-18 past its first wave (1.9-2.2 s, compile-bound) while the
  // cores idled through the prefill keys' benchmarks before it. Their code objects do not depend
  // on N or K: one pass serves every such key of one row count (bench/NOTES.md, issue 34).
  // The pass goes kDeepStep configs at a time (each step finds the ones before in the store) and
  // stops between steps once the key's own tuning run has started (tuning()) or the command ends,
  // so it never waits longer than a first wave's compiles.
  static constexpr int64_t kDeepRows = 16;
  static constexpr size_t kDeepConfigs = 64, kDeepStep = 16;
  // Key i's tuning run starts now (keys in order): the deeper pass leaves it and the keys before.
  void tuning(size_t i) { tuning_ = i; }
  // Compiles the first key's first wave (GemmOp::precompile) now, on a thread of its own at this
  // process's priority, with the tuning run's threads: called before the device's context exists
  // (EngineOptions::context_later), so the compiles run while the context, the vendor library and
  // the inputs are made, and the first key's tuning run finds them running or done (the store
  // runs one compile per object and hands its result to every caller). Once only.
  // With later keys it also compiles their defaults (the first config of each key's guided order,
  // timed at every key) at nice 10, beside the first wave: a default no earlier key shares (the
  // split tail's at 4096x28672x4096 in the LLM suite, whose other prefill keys take its SPLIT_K 1
  // twin) was a 2 s compile its key waited for when the look-ahead reached it only after the first
  // key (bench/NOTES.md, issue 34). A key whose tuning has started is skipped.
  void startFirst();
  static constexpr size_t kDefaultThreads = 8;
  // The later keys (index > 0) whose default no key before them has, in order.
  std::vector<size_t> distinctDefaults() const;
  // Waits for start()'s thread and startFirst()'s later defaults to end on their own (every key's
  // passes done; the destructor stops them after the key being compiled instead).
  void finish();
  // Configs it compiled so far (store misses).
  size_t compiled() const { return compiled_.load(); }
  // Configs startFirst() compiled (store misses; 0 until it has finished).
  size_t firstCompiled() const { return first_compiled_.load(); }
  // Waits for startFirst()'s compiles to end, then firstCompiled(): the first key's tuning run
  // found them in the store, so they are that run's own compiles, not earlier hits.
  size_t awaitFirstCompiled();

 private:
  GemmOp& op_;
  std::vector<gemm::GemmShape> shapes_;
  std::thread thread_, first_, defaults_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> compiled_{0}, first_compiled_{0}, tuning_{0};
};

}  // namespace ktune::cli
