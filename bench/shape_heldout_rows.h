// shape_heldout_bench's command line and its output: the arguments, one held-out key's row (the
// JSON lines dev/shape_heldout_table.py reads) and the summary lines. Included by
// bench/shape_heldout_bench.cc only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ktune::heldout {

struct Args {
  std::vector<std::pair<int64_t, int64_t>> nk{{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}};
  size_t train = 20;
  int64_t max_m = 8192;  // M range 1..max_m
  int heldout = 26, rounds = 3, top = 3, vendor = 3;
  int seed = 0;
  bool race = true;
  // Training keys already measured in the database (KTUNE_DB: an earlier run's training database)
  // are not tuned again: their recorded results are the training.
  bool reuse = false;
  bool verify_pass = true;  // verification in its own pass before the timed rounds (file comment)
  // The padding probe: each key's list also holds the vendor heuristic's first pick for its M
  // rounded up (padOf), run at the key's own M (role "padN", N = the multiple; "padP2": the next
  // power of two), to see whether the library's pick for a rounder M is a better bare prediction
  // where its pick for the exact M is slow.
  bool padded = false;
  double train_s = 0, deadline_s = 0;  // 0: no limit
  std::string out;
};

inline bool parseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i], v = argv[i + 1];
    if (f == "--nk") {
      a->nk.clear();
      for (size_t at = 0; at < v.size();) {
        const size_t end = std::min(v.find(',', at), v.size());
        const std::string one = v.substr(at, end - at);
        const size_t x = one.find('x');
        if (x == std::string::npos) return false;
        a->nk.push_back({std::atoll(one.substr(0, x).c_str()), std::atoll(one.substr(x + 1).c_str())});
        at = end + 1;
      }
    } else if (f == "--train") a->train = size_t(std::atoi(v.c_str()));
    else if (f == "--max-m") a->max_m = std::max<int64_t>(16, std::atoll(v.c_str()));
    else if (f == "--heldout") a->heldout = std::atoi(v.c_str());
    else if (f == "--seed") a->seed = std::atoi(v.c_str());
    else if (f == "--race") a->race = std::atoi(v.c_str()) != 0;
    else if (f == "--reuse-db") a->reuse = std::atoi(v.c_str()) != 0;
    else if (f == "--verify-pass") a->verify_pass = std::atoi(v.c_str()) != 0;
    else if (f == "--padded") a->padded = std::atoi(v.c_str()) != 0;
    else if (f == "--rounds") a->rounds = std::max(1, std::atoi(v.c_str()));
    else if (f == "--top") a->top = std::atoi(v.c_str());
    else if (f == "--vendor") a->vendor = std::atoi(v.c_str());
    else if (f == "--train-s") a->train_s = std::atof(v.c_str());
    else if (f == "--deadline-s") a->deadline_s = std::atof(v.c_str());
    else if (f == "--out") a->out = v;
    else return false;
  }
  return (argc % 2) == 1;
}

struct Row {
  int64_t m = 0, n = 0, k = 0;
  std::string predicted, winner, error;
  double confidence = 0, vs_winner = 1, vs_default = 1;
  double unraced_vs_winner = 1, unraced_vs_default = 1, race_ms = 0;  // the bare prediction; the race's wall time
  std::string raced;  // the race's pick (label); empty without --race
  nlohmann::json race = nlohmann::json::array();  // [label, ms] per raced entry (0: failed)
  int candidates = 0;
  bool is_default = false;
  bool is_rank = false;  // a vendor algorithm other than the default, carried over by its rank
  nlohmann::json times = nlohmann::json::array();  // [role, "jit:config" or "rN", ms] per candidate
  // "rN" -> the vendor algorithm's own id for this shape: a rule carrying an algorithm (not a rank)
  // over from tuned keys is checked offline against which ids each held-out key's list held.
  nlohmann::json vendor_ids = nlohmann::json::object();
  // label -> why a candidate of the list has no time (a failed run, a refused config).
  nlohmann::json errors = nlohmann::json::object();
  nlohmann::json rounds = nlohmann::json::object();  // label -> its median in each round it ran
};

inline double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(std::ceil(q * double(v.size())) - 1))];
}

inline void summary(const char* what, const std::vector<Row>& rows) {
  std::vector<double> w, d;
  double logs = 0;
  int as_default = 0, as_rank = 0;
  for (const Row& r : rows) {
    if (!r.error.empty()) continue;
    w.push_back(r.vs_winner);
    d.push_back(r.vs_default);
    logs += std::log(r.vs_winner);
    as_default += r.is_default ? 1 : 0;
    as_rank += r.is_rank ? 1 : 0;
  }
  if (w.empty()) return (void)std::printf("%-12s no rows\n", what);
  std::printf("%-12s n=%3zu  vs_winner geomean %.3f p95 %.3f max %.3f | vs_default max %.3f "
              "geomean %.3f | predicted the default %d, a vendor rank %d\n",
              what, w.size(), std::exp(logs / double(w.size())), pct(w, 0.95), pct(w, 1.0),
              pct(d, 1.0), [&] { double s = 0; for (double x : d) s += std::log(x); return std::exp(s / double(d.size())); }(),
              as_default, as_rank);
}

inline void writeRow(std::ofstream& f, const Row& r) {
  if (!f) return;
  f << nlohmann::json{{"m", r.m}, {"n", r.n}, {"k", r.k}, {"predicted", r.predicted},
                      {"winner", r.winner}, {"confidence", r.confidence},
                      {"vs_winner", r.vs_winner}, {"vs_default", r.vs_default},
                      {"candidates", r.candidates}, {"predicted_default", r.is_default},
                      {"predicted_rank", r.is_rank}, {"times", r.times}, {"error", r.error},
                      {"raced", r.raced}, {"race_ms", r.race_ms}, {"race", r.race}, {"vendor_ids", r.vendor_ids}, {"errors", r.errors},
                      {"rounds", r.rounds},
                      {"unraced_vs_winner", r.unraced_vs_winner},
                      {"unraced_vs_default", r.unraced_vs_default}}.dump()
    << "\n";
}

}  // namespace ktune::heldout
