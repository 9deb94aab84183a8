// Held-out quality of predicted GEMM configs (issue 35): for each N x K of the LLM suite, tune the
// range-pre-tuning M values (predict::rangePoints(1, 8192, 20); guided search, one code-object
// store, so each config compiles once for every M), then for other M values (odd ones included,
// never a tuned one) take the config the op predicts from those tuned keys and re-time it,
// interleaved on one set of buffers, against the family default (cuBLASLt's heuristic #0 for that
// shape) and against the best of a reduced candidate list. The reduced list stands in for an
// exhaustive tuning run of every held-out key (which would cost the whole device budget): the
// prediction, the default, the vendor's next heuristic picks for the shape, the top configs of the
// prediction's neighbours and the JIT winners of every tuned key of that N x K. Its winner is
// therefore a lower bound on how good the prediction could be among configs that won nearby, not
// the full space's winner (bench/NOTES.md says so beside the figures).
// Rounds: a verification pass first (each candidate's output read back and compared with the
// trusted one; untimed), then a discarded lead-in of back-to-back runs, then the race (--race 1)
// and the timed rounds, which run the candidates back to back as a busy GPU runs its kernels.
// Round 0 times every candidate; those more than 1.25x the best are dropped (the prediction and the
// default always stay); the others are timed again, the order reversed every other round. A
// candidate's time is the geometric mean of its rounds' medians. --verify-pass 0: the earlier
// method, round 0 verifying each candidate just before timing it (the GPU idles during each
// host-side compare), kept to compare the two.
//   shape_heldout_bench [--nk 6144x4096,...] [--train 20] [--max-m 8192] [--heldout 26] [--rounds 3]
//                       [--top 3] [--vendor 3] [--train-s S] [--deadline-s S] [--seed S]
//                       [--race 1] [--reuse-db 0] [--verify-pass 1] [--padded 0] [--out rows.jsonl]
// --race 1 (default): the "predicted" config is the race's pick (background mode times the default,
// the prediction and the vendor's next picks for the key before tuning it: predict.h), timed by the
// engine's own race apart from the re-timing; the bare prediction is re-timed too ("unraced").
// Needs a GPU. Training budgets: KTUNE_WARMUP_MS / KTUNE_REP_MS as for any tuning run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "bench/shape_heldout_rows.h"
#include "autotune/predict.h"
#include "ops/buffers.h"
#include "ops/gemm.h"
#include "ops/gemm_vendor.h"
#include "runtime/backend.h"

namespace ktune {
namespace {

using Clock = std::chrono::steady_clock;
using heldout::Args, heldout::Row, heldout::parseArgs, heldout::summary, heldout::writeRow;


double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

gemm::GemmShape shapeOf(int64_t m, int64_t n, int64_t k) {
  auto s = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16, m, n, k);
  s.aligned16 = true;
  return s;
}

// `count` held-out M values in [2, max_m], spread in log space, none of them tuned; every other one
// odd, and shifted per N x K (`salt`) so the N x K do not all see the same M.
// With a seed, each M's offset inside its step is drawn from the seed instead.
std::vector<int64_t> heldOutMs(int count, const std::vector<int64_t>& tuned, int salt, int64_t max_m,
                               int seed) {
  std::set<int64_t> out;
  const double lo = std::log(2.0), hi = std::log(double(max_m) * 0.98);
  uint64_t x = 0x9E3779B97F4A7C15ull * uint64_t(seed * 131 + salt + 1);
  for (int i = 0; i < count; ++i) {
    x ^= x >> 31, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 29;  // splitmix-style steps
    const double u = seed == 0 ? 0.37 * ((salt * 7 + i * 3) % 5) / 4.0 : double(x >> 11) * 0x1p-53;
    const double t = (i + u) / std::max(1, count - 1);
    int64_t m = std::llround(std::exp(lo + std::min(1.0, t) * (hi - lo)));
    if (i % 2 == 0) m |= 1;
    while (std::binary_search(tuned.begin(), tuned.end(), m) || out.count(m)) ++m;
    out.insert(std::min<int64_t>(m, max_m));
  }
  return {out.begin(), out.end()};
}

// A, B and C of the largest M of one N x K; every key of it uses the leading rows.
struct Buffers {
  std::unique_ptr<DeviceBuffers> own;
  GemmBuffers buf;
};

Expected<Buffers> makeBuffers(Backend& b, int64_t m, int64_t n, int64_t k) {
  Buffers x;
  x.own = std::make_unique<DeviceBuffers>(b);
  KTUNE_ASSIGN_OR_RETURN(x.buf.a, x.own->random(DType::kBF16, m * k, 1));
  KTUNE_ASSIGN_OR_RETURN(x.buf.b, x.own->random(DType::kBF16, n * k, 2));
  KTUNE_ASSIGN_OR_RETURN(x.buf.c, x.own->alloc(size_t(m * n) * 2));
  return x;
}

struct Cand {
  std::string config, source = "jit", role;  // role: "predicted", "default", "vendor", "neighbour"
  std::vector<double> ms;                     // one median per round it was timed in
  std::string error;
  double time() const {
    double s = 0;
    for (double x : ms) s += std::log(x);
    return ms.empty() ? 0 : std::exp(s / double(ms.size()));
  }
};

void addCand(std::vector<Cand>& v, const std::string& config, const std::string& source,
             const std::string& role) {
  if (config.empty()) return;
  for (const Cand& c : v)
    if (c.config == config && c.source == source) return;
  Cand c;
  c.config = config;
  c.source = source;
  c.role = role;
  v.push_back(std::move(c));
}

// The JIT configs of an entry, fastest first (measured ones only).
std::vector<std::string> topJit(const DbEntry& e, int k) {
  std::vector<std::pair<double, std::string>> v;
  for (const auto& c : e.candidates)
    if (c.source == "jit" && c.status == Code::kOk && c.stats.median_ms > 0)
      v.emplace_back(c.stats.median_ms, c.config);
  std::sort(v.begin(), v.end());
  std::vector<std::string> out;
  for (int i = 0; i < k && i < int(v.size()); ++i) out.push_back(v[size_t(i)].second);
  return out;
}

struct Ctx {
  Engine* tuner;
  GemmOp* op;
  const GemmVendor* vendor;  // null: no vendor library
  const Args* args;
};

// The padding probe's rounder M values of `m` (Args::padded), by role; those equal to m left out.
std::vector<std::pair<std::string, int64_t>> padsOf(int64_t m) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (int64_t q : {8, 16, 64, 128}) {
    const int64_t mp = (m + q - 1) / q * q;
    if (mp != m) out.push_back({"pad" + std::to_string(q), mp});
  }
  int64_t p2 = 1;
  while (p2 < m) p2 *= 2;
  if (p2 != m) out.push_back({"padP2", p2});
  return out;
}

// The reduced list of one held-out key (see the file comment).
std::vector<Cand> candidatesFor(Ctx& c, const GemmCall& call, const predict::Prediction& p,
                                const KeyReport& def, const std::vector<std::string>& winners,
                                const predict::RaceEntry* raced) {
  std::vector<Cand> v;
  // The prediction as predicted (a JIT config, or a vendor id: the default's or another's).
  const predict::RaceEntry bare{p.config.empty() ? def.winner : p.config,
                                p.config.empty() ? def.winner_source : p.source};
  if (raced) addCand(v, raced->config, raced->source, "predicted");
  addCand(v, bare.config, bare.source, raced ? "unraced" : "predicted");
  addCand(v, def.winner, def.winner_source, "default");
  if (c.vendor)
    for (const auto& vc : c.vendor->candidates(call.shape, c.args->vendor + 1))
      addCand(v, vc.id, vc.source, "vendor");
  TuningDatabase* db = c.tuner->database("gemm");
  for (const auto& n : p.neighbours)
    if (auto e = db->lookup(n.key))
      for (const auto& cfg : topJit(*e, c.args->top)) addCand(v, cfg, "jit", "neighbour");
  for (const auto& w : winners) addCand(v, w, "jit", "neighbour");
  if (c.args->padded && c.vendor)
    for (const auto& [role, mp] : padsOf(call.shape.m))
      for (const auto& vc : c.vendor->candidates(shapeOf(mp, call.shape.n, call.shape.k), 1))
        addCand(v, vc.id, vc.source, role);
  return v;
}

// The lead-in of the verification pass: this long of back-to-back runs, discarded.
constexpr double kLeadInMs = 100;

// The verification pass (file comment): every candidate of `v` run once, its output read back and
// compared, untimed; returns "source:config" -> why, for each one that failed. Then kLeadInMs of
// back-to-back runs of the first one that passed, discarded: the GPU idles during the host-side
// compares, and after such an idle the first tens of ms of load run faster (on compute-bound keys
// a candidate timed first after a 10 ms lead-in ran 8% faster than its back-to-back time:
// bench/NOTES.md, issue 35 tenth pass), so the race and the timed rounds start from the steady
// state of a busy GPU.
std::map<std::string, std::string> verifyPass(Ctx& c, const GemmCall& call, const std::vector<Cand>& v) {
  BenchOptions bo = c.tuner->options().bench;
  bo.verify = true;
  bo.warmup_ms = 0.01;
  bo.rep_ms = 0.01;
  std::map<std::string, std::string> failed;
  const Cand* first = nullptr;
  for (const Cand& x : v) {
    CandidateResult res = c.tuner->benchmarkCandidate("gemm", &call, {x.config, x.source, ""}, bo, 0);
    if (res.status != Code::kOk) failed[x.source + ":" + x.config] = res.reason.empty() ? "failed" : res.reason;
    else if (!first) first = &x;
  }
  bo.verify = false;
  bo.rep_ms = kLeadInMs;
  bo.target_ci = 0;  // the whole budget, not a stop once the median is known
  if (first) (void)c.tuner->benchmarkCandidate("gemm", &call, {first->config, first->source, ""}, bo, 0);
  return failed;
}

// Interleaved rounds over `v`'s candidates without an error (file comment); false when the
// prediction or the default failed. Round 0 verifies unless the verification pass ran.
bool retime(Ctx& c, const GemmCall& call, std::vector<Cand>& v) {
  BenchOptions bo = c.tuner->options().bench;
  bo.warmup_ms = c.tuner->options().options.warmup_ms;
  bo.rep_ms = c.tuner->options().options.rep_ms;
  std::vector<size_t> live;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].error.empty()) live.push_back(i);
  for (int r = 0; r < c.args->rounds; ++r) {
    bo.verify = r == 0 && !c.args->verify_pass;
    std::vector<size_t> order = live;
    if (r % 2 == 1) std::reverse(order.begin(), order.end());
    for (size_t i : order) {
      CandidateResult res = c.tuner->benchmarkCandidate("gemm", &call, {v[i].config, v[i].source, ""}, bo, 0);
      if (res.status == Code::kOk) v[i].ms.push_back(std::max(res.stats.median_ms, 1e-9));
      else v[i].error = res.reason.empty() ? "failed" : res.reason;
    }
    double best = 0;
    for (size_t i : live)
      if (v[i].error.empty() && !v[i].ms.empty()) best = best <= 0 ? v[i].ms.back() : std::min(best, v[i].ms.back());
    std::vector<size_t> keep;
    for (size_t i : live) {
      const bool anchor = v[i].role == "predicted" || v[i].role == "default" || v[i].role == "unraced";
      if (!v[i].error.empty()) continue;
      if (anchor || r > 0 || v[i].ms.back() <= 1.25 * best) keep.push_back(i);
    }
    live = keep;
  }
  for (const Cand& x : v)
    if (x.role == "default" && !x.error.empty()) return false;
  return v[0].error.empty();
}


// A candidate's label in the rows: a vendor algorithm by its heuristic rank for the key (ids are
// per shape), a JIT config as itself.
std::string labelOf(const Cand& c) {
  if (c.source == "jit") return "jit:" + c.config;
  // Another shape's pick: its rank means nothing here.
  if (c.role.rfind("pad", 0) == 0) return c.role;
  const int r = predict::vendorRank(c.config);
  return r >= 0 ? "r" + std::to_string(r) : c.source + ":" + c.config;
}

Row heldOutRow(Ctx& c, const Buffers& b, int64_t m, int64_t n, int64_t k,
               const std::vector<std::string>& winners) {
  Row row;
  row.m = m;
  row.n = n;
  row.k = k;
  GemmCall call{shapeOf(m, n, k), b.buf};
  auto p = c.op->predict(call.shape);
  auto def = c.op->lookup(call);
  if (!p.ok() || !def.ok()) return row.error = (!p.ok() ? p.status() : def.status()).toString(), row;
  // The verification pass first (the race's entries are all in the list without its pick).
  std::map<std::string, std::string> failed;
  if (c.args->verify_pass) failed = verifyPass(c, call, candidatesFor(c, call, *p, *def, winners, nullptr));
  // The race as background mode runs it (predict.h): its own timing, apart from the re-timing below.
  predict::RaceEntry pick;
  if (c.args->race) {
    const auto t0 = Clock::now();
    std::vector<predict::RaceEntry> vendor;
    if (c.vendor)
      for (const auto& vc : c.vendor->candidates(call.shape, int(predict::kRaceVendor) + 1))
        vendor.push_back({vc.id, vc.source});
    const predict::RaceEntry bare{p->config.empty() ? def->winner : p->config,
                                  p->config.empty() ? def->winner_source : p->source};
    const auto set = predict::raceSet({def->winner, def->winner_source}, bare, vendor);
    const std::vector<double> ms = c.tuner->raceTimes("gemm", &call, set);
    const size_t keep = size_t(std::find(set.begin(), set.end(), bare) - set.begin());
    const size_t i = predict::racePick(ms, keep);
    pick = i < set.size() ? set[i] : bare;
    for (size_t j = 0; j < set.size(); ++j) {  // the race's own times, for offline checks
      Cand x;
      x.config = set[j].config;
      x.source = set[j].source;
      row.race.push_back({labelOf(x), ms[j]});
    }
    row.race_ms = since(t0) * 1e3;
  }
  std::vector<Cand> v = candidatesFor(c, call, *p, *def, winners, c.args->race ? &pick : nullptr);
  row.confidence = p->confidence;
  row.is_default = p->basis != "neighbours";
  row.is_rank = !row.is_default && p->source != "jit";
  row.predicted = (v[0].source == "jit" ? "" : v[0].source + ":") + v[0].config;
  row.candidates = int(v.size());
  for (Cand& x : v)
    if (auto f = failed.find(x.source + ":" + x.config); f != failed.end()) x.error = f->second;
  if (!retime(c, call, v)) return row.error = "predicted/default failed: " + v[0].error, row;
  const Cand* win = nullptr;
  const Cand* d = &v[0];
  const Cand* bare = &v[0];
  for (const Cand& x : v) {
    if (x.config == def->winner && x.source == def->winner_source) d = &x;
    if (x.role == "unraced" && x.error.empty() && !x.ms.empty()) bare = &x;
    if (x.error.empty() && !x.ms.empty() && (!win || x.time() < win->time())) win = &x;
  }
  for (const Cand& x : v)
    if (x.error.empty() && !x.ms.empty()) row.times.push_back({x.role, labelOf(x), x.time()}), row.rounds[labelOf(x)] = x.ms;
    else if (!x.error.empty()) row.errors[labelOf(x)] = x.error.substr(0, 200);
  for (const Cand& x : v)
    if (x.source != "jit" && predict::vendorRank(x.config) >= 0) row.vendor_ids[labelOf(x)] = x.config;
  // Every pad's id, also where it equals an entry above (deduplicated there).
  if (c.args->padded && c.vendor)
    for (const auto& [role, mp] : padsOf(m))
      for (const auto& vc : c.vendor->candidates(shapeOf(mp, n, k), 1))
        row.vendor_ids[role] = vc.id;
  row.winner = (win->source == "jit" ? "" : win->source + ":") + win->config;
  row.vs_winner = v[0].time() / win->time();
  row.vs_default = v[0].time() / d->time();
  row.unraced_vs_winner = bare->time() / win->time();
  row.unraced_vs_default = bare->time() / d->time();
  if (c.args->race) row.raced = labelOf(v[0]);
  return row;
}

// 0..n-1 spread first (every 8th, then every 4th, ...), so a time limit leaves a spread of M.
std::vector<size_t> spreadOrder(size_t n) {
  std::vector<size_t> order;
  std::vector<bool> seen(n, false);
  for (size_t step : {8, 4, 2, 1})
    for (size_t i = 0; i < n; i += step)
      if (!seen[i]) seen[i] = true, order.push_back(i);
  return order;
}

// Every JIT config a held-out key's list can hold (the tuned keys' top configs and winners),
// compiled on several threads before the keys are timed one by one: the candidate path compiles
// outside the engine's bench lock, so the threads' compiles overlap and their (shortest) timings
// queue. The timings are discarded. A store warm from training makes this a second or two.
void warmStore(Ctx& c, const Buffers& b, int64_t n, int64_t k, const std::vector<std::string>& winners) {
  std::set<std::string> cfgs(winners.begin(), winners.end());
  TuningDatabase* db = c.tuner->database("gemm");
  for (const DbEntry& e : db->entries())
    if (e.key.find(",N=" + std::to_string(n) + ",K=" + std::to_string(k) + ",") != std::string::npos)
      for (const auto& cfg : topJit(e, c.args->top)) cfgs.insert(cfg);
  const std::vector<std::string> list(cfgs.begin(), cfgs.end());
  BenchOptions bo = c.tuner->options().bench;
  bo.warmup_ms = 0.01;
  bo.rep_ms = 0.01;
  bo.verify = false;
  const GemmCall call{shapeOf(64, n, k), b.buf};
  std::atomic<size_t> next{0};
  std::vector<std::thread> th;
  for (unsigned i = 0; i < std::max(1u, std::min(12u, std::thread::hardware_concurrency())); ++i)
    th.emplace_back([&] {
      for (size_t j; (j = next++) < list.size();)
        (void)c.tuner->benchmarkCandidate("gemm", &call, {list[j], "jit", ""}, bo, 0);
    });
  for (auto& t : th) t.join();
}

struct Trained {
  std::vector<int64_t> ms;        // tuned M values
  std::vector<std::string> wins;  // distinct JIT winners
  double seconds = 0;
};

Expected<Trained> train(Ctx& c, const Buffers& b, int64_t n, int64_t k, double stop_at_s,
                        Clock::time_point t0) {
  Trained t;
  const auto start = Clock::now();
  const std::vector<int64_t> pts = predict::rangePoints(1, c.args->max_m, c.args->train);
  for (size_t i : spreadOrder(pts.size())) {
    const int64_t m = pts[i];
    if (stop_at_s > 0 && since(t0) > stop_at_s) break;
    const GemmCall call{shapeOf(m, n, k), b.buf};
    Expected<KeyReport> r = Status::NotFound("not looked up");
    if (c.args->reuse) r = c.op->lookup(call);
    if (!r.ok() || r->origin != "database") {
      auto tuned = c.op->tune(call);
      r = tuned.ok() ? Expected<KeyReport>(KeyReport(*tuned)) : Expected<KeyReport>(tuned.status());
    }
    if (!r.ok()) return r.status().withContext("tuning M=" + std::to_string(m));
    t.ms.push_back(m);
    if (r->winner_source == "jit" && std::find(t.wins.begin(), t.wins.end(), r->winner) == t.wins.end())
      t.wins.push_back(r->winner);
  }
  std::sort(t.ms.begin(), t.ms.end());
  t.seconds = since(start);
  return t;
}


int run(const Args& a) {
  auto env = TunerOptions::fromEnv();
  if (!env.ok()) return std::fprintf(stderr, "%s\n", env.status().toString().c_str()), 1;
  EngineOptions eo;
  eo.options = *env;
  eo.options.isolate = false;  // one process, one set of buffers: the re-timing is interleaved
  eo.options.background = false;
  eo.finalist_rounds = 3;  // training only: the held-out re-timing below is the measurement
  auto b = openBackend(env->backend);
  if (!b.ok() || (*b)->vendor() == Vendor::kSimulated) {
    // The simulated GEMM kernels live in the CLI (tools/sim_gpu.h), which bench/ may not include.
    std::printf("SKIP: needs a GPU (%s)\n", b.ok() ? "simulated backend" : b.status().toString().c_str());
    return 0;
  }
  std::shared_ptr<Backend> backend(std::move(*b));
  auto t = Engine::create(backend, eo);
  if (!t.ok()) return std::fprintf(stderr, "%s\n", t.status().toString().c_str()), 1;
  std::shared_ptr<Engine> tuner(std::move(*t));
  auto op = GemmOp::create(tuner);
  if (!op.ok()) return std::fprintf(stderr, "%s\n", op.status().toString().c_str()), 1;
  auto lt = openGemmVendor("cuda", *backend, tuner->device().multiprocessors, {});
  std::unique_ptr<GemmVendor> vendor = lt.ok() ? std::move(*lt) : nullptr;
  Ctx c{tuner.get(), op->get(), vendor.get(), &a};
  const auto t0 = Clock::now();
  std::vector<Buffers> bufs;
  std::vector<Trained> trained;
  for (const auto& [n, k] : a.nk) {
    auto b = makeBuffers(*backend, a.max_m, n, k);
    if (!b.ok()) return std::fprintf(stderr, "%s\n", b.status().toString().c_str()), 1;
    bufs.push_back(std::move(*b));
    const double stop_at = a.train_s * double(bufs.size()) / double(a.nk.size());  // an equal share each
    auto tr = train(c, bufs.back(), n, k, stop_at, t0);
    if (!tr.ok()) return std::fprintf(stderr, "%s\n", tr.status().toString().c_str()), 1;
    const auto w0 = Clock::now();
    warmStore(c, bufs.back(), n, k, tr->wins);
    std::printf("TRAIN %ldx%ld: %zu M tuned in %.1f s, %zu distinct JIT winners; store warmed in %.1f s\n",
                long(n), long(k), tr->ms.size(), tr->seconds, tr->wins.size(), since(w0));
    std::fflush(stdout);
    trained.push_back(std::move(*tr));
  }
  std::vector<std::vector<int64_t>> held;
  for (size_t i = 0; i < a.nk.size(); ++i)
    held.push_back(heldOutMs(a.heldout, trained[i].ms, int(i), a.max_m, a.seed));
  std::ofstream out;
  if (!a.out.empty()) out.open(a.out);
  std::vector<Row> rows;
  std::vector<std::vector<Row>> per(a.nk.size());
  // Round-robin over the N x K, so a deadline leaves every N x K about the same share, and over
  // each N x K's M spread first, so it leaves a spread of M (not the smallest ones).
  for (size_t j : spreadOrder(size_t(std::max(0, a.heldout)))) {
    for (size_t i = 0; i < a.nk.size(); ++i) {
      if (j >= held[i].size()) continue;
      if (a.deadline_s > 0 && since(t0) > a.deadline_s) break;
      Row r = heldOutRow(c, bufs[i], held[i][j], a.nk[i].first, a.nk[i].second, trained[i].wins);
      writeRow(out, r);
      if (!r.error.empty()) std::printf("ERROR M=%ld %s\n", long(r.m), r.error.c_str());
      rows.push_back(r);
      per[i].push_back(r);
    }
  }
  std::printf("held-out keys: %zu in %.1f s total (predicted config / best of the reduced list, and / "
              "the default; interleaved, %d rounds, %s)\n", rows.size(), since(t0), a.rounds,
              a.verify_pass ? "verified in a pass of its own" : "round 0 verifying each candidate");
  for (size_t i = 0; i < a.nk.size(); ++i) {
    const std::string name = std::to_string(a.nk[i].first) + "x" + std::to_string(a.nk[i].second);
    summary(name.c_str(), per[i]);
  }
  summary("all", rows);
  if (a.race) {  // the bare prediction, re-timed in the same rounds
    std::vector<Row> bare = rows;
    for (Row& r : bare) r.vs_winner = r.unraced_vs_winner, r.vs_default = r.unraced_vs_default;
    summary("unraced", bare);
  }
  return 0;
}

}  // namespace
}  // namespace ktune

int main(int argc, char** argv) {
  ktune::Args a;
  if (!ktune::parseArgs(argc, argv, &a)) {
    std::fprintf(stderr, "usage: shape_heldout_bench [--nk NxK,...] [--train 20] [--max-m 8192] [--heldout 26] "
                         "[--rounds 3] [--top 3] [--vendor 3] [--train-s S] [--deadline-s S] [--seed S] [--race 1] [--reuse-db 0] "
                         "[--verify-pass 1] [--padded 0] [--out FILE]\n");
    return 2;
  }
  return ktune::run(a);
}
