// ktune — do_bench's vocabulary (public API): the budgets of a measurement (BenchSettings: what
// Autotuner::benchmark takes, and the part of every candidate's timing that the engine's harness
// options extend) and its statistics (BenchStats: what the engine records of every candidate and
// what Autotuner::benchmark returns).
#pragma once

#include <vector>

namespace ktune {

// The budgets and flush of one do_bench measurement. The defaults are triton.testing.do_bench's
// (25 ms of warm-up, 100 ms measured) for a standalone measurement (Autotuner::benchmark); the
// engine's harness (autotune/benchmarker.h: BenchOptions extends this struct) times each tuning
// candidate with TunerOptions::warmup_ms / rep_ms instead.
struct BenchSettings {
  double warmup_ms = 25.0;  // device time of the warm-up runs
  double rep_ms = 100.0;    // device time of the measured runs
  int min_runs = 10;
  int max_runs = 10000;
  bool flush_l2 = true;     // clear the last-level cache before every measured run (untimed)
  // How: true reads a buffer of 2x the cache with a kernel (clean lines, as candidates are
  // timed; a memset where no kernel can be compiled, e.g. the simulated backend); false memsets
  // it (dirty lines, whose write-back lands in the measured run).
  bool flush_read = true;
};

// Device milliseconds of the measured runs: median, p20, p80 (linear interpolation), min, max,
// mean, standard deviation, run count, and every run's time in order in samples_ms where the
// caller asked for them (Autotuner::benchmark); the engine's records leave samples_ms empty.
struct BenchStats {
  double median_ms = 0, p20_ms = 0, p80_ms = 0, min_ms = 0, max_ms = 0, mean_ms = 0, std_ms = 0;
  int runs = 0;
  std::vector<double> samples_ms;
};

}  // namespace ktune
