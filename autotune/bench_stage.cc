#include "autotune/bench_stage.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "autotune/device_pool.h"
#include "autotune/worker_prestart.h"
#include "base/clock.h"
#include "base/format.h"
#include "base/fs.h"
#include "base/timeline.h"
#include "compiler/store/store.h"

namespace ktune {
namespace detail {

// Synchronises and checks the candidate's output (the run has been launched on `s`); a fault,
// launch error or mismatch is the returned status (`when` names the run in the reason).
Status TunerEngine::verifyOutput(const ErasedFamily& f, const void* p, Cand& c, StreamHandle s,
                                 const std::string& when) {
  Status st = backend->synchronize(s);
  if (st.ok()) st = backend->checkError();
  if (!st.ok()) {
    (void)backend->checkError();  // clear the sticky error for the next candidate
    return st;
  }
  auto v = f.verify(p, s);
  if (!v.ok()) return v.status();
  c.r.max_error = std::max(c.r.max_error, v->max_abs_error);
  if (v->ok) return Status::Ok();
  Status bad = v->toStatus();
  return when.empty() ? bad : Status(bad.code(), "wrong" + when + ": " + bad.message());
}

void TunerEngine::noteFault(const Cand& c) {
  if (c.r.status != Code::kDeviceFault) return;
  Status probe = backend->synchronize();
  if (probe.ok() || probe.code() != Code::kDeviceFault) return;
  std::lock_guard<std::mutex> l(lost_mu);
  if (context_lost_by.empty())
    context_lost_by = (c.vendor_source.empty() ? "" : c.vendor_source + " ") + c.r.config;
}

Status TunerEngine::contextLost() {
  std::lock_guard<std::mutex> l(lost_mu);
  if (context_lost_by.empty()) return Status::Ok();
  return Status::Unavailable("not run: the device context of this process was lost when " +
                             context_lost_by +
                             " faulted; nothing runs on it any more (restart the process; "
                             "KTUNE_ISOLATE=1 benchmarks candidates in a worker that survives "
                             "faults)");
}

void TunerEngine::benchOne(const ErasedFamily& f, const void* p, Cand& c,
                           const BenchOptions& bo_in, double best, StreamHandle s,
                           TuneReport* rep) {
  if (Status lost = contextLost(); !lost.ok()) {
    fail(c, lost);
    return;
  }
  std::function<Status()> run;
  using PhaseClock = std::chrono::steady_clock;
  auto t_phase = PhaseClock::now();
  double laps[3] = {0, 0, 0};  // load, verify, measure (KTUNE_TIMELINE)
  auto lap = [&](double TuneReport::*field) {
    const auto now = PhaseClock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - t_phase).count();
    if (rep) rep->*field += ms;
    laps[field == &TuneReport::load_ms ? 0 : field == &TuneReport::verify_ms ? 1 : 2] += ms;
    t_phase = now;
  };
  struct MarkAtEnd {  // one timeline line per candidate timed, however it ends
    const Cand& c;
    const double* laps;
    const Benchmarker& b;
    const BenchOptions& bo;
    ~MarkAtEnd() {
      if (!timelineOn()) return;
      const Benchmarker::Counts n = b.lastCounts();
      timelineMark("bench", strprintf("load %.2f verify %.2f measure %.2f | est %d warm %d planned "
                                      "%d timed %d run %.4f host %.4f | verify %d reverify %d "
                                      "median %.4f status %d | %s", laps[0], laps[1], laps[2],
                                      n.estimate, n.warm, n.planned, n.timed, n.est_ms, n.host_ms,
                                      int(bo.verify), int(bo.reverify), c.r.stats.median_ms,
                                      int(c.r.status), c.r.config.substr(0, 60).c_str()));
    }
  } mark_at_end{c, laps, *bench, bo_in};
  if (c.vendor_source.empty()) {
    auto h = loadFunction(c.r.code_object_key, c.co);
    lap(&TuneReport::load_ms);
    if (!h.ok()) {
      Status st = h.status();
      fail(c, st.code() == Code::kOutOfResources ? st : Status::LaunchError(st.toString()));
      return;
    }
    FunctionHandle fn = *h;
    const Dim3 grid = launchGrid(fn, c.dims);
    run = [&, fn, grid] {
      if (f.before_launch) KTUNE_RETURN_IF_ERROR(f.before_launch(c.config, p, s));
      KernelArgs args;
      f.launchArgs(c.config, p, args);
      return backend->launch(fn, grid, c.dims.block, c.dims.shared, args.data(), s);
    };
  } else {
    run = [&] { return f.vendor_launch(c.r.config, p, s); };
  }
  // Verify first: it is also the smoke test (faults, launch errors) before any timing.
  if (f.verify) {
    Status st = f.pre_run ? f.pre_run(p, s) : Status::Ok();
    if (st.ok()) st = run();
    // Without bo.verify (a binary verified earlier in this run) the launch stays as a warm-up
    // and only the read-back and comparison are skipped: those were the cost.
    if (st.ok() && bo_in.verify) st = verifyOutput(f, p, c, s, "");
    if (!st.ok()) {
      (void)backend->checkError();  // clear a sticky error (a failed launch) for the next one
      fail(c, st);
      noteFault(c);
      return;
    }
  }
  lap(&TuneReport::verify_ms);
  BenchOptions bo = bo_in;
  bo.best_ms = best;
  DynamicShapes::pace(bo);  // the background thread's pacing per run
  const bool reverify = bo.reverify && f.verify;
  std::function<Status(int)> before = [&](int i) -> Status {
    // Run index 2 starts once timed runs 0 and 1 are done: the second run's output is checked.
    if (reverify && i == 2) KTUNE_RETURN_IF_ERROR(verifyOutput(f, p, c, s, " after timed run 2"));
    if (f.pre_timed_run) return f.pre_timed_run(p, s);
    if (f.pre_run) return f.pre_run(p, s);
    return Status::Ok();
  };
  BenchStats partial;
  auto stats = bench->measure(s, run, bo, before, &partial);
  // A candidate timed without the check first (verify_within) is read back only if it can lead.
  const bool late_verify = f.verify && !bo.verify && !reverify && bo.verify_within > 0 &&
                           stats.ok() && (best <= 0 || stats->median_ms <= best * bo.verify_within);
  if (stats.ok() && (reverify || late_verify)) {
    Status st = verifyOutput(f, p, c, s, " after the last timed run");
    if (!st.ok()) stats = st;
  }
  lap(&TuneReport::measure_ms);
  if (!stats.ok()) {
    (void)backend->checkError();
    c.r.stats = partial;
    fail(c, stats.status());
    noteFault(c);
    return;
  }
  c.r.stats = *stats;
  c.r.status = Code::kOk;
  c.r.date = isoUtcNow();
}

Expected<WorkerLaunch> TunerEngine::workerLaunch(int dev) const {
  KTUNE_ASSIGN_OR_RETURN(std::string exe, findWorkerExecutable(opts.options.worker_path));
  WorkerLaunch wl;
  wl.executable = std::move(exe);
  wl.cache_dir = opts.options.cache_dir;
  wl.backend = backend->name();
  wl.device = dev;
  wl.plugins = opts.options.worker_plugins;
  return wl;
}

bool TunerEngine::makeWorker(std::string* why) {
  if (worker) return true;
  auto wl = workerLaunch(opts.options.device);
  if (!wl.ok()) {
    *why = wl.status().toString();
    return false;
  }
  // One the caller started before opening its GPU (worker_prestart.h), when it matches.
  worker = takeEarlyWorker(*wl, opts.isolation);
  if (!worker) worker = std::make_unique<WorkerSupervisor>(std::move(*wl), opts.isolation);
  return true;
}

Status TunerEngine::runInWorker(const WorkerBatch& b_in, const ResultFn& on_result) {
  WorkerBatch b = b_in;
  DynamicShapes::pace(b.bench);  // the background thread's pacing per run, done by the worker
  if (devices) {
    return devices->runBatches(
        {b}, [&](size_t, size_t k, const CandidateResult& r) { on_result(k, r); });
  }
  std::string why;
  if (!makeWorker(&why)) return Status::Unavailable(why);
  return worker->run(b, on_result);
}

void TunerEngine::prepareWorkers(const std::string& family, const std::string& args_json) {
  std::string ignored;
  if (devices) {
    devices->prepare(family, args_json);
  } else if (makeWorker(&ignored)) {
    (void)worker->prepare(family, args_json);
  }
}

bool TunerEngine::noteFallback(const std::string& family, const std::string& why) {
  ++iso_fallback.fallbacks;
  // Once per family and reason: a family without make_problem would say it every key.
  return iso_warned.insert(family + "|" + why).second || opts.options.verbose;
}

bool benchIsolated(TunerEngine& e, IsolatedBatch& ib, std::string* why) {
  const ErasedFamily& f = ib.fs.f;
  if (!f.args_json || !f.make_problem) {
    *why = "family " + f.name + " has no args_json/make_problem, so a worker process cannot "
           "rebuild its problem (a C++ family needs both to be benchmarked isolated; a kernel "
           "registered from data, KernelSpec or the C API, passes the caller's own device "
           "pointers, which no other process can use: tune it with isolation off)";
    return false;
  }
  if (e.devicePool()) return e.devicePool()->benchWorkers(ib, why);  // one worker per device
  if (!e.makeWorker(why)) return false;
  std::vector<WorkerCandidate> all;
  for (size_t i : ib.todo) {
    const Cand& c = ib.cands[i];
    WorkerCandidate wc;
    wc.config = c.r.config;
    wc.source = c.vendor_source.empty() ? "jit" : c.vendor_source;
    wc.code_object_key = c.r.code_object_key;
    all.push_back(std::move(wc));
  }
  auto startProgress = [&](size_t j) {
    if (j < ib.todo.size())
      e.progress({f.name, ib.key, "bench", ++*ib.bench_index, ib.total, ib.cands[ib.todo[j]].r.config});
  };
  auto onResult = [&](size_t j, const CandidateResult& r) {
    Cand& c = ib.cands[ib.todo[j]];
    const std::string co_key = c.r.code_object_key;
    c.r = r;
    c.r.code_object_key = co_key;
    if (c.r.status != Code::kOk) c.live = false;
    if (c.r.status == Code::kOk && (*ib.best <= 0 || r.stats.median_ms < *ib.best))
      *ib.best = r.stats.median_ms;
    (*ib.done)[ib.todo[j]] = true;
    recordPartial(e, ib.fs, ib.key, c.r, ib.write_reported);
    c.recorded = true;
    startProgress(j + 1);
  };
  startProgress(0);
  // Background tuning with a duty cycle below 1 sends one candidate per request (the worker paces
  // each one's runs: DynamicShapes::pace; a stop never waits for a whole batch); otherwise one
  // batch of all.
  const size_t per = DynamicShapes::pacing() ? 1 : std::max<size_t>(1, all.size());
  Status st = Status::Ok();
  for (size_t first = 0; first < all.size() && st.ok(); first += per) {
    WorkerBatch b;
    b.family = f.name;
    b.key = ib.key;
    b.args_json = f.args_json(ib.p);
    b.bench = ib.bench ? *ib.bench : e.engineOptions().bench;
    b.best_ms = *ib.best;
    b.candidates.assign(all.begin() + first, all.begin() + std::min(all.size(), first + per));
    st = e.runInWorker(b, [&](size_t jb, const CandidateResult& r) { onResult(first + jb, r); });
  }
  if (st.ok()) return true;
  *why = st.toString();
  // Once candidates ran in the worker, the ones left may include the kind that crashed it, and
  // must not run in the tuner's process: they fail here. Otherwise the caller decides (fall back
  // in-process where allowed, or refuse).
  bool any_done = false;
  for (size_t i : ib.todo) any_done = any_done || (*ib.done)[i];
  if (!any_done) return false;
  for (size_t i : ib.todo) {
    if ((*ib.done)[i]) continue;
    fail(ib.cands[i], Status::Unavailable("isolated benchmarking failed: " + st.toString()));
    (*ib.done)[i] = true;
  }
  return true;
}

CandidateResult TunerEngine::benchCandidate(const std::string& family, const void* p,
                                          const WorkerCandidate& wc, const BenchOptions& bench,
                                          double best_ms, StreamHandle s) {
  Cand c;
  c.r.config = wc.config;
  c.r.source = wc.source.empty() ? "jit" : wc.source;
  c.r.code_object_key = wc.code_object_key;
  FamilyState* fs = findFamily(family);
  if (!fs) {
    fail(c, Status::NotFound("family '" + family + "' is not registered in the worker"));
    return c.r;
  }
  const detail::ErasedFamily& f = fs->f;
  if (c.r.source != "jit") {
    if (!f.vendor_launch) {
      fail(c, Status::Unsupported("family '" + family + "' has no vendor_launch"));
      return c.r;
    }
    c.vendor_source = c.r.source;
  } else {
    auto cfg = Config::parse(wc.config);
    if (!cfg.ok()) {
      fail(c, cfg.status());
      return c.r;
    }
    c.config = *cfg;
    c.dims = f.launch(c.config, p, device);
    if (c.dims.refused) {
      fail(c, *c.dims.refused);
      return c.r;
    }
    // A binary this process loaded before (a later race round, the finalists' rounds) is not
    // read from the store again: the read (0.3-0.6 ms, no GPU work) came before every JIT
    // candidate's runs and before no vendor one's, an idle gap only the JIT finalists had.
    if (!wc.code_object_key.empty() && functionLoaded(wc.code_object_key)) {
      std::lock_guard<std::mutex> bl(bench_mu);
      benchOne(f, p, c, bench, best_ms, s);
      return c.r;
    }
    // The parent compiled it into the shared store; recompile only if the entry vanished.
    const auto t_get = std::chrono::steady_clock::now();
    auto co = wc.code_object_key.empty() ? Expected<CodeObject>(Status::NotFound("no key"))
                                         : store_->get(wc.code_object_key);
    if (timelineOn())
      timelineMark("co_get", strprintf("%.2f ms %s", msSince(t_get), co.ok() ? "hit" : "miss"));
    if (!co.ok()) {
      std::string k, note;
      bool hit = false;
      co = compileConfig(*fs, c.config, p, &k, &hit, &note);
      if (co.ok()) c.r.code_object_key = k;
    }
    if (!co.ok()) {
      fail(c, co.status());
      return c.r;
    }
    c.co = std::move(co).value();
  }
  std::lock_guard<std::mutex> bl(bench_mu);
  benchOne(f, p, c, bench, best_ms, s);
  return c.r;
}

}  // namespace detail
}  // namespace ktune
