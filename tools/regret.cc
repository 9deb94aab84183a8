#include "tools/regret.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "autotune/autotuner.h"
#include "autotune/finalists.h"
#include "ops/buffers.h"
#include "ops/gemm.h"
#include "ops/rowwise.h"
#include "base/format.h"
#include "base/fs.h"

namespace ktune::cli {
namespace {

using gemm::Layout;

RegretShape gemmShape(const std::string& name, Layout l, int64_t m, int64_t n, int64_t k) {
  RegretShape s;
  s.op = "gemm";
  s.gemm = gemm::denseShape(l, gemm::ElemType::kBF16, gemm::ElemType::kBF16, m, n, k);
  s.name = name + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
           " " + gemm::layoutName(l);
  return s;
}

RegretShape rowShape(const std::string& op, int64_t rows, int64_t cols) {
  RegretShape s;
  s.op = op;
  s.rows = rows;
  s.cols = cols;
  s.name = op + " " + std::to_string(rows) + "x" + std::to_string(cols);
  return s;
}

std::vector<RegretShape> gpuSet() {
  std::vector<RegretShape> v;
  const int64_t nk[][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}};
  for (const auto& x : nk) v.push_back(gemmShape("llm prefill", Layout::kNT, 4096, x[0], x[1]));
  for (int64_t m : {1, 2, 4, 8, 16, 32, 64, 128})
    for (const auto& x : nk) v.push_back(gemmShape("decode", Layout::kNT, m, x[0], x[1]));
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1000, 1000, 1000},
                         {777, 4096, 4096}, {3000, 5000, 2000}, {127, 333, 4096},
                         {1024, 14336, 4096}, {2048, 2048, 2048}, {96, 11008, 4096},
                         {4096, 1024, 512}, {257, 4096, 1024}, {8192, 8192, 1024}})
    v.push_back(gemmShape("odd", Layout::kNT, m, n, k));
  for (Layout l : {Layout::kNN, Layout::kTN})
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{4096, 4096, 4096},
                           {2048, 8192, 2048}, {512, 1024, 4096}, {16, 4096, 4096},
                           {128, 4096, 4096}, {1000, 1000, 1000}, {64, 6144, 4096},
                           {3000, 5000, 2000}})
      v.push_back(gemmShape("layout", l, m, n, k));
  for (int64_t r : {1, 16, 128, 1024, 4096, 16384}) {
    v.push_back(rowShape("rmsnorm", r, 4096));
    v.push_back(rowShape("rmsnorm", r, 8192));
    v.push_back(rowShape("silu_mul", r, 14336));
    v.push_back(rowShape("silu_mul", r, 4096));
  }
  return v;
}

// Small enough for the simulated device's host implementations (outputs of at most 256K
// elements; GEMMs above its host-compute limit, so only the cost model runs).
std::vector<RegretShape> ciSet() {
  return {gemmShape("ci", Layout::kNT, 512, 512, 4096), gemmShape("ci", Layout::kNT, 256, 1024, 4096),
          gemmShape("ci", Layout::kNT, 16, 4096, 4096), gemmShape("ci", Layout::kNN, 384, 640, 4096),
          rowShape("rmsnorm", 8, 4096), rowShape("silu_mul", 8, 4096)};
}

// One op of one tuner: GEMM through GemmOp, row-wise through RowwiseOps.
struct Side {
  std::shared_ptr<Engine> tuner;
  std::unique_ptr<GemmOp> gemm;
  std::unique_ptr<RowwiseOps> rows;
};

Expected<Side> makeSide(std::shared_ptr<Backend> backend, Options o, const std::string& search,
                        const std::string& dir, const RegretOptions& ro) {
  EngineOptions eo;
  eo.options = std::move(o);
  eo.options.search = search;
  eo.options.cache_dir = ro.shared_store ? ro.cache_root + "/store" : dir;
  eo.options.database_path = ro.shared_store ? dir + "/tuning_db.json" : std::string();
  eo.options.isolate = false;  // both sides time in this process, on the same buffers
  eo.options.remote_cache.clear();
  if (ro.sim) {
    eo.options.warmup_ms = std::min(eo.options.warmup_ms, 0.02);
    eo.options.rep_ms = std::min(eo.options.rep_ms, 0.1);
  }
  if (search == "exhaustive" && ro.exhaustive_budget > 0 && ro.exhaustive_budget != 1) {
    eo.options.warmup_ms *= ro.exhaustive_budget;
    eo.options.rep_ms *= ro.exhaustive_budget;
  }
  eo.compiler = ro.compiler;
  KTUNE_RETURN_IF_ERROR(makeDirs(dir));
  KTUNE_RETURN_IF_ERROR(makeDirs(eo.options.cache_dir));
  KTUNE_ASSIGN_OR_RETURN(auto t, Engine::create(std::move(backend), eo));
  Side s;
  s.tuner = std::shared_ptr<Engine>(std::move(t));
  KTUNE_ASSIGN_OR_RETURN(s.gemm, GemmOp::create(*s.tuner));
  KTUNE_ASSIGN_OR_RETURN(s.rows, RowwiseOps::create(*s.tuner));
  return s;
}

// The problem of one shape (device buffers owned here).
struct Problem {
  std::shared_ptr<GemmCall> gemm;
  std::unique_ptr<DeviceBuffers> bufs;
  RmsNormArgs rms;
  SiluMulArgs silu;
  const void* ptr() const {
    return gemm ? static_cast<const void*>(gemm.get())
                : rms.rows ? static_cast<const void*>(&rms) : static_cast<const void*>(&silu);
  }
};

Expected<Problem> makeProblem(Engine& t, const RegretShape& s) {
  Problem p;
  if (s.op == "gemm") {
    KTUNE_ASSIGN_OR_RETURN(p.gemm, makeGemmProblem(t.backend(), t.device(), s.gemm, 1));
    return p;
  }
  p.bufs = std::make_unique<DeviceBuffers>(t.backend());
  const int64_t n = s.rows * s.cols;
  if (s.op == "rmsnorm") {
    p.rms.rows = s.rows;
    p.rms.cols = s.cols;
    KTUNE_ASSIGN_OR_RETURN(p.rms.x, p.bufs->random(DType::kBF16, n, 1));
    KTUNE_ASSIGN_OR_RETURN(p.rms.weight, p.bufs->random(DType::kBF16, s.cols, 2));
    KTUNE_ASSIGN_OR_RETURN(p.rms.y, p.bufs->alloc(size_t(n) * 2));
    return p;
  }
  p.silu.rows = s.rows;
  p.silu.d = s.cols;
  KTUNE_ASSIGN_OR_RETURN(p.silu.x, p.bufs->random(DType::kBF16, 2 * n, 1));
  KTUNE_ASSIGN_OR_RETURN(p.silu.out, p.bufs->alloc(size_t(n) * 2));
  return p;
}

Expected<TuneReport> tuneOn(Side& side, const RegretShape& s, const Problem& p) {
  if (s.op == "gemm") return side.gemm->tune(*p.gemm);
  if (s.op == "rmsnorm") return side.rows->tune(p.rms);
  return side.rows->tune(p.silu);
}

const CandidateResult* winnerOf(const TuneReport& r) {
  for (const auto& c : r.candidates)
    if (c.config == r.winner && c.source == r.winner_source && c.status == Code::kOk) return &c;
  return nullptr;
}

std::string label(const TuneReport& r) {
  return r.winner_source == "jit" ? r.winner : r.winner_source + ":" + r.winner;
}

// Interleaved re-timing of the two winners on the exhaustive side's tuner (it compiled both),
// with the budgets of `bo` (the guided side's: the full ones), until retimeDecided.
Status retime(Engine& t, const std::string& family, const Problem& p, const CandidateResult& a,
              const CandidateResult& b, const RegretOptions& o, const BenchOptions& bo,
              RegretRow* row) {
  std::vector<double> logs;
  const int most = o.max_rounds > 0 ? o.max_rounds : 3 * o.rounds;
  for (int r = 0; !retimeDecided(logs, o.rounds, most); ++r) {
    double ms[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const int which = (r % 2 == 0) ? k : 1 - k;
      const CandidateResult& c = which == 0 ? a : b;
      CandidateResult res = t.benchmarkCandidate(family, p.ptr(), {c.config, c.source, c.code_object_key}, bo, 0);
      if (res.status != Code::kOk) return Status(res.status, "re-timing " + c.config + ": " + res.reason);
      ms[which] = std::max(res.stats.median_ms, 1e-9);
    }
    logs.push_back(std::log(ms[1] / ms[0]));
  }
  retimeRatio(logs, &row->ratio, &row->ratio_lo, &row->ratio_hi);
  row->retime_rounds = static_cast<int>(logs.size());
  return Status::Ok();
}

// The finalists' decision in a few words, its ratio to the default and the finalists x rounds.
std::string whyOf(const TuneReport& r) {
  const DefaultComparison& c = r.vs_default;
  if (c.rounds == 0) return "no finalists";
  std::string d = c.decision;
  if (const size_t colon = d.find(": "); colon != std::string::npos) d = d.substr(colon + 2);
  return strprintf("%s %.3f [%.3f, %.3f] %dx%d", d.c_str(), c.ratio, c.ratio_lo, c.ratio_hi,
                   c.finalists, c.rounds);
}

double secondsOf(const std::chrono::steady_clock::time_point& t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int jitCandidates(const TuneReport& r) {
  int n = 0;
  for (const auto& c : r.candidates) n += c.source == "jit" ? 1 : 0;
  return n;
}

RegretRow oneShape(Side& ex, Side& gd, const RegretShape& s, const RegretOptions& o) {
  RegretRow row;
  row.name = s.name;
  auto p = makeProblem(*ex.tuner, s);
  if (!p.ok()) return row.error = p.status().toString(), row;
  auto t0 = std::chrono::steady_clock::now();
  auto re = tuneOn(ex, s, *p);
  row.exhaustive_s = secondsOf(t0);
  t0 = std::chrono::steady_clock::now();
  auto rg = tuneOn(gd, s, *p);
  row.guided_s = secondsOf(t0);
  if (!re.ok() || !rg.ok()) return row.error = (!re.ok() ? re : rg).status().toString(), row;
  row.family = re->family;
  row.key = re->key;
  row.exhaustive_winner = label(*re);
  row.guided_winner = label(*rg);
  row.candidates = jitCandidates(*re);
  row.exhaustive_compiled = re->compiled + re->store_hits;
  row.guided_compiled = rg->compiled + rg->store_hits;
  row.guided_reached = rg->search == "guided" ? rg->reached : row.guided_compiled;
  row.regret_estimate = rg->regret_estimate;
  row.exhaustive_why = whyOf(*re);
  row.guided_why = whyOf(*rg);
  const CandidateResult *a = winnerOf(*re), *b = winnerOf(*rg);
  if (!a || !b) return row.error = "a side recorded no winner", row;
  if (a->config == b->config && a->source == b->source) return row;
  row.exhaustive_winner_in_guided = fateIn(*rg, *a, *b);
  Status st = retime(*ex.tuner, re->family, *p, *a, *b, o, gd.tuner->options().bench, &row);
  if (!st.ok()) row.error = st.toString();
  return row;
}

}  // namespace

std::string fateIn(const TuneReport& r, const CandidateResult& x, const CandidateResult& w) {
  for (const CandidateResult& c : r.candidates) {
    if (c.config != x.config || c.source != x.source) continue;
    if (c.status != Code::kOk) return "stopped: " + c.reason;
    if (c.stats.runs == 0) break;
    const double wm = std::max(w.stats.median_ms, 1e-9);
    return strprintf("raced %.4g ms, %.4fx the winner's %.4g ms", c.stats.median_ms,
                     c.stats.median_ms / wm, wm);
  }
  return "not raced";
}

void retimeRatio(const std::vector<double>& logs, double* ratio, double* lo, double* hi) {
  double mean = 0, ss = 0;
  for (double x : logs) mean += x / double(logs.size());
  for (double x : logs) ss += (x - mean) * (x - mean);
  const double n = double(logs.size());
  const double half = n < 2 ? 0 : studentT95(int(n) - 1) * std::sqrt(ss / (n - 1)) / std::sqrt(n);
  *ratio = std::exp(mean);
  *lo = std::exp(mean - half);
  *hi = std::exp(mean + half);
}

bool retimeDecided(const std::vector<double>& logs, int min_rounds, int max_rounds) {
  const int n = static_cast<int>(logs.size());
  if (n < min_rounds || n % 2 != 0) return false;
  if (n >= max_rounds) return true;
  double ratio = 1, lo = 1, hi = 1;
  retimeRatio(logs, &ratio, &lo, &hi);
  return hi <= kRegretWithin || lo > kRegretWithin;
}

std::vector<RegretShape> spread(const std::vector<RegretShape>& all, size_t limit) {
  if (limit == 0 || limit >= all.size()) return all;
  std::vector<RegretShape> out;
  for (size_t i = 0; i < limit; ++i) out.push_back(all[i * all.size() / limit]);
  return out;
}

std::vector<RegretShape> spreadOrder(const std::vector<RegretShape>& all) {
  size_t bits = 0;
  while ((size_t{1} << bits) < all.size()) ++bits;
  auto reversed = [bits](size_t i) {
    size_t r = 0;
    for (size_t b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
    return r;
  };
  std::vector<RegretShape> out;
  for (size_t i = 0; i < (size_t{1} << bits); ++i)
    if (const size_t j = reversed(i); j < all.size()) out.push_back(all[j]);
  return out;
}

Expected<std::vector<RegretShape>> regretSet(const std::string& name) {
  if (name == "ci") return ciSet();
  if (name == "gpu") return gpuSet();
  return Status::InvalidArgument("unknown shape set '" + name + "' (ci, gpu)");
}

Expected<std::vector<RegretRow>> runRegret(std::shared_ptr<Backend> backend, const Options& base,
                                           const std::vector<RegretShape>& shapes,
                                           const RegretOptions& o) {
  KTUNE_ASSIGN_OR_RETURN(Side ex, makeSide(backend, base, "exhaustive", o.cache_root + "/exhaustive", o));
  KTUNE_ASSIGN_OR_RETURN(Side gd, makeSide(backend, base, "guided", o.cache_root + "/guided", o));
  std::vector<RegretRow> rows;
  const auto t0 = std::chrono::steady_clock::now();
  // Every shape's problem is filled anew: the largest fill of each operand stays on the device
  // for the run, and the next shape's inputs are a copy of its prefix (ops/buffers.h).
  keepRandomFills(backend.get());
  for (const RegretShape& s : shapes) {
    if (o.deadline_s > 0 && secondsOf(t0) > o.deadline_s) break;
    rows.push_back(oneShape(ex, gd, s, o));
    if (o.on_row) o.on_row(rows.back());
  }
  keepRandomFills(nullptr);
  return rows;
}

RegretSummary summarize(const std::vector<RegretRow>& rows) {
  RegretSummary s;
  double logsum = 0;
  for (const RegretRow& r : rows) {
    if (!r.error.empty()) continue;
    ++s.keys;
    s.within_1pct += r.ratio <= kRegretWithin ? 1 : 0;
    logsum += std::log(r.ratio);
    s.worst = std::max(s.worst, r.ratio);
    s.exhaustive_s += r.exhaustive_s;
    s.guided_s += r.guided_s;
    s.exhaustive_compiled += r.exhaustive_compiled;
    s.guided_compiled += r.guided_compiled;
  }
  if (s.keys) s.geomean = std::exp(logsum / s.keys);
  return s;
}

}  // namespace ktune::cli
