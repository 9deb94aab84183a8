// Output of `ktune tune`: the per-shape candidate table (or its JSON), the no-GPU analysis table,
// and progress — counts, elapsed time and an ETA on a terminal, JSON lines on stderr with --json,
// nothing with --quiet or when stderr is a log file.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autotune/autotuner.h"
#include "autotune/static_rank.h"
#include "compiler/analysis/report.h"

namespace ktune::cli {

struct Metric {
  const char* unit;   // "GB/s" or "TFLOP/s"
  double per_ms;      // metric = per_ms / median_ms
  double peer = 0;    // same-run peer in the metric's unit (copy bandwidth), 0 = none
  const char* peer_name = "";
};

void printTuneReport(const TuneReport& r, const Metric& m, bool json, double vendor_default_ms);
// Start-up figures of this process (ms) the tune command measured outside the engine (process
// start, opening the GPU, the tuner, the op with its vendor library, a key's buffers): every JSON
// report carries those noted so far as "process", so a run shows where its time outside
// total_wall_ms went. Later notes of one name replace earlier ones.
void noteProcessMs(const std::string& name, double ms);

// One analysed config of the no-GPU path.
struct Analysed {
  std::string kernel, config;
  Status status;
  KernelReport report;
  bool cache_hit = false;
};

struct AnalysisSummary {
  std::string op, arch, compiler, compiler_version, why_no_gpu, sampled_note;
  std::string recorded;  // where the ranking was written ("" = not written)
  int compiled = 0, cache_hits = 0;
};

// The no-GPU result as JSON: summary, and every config in `rank` order with its static score
// ("ranking": kStaticRankingLabel).
nlohmann::json analysisJson(const AnalysisSummary& s, const std::vector<Analysed>& out,
                            const std::vector<StaticRank>& rank);
// The table (best static score first) or, with json, analysisJson.
void printAnalysis(const AnalysisSummary& s, const std::vector<Analysed>& out,
                   const std::vector<StaticRank>& rank, bool json);

class Progress {
 public:
  enum class Mode { kOff, kTerminal, kJsonLines };
  Progress(bool quiet, bool json);
  Mode mode() const { return mode_; }
  // "compiling 3/32  elapsed 1.2 s  ETA 11.6 s" (terminal) or a JSON line (--json).
  void update(const std::string& phase, int done, int total, const std::string& detail = "");
  void finish();

 private:
  Mode mode_;
  std::chrono::steady_clock::time_point start_;
  bool open_line_ = false;
};

}  // namespace ktune::cli
