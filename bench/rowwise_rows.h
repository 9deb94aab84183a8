// rowwise_bench's rows: the figures of one kernel and shape, the machine-readable lines
// (RESULT / RATIO / CLOCKS, read by dev/bench_table.py) and the summary table.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "bench/fair/fair_timing.h"

namespace ktune::bench {

struct Row {
  std::string name, best_config, copy_what, r2w1_what;
  double bytes = 0;
  int configs = 0;
  fair::Interval best, dflt, copy, r2w1;               // us (peers scaled to `bytes`)
  fair::Interval best_vs_copy, dflt_vs_copy, best_vs_r2w1;  // per round: peer time / kernel time
  std::string clocks;
  double gbs(double us) const { return us > 0 ? bytes / us / 1e3 : 0; }
};
inline std::vector<Row>& rows() {
  static std::vector<Row> r;
  return r;
}

// RESULT / RATIO / CLOCKS lines of one row (dev/bench_table.py reads them).
inline std::string rowId(const Row& r) {
  std::string id = r.name;
  for (char& ch : id)
    if (ch == ' ') ch = '_';
  return id;
}

inline void printRow(const Row& r) {
  const std::string id = rowId(r);
  const std::pair<const char*, const fair::Interval*> res[] = {
      {"best", &r.best}, {"default", &r.dflt}, {"copy", &r.copy}, {"read2write1", &r.r2w1}};
  for (const auto& [n, iv] : res)
    if (iv->n > 0)
      std::printf("RESULT rowwise %s %s %.3f %.3f %.3f %d\n", id.c_str(), n, iv->median, iv->lo, iv->hi, iv->n);
  const std::pair<const char*, const fair::Interval*> rat[] = {
      {"copy/best", &r.best_vs_copy}, {"copy/default", &r.dflt_vs_copy}, {"read2write1/best", &r.best_vs_r2w1}};
  for (const auto& [n, iv] : rat)
    if (iv->n > 0)
      std::printf("RATIO rowwise %s %s %.4f %.4f %.4f %d\n", id.c_str(), n, iv->median, iv->lo, iv->hi, iv->n);
  std::printf("CLOCKS rowwise %s %s\n", id.c_str(), r.clocks.c_str());
}

// The summary table of every row (last lines of the output).
inline void printTable(const std::string& device, const std::string& arch, int rounds) {
  if (!rows().empty()) {
    std::printf("\nrowwise bench on %s (%s), L2 flushed by reads, %d interleaved rounds; median"
                " [interval]; ratio = peer time / kernel time per round (fraction of the peer's"
                " bandwidth)\n%-30s %8s %9s %22s %22s %22s %22s  %s\n",
                device.c_str(), arch.c_str(), rounds, "kernel", "MB", "best_us",
                "best_GB/s", "vs copy", "default vs copy", "vs read2write1", "best config");
    auto iv = [](const fair::Interval& x) {
      char b[64];
      std::snprintf(b, sizeof b, "%.3f [%.3f,%.3f]", x.median, x.lo, x.hi);
      return std::string(x.n > 0 ? b : "-");
    };
    for (const auto& r : rows())
      std::printf("%-30s %8.1f %9.1f %22.0f %22s %22s %22s  %s (%d cfgs)\n    peers: %s; %s; %s\n",
                  r.name.c_str(), r.bytes / 1e6, r.best.median, r.gbs(r.best.median),
                  iv(r.best_vs_copy).c_str(), iv(r.dflt_vs_copy).c_str(), iv(r.best_vs_r2w1).c_str(),
                  r.best_config.c_str(), r.configs, r.copy_what.c_str(),
                  r.r2w1_what.empty() ? "-" : r.r2w1_what.c_str(), r.clocks.c_str());
  }
}

}  // namespace ktune::bench
