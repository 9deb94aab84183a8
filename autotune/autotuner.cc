#include "autotune/autotuner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <tuple>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <shared_mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "autotune/device_pool.h"
#include "autotune/engine.h"
#include "autotune/isolation.h"
#include "autotune/tuning_run.h"
#include "base/fs.h"
#include "base/version.h"
#include "compiler/store/store.h"

namespace ktune {

using detail::FamilyState;
using detail::Selected;

Engine::Engine(std::unique_ptr<detail::TunerEngine> engine) : impl_(std::move(engine)) {}

Engine::~Engine() = default;

Expected<std::unique_ptr<Engine>> Engine::create(std::shared_ptr<Backend> backend,
                                               EngineOptions opts) {
  KTUNE_ASSIGN_OR_RETURN(auto engine,
                         detail::TunerEngine::create(std::move(backend), std::move(opts)));
  return std::unique_ptr<Engine>(new Engine(std::move(engine)));
}

const DeviceInfo& Engine::device() const { return impl_->deviceInfo(); }
Backend& Engine::backend() { return impl_->runtime(); }
Compiler& Engine::compiler() { return impl_->compiler(); }
CodeObjectStore& Engine::store() { return impl_->store(); }
const EngineOptions& Engine::options() const { return impl_->engineOptions(); }
const std::string& Engine::familyName(detail::FamilyState* f) { return f->f.name; }

Expected<detail::FamilyState*> Engine::findErased(const std::string& name,
                                                 const std::type_info& type) {
  FamilyState* fs = impl_->findFamily(name);
  if (!fs) return Status::NotFound("family '" + name + "' is not registered on this tuner");
  if (!fs->f.problem_type || *fs->f.problem_type != type)
    return Status::InvalidArgument("family '" + name + "' was registered over another problem type");
  return fs;
}

TuningDatabase* Engine::database(const std::string& family) { return impl_->database(family); }

Status Engine::importDatabase(const std::string& family, const std::string& text) {
  detail::FamilyState* fs = impl_->findFamily(family);
  if (!fs) return Status::NotFound("family '" + family + "' is not registered on this tuner");
  const detail::ErasedFamily& f = fs->f;
  auto check = [&f](const Validator&, const std::string& source, const std::string& config) {
    if (isVendorSource(source)) {
      return f.vendor_launch ? Status::Ok()
                             : Status::InvalidArgument("family " + f.name + " has no " + source +
                                                       " candidates");
    }
    auto c = Config::parse(config);
    if (!c.ok()) return c.status();
    return detail::checkOwnConfig(f, *c, "imported");
  };
  std::vector<std::string> refused;
  KTUNE_RETURN_IF_ERROR(fs->db->importJson(text, check, &refused));
  if (refused.empty()) return Status::Ok();
  std::string why;
  for (size_t i = 0; i < refused.size() && i < 5; ++i) why += (i ? "; " : "") + refused[i];
  if (refused.size() > 5) why += "; ...";
  return Status::InvalidArgument("import: refused " + std::to_string(refused.size()) +
                                 " entr" + (refused.size() == 1 ? "y" : "ies") +
                                 " (the others were merged): " + why);
}

namespace {
// The calling thread's last hit: a loop calling one family with one key skips the lock and the
// hash lookup. `key` points at the key inside the family's map (its nodes are never erased); it is
// only read while `family` matches a live family's id and `epoch` its current epoch.
struct LastHit {
  uint64_t family = 0;
  uint64_t epoch = 0;
  const KeyBuilder* key = nullptr;
  Selected* sel = nullptr;
};
thread_local LastHit t_last_hit;
}  // namespace

Expected<detail::FamilyState*> Engine::addSpec(ErasedKernelSpec spec, FamilyExtras extras) {
  KTUNE_RETURN_IF_ERROR(detail::checkSpec(spec, extras));
  return addErased(detail::toErasedFamily(std::move(spec), std::move(extras), device()));
}

Expected<detail::FamilyState*> Engine::addErased(detail::ErasedFamily f) {
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument("family '" + f.name + "': " + what);
  };
  if (f.name.empty() || !isSafeFileName(f.name) ||
      f.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
          std::string::npos) {
    return Status::InvalidArgument("family name '" + f.name +
                                   "' must be non-empty and use only [A-Za-z0-9_.-]");
  }
  if (!f.key) return bad("no key function");
  bool jit = f.jit();
  if (!jit && !f.vendor_candidates) return bad("no source and no vendor candidates");
  if (jit) {
    if (!f.launch) return bad("no launch function");
    if (!f.args) return bad("no args function");
    // A generated module may leave the entry out: its only kernel is the one.
    if (f.entry.empty() && !f.entry_fn && !f.source_fn) return bad("no entry name");
  }
  if (f.vendor_candidates && !f.vendor_launch) return bad("vendor candidates without vendor_launch");
  if (f.source_name.empty()) f.source_name = f.name + ".cu";
  return impl_->addFamily(std::move(f));
}

// ---------------------------------------------------------------- the call

Status Engine::call(detail::FamilyState* fs, const void* p, StreamHandle s, LaunchPlan* plan) {
  KeyBuilder kb;
  fs->f.key(p, kb);
  Selected* sel = nullptr;
  LastHit& last = t_last_hit;
  const uint64_t epoch = fs->epoch.load(std::memory_order_acquire);
  if (last.family == fs->id && last.epoch == epoch && *last.key == kb) {
    sel = last.sel;
  } else {
    std::shared_lock<std::shared_mutex> l(fs->mu);
    auto it = fs->map.find(kb);
    if (it != fs->map.end()) {
      sel = it->second;
      last = LastHit{fs->id, epoch, &it->first, sel};
    }
  }
  if (!sel) {
    bool tuned = false;
    KTUNE_ASSIGN_OR_RETURN(sel, impl_->resolve(*fs, p, kb, s, &tuned));
    // Tuning runs changed the outputs (and maybe in-place inputs): let the family reset them.
    if (tuned && fs->f.pre_run) KTUNE_RETURN_IF_ERROR(fs->f.pre_run(p, s));
  }
  if (plan) {
    // The epoch read before the lookup: a selection published since leaves the plan stale.
    plan->family = 0;
    plan->epoch = epoch;
  }
  return impl_->launchSelected(*fs, *sel, p, s, plan);
}

// Everything a capture of the key's call needs, loaded: its selection (tuned, read, predicted or
// default), a vendor selection's kernels (run once on a problem of its own: under lazy loading
// they load on first use), and the kind's JIT default, which an unseen key of the kind runs inside
// a capture when its own vendor config has not run here.
Status Engine::prepare(detail::FamilyState* fs, const void* p, StreamHandle s) {
  KeyBuilder kb;
  fs->f.key(p, kb);
  Selected* sel = nullptr;
  {
    std::shared_lock<std::shared_mutex> l(fs->mu);
    if (auto it = fs->map.find(kb); it != fs->map.end()) sel = it->second;
  }
  if (!sel) {
    bool tuned = false;
    KTUNE_ASSIGN_OR_RETURN(sel, impl_->resolve(*fs, p, kb, s, &tuned));
    if (tuned && fs->f.pre_run) KTUNE_RETURN_IF_ERROR(fs->f.pre_run(p, s));
  }
  if (fs->f.jit()) impl_->dynamicShapes().preloadNow(*fs, p);
  return impl_->dynamicShapes().prepareVendor(*fs, *sel, p, s);
}

predict::Prediction Engine::predict(detail::FamilyState* fs, const void* p) {
  return impl_->dynamicShapes().predictFor(*fs, p, keyString(fs, p));
}

void Engine::waitBackground() { impl_->dynamicShapes().drain(); }
void Engine::cancelBackground(detail::FamilyState* f) { impl_->dynamicShapes().cancel(*f); }
uint64_t Engine::backgroundTuned() const { return impl_->dynamicShapes().completed(); }
uint64_t Engine::backgroundRaced() const { return impl_->dynamicShapes().raced(); }
std::vector<double> Engine::raceTimes(const std::string& family, const void* p,
                                      const std::vector<predict::RaceEntry>& set, StreamHandle s) {
  return detail::DynamicShapes::raceTimes(*impl_, family, p, set, s);
}

bool Engine::planCurrent(detail::FamilyState* fs, const LaunchPlan& plan) {
  return plan.family == fs->id && plan.epoch == fs->epoch.load(std::memory_order_acquire);
}

Status Engine::launchPlanned(const LaunchPlan& plan, void** args, StreamHandle s) {
  return impl_->runtime().launchWith(plan.fn, plan.dims.grid, plan.dims.block, plan.dims.shared,
                                    args, s, plan.flags);
}

std::string Engine::keyString(detail::FamilyState* fs, const void* p) {
  KeyBuilder kb;
  fs->f.key(p, kb);
  return kb.toString();
}

std::optional<TuneReport> Engine::fetchShared(detail::FamilyState* fs, const void* p) {
  if (!impl_->engineOptions().shared) return std::nullopt;
  KeyBuilder kb;
  fs->f.key(p, kb);
  if (kb.overflowed()) return std::nullopt;
  std::lock_guard<std::mutex> slow(fs->slow_mu);
  const std::string key = kb.toString();
  // A report of what the fleet published: data, checked against the family's space. It is not
  // recorded: the winner is compiled and verified on its first real call (TunerEngine::fromShared).
  std::optional<DbEntry> e = impl_->peekShared(*fs, key);
  if (!e) return std::nullopt;
  TuneReport r;
  static_cast<KeyReport&>(r) = reportOf(fs->f.name, std::move(*e), "remote");
  return r;
}

Expected<TuneReport> Engine::tune(detail::FamilyState* fs, const void* p, StreamHandle s) {
  KTUNE_RETURN_IF_ERROR(impl_->awaitContext());  // EngineOptions::context_later
  if (impl_->engineOptions().tune_reads_shared) {
    if (auto r = fetchShared(fs, p)) return std::move(*r);
  }
  KeyBuilder kb;
  fs->f.key(p, kb);
  if (kb.overflowed()) return Status::InvalidArgument("family " + fs->f.name + ": key too long");
  std::lock_guard<std::mutex> slow(fs->slow_mu);
  TuneReport rep;
  detail::WinnerBinary bin;
  {
    std::lock_guard<std::mutex> bl(impl_->benchLock());
    KTUNE_ASSIGN_OR_RETURN(rep, impl_->tuneKey(*fs, p, kb.toString(), s, &bin));
  }
  impl_->dynamicShapes().invalidate(*fs);
  if (impl_->engineOptions().shared) impl_->publishShared(*fs, kb.toString());
  if (!rep.winner.empty()) {
    auto sel = impl_->selectConfig(*fs, p, rep.winner, rep.winner_source, "memory", &bin);
    if (sel.ok()) {
      (*sel)->stats = rep.winner_stats;
      impl_->publish(*fs, kb, std::move(sel).value());
    }
  }
  // Unseen keys of this kind then run a loaded default on their first call (engine_shapes.h).
  if (impl_->options().background) impl_->dynamicShapes().preloadNow(*fs, p);
  return rep;
}

Expected<size_t> Engine::precompile(detail::FamilyState* fs, const void* p, int threads,
                                    size_t depth) {
  KeyBuilder kb;
  fs->f.key(p, kb);
  if (kb.overflowed()) return Status::InvalidArgument("family " + fs->f.name + ": key too long");
  return detail::precompileKey(*impl_, *fs, p, kb.toString(), threads, depth);
}

Expected<KeyReport> Engine::lookup(detail::FamilyState* fs, const void* p) {
  KeyBuilder kb;
  fs->f.key(p, kb);
  KeyReport out;
  out.family = fs->f.name;
  out.key = kb.toString();
  {
    std::shared_lock<std::shared_mutex> l(fs->mu);
    auto it = fs->map.find(kb);
    if (it != fs->map.end()) {
      out.winner = it->second->config_str;
      out.winner_source = it->second->source;
      out.origin = it->second->origin;  // where the selected config came from
      out.winner_stats = it->second->stats;
      return out;
    }
  }
  if (auto e = fs->db->lookup(out.key); e && !e->winner.empty()) {
    out.winner = e->winner;
    out.winner_source = e->winner_source;
    out.origin = e->pinned ? "pinned" : "database";
    out.winner_stats = e->winner_stats;
    return out;
  }
  std::tie(out.winner, out.winner_source) = detail::defaultOf(fs->f, p);
  out.origin = "default";
  return out;
}

// ---------------------------------------------------------------- isolation (worker side)

void Engine::prestartWorker() { impl_->prestartWorker(); }
Status Engine::awaitDevice() { return impl_->awaitContext(); }
void Engine::prepareWorker(const std::string& family, const std::string& args_json) {
  impl_->prepareWorkerEarly(family, args_json);
}

IsolationStats Engine::isolationStats() const { return impl_->isolationStats(); }

Expected<std::shared_ptr<void>> Engine::makeProblem(const std::string& family,
                                                   const std::string& args_json) {
  FamilyState* fs = impl_->findFamily(family);
  if (!fs) return Status::NotFound("family '" + family + "' is not registered in this process");
  if (!fs->f.make_problem) {
    return Status::Unsupported("family '" + family + "' has no make_problem");
  }
  return fs->f.make_problem(args_json);
}

void Engine::prepareBench(const BenchOptions& bench) { impl_->prepareBench(bench); }

CandidateResult Engine::benchmarkCandidate(const std::string& family, const void* p,
                                          const WorkerCandidate& wc, const BenchOptions& bench,
                                          double best_ms, StreamHandle s) {
  return impl_->benchCandidate(family, p, wc, bench, best_ms, s);
}

}  // namespace ktune
