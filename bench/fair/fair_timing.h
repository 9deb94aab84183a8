// Fair comparisons for the benchmarks and the CLI's peers: the statistics of a sample (median with
// a distribution-free interval), the interleaved order of several variants (each goes first in
// turn), per-round ratios, and the GPU's SM clock and power read through NVML (opened at run time).
//
// Every function here is host-only and deterministic, so the statistics are unit-tested on CPU;
// only readGpuClocks needs a driver (it returns kUnavailable without one).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ktune::fair {

// A median with a confidence interval for it: lo and hi are the order statistics whose ranks the
// binomial(n, 1/2) distribution puts around the median with at least `confidence` coverage
// (distribution-free; no normality assumed). With too few samples for that coverage, lo/hi are the
// sample's min and max and `exact` is false.
struct Interval {
  double median = 0, lo = 0, hi = 0;
  int n = 0;
  bool exact = false;  // the interval reaches the requested confidence
  // Half-width relative to the median (0 for an empty sample).
  double relHalfWidth() const;
};

// Median and interval of `samples` (copied, then sorted). Empty -> all zero.
Interval medianInterval(std::vector<double> samples, double confidence = 0.95);

// Per-round ratios num[i] / den[i] (rounds where either side is <= 0 are skipped), summarised as a
// median with interval: the ratio of two variants timed in the same rounds.
Interval ratioInterval(const std::vector<double>& num, const std::vector<double>& den,
                       double confidence = 0.95);

// The order in which `variants` variants run in round `round`: a rotation by `round`, so that over
// `variants` consecutive rounds each variant runs first once (ABAB... alternating for two).
std::vector<int> interleavedOrder(int variants, int round);

// Runs `rounds` rounds of every variant in interleaved order: sample(v) returns one measurement of
// variant v (a negative value is a failure and is not recorded). Returns the samples per variant.
template <class Sample>
std::vector<std::vector<double>> interleave(int variants, int rounds, Sample&& sample) {
  std::vector<std::vector<double>> out(static_cast<size_t>(variants));
  for (int r = 0; r < rounds; ++r)
    for (int v : interleavedOrder(variants, r)) {
      const double x = sample(v);
      if (x >= 0) out[static_cast<size_t>(v)].push_back(x);
    }
  return out;
}

// SM clock (MHz), memory clock (MHz), power (W) and temperature (C) of one GPU.
struct GpuClocks {
  int sm_mhz = 0, mem_mhz = 0, temp_c = 0;
  double power_w = 0;
  std::string toString() const;  // "sm 1980 MHz, mem 2619 MHz, 312.4 W, 41 C"
};

// Reads the clocks of GPU `index` through NVML (libnvidia-ml.so.1, dlopen'ed once per process).
// kUnavailable naming what is missing when NVML or the device is absent. Thread-safe.
Expected<GpuClocks> readGpuClocks(int index = 0);

// "clocks before: <...>; after: <...>" (or the reason they could not be read).
std::string clocksLine(const Expected<GpuClocks>& before, const Expected<GpuClocks>& after);

}  // namespace ktune::fair
