#include "autotune/tuning_run.h"

#include <algorithm>
#include <cstdio>

#include "autotune/bench_stage.h"
#include "autotune/compile_pool.h"
#include "autotune/finalists.h"
#include "autotune/guided.h"
#include "autotune/tuning_run_stages.h"
#include "base/format.h"
#include "base/fs.h"
#include "base/timeline.h"

namespace ktune {
namespace detail {

namespace {

std::string fmt3(double v) { return strprintf("%.3g", v); }

}  // namespace

// Stage "enumerate": constraints and the shared-memory pre-check against the device limit.
void TuningRun::enumerate() {
  if (!f_.jit()) return;
  if (!f_.configs.empty()) {
    rep_.enumerated = static_cast<int>(f_.configs.size());
    for (const Config& c : f_.configs) {
      int64_t need = f_.space.sharedBytesOf(c);
      if (shared_limit_ > 0 && need > shared_limit_) {
        Cand x;
        x.config = c;
        x.r.config = c.toString();
        fail(x, Status::OutOfResources("needs " + std::to_string(need) +
                                       " B shared/LDS > device limit " +
                                       std::to_string(shared_limit_) + " B"));
        cands_.push_back(std::move(x));
      } else {
        accepted_.push_back(c);
      }
    }
    return;
  }
  Enumeration en = f_.space.enumerate(e_.spaceBackend(), shared_limit_);
  rep_.enumerated = static_cast<int>(en.accepted.size() + en.rejected.size());
  accepted_ = std::move(en.accepted);
  for (auto& rj : en.rejected) {
    if (rj.reason.rfind("constraint", 0) == 0) continue;  // not a candidate at all
    Cand x;
    x.config = rj.config;
    x.r.config = rj.config.toString();
    fail(x, Status::OutOfResources(rj.reason));
    cands_.push_back(std::move(x));
  }
}

// Stage "history": known failures (database blacklist) and the candidates an interrupted run
// already measured (resumable tuning: they are reused, not measured again).
void TuningRun::loadHistory() {
  // The database's (finished entries' failures, partial results of older versions), then the
  // journal's: a later result of the same candidate replaces an earlier one.
  std::vector<CandidateResult> earlier = fs_.db->candidatesFor(key_);
  for (auto& r : fs_.journal->candidatesFor(key_)) earlier.push_back(std::move(r));
  for (auto& r : earlier) {
    if (persistentFailure(r)) {
      if (!e_.options().retry_failed) known_[r.source + "|" + r.config] = r;
    } else if ((r.status == Code::kOk && r.stats.runs > 0) ||
               rejectedAsSlower(r)) {
      measured_[r.source + "|" + r.config] = r;
    }
  }
}

void TuningRun::applyHistory(Cand& x, const std::string& id) {
  if (auto k = known_.find(id); k != known_.end()) {
    x.r = k->second;
    x.r.reason = "skipped, failed before (" + k->second.date + "): " + k->second.reason;
    x.live = false;
    ++rep_.skipped_known_failed;
  } else if (auto m = measured_.find(id); m != measured_.end()) {
    x.r = m->second;
    x.live = false;
    x.resumed = true;
    x.recorded = true;
    ++rep_.resumed;
  }
}

// Stage "select": the search strategy's configs, then the vendor candidates.
void TuningRun::select() {
  for (size_t i : e_.engineOptions().search->select(accepted_)) {
    Cand x;
    x.config = accepted_[i];
    x.r.config = x.config.toString();
    applyHistory(x, "jit|" + x.r.config);
    cands_.push_back(std::move(x));
  }
  if (f_.vendor_candidates && !precompiling_) {
    for (auto& v : f_.vendor_candidates(p_)) {
      Cand x;
      x.r.config = v.id;
      x.r.source = v.source;
      x.vendor_source = v.source;
      x.is_default = v.is_default;
      applyHistory(x, v.source + "|" + v.id);
      cands_.push_back(std::move(x));
    }
  }
  total_ = static_cast<int>(cands_.size());
}

// Stage "launch": launch dims and the thread-count check (before compiling).
void TuningRun::checkLaunchDims() {
  const DeviceInfo& d = e_.deviceInfo();
  for (auto& c : cands_) {
    if (!c.live || !c.vendor_source.empty()) continue;
    c.dims = f_.launch(c.config, p_, d);
    if (c.dims.refused) {
      fail(c, *c.dims.refused);
      continue;
    }
    int64_t threads = int64_t(c.dims.block.x) * c.dims.block.y * c.dims.block.z;
    if (d.max_threads_per_block > 0 && threads > d.max_threads_per_block) {
      fail(c, Status::OutOfResources(std::to_string(threads) + " threads per block > device limit " +
                                     std::to_string(d.max_threads_per_block)));
    }
  }
}

void TuningRun::leaveOutDominated() {
  if (!f_.guided_leave_out || !e_.engineOptions().search->guided()) return;
  std::vector<size_t> live;
  std::vector<Config> configs;
  for (size_t i = 0; i < cands_.size(); ++i)
    if (cands_[i].live && cands_[i].vendor_source.empty())
      live.push_back(i), configs.push_back(cands_[i].config);
  const std::vector<std::string> why = f_.guided_leave_out(configs, p_);
  size_t out = 0;
  for (size_t j = 0; j < live.size() && j < why.size(); ++j) out += why[j].empty() ? 0 : 1;
  if (out == 0 || live.size() - out < guided::kMinGuided) return;
  for (size_t j = 0; j < live.size() && j < why.size(); ++j) {
    if (why[j].empty()) continue;
    Cand& c = cands_[live[j]];
    c.live = false;
    c.r.status = Code::kOk;  // not a failure: never compiled nor timed (stats.runs == 0)
    c.r.reason = "not reached: left out by the guided search: " + why[j];
    ++rep_.not_reached;
    ++left_out_;
  }
}

// Stage "revive": a resumed candidate (measured by a run that was killed, or by another process
// tuning the same key) has a result but no binary in this process. The ones that can be
// finalists (the k fastest that passed, and the default) get their code object back from the
// store (compiled again if it is gone) and their launch dims, so the re-timing runs them like the
// others: the fastest that passed can win, and the default is measured, never failed for lacking
// a binary. One that cannot be loaded stays out of the re-timing, its result untouched.
void TuningRun::reviveResumed() {
  const int k = e_.options().finalists;
  if (k <= 0) return;
  auto isDefault = [&](const Cand& c) {
    return c.is_default || (c.vendor_source.empty() && !f_.default_config.params().empty() &&
                            c.config == f_.default_config);
  };
  auto passed = [](const Cand& c) { return c.r.status == Code::kOk && c.r.stats.runs > 0; };
  std::vector<size_t> fastest;
  for (size_t i = 0; i < cands_.size(); ++i) {
    const Cand& c = cands_[i];
    if (!c.resumed || c.live) continue;
    const bool early_stop = c.r.status == Code::kTimeout &&
                            c.r.reason.rfind("slower than best", 0) == 0;
    if (passed(c) || (early_stop && isDefault(c))) fastest.push_back(i);
  }
  std::stable_sort(fastest.begin(), fastest.end(), [&](size_t a, size_t b) {
    return cands_[a].r.stats.median_ms < cands_[b].r.stats.median_ms;
  });
  int taken = 0;
  for (size_t i : fastest) {
    Cand& c = cands_[i];
    if (!isDefault(c) && (!passed(c) || taken >= k)) continue;
    if (!isDefault(c)) ++taken;
    if (c.vendor_source.empty()) {
      std::string co_key, note;
      bool hit = false;
      auto co = e_.compileConfig(fs_, c.config, p_, &co_key, &hit, &note);
      if (!co.ok()) {
        if (e_.options().verbose)
          e_.log() << "ktune: " << f_.name << " [" << key_ << "]: resumed " << c.r.config
                   << " not re-timed: " << co.status().toString() << "\n";
        continue;
      }
      c.co = std::move(co).value();
      c.r.code_object_key = co_key;
      c.dims = f_.launch(c.config, p_, e_.deviceInfo());
    }
    c.live = true;
    c.revived = true;
  }
}

// Stage "choose": the finalists re-timed against the default (autotune/finalists.h), so the
// winner is an original that beat the default beyond the noise, or the default.
int TuningRun::choose() {
  const auto t0 = Clock::now();
  reviveResumed();
  FinalistRun fr{e_, fs_, p_, key_, s_, cands_, iso_used_, rep_.launch_floor, rep_.drift};
  int w = runFinalists(fr, &rep_.vs_default);
  // A context lost during the run (TunerEngine::noteFault) leaves no winner: what was measured
  // before the fault cannot be run or verified now, and the rest was never measured.
  if (!e_.contextLost().ok()) w = -1;
  rep_.finalists_ms = msSince(t0);
  if (e_.options().verbose)
    e_.log() << strprintf("ktune: %s [%s]: finalists %.0f ms (%d finalists, %d rounds: %s)\n",
                          f_.name.c_str(), key_.c_str(), rep_.finalists_ms, rep_.vs_default.finalists,
                          rep_.vs_default.rounds, rep_.vs_default.decision.c_str());
  bench_ms_ += rep_.finalists_ms;
  copyDuplicates();  // after the re-timing: a finalist that failed it takes its copies along
  for (auto& c : cands_) rep_.candidates.push_back(c.r);
  if (w >= 0 && cands_[w].dup_of >= 0) w = cands_[w].dup_of;
  if (w >= 0) {
    rep_.winner = rep_.candidates[w].config;
    rep_.winner_source = rep_.candidates[w].source;
    rep_.winner_stats = rep_.candidates[w].stats;
  }
  return w;
}

// Stage "record": failures worth remembering that are not in the journal yet, then the entry; once
// the entry is written the key's journal lines are compacted away (the entry holds them all).
// Without a winner the journal keeps them: the failures stay remembered.
void TuningRun::record(int w) {
  for (const auto& c : cands_) {
    const CandidateResult& r = c.r;
    if (persistentFailure(r) && r.reason.rfind("skipped", 0) != 0 && !c.recorded) {
      Status st = fs_.journal->append(key_, r);
      if (!st.ok()) writeFailed(e_, f_.name, key_, "a failed candidate", st, &write_reported_);
    }
  }
  if (w < 0) return;
  DbEntry e;
  e.key = key_;
  e.winner = rep_.winner;
  e.winner_source = rep_.winner_source;
  e.winner_stats = rep_.winner_stats;
  if (!rep_.candidates[w].code_object_key.empty())
    e.code_object_keys.push_back(rep_.candidates[w].code_object_key);
  e.candidates = rep_.candidates;
  e.vs_default = rep_.vs_default;
  e.date = isoUtcNow();
  const auto t_db = Clock::now();
  Status st = fs_.db->record(e);
  if (timelineOn()) timelineMark("db_recorded", strprintf("%.1f ms", msSince(t_db)));
  if (!st.ok()) {
    writeFailed(e_, f_.name, key_, "the tuning database", st, &write_reported_);
    return;  // the journal keeps the key's results
  }
  st = fs_.journal->compact(key_);
  if (!st.ok()) writeFailed(e_, f_.name, key_, "the tuning journal", st, &write_reported_);
}

Expected<TuneReport> TuningRun::run(WinnerBinary* winner) {
  const auto t_start = Clock::now();
  e_.progress({f_.name, key_, "enumerate", 0, 0, ""});
  timelineMark("run_start", key_.substr(0, 60));
  enumerate();
  loadHistory();
  select();
  checkLaunchDims();
  leaveOutDominated();
  timelineMark("selected", std::to_string(cands_.size()) + " candidates");
  rep_.search = e_.engineOptions().search->name();
  if (races()) {
    KTUNE_RETURN_IF_ERROR(compileAndRace());
  } else {
    if (e_.engineOptions().search->guided()) rep_.search = "exhaustive (guided: space below " +
                                                std::to_string(guided::kMinGuided) + ")";
    KTUNE_RETURN_IF_ERROR(compileAndBench());
  }
  timelineMark("raced");
  int w = choose();
  timelineMark("chosen", strprintf("%d finalists %d rounds", rep_.vs_default.finalists,
                                   rep_.vs_default.rounds));
  rep_.bench_wall_ms = bench_ms_;
  rep_.bench_overlap_ms = overlap_ms_;
  record(w);
  timelineMark("recorded");
  if (winner && w >= 0 && cands_[w].vendor_source.empty() && !cands_[w].co.binary.empty()) {
    winner->code_object_key = cands_[w].r.code_object_key;
    winner->co = std::move(cands_[w].co);
  }
  rep_.total_wall_ms = msSince(t_start);
  e_.progress({f_.name, key_, "done", total_, total_, rep_.winner});
  if (e_.options().verbose) {
    e_.log() << rep_.tree();
    e_.log() << "  compile " << fmt3(rep_.compile_wall_ms) << " ms, bench "
             << fmt3(rep_.bench_wall_ms) << " ms (" << fmt3(rep_.bench_overlap_ms)
             << " ms of it while compiling), total " << fmt3(rep_.total_wall_ms)
             << " ms (host wall)\n";
  }
  return std::move(rep_);
}

Expected<TuneReport> runTuning(TunerEngine& e, FamilyState& fs, const void* p,
                               const std::string& key, StreamHandle s, WinnerBinary* winner) {
  TuningRun run(e, fs, p, key, s);
  return run.run(winner);
}

Expected<size_t> precompileKey(TunerEngine& e, FamilyState& fs, const void* p,
                               const std::string& key, int threads, size_t depth) {
  TuningRun run(e, fs, p, key, StreamHandle{});
  return run.precompile(threads, depth);
}

Expected<TuneReport> TunerEngine::tuneKey(FamilyState& fs, const void* p, const std::string& key,
                                          StreamHandle s, WinnerBinary* bin) {
  return runTuning(*this, fs, p, key, s, bin);
}

}  // namespace detail
}  // namespace ktune
