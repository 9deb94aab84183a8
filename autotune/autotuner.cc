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
#include "autotune/l2_flush_store.h"
#include "base/fs.h"
#include "base/version.h"
#include "compiler/store/store.h"

namespace ktune {

using detail::FamilyState;
using detail::Selected;

Tuner::Tuner(std::unique_ptr<detail::TunerEngine> engine) : impl_(std::move(engine)) {}

Tuner::~Tuner() {
  if (!impl_) return;
  impl_->shapes->stop();  // the background thread stops before the modules go
  for (ModuleHandle m : impl_->modules) (void)impl_->backend->unloadModule(m);
}

Expected<std::unique_ptr<Tuner>> Tuner::create(std::shared_ptr<Backend> backend,
                                               EngineOptions opts) {
  if (!backend) return Status::InvalidArgument("Tuner::create: null backend");
  auto impl = std::make_unique<detail::TunerEngine>();
  KTUNE_ASSIGN_OR_RETURN(auto devs, backend->devices());
  const int dev = opts.options.device;
  if (dev < 0 || dev >= static_cast<int>(devs.size())) {
    return Status::NotFound("Tuner::create: device " + std::to_string(dev) +
                            " not found (" + std::to_string(devs.size()) + " devices on backend " +
                            backend->name() + ")");
  }
  KTUNE_RETURN_IF_ERROR(checkDeviceList(opts.options.devices, devs, dev).withContext("Tuner::create"));
  if (opts.options.devices.size() > 1 && !opts.options.isolate &&
      backend->vendor() != Vendor::kSimulated) {
    return Status::InvalidArgument("Tuner::create: spreading candidates over several GPUs needs "
                                   "isolation, one worker per GPU (options.isolate / KTUNE_ISOLATE=1)");
  }
  KTUNE_RETURN_IF_ERROR(backend->setDevice(dev));
  impl->device = devs[dev];
  // Background tuning on a GPU benchmarks in the isolation worker unless told otherwise: a faulting
  // candidate in this process would poison the caller's context (a sticky illegal-address error
  // was seen on an H100 with in-process tuning, bench/NOTES.md), and the worker's allocations and
  // synchronisations cannot touch the caller's stream captures.
  if (opts.options.background && backend->vendor() != Vendor::kSimulated &&
      !opts.options.isolate_explicit && !opts.options.isolate) {
    opts.options.isolate = true;
    opts.isolation.fallback_in_process = true;
  }
  if (!opts.compiler) {
    auto c = compilerForArch(impl->device.arch, opts.options.clang);
    if (!c.ok()) return c.status().withContext("Tuner::create: no compiler for " + impl->device.arch);
    opts.compiler = std::shared_ptr<Compiler>(std::move(c).value());
  }
  if (!opts.compiler->supportsArch(impl->device.arch)) {
    return Status::Unsupported("Tuner::create: compiler " + opts.compiler->name() +
                               " cannot target " + impl->device.arch);
  }
  if (opts.options.cache_dir.empty()) opts.options.cache_dir = Options::defaultCacheDir();
  KTUNE_ASSIGN_OR_RETURN(impl->store, CodeObjectStore::open(opts.options.cache_dir));
  if (opts.options.search != "guided" && opts.options.search != "exhaustive")
    return Status::InvalidArgument("Tuner::create: options.search must be guided or exhaustive, got '" +
                                   opts.options.search + "'");
  if (!(opts.options.budget_s >= 0))
    return Status::InvalidArgument("Tuner::create: options.budget_s must be >= 0");
  if (!opts.search) opts.search = searchNamed(opts.options.search);
  // The budgets live in options (one place, the environment's too). bench.* may only hold the
  // defaults or the values create() copied there (options taken from another tuner's options()).
  auto budget_ok = [](double bench, double def, double opt) { return bench == def || bench == opt; };
  if (!budget_ok(opts.bench.warmup_ms, BenchOptions{}.warmup_ms, opts.options.warmup_ms) ||
      !budget_ok(opts.bench.rep_ms, BenchOptions{}.rep_ms, opts.options.rep_ms)) {
    return Status::InvalidArgument(
        "Tuner::create: set the do_bench budgets in options.warmup_ms / options.rep_ms "
        "(KTUNE_WARMUP_MS / KTUNE_REP_MS), not in bench.warmup_ms / bench.rep_ms");
  }
  opts.bench.warmup_ms = opts.options.warmup_ms;
  opts.bench.rep_ms = opts.options.rep_ms;
  // A real device's run count follows the wall cost of a run (flush and launch included); the
  // simulated device's host time is the simulator's, not a device's, so it counts device time.
  opts.bench.count_overhead = backend->name() != "sim";
  impl->compiler = opts.compiler;
  impl->ir_compiler = opts.ir_compiler;
  impl->backend = std::move(backend);
  const std::string& arch = impl->device.arch;
  impl->space_backend = Arch(arch).spaceBackend();
  impl->validator = Validator{KTUNE_VERSION,
                              impl->backend->name(),
                              impl->device.driver_version.empty() ? impl->backend->version()
                                                                  : impl->device.driver_version,
                              impl->compiler->name(),
                              impl->compiler->version(),
                              impl->device.name,
                              arch};
  impl->opts = std::move(opts);
  setFlushKernelStore(impl->store);  // the read flush kernel is a store hit in a warm process
  // The isolation worker builds its Tuner here too, so both sides flush alike.
  impl->bench = std::make_unique<Benchmarker>(
      *impl->backend, impl->device, L2Flush::compilerFor(*impl->backend, *impl->compiler),
      impl->opts.log);
  if (impl->opts.options.devices.size() > 1)
    impl->devices = std::make_shared<detail::DevicePool>(*impl, impl->opts.options.devices);
  return std::unique_ptr<Tuner>(new Tuner(std::move(impl)));
}

const DeviceInfo& Tuner::device() const { return impl_->device; }
Backend& Tuner::backend() { return *impl_->backend; }
Compiler& Tuner::compiler() { return *impl_->compiler; }
CodeObjectStore& Tuner::store() { return *impl_->store; }
const EngineOptions& Tuner::options() const { return impl_->opts; }
const std::string& Tuner::familyName(detail::FamilyState* f) { return f->f.name; }

Expected<detail::FamilyState*> Tuner::findErased(const std::string& name,
                                                 const std::type_info& type) {
  FamilyState* fs = impl_->findFamily(name);
  if (!fs) return Status::NotFound("family '" + name + "' is not registered on this tuner");
  if (!fs->f.problem_type || *fs->f.problem_type != type)
    return Status::InvalidArgument("family '" + name + "' was registered over another problem type");
  return fs;
}

TuningDatabase* Tuner::database(const std::string& family) {
  std::lock_guard<std::mutex> l(impl_->families_mu);
  for (auto& f : impl_->families) {
    if (f->f.name == family) return f->db.get();
  }
  return nullptr;
}

Status Tuner::importDatabase(const std::string& family, const std::string& text) {
  detail::FamilyState* fs = nullptr;
  {
    std::lock_guard<std::mutex> l(impl_->families_mu);
    for (auto& f : impl_->families)
      if (f->f.name == family) fs = f.get();
  }
  if (!fs) return Status::NotFound("family '" + family + "' is not registered on this tuner");
  const detail::ErasedFamily& f = fs->f;
  auto check = [&f](const Validator&, const std::string& source, const std::string& config) {
    if (source != "jit" && source != "default") {
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
std::atomic<uint64_t> g_next_family_id{1};
}  // namespace

Expected<detail::FamilyState*> Tuner::addErased(detail::ErasedFamily f) {
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
  std::lock_guard<std::mutex> l(impl_->families_mu);
  for (auto& g : impl_->families) {
    if (g->f.name == f.name) return bad("already registered on this tuner");
  }
  std::string path = impl_->opts.options.database_path.empty()
                         ? joinPath(joinPath(impl_->opts.options.cache_dir, "db"), f.name + ".json")
                         : impl_->opts.options.database_path;
  KTUNE_ASSIGN_OR_RETURN(auto db, TuningDatabase::open(path, impl_->validator, f.name));
  for (const auto& w : db->warnings()) impl_->log() << "ktune: " << w << "\n";
  if (!f.verify && jit) {
    // Unverified candidates can win with wrong results: say so, once per family.
    if (!f.no_verify) {
      impl_->log() << "ktune: family " << f.name << ": no verify function, so candidates are timed "
                   << "unverified ("
                   << (f.verify_hint.empty() ? "add KernelFamily::verify, or set "
                                               "KernelFamily::no_verify to make this choice explicit"
                                             : f.verify_hint)
                   << ")\n";
    }
  }
  auto st = std::make_unique<FamilyState>();
  st->id = g_next_family_id.fetch_add(1, std::memory_order_relaxed);
  st->f = std::move(f);
  st->journal = std::make_unique<TuningJournal>(db->path(), st->f.name, impl_->validator.id());
  st->db = std::move(db);
  impl_->families.push_back(std::move(st));
  return impl_->families.back().get();
}

// ---------------------------------------------------------------- the call

Status Tuner::call(detail::FamilyState* fs, const void* p, StreamHandle s, LaunchPlan* plan) {
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

Status Tuner::prepare(detail::FamilyState* fs, const void* p, StreamHandle s) {
  KeyBuilder kb;
  fs->f.key(p, kb);
  {
    std::shared_lock<std::shared_mutex> l(fs->mu);
    if (fs->map.count(kb)) return Status::Ok();
  }
  bool tuned = false;
  KTUNE_ASSIGN_OR_RETURN(Selected* sel, impl_->resolve(*fs, p, kb, s, &tuned));
  (void)sel;
  if (tuned && fs->f.pre_run) KTUNE_RETURN_IF_ERROR(fs->f.pre_run(p, s));
  return Status::Ok();
}

predict::Prediction Tuner::predict(detail::FamilyState* fs, const void* p) {
  return impl_->shapes->predictFor(*fs, p, keyString(fs, p));
}

void Tuner::waitBackground() { impl_->shapes->drain(); }
uint64_t Tuner::backgroundTuned() const { return impl_->shapes->completed(); }

bool Tuner::planCurrent(detail::FamilyState* fs, const LaunchPlan& plan) {
  return plan.family == fs->id && plan.epoch == fs->epoch.load(std::memory_order_acquire);
}

Status Tuner::launchPlanned(const LaunchPlan& plan, void** args, StreamHandle s) {
  return impl_->backend->launch(plan.fn, plan.dims.grid, plan.dims.block, plan.dims.shared, args,
                                s);
}

std::string Tuner::keyString(detail::FamilyState* fs, const void* p) {
  KeyBuilder kb;
  fs->f.key(p, kb);
  return kb.toString();
}

std::optional<TuneReport> Tuner::fetchShared(detail::FamilyState* fs, const void* p) {
  if (!impl_->opts.shared) return std::nullopt;
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
  r.family = fs->f.name;
  r.key = key;
  r.winner = e->winner;
  r.winner_source = e->winner_source;
  r.winner_stats = e->winner_stats;
  r.from = "remote";
  r.candidates = e->candidates;
  return r;
}

Expected<TuneReport> Tuner::tune(detail::FamilyState* fs, const void* p, StreamHandle s) {
  if (impl_->opts.tune_reads_shared) {
    if (auto r = fetchShared(fs, p)) return std::move(*r);
  }
  KeyBuilder kb;
  fs->f.key(p, kb);
  if (kb.overflowed()) return Status::InvalidArgument("family " + fs->f.name + ": key too long");
  std::lock_guard<std::mutex> slow(fs->slow_mu);
  TuneReport rep;
  detail::WinnerBinary bin;
  {
    std::lock_guard<std::mutex> bl(impl_->bench_mu);
    KTUNE_ASSIGN_OR_RETURN(rep, impl_->tuneKey(*fs, p, kb.toString(), s, &bin));
  }
  impl_->shapes->invalidate(*fs);
  if (impl_->opts.shared) impl_->publishShared(*fs, kb.toString());
  if (!rep.winner.empty()) {
    auto sel = impl_->selectConfig(*fs, p, rep.winner, rep.winner_source, "memory", &bin);
    if (sel.ok()) {
      (*sel)->stats = rep.winner_stats;
      impl_->publish(*fs, kb, std::move(sel).value());
    }
  }
  return rep;
}

Expected<Selection> Tuner::lookup(detail::FamilyState* fs, const void* p) {
  KeyBuilder kb;
  fs->f.key(p, kb);
  Selection out;
  out.key = kb.toString();
  {
    std::shared_lock<std::shared_mutex> l(fs->mu);
    auto it = fs->map.find(kb);
    if (it != fs->map.end()) {
      out.config = it->second->config_str;
      out.source = it->second->source;
      out.origin = it->second->origin;  // where the selected config came from
      out.stats = it->second->stats;
      return out;
    }
  }
  if (auto e = fs->db->lookup(out.key); e && !e->winner.empty()) {
    out.config = e->winner;
    out.source = e->winner_source;
    out.origin = e->pinned ? "pinned" : "database";
    out.stats = e->winner_stats;
    return out;
  }
  std::tie(out.config, out.source) = detail::defaultOf(fs->f, p);
  out.origin = "default";
  return out;
}

// ---------------------------------------------------------------- isolation (worker side)

void Tuner::prestartWorker() {
  if (!impl_->opts.options.isolate) return;
  std::lock_guard<std::mutex> l(impl_->bench_mu);
  if (impl_->devices) {  // one worker per device instead (device_pool.h)
    impl_->devices->prestart();
    return;
  }
  std::string ignored;
  if (impl_->makeWorker(&ignored)) (void)impl_->worker->prestart();
}

IsolationStats Tuner::isolationStats() const {
  std::lock_guard<std::mutex> l(impl_->bench_mu);
  IsolationStats s = impl_->worker ? impl_->worker->stats() : IsolationStats{};
  s.fallbacks = impl_->iso_fallback.fallbacks;
  return s;
}

Expected<std::shared_ptr<void>> Tuner::makeProblem(const std::string& family,
                                                   const std::string& args_json) {
  FamilyState* fs = impl_->findFamily(family);
  if (!fs) return Status::NotFound("family '" + family + "' is not registered in this process");
  if (!fs->f.make_problem) {
    return Status::Unsupported("family '" + family + "' has no make_problem");
  }
  return fs->f.make_problem(args_json);
}

void Tuner::prepareBench(const BenchOptions& bench) {
  std::lock_guard<std::mutex> l(impl_->bench_mu);
  impl_->bench->prepare(bench);
}

CandidateResult Tuner::benchmarkCandidate(const std::string& family, const void* p,
                                          const WorkerCandidate& wc, const BenchOptions& bench,
                                          double best_ms, StreamHandle s) {
  return impl_->benchCandidate(family, p, wc, bench, best_ms, s);
}

}  // namespace ktune
