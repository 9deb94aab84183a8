// ktune — do_bench statistics: one name for what the engine records of every candidate and what
// Autotuner::benchmark returns (public API).
#pragma once

#include <vector>

namespace ktune {

// Device milliseconds of the measured runs: median, p20, p80 (linear interpolation), min, max,
// mean, standard deviation, run count, and every run's time in order in samples_ms where the
// caller asked for them (Autotuner::benchmark); the engine's records leave samples_ms empty.
struct BenchStats {
  double median_ms = 0, p20_ms = 0, p80_ms = 0, min_ms = 0, max_ms = 0, mean_ms = 0, std_ms = 0;
  int runs = 0;
  std::vector<double> samples_ms;
};

}  // namespace ktune
