#include "tools/tune_output.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "tools/commands.h"
#include "base/device.h"

namespace ktune::cli {
namespace {
nlohmann::json& processTimes();
}  // namespace

void noteProcessMs(const std::string& name, double ms) { processTimes()[name] = ms; }

namespace {

// Which search ran and, for a guided one, what each round did (docs/search.md).
nlohmann::json searchJson(const TuneReport& r) {
  nlohmann::json j = {{"name", r.search}};
  if (r.search != "guided") return j;
  j["reached"] = r.reached;
  j["not_reached"] = r.not_reached;
  j["compiled"] = r.compiled;
  j["store_hits"] = r.store_hits;
  j["regret_estimate"] = r.regret_estimate;
  j["budget_hit"] = r.budget_hit;
  j["launch_floor"] = r.launch_floor;
  j["drift"] = r.drift;
  j["history_neighbours"] = r.history_neighbours;
  j["rounds"] = nlohmann::json::array();
  for (const auto& rd : r.rounds)
    j["rounds"].push_back({{"round", rd.round}, {"benchmarked", rd.benchmarked},
                           {"eliminated", rd.eliminated}, {"compiled", rd.compiled}});
  return j;
}

nlohmann::json& processTimes() {
  static nlohmann::json j = nlohmann::json::object();
  return j;
}

nlohmann::json reportJson(const TuneReport& r, const Metric& m) {
  nlohmann::json j = {{"family", r.family}, {"key", r.key}, {"winner", r.winner},
                      {"winner_source", r.winner_source},
                      {"winner_median_ms", r.winner_stats.median_ms},
                      {"from", r.origin}, {"compiled", r.compiled}, {"store_hits", r.store_hits},
                      {"duplicates", r.duplicates}, {"pruned", r.pruned},
                      {"compile_wall_ms", r.compile_wall_ms}, {"bench_wall_ms", r.bench_wall_ms},
                      {"bench_overlap_ms", r.bench_overlap_ms}, {"finalists_ms", r.finalists_ms},
                      {"bench_load_ms", r.load_ms}, {"bench_verify_ms", r.verify_ms},
                      {"bench_measure_ms", r.measure_ms}, {"bench_record_ms", r.record_ms},
                      {"total_wall_ms", r.total_wall_ms}, {"from_database", r.origin == "database"},
                      {"unit", m.unit}};
  if (m.peer > 0) j["peer"] = {{"name", m.peer_name}, {"value", m.peer}};
  j["search"] = searchJson(r);
  const TuneReport::CompileJobs& cj = r.compile_jobs;
  j["compile_jobs"] = {{"jobs", cj.jobs}, {"threads", cj.threads}, {"first_wave", cj.first_wave},
                       {"job_ms_sum", cj.job_ms_sum}, {"job_ms_max", cj.job_ms_max},
                       {"compiler_ms_sum", cj.compiler_ms_sum},
                       {"compiler_ms_max", cj.compiler_ms_max}};
  if (cj.processes > 0) {
    j["compile_jobs"]["processes"] = cj.processes;
    j["compile_jobs"]["in_workers"] = cj.in_workers;
  }
  if (!processTimes().empty()) j["process"] = processTimes();
  if (!r.devices.empty()) {
    j["devices"] = nlohmann::json::array();
    for (const auto& d : r.devices)
      j["devices"].push_back({{"device", d.device}, {"candidates", d.candidates}, {"busy_ms", d.busy_ms}});
    j["devices_wall_ms"] = r.devices_wall_ms;
  }
  if (r.vs_default.rounds > 0) {
    const DefaultComparison& c = r.vs_default;
    j["vs_default"] = {{"baseline", c.baseline}, {"baseline_source", c.baseline_source},
                       {"decision", c.decision}, {"rounds", c.rounds},
                       {"finalists", c.finalists}, {"baseline_us", c.baseline_ms * 1e3},
                       {"winner_us", c.winner_ms * 1e3}, {"ratio", c.ratio},
                       {"ratio_lo", c.ratio_lo}, {"ratio_hi", c.ratio_hi}, {"margin", c.margin}};
  }
  j["candidates"] = nlohmann::json::array();
  for (const auto& c : r.candidates) {
    nlohmann::json cj = {{"config", c.config}, {"source", c.source},
                         {"status", codeName(c.status)}, {"reason", c.reason}};
    if (c.status == Code::kOk && c.stats.median_ms > 0) {
      // The device it ran on (the CLI's own device is 0; --devices spreads candidates).
      cj["device"] = c.device >= 0 ? c.device : 0;
      cj["median_us"] = c.stats.median_ms * 1e3;
      cj["p20_us"] = c.stats.p20_ms * 1e3;
      cj["p80_us"] = c.stats.p80_ms * 1e3;
      cj["runs"] = c.stats.runs;
      cj[m.unit] = m.per_ms / c.stats.median_ms;
    }
    j["candidates"].push_back(cj);
  }
  return j;
}

bool measured(const CandidateResult* c) { return c->status == Code::kOk && c->stats.median_ms > 0; }

// The config column is 58 wide; a longer config is printed whole on its own line and its figures
// on the next (cut configs of one kind read the same, so rows could not be told apart).
constexpr size_t kConfigWidth = 58;

void printRow(const CandidateResult* c, const TuneReport& r, const Metric& m, double vendor_ms) {
  bool win = c->config == r.winner && c->source == r.winner_source;
  std::string cfg = (c->source != "jit" ? c->source + " " : std::string()) + c->config;
  if (cfg.size() > kConfigWidth) {
    std::printf("  %-1s %s\n", win ? "*" : "", cfg.c_str());
    cfg.clear();
    win = false;
  }
  if (measured(c)) {
    double v = m.per_ms / c->stats.median_ms;
    char ratio[32] = "";
    if (m.peer > 0) std::snprintf(ratio, sizeof(ratio), "%.1f%%", 100.0 * v / m.peer);
    else if (vendor_ms > 0)
      std::snprintf(ratio, sizeof(ratio), "%.1f%%", 100.0 * vendor_ms / c->stats.median_ms);
    std::printf("  %-1s %-58s %10.2f %9.1f %9s  ok\n", win ? "*" : "", cfg.c_str(),
                c->stats.median_ms * 1e3, v, ratio);
    return;
  }
  // Whole: the reason is what says why. Early rejection is a measurement, not a failure.
  std::string why = rejectedAsSlower(*c) ? c->reason
                                         : std::string(codeName(c->status)) +
                                               (c->reason.empty() ? "" : ": " + c->reason);
  std::printf("  %-1s %-58s %10s %9s %9s  %s\n", "", cfg.c_str(), "-", "-", "", why.c_str());
}

}  // namespace

void printTuneReport(const TuneReport& r, const Metric& m, bool json, double vendor_default_ms) {
  if (json) {
    std::printf("%s\n", reportJson(r, m).dump(2).c_str());
    return;
  }
  std::vector<const CandidateResult*> rows;
  for (const auto& c : r.candidates) rows.push_back(&c);
  std::stable_sort(rows.begin(), rows.end(), [](const CandidateResult* a, const CandidateResult* b) {
    if (measured(a) != measured(b)) return measured(a);
    return measured(a) && a->stats.median_ms < b->stats.median_ms;
  });
  std::printf("\n%s  key %s\n", r.family.c_str(), r.key.c_str());
  const char* ratio_head = m.peer > 0 ? "% copy bw" : (vendor_default_ms > 0 ? "% vendor" : "");
  std::printf("  %-1s %-58s %10s %9s %9s  %s\n", "", "CONFIG", "MEDIAN_US", m.unit, ratio_head,
              "STATUS");
  for (const auto* c : rows) printRow(c, r, m, vendor_default_ms);
  std::printf("  winner: %s%s  (%.2f us)", r.winner_source == "jit" ? "" : (r.winner_source + " ").c_str(),
              r.winner.c_str(), r.winner_stats.median_ms * 1e3);
  if (m.peer > 0) std::printf("  same-run %s %.1f %s", m.peer_name, m.peer, m.unit);
  if (r.vs_default.rounds > 0) std::printf("\n  %s", describe(r.vs_default).c_str());
  std::printf("\n  %d compiled, %d cache hits, %d duplicate binaries, %d pruned; compile %.2f s, "
              "bench %.2f s (%.2f s of it while compiling), total %.2f s%s\n",
              r.compiled, r.store_hits, r.duplicates, r.pruned, r.compile_wall_ms / 1e3,
              r.bench_wall_ms / 1e3, r.bench_overlap_ms / 1e3, r.total_wall_ms / 1e3,
              r.origin == "remote"     ? " (from the shared cache)"
              : r.origin == "database" ? " (from the tuning database; --retune measures again)"
              : r.origin == "pinned"   ? " (pinned in the tuning database)"
                                       : "");
  if (r.load_ms + r.verify_ms + r.measure_ms + r.record_ms > 0)
    std::printf("  bench in this process: load %.2f s, verify %.2f s, measure %.2f s, record %.2f s\n",
                r.load_ms / 1e3, r.verify_ms / 1e3, r.measure_ms / 1e3, r.record_ms / 1e3);
}

nlohmann::json analysisJson(const AnalysisSummary& s, const std::vector<Analysed>& out,
                            const std::vector<StaticRank>& rank) {
  nlohmann::json j = {{"op", s.op}, {"arch", s.arch}, {"compiler", s.compiler},
                      {"compiled", s.compiled}, {"cache_hits", s.cache_hits},
                      {"ranking", kStaticRankingLabel},
                      {"timing", "needs a GPU: " + s.why_no_gpu}, {"configs", nlohmann::json::array()}};
  if (!s.sampled_note.empty()) j["sampled"] = s.sampled_note;
  if (!s.recorded.empty()) j["recorded"] = s.recorded;
  int n = 0;
  for (const auto& r : rank) {
    const Analysed& a = out[r.index];
    nlohmann::json c = {{"kernel", a.kernel}, {"config", a.config},
                        {"status", codeName(a.status.code())}, {"cache_hit", a.cache_hit}};
    if (r.excluded) {
      c["static_rank"] = nullptr;
      c["excluded"] = r.why;
    } else {
      c["static_rank"] = ++n;
      c["static_score"] = r.score;
      c["model"] = {{"occupancy", r.occupancy}, {"verdicts", r.verdicts}, {"warns", r.warns},
                    {"intensity", r.intensity}, {"fill", r.fill}};
    }
    if (a.status.ok()) c["report"] = nlohmann::json::parse(a.report.toJson(), nullptr, false);
    else c["reason"] = a.status.message().substr(0, 400);
    j["configs"].push_back(c);
  }
  return j;
}

void printAnalysis(const AnalysisSummary& s, const std::vector<Analysed>& out,
                   const std::vector<StaticRank>& rank, bool json) {
  if (json) {
    std::printf("%s\n", analysisJson(s, out, rank).dump(2).c_str());
    return;
  }
  std::printf("%s on %s (%s %s): %zu configs analysed (%d compiled, %d cache hits)%s\n",
              s.op.c_str(), s.arch.c_str(), s.compiler.c_str(), s.compiler_version.c_str(),
              out.size(), s.compiled, s.cache_hits,
              s.sampled_note.empty() ? "" : ("; " + s.sampled_note).c_str());
  std::printf("%s (a model of occupancy, ISA verdicts, tile intensity and fill: no kernel ran)\n",
              kStaticRankingLabel);
  const bool amd = Arch(s.arch).isAmd();
  std::printf("  %4s %6s %-16s %5s %6s %6s %8s %6s %4s  %s\n", "RANK", "SCORE", "KERNEL",
              amd ? "VGPR" : "REGS", amd ? "AGPR" : "SMEM_K", "SPILLS", "OCC", "MATRIX", "WARN",
              "CONFIG");
  int n = 0;
  for (const auto& rk : rank) {
    const Analysed& a = out[rk.index];
    if (!a.status.ok()) {
      std::printf("  %4s %6s %-16s %s\n    %s\n", "-", "-", a.kernel.c_str(), a.config.c_str(),
                  a.status.toString().substr(0, 200).c_str());
      continue;
    }
    const auto& r = a.report;
    int matrix = 0;
    for (const auto& [k, m] : r.isa.matrix) matrix += m;
    char occ[32] = "-", pos[16] = "-", score[16] = "-";
    if (r.has_occupancy && amd) std::snprintf(occ, sizeof(occ), "%.4gw/EU", r.amd.waves_per_eu);
    else if (r.has_occupancy) std::snprintf(occ, sizeof(occ), "%db/SM", r.nv.blocks_per_sm);
    if (!rk.excluded) {
      std::snprintf(pos, sizeof(pos), "%d", ++n);
      std::snprintf(score, sizeof(score), "%.3f", rk.score);
    }
    std::printf("  %4s %6s %-16s %5d %6lld %6s %8s %6d %4d  %s%s\n", pos, score, a.kernel.c_str(),
                amd ? r.resources.vgpr : r.resources.registers,
                amd ? (long long)r.resources.agpr
                    : (long long)(occupancySharedBytes(r.resources, r.dynamic_shared) / 1024),
                r.resources.spills() ? "yes" : "no", occ, matrix, rk.warns, a.config.c_str(),
                rk.excluded ? ("  (excluded: " + rk.why + ")").c_str() : "");
  }
  if (!s.recorded.empty()) std::printf("ranking recorded in %s (apart from measured winners)\n", s.recorded.c_str());
  std::printf("timing needs a GPU: %s\n", s.why_no_gpu.c_str());
}

Progress::Progress(bool quiet, bool json)
    : mode_(quiet ? Mode::kOff : json ? Mode::kJsonLines : progressWanted(false, false) ? Mode::kTerminal : Mode::kOff),
      start_(std::chrono::steady_clock::now()) {}

void Progress::update(const std::string& phase, int done, int total, const std::string& detail) {
  if (mode_ == Mode::kOff) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = done > 0 && total > done ? elapsed / done * (total - done) : 0.0;
  if (mode_ == Mode::kJsonLines) {
    nlohmann::json e = {{"event", "progress"}, {"phase", phase}, {"done", done}, {"total", total},
                        {"elapsed_s", elapsed}, {"eta_s", eta}};
    if (!detail.empty()) e["detail"] = detail;
    std::fprintf(stderr, "%s\n", e.dump().c_str());
    return;
  }
  std::fprintf(stderr, "\r  %-9s %4d/%-4d elapsed %6.1f s  ETA %6.1f s  %-40.40s", phase.c_str(), done,
               total, elapsed, eta, detail.c_str());
  open_line_ = true;
}

void Progress::finish() {
  if (open_line_) std::fprintf(stderr, "\n");
  open_line_ = false;
}

}  // namespace ktune::cli
