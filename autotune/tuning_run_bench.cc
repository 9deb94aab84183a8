// The compile, admit and bench stages of a tuning run (tuning_run_stages.h).
#include <algorithm>
#include <set>

#include "autotune/bench_stage.h"
#include "autotune/compile_pool.h"
#include "autotune/compile_workers.h"
#include "autotune/device_pool.h"
#include "autotune/static_prune.h"
#include "autotune/tuning_run_stages.h"
#include "compiler/analysis/occupancy.h"
#include "base/sha256.h"
#include "base/timeline.h"

namespace ktune {
namespace detail {

// Stage "compile", one job of the pool. Once the pool reports it done, the candidate belongs to
// the benchmarking thread.
void TuningRun::compileOne(size_t j) {
  Cand& c = cands_[to_compile_[j]];
  std::string note;
  if (timelineOn() && !compile_issued_.exchange(true))  // the run's first request to the store
    timelineMark("compile_issued", (precompiling_ ? "precompile " : "run ") + c.r.config);
  const auto t0 = Clock::now();
  auto co = e_.compileConfig(fs_, c.config, p_, &c.r.code_object_key, &c.hit, &note);
  c.compile_job_ms = msSince(t0);
  if (co.ok()) {
    c.co = std::move(co).value();
  } else {
    fail(c, co.status());
  }
  if (!note.empty() && e_.options().verbose) e_.logLine("ktune: " + note);
}

// The compile jobs' own times (store misses), beside the pool's wall time: whether a long
// compile stage was long compiles (contention for the CPU, a heavy kernel) or compiles that
// waited (pacing, too few threads), and how much of a job was the store's write.
void TuningRun::noteCompileJobs(int threads, size_t first_wave) {
  TuneReport::CompileJobs& cj = rep_.compile_jobs;
  cj.threads = threads;
  cj.first_wave = static_cast<int>(first_wave);
  if (auto* pc = dynamic_cast<ProcessCompiler*>(&e_.compiler())) {
    const ProcessCompiler::Stats s = pc->stats();
    cj.processes = s.started;
    cj.in_workers = s.compiled;
  }
  for (size_t i : to_compile_) {
    const Cand& c = cands_[i];
    if (c.hit || c.compile_job_ms <= 0) continue;
    ++cj.jobs;
    cj.job_ms_sum += c.compile_job_ms;
    cj.job_ms_max = std::max(cj.job_ms_max, c.compile_job_ms);
    cj.compiler_ms_sum += c.co.compile_ms;
    cj.compiler_ms_max = std::max(cj.compiler_ms_max, c.co.compile_ms);
  }
}

// Static pruning: the family's own rule (the built-in ones, makeStaticPruner, obey
// options.static_prune themselves), then the spill rule every family gets, behind the one switch
// options.static_prune (KTUNE_STATIC_PRUNE).
std::optional<std::string> TuningRun::pruneReason(const Cand& c) const {
  if (f_.prune)
    if (auto why = f_.prune(c.config, c.co, e_.deviceInfo())) return why;
  if (!e_.options().static_prune) return std::nullopt;
  const std::string& arch = c.co.arch.empty() ? e_.deviceInfo().arch : c.co.arch;
  return spillPruneReason(c.co.resources, Arch(arch).isAmd());
}

// Stage "admit": resource checks from the compiler's report, dedup of identical binaries, static
// pruning. Admitted originals go into `batch`.
void TuningRun::admit(size_t i, std::vector<size_t>& batch) {
  Cand& c = cands_[i];
  if (!c.live) return;  // compile failure (recorded by fail())
  const int64_t shared = occupancySharedBytes(c.co.resources, static_cast<int64_t>(c.dims.shared));
  if (shared_limit_ > 0 && shared > shared_limit_) {
    fail(c, Status::OutOfResources("uses " + std::to_string(shared) +
                                   " B shared/LDS (static + dynamic) > device limit " +
                                   std::to_string(shared_limit_) + " B"));
    return;
  }
  int64_t threads_pb = int64_t(c.dims.block.x) * c.dims.block.y * c.dims.block.z;
  if (c.co.resources.max_threads_per_block > 0 && threads_pb > c.co.resources.max_threads_per_block) {
    fail(c, Status::OutOfResources("block of " + std::to_string(threads_pb) +
                                   " threads > the kernel's launch bound " +
                                   std::to_string(c.co.resources.max_threads_per_block)));
    return;
  }
  const Dim3 &g = c.dims.grid, &b = c.dims.block;
  std::string sig = sha256Hex(c.co.binary) + "|" + c.co.lowered_entry + "|" +
                    std::to_string(g.x) + "," + std::to_string(g.y) + "," + std::to_string(g.z) +
                    "|" + std::to_string(b.x) + "," + std::to_string(b.y) + "," +
                    std::to_string(b.z) + "|" + std::to_string(c.dims.shared);
  auto [it, fresh] = seen_.emplace(sig, i);
  if (!fresh) {
    c.dup_of = static_cast<int>(it->second);
    ++rep_.duplicates;
  }
  if (auto why = pruneReason(c)) {
    if (has_vendor_) {
      fail(c, Status::OutOfResources("pruned: " + *why));
      ++rep_.pruned;
    } else {
      set_aside_.emplace_back(i, *why);  // decided once every candidate is known
    }
    return;
  }
  ++survivors_;
  if (c.dup_of < 0) batch.push_back(i);
}

void TuningRun::benchInProcess(size_t i) {
  Cand& c = cands_[i];
  e_.progress({f_.name, key_, "bench", ++bench_index_, total_, c.r.config});
  e_.benchOne(f_, p_, c, round_bo_ ? *round_bo_ : e_.engineOptions().bench, best_, s_, &rep_);
  if (c.r.status == Code::kOk && (best_ <= 0 || c.r.stats.median_ms < best_))
    best_ = c.r.stats.median_ms;
  const auto t_rec = Clock::now();
  recordPartial(e_, fs_, key_, c.r, &write_reported_);
  rep_.record_ms += msSince(t_rec);
  c.recorded = true;
  done_[i] = true;
}

// The part of a batch that goes to the worker. When the worker cannot serve this family at all,
// the run falls back to in-process benchmarking only where that is allowed (mayFallBack), and
// refuses otherwise.
Status TuningRun::benchThroughWorker(const std::vector<size_t>& iso_batch) {
  std::string why;
  IsolatedBatch ib{fs_,   p_,           key_,   cands_,          iso_batch,
                   &best_, &done_, &bench_index_, total_, &rep_, &write_reported_, round_bo_};
  if (benchIsolated(e_, ib, &why)) {
    iso_used_ = true;
    return Status::Ok();
  }
  if (iso_used_) {
    // Candidates of this key already ran in the worker: the ones left may include the kind
    // that broke it, so they must not run in the tuner's process.
    for (size_t i : iso_batch) {
      if (done_[i]) continue;
      fail(cands_[i], Status::Unavailable("isolated benchmarking failed: " + why));
      done_[i] = true;
    }
    return Status::Ok();
  }
  if (!e_.mayFallBack()) {
    return Status::Unavailable(
        "family " + f_.name + " [" + key_ + "]: isolated benchmarking was requested (" +
        std::string(e_.options().isolate_explicit ? "KTUNE_ISOLATE=1" : "options.isolate") +
        ") but the worker cannot benchmark it: " + why +
        " (set KTUNE_ISOLATE=0 to benchmark in the tuning process)");
  }
  iso_off_ = true;
  if (e_.noteFallback(f_.name, why)) {
    e_.log() << "ktune: " << f_.name << " [" << key_
             << "]: isolated benchmarking unavailable, benchmarking in-process: " << why << "\n";
  }
  return Status::Ok();
}

// Stage "bench" for one batch of admitted candidates.
Status TuningRun::bench(std::vector<size_t> batch) {
  if (batch.empty()) return Status::Ok();
  const bool compiling = pool_ && !pool_->finished();
  const auto t0 = Clock::now();
  // Vendor-library candidates first within a batch (without the pipeline, the one batch): they
  // are usually close to the best, so early rejection has a strong bar and slow JIT configs stop
  // after a few runs.
  std::stable_partition(batch.begin(), batch.end(),
                        [&](size_t i) { return !cands_[i].vendor_source.empty(); });
  // The guided race's first timed candidate (its round options are set), for the drift probe.
  if (round_bo_ && first_timed_ < 0) first_timed_ = static_cast<long>(batch.front());
  std::vector<size_t> iso_batch;
  for (size_t i : batch) {
    // IsolationOptions::vendor_in_process (off by default): trusted library code runs here; with
    // several devices it is spread with the rest instead (their workers are started at once).
    if (!iso_off_ && e_.engineOptions().isolation.vendor_in_process && !e_.devicePool() &&
        !cands_[i].vendor_source.empty()) {
      benchInProcess(i);
    } else {
      iso_batch.push_back(i);
    }
  }
  if (!iso_off_ && !iso_batch.empty()) KTUNE_RETURN_IF_ERROR(benchThroughWorker(iso_batch));
  if (e_.devicePool() && e_.devicePool()->inProcess()) {  // several simulated devices (device_pool.h)
    IsolatedBatch ib{fs_,    p_,           key_,   cands_, batch,           &best_,
                     &done_, &bench_index_, total_, &rep_,  &write_reported_, round_bo_};
    KTUNE_RETURN_IF_ERROR(e_.devicePool()->benchInProcess(ib));
  }
  for (size_t i : batch)
    if (!done_[i]) benchInProcess(i);
  const double ms = msSince(t0);
  bench_ms_ += ms;
  if (compiling) overlap_ms_ += ms;
  return Status::Ok();
}

// Stages "compile", "admit" and "bench": with options.pipeline, candidates are benchmarked batch
// by batch as they come out of the compilers (vendor-library candidates first, while the first
// compiles run), so a cold run takes about max(compile, bench) rather than the sum; without it,
// everything is compiled first. The isolation worker starts before the compiles.
Status TuningRun::compileAndBench() {
  if (e_.options().isolate && f_.args_json && f_.make_problem) {
    // The workers build this key's problem while we compile (run() reports start failures).
    e_.prepareWorkers(f_.name, f_.args_json(p_));
  }
  const bool pipeline = e_.options().pipeline;
  const auto t_compile = Clock::now();
  for (size_t i = 0; i < cands_.size(); ++i) {
    if (cands_[i].live && cands_[i].vendor_source.empty()) to_compile_.push_back(i);
  }
  for (const auto& c : cands_) {
    if (c.resumed && c.r.status == Code::kOk && c.r.stats.runs > 0 &&
        (best_ <= 0 || c.r.stats.median_ms < best_))
      best_ = c.r.stats.median_ms;
    has_vendor_ |= !c.vendor_source.empty() && c.live;
  }
  done_.assign(cands_.size(), false);
  iso_off_ = !e_.options().isolate;
  const size_t n = to_compile_.size();
  // The progress index counts finished compiles (monotonic, as the CLI shows "n/total"); it is
  // sent under the pool's lock (lock order: pool, then progress; never reverse).
  CompilePool pool(
      n, CompilePool::threadsFor(n, e_.options().compile_threads, pipeline),
      [&](size_t j) { compileOne(j); },
      [&](size_t j, size_t finished) {
        e_.progress({f_.name, key_, "compile", static_cast<int>(finished), static_cast<int>(n),
                     cands_[to_compile_[j]].r.config});
      });
  pool_ = &pool;
  // The vendor candidates (and, without the pipeline, everything). They are timed after every
  // compile has finished, where the JIT candidates are timed (the worker under isolation): a
  // vendor candidate timed while compile threads compete for the CPU, or in the other process,
  // would be measured under other conditions than the JIT candidates it is compared with.
  std::vector<size_t> first;
  for (size_t i = 0; i < cands_.size(); ++i) {
    if (!cands_[i].vendor_source.empty() && cands_[i].live) first.push_back(i);
  }
  Status st;
  if (pipeline) {
    pool.start();
  } else {
    // Every compile ends before any check: the loop below then takes all candidates at once,
    // in candidate order (dedup keeps the first of identical binaries).
    pool.runAll();
  }
  for (std::vector<size_t> got; st.ok() && !(got = pool.take()).empty();) {
    if (!pipeline) std::sort(got.begin(), got.end());  // candidate order, as compiled serially
    std::vector<size_t> batch;
    for (size_t j : got) admit(to_compile_[j], batch);
    if (pipeline) {
      st = bench(std::move(batch));
    } else {
      first.insert(first.end(), batch.begin(), batch.end());
    }
  }
  pool_ = nullptr;
  rep_.compile_wall_ms = n == 0 ? msSince(t_compile) : pool.wallMs();
  if (!st.ok()) return st;  // the pool joins its threads on the way out
  const int threads = CompilePool::threadsFor(n, e_.options().compile_threads, pipeline);
  noteCompileJobs(threads, std::min(n, static_cast<size_t>(threads)));
  for (size_t i : to_compile_) {
    if (cands_[i].hit) {
      ++rep_.store_hits;
    } else {
      ++rep_.compiled;
    }
  }
  KTUNE_RETURN_IF_ERROR(bench(std::move(first)));  // pipeline: the vendor candidates, compiles done
  return settleSetAside();
}

// Pruning must not remove every candidate: with no vendor candidate and no other JIT candidate
// left, the would-be-pruned ones are benchmarked after all.
Status TuningRun::settleSetAside() {
  if (set_aside_.empty()) return Status::Ok();
  if (survivors_ == 0) {
    std::vector<size_t> batch;
    for (auto& [i, why] : set_aside_)
      if (cands_[i].dup_of < 0) batch.push_back(i);  // duplicates copy their original's result
    return bench(std::move(batch));
  }
  for (auto& [i, why] : set_aside_) {
    fail(cands_[i], Status::OutOfResources("pruned: " + why));
    ++rep_.pruned;
  }
  return Status::Ok();
}

void TuningRun::copyDuplicates() {
  for (auto& c : cands_) {
    if (c.dup_of < 0 || !c.live) continue;
    const Cand& o = cands_[c.dup_of];
    c.r.status = o.r.status;
    c.r.stats = o.r.stats;
    c.r.max_error = o.r.max_error;
    c.r.date = o.r.date;
    c.r.reason = "identical binary to " + o.r.config + " (benchmarked once)" +
                 (o.r.status == Code::kOk ? "" : ": " + o.r.reason);
    c.live = o.live;
  }
}

}  // namespace detail
}  // namespace ktune
