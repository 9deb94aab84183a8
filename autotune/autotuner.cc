#include "autotune/autotuner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
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

#include "autotune/isolation.h"
#include "base/fs.h"
#include "base/sha256.h"
#include "base/version.h"
#include "compiler/store/store.h"

namespace ktune {

// ---------------------------------------------------------------- keys and bucketing

KeyBuilder& KeyBuilder::add(const char* name, int64_t value) {
  if (n_ >= kMaxFields) {
    overflow_ = true;
    return *this;
  }
  f_[n_++] = Field{name, value, -1};
  return *this;
}

KeyBuilder& KeyBuilder::add(const char* name, std::string_view value) {
  if (n_ >= kMaxFields || chars_ + static_cast<int>(value.size()) > kMaxChars) {
    overflow_ = true;
    return *this;
  }
  std::memcpy(buf_ + chars_, value.data(), value.size());
  f_[n_++] = Field{name, chars_, static_cast<int16_t>(value.size())};
  chars_ += static_cast<int>(value.size());
  return *this;
}

std::string KeyBuilder::toString() const {
  std::string s;
  for (int i = 0; i < n_; ++i) {
    if (i) s += ',';
    s += f_[i].name;
    s += '=';
    if (f_[i].str_len < 0) {
      s += std::to_string(f_[i].value);
    } else {
      s.append(buf_ + f_[i].value, static_cast<size_t>(f_[i].str_len));
    }
  }
  return s;
}

size_t KeyBuilder::hash() const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the values
  auto mix = [&](uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  for (int i = 0; i < n_; ++i) mix(static_cast<uint64_t>(f_[i].value) ^ (uint64_t(f_[i].str_len) << 48));
  for (int i = 0; i < chars_; ++i) mix(static_cast<unsigned char>(buf_[i]));
  return static_cast<size_t>(h);
}

bool KeyBuilder::operator==(const KeyBuilder& o) const {
  if (n_ != o.n_ || chars_ != o.chars_ || overflow_ != o.overflow_) return false;
  for (int i = 0; i < n_; ++i) {
    if (f_[i].value != o.f_[i].value || f_[i].str_len != o.f_[i].str_len) return false;
    if (f_[i].name != o.f_[i].name && std::strcmp(f_[i].name, o.f_[i].name) != 0) return false;
  }
  return std::memcmp(buf_, o.buf_, static_cast<size_t>(chars_)) == 0;
}

int64_t nextPow2(int64_t v) {
  int64_t p = 1;
  while (p < v && p < (int64_t(1) << 62)) p <<= 1;
  return p;
}
int64_t roundUpTo(int64_t v, int64_t m) { return m <= 0 ? v : (v + m - 1) / m * m; }
int64_t ceilDiv(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }
int64_t bucketPow2Capped(int64_t v, int64_t cap) {
  return v <= cap ? nextPow2(v) : roundUpTo(v, cap);
}

// ---------------------------------------------------------------- state

namespace detail {
struct Selected {
  Config config;
  std::string config_str;
  std::string source = "jit";  // "jit" or a vendor source
  bool vendor = false;
  FunctionHandle fn;
  std::string origin;
  TimingStats stats;
};

struct FamilyState {
  ErasedFamily f;
  std::shared_ptr<TuningDatabase> db;
  mutable std::shared_mutex mu;  // guards map (readers: the hot path)
  std::unordered_map<KeyBuilder, Selected*, KeyBuilderHash> map;
  std::vector<std::unique_ptr<Selected>> owned;  // never freed before the tuner: no dangling hits
  std::mutex slow_mu;  // one miss (database load / tuning) at a time per family
};
}  // namespace detail

using detail::FamilyState;
using detail::Selected;

namespace {
struct Cand {
  Config config;
  CandidateResult r;
  bool live = true;  // still in the running
  CodeObject co;
  LaunchDims dims;
  int dup_of = -1;
  bool hit = false;
  std::string vendor_source;  // non-empty: vendor candidate (r.config is its id)
  bool resumed = false;   // measured by an earlier, interrupted run (partial result reused)
  bool recorded = false;  // already written to the database as a partial result
};

void fail(Cand& c, const Status& s) {
  c.live = false;
  c.r.status = s.ok() ? Code::kInternal : s.code();
  c.r.reason = s.message();
  c.r.date = isoUtcNow();
}

// Failures that depend on the config itself, not on this run's context: worth remembering so a
// later tuning run skips them (unless retry_failed).
bool persistentFailure(const CandidateResult& r) {
  if (r.status == Code::kOk) return false;
  if (r.reason.rfind("pruned", 0) == 0 || r.reason.rfind("slower than best", 0) == 0) return false;
  return r.status == Code::kCompileError || r.status == Code::kOutOfResources ||
         r.status == Code::kLaunchError || r.status == Code::kDeviceFault ||
         r.status == Code::kWrongResult || r.status == Code::kTimeout;
}

std::string fmt3(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.3g", v);
  return b;
}
}  // namespace

struct Tuner::Impl {
  std::shared_ptr<Backend> backend;
  EngineOptions opts;
  DeviceInfo device;
  std::shared_ptr<Compiler> compiler;
  std::shared_ptr<CodeObjectStore> store;
  Validator validator;
  std::string space_backend;  // "cuda" / "hip" / "" for ConfigSpace::enumerate

  std::mutex families_mu;
  std::vector<std::unique_ptr<FamilyState>> families;

  std::mutex modules_mu;
  std::unordered_map<std::string, FunctionHandle> functions;  // code-object key -> function
  std::vector<ModuleHandle> modules;

  std::mutex bench_mu;  // one benchmark at a time on the device: timings must not overlap
  std::unique_ptr<Benchmarker> bench;

  // Isolation: the worker (started on first use, reused across tuning runs; guarded by bench_mu).
  std::unique_ptr<WorkerSupervisor> worker;
  IsolationStats iso_fallback;  // counters kept when no supervisor exists
  std::set<std::string> iso_warned;  // fallback warnings already printed

  std::ostream& log() { return opts.log ? *opts.log : std::cerr; }

  // Verify + measure one live candidate in this process (early rejection against best); fills
  // c.r (status, reason, stats, date). Faults and launch errors are results.
  // `rep`, when given, accumulates the load / verify / measure wall times.
  void benchOne(const detail::ErasedFamily& f, const void* p, Cand& c, const BenchOptions& bo_in,
                double best, StreamHandle s, TuneReport* rep = nullptr);
  // Benchmarks the batch through the worker; false (with *why) when the worker cannot be used,
  // so the caller benchmarks the candidates left (those with done[i] == false) in-process.
  bool benchIsolated(FamilyState& fs, const void* p, const std::string& key,
                     std::vector<Cand>& cands, const std::vector<size_t>& todo, double* best,
                     std::vector<bool>* done, std::string* why, int* bench_index);
  void recordPartial(FamilyState& fs, const std::string& key, const CandidateResult& r);
  // Creates the worker supervisor (not the process) once; false with *why when no worker
  // executable is found.
  bool makeWorker(std::string* why);

  Expected<FunctionHandle> loadFunction(const std::string& co_key, const CodeObject& co);
  Expected<CodeObject> compileConfig(FamilyState& fs, const Config& c, const void* p,
                                     std::string* co_key, bool* hit, std::string* note);
  Expected<Selected*> resolve(FamilyState& fs, const void* p, const KeyBuilder& kb,
                              StreamHandle s, bool* tuned);
  Expected<std::unique_ptr<Selected>> selectConfig(FamilyState& fs, const void* p,
                                                   const std::string& config_str,
                                                   const std::string& source,
                                                   const std::string& origin);
  Expected<TuneReport> tuneKey(FamilyState& fs, const void* p, const std::string& key,
                               StreamHandle s);
  Status launchSelected(FamilyState& fs, const Selected& sel, const void* p, StreamHandle s);
  Selected* publish(FamilyState& fs, const KeyBuilder& kb, std::unique_ptr<Selected> sel);
  // Serialised: compile threads and the benchmarking thread report concurrently.
  std::mutex progress_mu;
  void progress(const TuneProgress& pr) {
    if (!opts.progress) return;
    std::lock_guard<std::mutex> l(progress_mu);
    opts.progress(pr);
  }
};

Tuner::Tuner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Tuner::~Tuner() {
  if (!impl_) return;
  for (ModuleHandle m : impl_->modules) (void)impl_->backend->unloadModule(m);
}

Expected<std::unique_ptr<Tuner>> Tuner::create(std::shared_ptr<Backend> backend,
                                               EngineOptions opts) {
  if (!backend) return Status::InvalidArgument("Tuner::create: null backend");
  auto impl = std::make_unique<Impl>();
  KTUNE_ASSIGN_OR_RETURN(auto devs, backend->devices());
  const int dev = opts.options.device;
  if (dev < 0 || dev >= static_cast<int>(devs.size())) {
    return Status::NotFound("Tuner::create: device " + std::to_string(dev) +
                            " not found (" + std::to_string(devs.size()) + " devices on backend " +
                            backend->name() + ")");
  }
  KTUNE_RETURN_IF_ERROR(backend->setDevice(dev));
  impl->device = devs[dev];
  if (!opts.compiler) {
    auto c = compilerForArch(impl->device.arch);
    if (!c.ok()) return c.status().withContext("Tuner::create: no compiler for " + impl->device.arch);
    opts.compiler = std::shared_ptr<Compiler>(std::move(c).value());
  }
  if (!opts.compiler->supportsArch(impl->device.arch)) {
    return Status::Unsupported("Tuner::create: compiler " + opts.compiler->name() +
                               " cannot target " + impl->device.arch);
  }
  if (opts.options.cache_dir.empty()) opts.options.cache_dir = Options::defaultCacheDir();
  KTUNE_ASSIGN_OR_RETURN(impl->store, CodeObjectStore::open(opts.options.cache_dir));
  if (!opts.search) opts.search = exhaustiveSearch();
  if (opts.bench.warmup_ms != BenchOptions{}.warmup_ms || opts.bench.rep_ms != BenchOptions{}.rep_ms) {
    return Status::InvalidArgument(
        "Tuner::create: set the do_bench budgets in options.warmup_ms / options.rep_ms "
        "(KTUNE_WARMUP_MS / KTUNE_REP_MS), not in bench.warmup_ms / bench.rep_ms");
  }
  opts.bench.warmup_ms = opts.options.warmup_ms;
  opts.bench.rep_ms = opts.options.rep_ms;
  impl->compiler = opts.compiler;
  impl->backend = std::move(backend);
  const std::string& arch = impl->device.arch;
  impl->space_backend = arch.rfind("sm_", 0) == 0 ? "cuda" : arch.rfind("gfx", 0) == 0 ? "hip" : "";
  impl->validator = Validator{KTUNE_VERSION,
                              impl->backend->name(),
                              impl->device.driver_version.empty() ? impl->backend->version()
                                                                  : impl->device.driver_version,
                              impl->compiler->name(),
                              impl->compiler->version(),
                              impl->device.name,
                              arch};
  impl->bench = std::make_unique<Benchmarker>(*impl->backend, impl->device);
  impl->opts = std::move(opts);
  return std::unique_ptr<Tuner>(new Tuner(std::move(impl)));
}

const DeviceInfo& Tuner::device() const { return impl_->device; }
Backend& Tuner::backend() { return *impl_->backend; }
Compiler& Tuner::compiler() { return *impl_->compiler; }
CodeObjectStore& Tuner::store() { return *impl_->store; }
const EngineOptions& Tuner::options() const { return impl_->opts; }
const std::string& Tuner::familyName(detail::FamilyState* f) { return f->f.name; }

TuningDatabase* Tuner::database(const std::string& family) {
  std::lock_guard<std::mutex> l(impl_->families_mu);
  for (auto& f : impl_->families) {
    if (f->f.name == family) return f->db.get();
  }
  return nullptr;
}

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
  bool jit = !f.source.empty();
  if (!jit && !f.vendor_candidates) return bad("no source and no vendor candidates");
  if (jit) {
    if (!f.launch) return bad("no launch function");
    if (!f.args) return bad("no args function");
    if (f.entry.empty() && !f.entry_fn) return bad("no entry name");
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
  auto st = std::make_unique<FamilyState>();
  st->f = std::move(f);
  st->db = std::move(db);
  impl_->families.push_back(std::move(st));
  return impl_->families.back().get();
}

// ---------------------------------------------------------------- loading

Expected<FunctionHandle> Tuner::Impl::loadFunction(const std::string& co_key, const CodeObject& co) {
  std::lock_guard<std::mutex> l(modules_mu);
  auto it = functions.find(co_key);
  if (it != functions.end()) return it->second;
  KTUNE_ASSIGN_OR_RETURN(ModuleHandle m, backend->loadModule(co.binary));
  modules.push_back(m);
  KTUNE_ASSIGN_OR_RETURN(FunctionHandle fn,
                         backend->getFunction(m, co.lowered_entry.empty() ? co.entry
                                                                          : co.lowered_entry));
  // Allow dynamic shared memory up to the opt-in limit once, so no launch has to raise it.
  if (device.shared_per_block_optin > device.shared_per_block) {
    int64_t room = device.shared_per_block_optin - co.resources.shared_bytes;
    if (room > 0) KTUNE_RETURN_IF_ERROR(backend->setMaxDynamicShared(fn, room));
  }
  functions.emplace(co_key, fn);
  return fn;
}

static Defines definesFor(const detail::ErasedFamily& f, const Config& c, const void* p) {
  if (f.defines) return f.defines(c, p);
  Defines d;
  for (const auto& [k, v] : c.params()) d.emplace_back(k, paramValueToString(v));
  return d;
}

Expected<CodeObject> Tuner::Impl::compileConfig(FamilyState& fs, const Config& c, const void* p,
                                                std::string* co_key, bool* hit,
                                                std::string* note) {
  CompileRequest req;
  req.source = fs.f.source;
  req.source_name = fs.f.source_name;
  req.entry = fs.f.entry_fn ? fs.f.entry_fn(c, p) : fs.f.entry;
  req.defines = definesFor(fs.f, c, p);
  req.arch = device.arch;
  req.options = fs.f.compile_options;
  *co_key = codeObjectKey(req, compiler->name(), compiler->version());
  return store->getOrCompile(*compiler, req, hit, note);
}

Expected<std::unique_ptr<Selected>> Tuner::Impl::selectConfig(FamilyState& fs, const void* p,
                                                              const std::string& config_str,
                                                              const std::string& source,
                                                              const std::string& origin) {
  auto sel = std::make_unique<Selected>();
  sel->config_str = config_str;
  sel->source = source;
  sel->origin = origin;
  if (source != "jit" && source != "default") {
    if (!fs.f.vendor_launch) {
      return Status::Unsupported("family " + fs.f.name + " has no vendor_launch for " + source);
    }
    sel->vendor = true;
    return sel;
  }
  sel->source = "jit";
  KTUNE_ASSIGN_OR_RETURN(sel->config, Config::parse(config_str));
  std::string key, note;
  bool hit = false;
  KTUNE_ASSIGN_OR_RETURN(CodeObject co, compileConfig(fs, sel->config, p, &key, &hit, &note));
  if (!note.empty() && opts.options.verbose) log() << "ktune: " << note << "\n";
  KTUNE_ASSIGN_OR_RETURN(sel->fn, loadFunction(key, co));
  return sel;
}

Selected* Tuner::Impl::publish(FamilyState& fs, const KeyBuilder& kb, std::unique_ptr<Selected> s) {
  Selected* raw = s.get();
  std::unique_lock<std::shared_mutex> l(fs.mu);
  fs.owned.push_back(std::move(s));
  fs.map[kb] = raw;
  return raw;
}

Status Tuner::Impl::launchSelected(FamilyState& fs, const Selected& sel, const void* p,
                                   StreamHandle s) {
  if (sel.vendor) return fs.f.vendor_launch(sel.config_str, p, s);
  LaunchDims d = fs.f.launch(sel.config, p, device);
  if (fs.f.before_launch) KTUNE_RETURN_IF_ERROR(fs.f.before_launch(sel.config, p, s));
  thread_local KernelArgs args;  // reused: no allocation once warm
  args.clear();
  fs.f.args(p, args);
  return backend->launch(sel.fn, d.grid, d.block, d.shared, args.data(), s);
}

// ---------------------------------------------------------------- the call

Status Tuner::call(detail::FamilyState* fs, const void* p, StreamHandle s) {
  KeyBuilder kb;
  fs->f.key(p, kb);
  Selected* sel = nullptr;
  {
    std::shared_lock<std::shared_mutex> l(fs->mu);
    auto it = fs->map.find(kb);
    if (it != fs->map.end()) sel = it->second;
  }
  if (!sel) {
    bool tuned = false;
    KTUNE_ASSIGN_OR_RETURN(sel, impl_->resolve(*fs, p, kb, s, &tuned));
    // Tuning runs changed the outputs (and maybe in-place inputs): let the family reset them.
    if (tuned && fs->f.pre_run) KTUNE_RETURN_IF_ERROR(fs->f.pre_run(p, s));
  }
  return impl_->launchSelected(*fs, *sel, p, s);
}

std::string Tuner::keyString(detail::FamilyState* fs, const void* p) {
  KeyBuilder kb;
  fs->f.key(p, kb);
  return kb.toString();
}

Expected<Selected*> Tuner::Impl::resolve(FamilyState& fs, const void* p, const KeyBuilder& kb,
                                         StreamHandle s, bool* tuned) {
  if (kb.overflowed()) {
    return Status::InvalidArgument("family " + fs.f.name + ": key has more than " +
                                   std::to_string(KeyBuilder::kMaxFields) + " fields or " +
                                   std::to_string(KeyBuilder::kMaxChars) + " string bytes");
  }
  std::lock_guard<std::mutex> slow(fs.slow_mu);
  {
    std::shared_lock<std::shared_mutex> l(fs.mu);  // another caller may have resolved it
    auto it = fs.map.find(kb);
    if (it != fs.map.end()) return it->second;
  }
  const std::string key = kb.toString();
  // 1. Database.
  if (auto e = fs.db->lookup(key); e && !e->winner.empty()) {
    auto sel = selectConfig(fs, p, e->winner, e->winner_source, e->pinned ? "pinned" : "database");
    if (sel.ok()) {
      (*sel)->stats = e->winner_stats;
      return publish(fs, kb, std::move(sel).value());
    }
    log() << "ktune: " << fs.f.name << " [" << key << "]: database winner '" << e->winner
          << "' unusable (" << sel.status().toString() << "); "
          << (opts.options.tuning ? "retuning" : "using the default config") << "\n";
  }
  // 2. Tuning off: default config, key recorded for offline tuning.
  if (!opts.options.tuning) {
    if (fs.f.source.empty()) {
      return Status::Unsupported("family " + fs.f.name + ": tuning is off and there is no JIT "
                                 "default config; tune key " + key + " offline");
    }
    KTUNE_ASSIGN_OR_RETURN(auto sel, selectConfig(fs, p, fs.f.default_config.toString(), "jit",
                                                  "default"));
    std::string path = opts.options.record_untuned_path.empty()
                           ? joinPath(opts.options.cache_dir, "untuned.jsonl")
                           : opts.options.record_untuned_path;
    std::string args = fs.f.args_json ? fs.f.args_json(p) : "{}";
    Status st = appendUntunedKey(path, fs.f.name, key, args);
    if (!st.ok()) log() << "ktune: could not record untuned key: " << st.toString() << "\n";
    return publish(fs, kb, std::move(sel));
  }
  // 3. Tune.
  std::unique_lock<std::mutex> bl(bench_mu);
  KTUNE_ASSIGN_OR_RETURN(TuneReport rep, tuneKey(fs, p, key, s));
  bl.unlock();
  *tuned = true;
  if (rep.winner.empty()) {
    std::string why;
    for (const auto& c : rep.candidates) {
      if (why.size() > 1500) break;
      why += "\n  " + c.config + ": " + codeName(c.status) + ": " + c.reason;
    }
    return Status(Code::kUnsupported, "family " + fs.f.name + " [" + key +
                                          "]: no candidate passed" + why);
  }
  KTUNE_ASSIGN_OR_RETURN(auto sel, selectConfig(fs, p, rep.winner, rep.winner_source, "memory"));
  sel->stats = rep.winner_stats;
  return publish(fs, kb, std::move(sel));
}

Expected<TuneReport> Tuner::tune(detail::FamilyState* fs, const void* p, StreamHandle s) {
  KeyBuilder kb;
  fs->f.key(p, kb);
  if (kb.overflowed()) return Status::InvalidArgument("family " + fs->f.name + ": key too long");
  std::lock_guard<std::mutex> slow(fs->slow_mu);
  TuneReport rep;
  {
    std::lock_guard<std::mutex> bl(impl_->bench_mu);
    KTUNE_ASSIGN_OR_RETURN(rep, impl_->tuneKey(*fs, p, kb.toString(), s));
  }
  if (!rep.winner.empty()) {
    auto sel = impl_->selectConfig(*fs, p, rep.winner, rep.winner_source, "memory");
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
      out.origin = it->second->origin == "default" ? "default" : "memory";
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
  out.config = fs->f.default_config.toString();
  out.source = "jit";
  out.origin = "default";
  return out;
}

// ---------------------------------------------------------------- tuning


Expected<TuneReport> Tuner::Impl::tuneKey(FamilyState& fs, const void* p, const std::string& key,
                                          StreamHandle s) {
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  const auto t_start = Clock::now();
  const detail::ErasedFamily& f = fs.f;
  TuneReport rep;
  rep.family = f.name;
  rep.key = key;
  progress({f.name, key, "enumerate", 0, 0, ""});

  // 1. Enumerate: constraints and the shared-memory pre-check against the device limit.
  int64_t shared_limit = std::max(device.shared_per_block_optin, device.shared_per_block);
  std::vector<Config> accepted;
  std::vector<Cand> cands;
  if (!f.source.empty()) {
    if (!f.configs.empty()) {
      rep.enumerated = static_cast<int>(f.configs.size());
      for (const Config& c : f.configs) {
        int64_t need = f.space.sharedBytesOf(c);
        if (shared_limit > 0 && need > shared_limit) {
          Cand x;
          x.config = c;
          x.r.config = c.toString();
          fail(x, Status::OutOfResources("needs " + std::to_string(need) +
                                         " B shared/LDS > device limit " +
                                         std::to_string(shared_limit) + " B"));
          cands.push_back(std::move(x));
        } else {
          accepted.push_back(c);
        }
      }
    } else {
      Enumeration en = f.space.enumerate(space_backend, shared_limit);
      rep.enumerated = static_cast<int>(en.accepted.size() + en.rejected.size());
      accepted = std::move(en.accepted);
      for (auto& rj : en.rejected) {
        if (rj.reason.rfind("constraint", 0) == 0) continue;  // not a candidate at all
        Cand x;
        x.config = rj.config;
        x.r.config = rj.config.toString();
        fail(x, Status::OutOfResources(rj.reason));
        cands.push_back(std::move(x));
      }
    }
  }
  // 2. Earlier runs: known failures (database blacklist) and the candidates an interrupted run
  //    already measured (resumable tuning: they are reused, not measured again).
  std::map<std::string, CandidateResult> known, measured;
  for (auto& r : fs.db->candidatesFor(key)) {
    if (persistentFailure(r)) {
      if (!opts.options.retry_failed) known[r.source + "|" + r.config] = r;
    } else if ((r.status == Code::kOk && r.stats.runs > 0) ||
               (r.status == Code::kTimeout && r.reason.rfind("slower than best", 0) == 0)) {
      measured[r.source + "|" + r.config] = r;
    }
  }
  auto applyEarlier = [&](Cand& x, const std::string& id) {
    if (auto k = known.find(id); k != known.end()) {
      x.r = k->second;
      x.r.reason = "skipped, failed before (" + k->second.date + "): " + k->second.reason;
      x.live = false;
      ++rep.skipped_known_failed;
    } else if (auto m = measured.find(id); m != measured.end()) {
      x.r = m->second;
      x.live = false;
      x.resumed = true;
      x.recorded = true;
      ++rep.resumed;
    }
  };
  // 3. Strategy.
  for (size_t i : opts.search->select(accepted)) {
    Cand x;
    x.config = accepted[i];
    x.r.config = x.config.toString();
    applyEarlier(x, "jit|" + x.r.config);
    cands.push_back(std::move(x));
  }
  if (f.vendor_candidates) {
    for (auto& v : f.vendor_candidates(p)) {
      Cand x;
      x.r.config = v.id;
      x.r.source = v.source;
      x.vendor_source = v.source;
      applyEarlier(x, v.source + "|" + v.id);
      cands.push_back(std::move(x));
    }
  }
  const int total = static_cast<int>(cands.size());

  // 4. Launch dims and the thread-count check (before compiling).
  for (auto& c : cands) {
    if (!c.live || !c.vendor_source.empty()) continue;
    c.dims = f.launch(c.config, p, device);
    int64_t threads = int64_t(c.dims.block.x) * c.dims.block.y * c.dims.block.z;
    if (device.max_threads_per_block > 0 && threads > device.max_threads_per_block) {
      fail(c, Status::OutOfResources(std::to_string(threads) + " threads per block > device limit " +
                                     std::to_string(device.max_threads_per_block)));
    }
  }

  // 5. Compile the live JIT candidates on a pool of threads (store hits cost no compile). With
  //    options.pipeline, candidates are benchmarked batch by batch as they come out of the
  //    compilers (vendor-library candidates first, while the first compiles run), so a cold run
  //    takes about max(compile, bench) rather than the sum; without it, everything is compiled
  //    first. The isolation worker starts before the compiles (its start-up overlaps them).
  if (opts.options.isolate && f.args_json && f.make_problem) {
    std::string ignored;
    // The worker builds this key's problem while we compile (run() reports start failures).
    if (makeWorker(&ignored)) (void)worker->prepare(f.name, f.args_json(p));
  }
  const bool pipeline = opts.options.pipeline;
  const auto t_compile = Clock::now();
  std::vector<size_t> to_compile;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (cands[i].live && cands[i].vendor_source.empty()) to_compile.push_back(i);
  }
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // While benchmarking runs beside the compiles, leave it a core on bigger machines: a launch
  // thread that waits for a time slice between its start event and the kernel inflates timings.
  int threads = opts.options.compile_threads > 0 ? opts.options.compile_threads
                                                 : (pipeline && hw > 4 ? hw - 1 : hw);
  threads = std::max(1, std::min<int>(threads, static_cast<int>(to_compile.size())));
  std::mutex qmu;  // guards ready, compiled_count, compile_done_ms
  std::condition_variable qcv;
  std::deque<size_t> ready;
  size_t compiled_count = 0;
  double compile_done_ms = 0;
  std::atomic<size_t> next{0};
  auto compileLoop = [&] {
    for (size_t j; (j = next++) < to_compile.size();) {
      Cand& c = cands[to_compile[j]];
      std::string note;
      auto co = compileConfig(fs, c.config, p, &c.r.code_object_key, &c.hit, &note);
      if (co.ok()) {
        c.co = std::move(co).value();
      } else {
        fail(c, co.status());
      }
      // Once queued, the candidate belongs to the benchmarking thread: copy what progress needs.
      const std::string config = c.r.config;
      {
        std::lock_guard<std::mutex> l(qmu);
        if (!note.empty() && opts.options.verbose) log() << "ktune: " << note << "\n";
        ready.push_back(to_compile[j]);
        if (++compiled_count == to_compile.size()) compile_done_ms = ms_since(t_compile);
        // The index counts finished compiles (monotonic, as the CLI shows "n/total"), so the
        // event is sent under the queue lock (lock order: qmu, then progress_mu; never reverse).
        progress({f.name, key, "compile", static_cast<int>(compiled_count),
                  static_cast<int>(to_compile.size()), config});
      }
      qcv.notify_one();
    }
  };
  std::vector<std::thread> pool;
  // The pool writes into `cands`: it is joined before this function returns, on every path.
  struct Joiner {
    std::vector<std::thread>& threads;
    ~Joiner() {
      for (auto& t : threads)
        if (t.joinable()) t.join();
    }
  } joiner{pool};
  for (int t = pipeline ? 0 : 1; t < threads; ++t) pool.emplace_back(compileLoop);
  if (!pipeline) {
    // The caller compiles too, and every compile ends before any check: the loop below then takes
    // all candidates at once, in candidate order (dedup keeps the first of identical binaries).
    compileLoop();
    for (auto& t : pool) t.join();
  }

  // 6-8. Per compiled candidate: resource checks from the compiler's report, dedup of identical
  // binaries, static pruning (never pruning every candidate); then load, verify, benchmark (early
  // rejection against the best so far) — in the worker process when isolation is on, else here.
  // Every finished candidate is recorded as a partial result at once, so a killed tuner resumes.
  double best = 0;
  for (const auto& c : cands) {
    if (c.resumed && c.r.status == Code::kOk && c.r.stats.runs > 0 &&
        (best <= 0 || c.r.stats.median_ms < best))
      best = c.r.stats.median_ms;
  }
  // Compile threads may be writing JIT candidates' `live` now: test vendor_source first (it is
  // never written after enumeration).
  bool has_vendor = false;
  for (auto& c : cands) has_vendor |= !c.vendor_source.empty() && c.live;
  std::map<std::string, size_t> seen;
  std::vector<std::pair<size_t, std::string>> set_aside;  // would be pruned (no vendor candidate)
  size_t survivors = 0;  // live JIT candidates not pruned
  auto admit = [&](size_t i, std::vector<size_t>& batch) {
    Cand& c = cands[i];
    if (!c.live) return;  // compile failure (recorded by fail())
    int64_t shared = c.co.resources.shared_bytes + static_cast<int64_t>(c.dims.shared);
    if (shared_limit > 0 && shared > shared_limit) {
      fail(c, Status::OutOfResources("uses " + std::to_string(shared) +
                                     " B shared/LDS (static + dynamic) > device limit " +
                                     std::to_string(shared_limit) + " B"));
      return;
    }
    int64_t threads_pb = int64_t(c.dims.block.x) * c.dims.block.y * c.dims.block.z;
    if (c.co.resources.max_threads_per_block > 0 && threads_pb > c.co.resources.max_threads_per_block) {
      fail(c, Status::OutOfResources("block of " + std::to_string(threads_pb) +
                                     " threads > the kernel's launch bound " +
                                     std::to_string(c.co.resources.max_threads_per_block)));
      return;
    }
    std::string sig = sha256Hex(c.co.binary) + "|" + c.co.lowered_entry + "|" +
                      std::to_string(c.dims.grid.x) + "," + std::to_string(c.dims.grid.y) + "," +
                      std::to_string(c.dims.grid.z) + "|" + std::to_string(c.dims.block.x) + "," +
                      std::to_string(c.dims.block.y) + "," + std::to_string(c.dims.block.z) + "|" +
                      std::to_string(c.dims.shared);
    auto [it, fresh] = seen.emplace(sig, i);
    if (!fresh) {
      c.dup_of = static_cast<int>(it->second);
      ++rep.duplicates;
    }
    std::optional<std::string> why;
    if (f.prune) why = f.prune(c.config, c.co, device);
    if (!why && opts.options.static_prune && opts.prune_spills && c.co.resources.spills()) {
      why = "spills (" + std::to_string(c.co.resources.spill_store_bytes) + " B stores, " +
            std::to_string(c.co.resources.vgpr_spill) + " VGPRs)";
    }
    if (why) {
      if (has_vendor) {
        fail(c, Status::OutOfResources("pruned: " + *why));
        ++rep.pruned;
      } else {
        set_aside.emplace_back(i, *why);  // decided once every candidate is known
      }
      return;
    }
    ++survivors;
    if (c.dup_of < 0) batch.push_back(i);
  };

  double bench_ms = 0, overlap_ms = 0;
  std::vector<bool> done(cands.size(), false);
  bool iso_off = !opts.options.isolate;  // isolation unavailable: the rest runs in-process
  bool iso_used = false;                 // some batch of this key went through the worker
  int bench_index = 0;
  auto benchBatch = [&](std::vector<size_t> batch) {
    if (batch.empty()) return;
    bool compiling;
    {
      std::lock_guard<std::mutex> l(qmu);
      compiling = compiled_count < to_compile.size();
    }
    const auto t0 = Clock::now();
    // Vendor-library candidates first: they are usually close to the best, so early rejection
    // has a strong bar from the start and slow JIT configs stop after a few runs.
    std::stable_partition(batch.begin(), batch.end(),
                          [&](size_t i) { return !cands[i].vendor_source.empty(); });
    auto inProcess = [&](size_t i) {
      Cand& c = cands[i];
      progress({f.name, key, "bench", ++bench_index, total, c.r.config});
      benchOne(f, p, c, opts.bench, best, s, &rep);
      if (c.r.status == Code::kOk && (best <= 0 || c.r.stats.median_ms < best))
        best = c.r.stats.median_ms;
      const auto t_rec = Clock::now();
      recordPartial(fs, key, c.r);
      rep.record_ms += ms_since(t_rec);
      c.recorded = true;
      done[i] = true;
    };
    std::vector<size_t> iso_batch;
    for (size_t i : batch) {
      if (!iso_off && opts.isolation.vendor_in_process && !cands[i].vendor_source.empty()) {
        inProcess(i);  // trusted library code, here while the worker starts (IsolationOptions)
      } else {
        iso_batch.push_back(i);
      }
    }
    if (!iso_off && !iso_batch.empty()) {
      std::string why;
      if (benchIsolated(fs, p, key, cands, iso_batch, &best, &done, &why, &bench_index)) {
        iso_used = true;
      } else if (iso_used) {
        // Candidates of this key already ran in the worker: the ones left may include the kind
        // that broke it, so they must not run in the tuner's process.
        for (size_t i : iso_batch) {
          if (done[i]) continue;
          fail(cands[i], Status::Unavailable("isolated benchmarking failed: " + why));
          done[i] = true;
        }
      } else {
        iso_off = true;
        ++iso_fallback.fallbacks;
        // Once per family and reason: a family without make_problem would say it every key.
        if (iso_warned.insert(f.name + "|" + why).second || opts.options.verbose) {
          log() << "ktune: " << f.name << " [" << key
                << "]: isolated benchmarking unavailable, benchmarking in-process: " << why << "\n";
        }
      }
    }
    for (size_t i : batch)
      if (!done[i]) inProcess(i);
    const double ms = ms_since(t0);
    bench_ms += ms;
    if (compiling) overlap_ms += ms;
  };

  std::vector<size_t> first;  // the vendor candidates (and, without the pipeline, everything)
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!cands[i].vendor_source.empty() && cands[i].live) first.push_back(i);
  }
  if (pipeline) {
    benchBatch(std::move(first));
    first.clear();
  }
  for (size_t taken = 0; taken < to_compile.size();) {
    std::vector<size_t> got;
    {
      std::unique_lock<std::mutex> l(qmu);
      qcv.wait(l, [&] { return !ready.empty(); });
      got.assign(ready.begin(), ready.end());
      ready.clear();
    }
    taken += got.size();
    if (!pipeline) std::sort(got.begin(), got.end());  // candidate order, as compiled serially
    std::vector<size_t> batch;
    for (size_t i : got) admit(i, batch);
    if (pipeline) {
      benchBatch(std::move(batch));
    } else {
      first.insert(first.end(), batch.begin(), batch.end());
    }
  }
  for (auto& t : pool)
    if (t.joinable()) t.join();
  rep.compile_wall_ms = to_compile.empty() ? ms_since(t_compile) : compile_done_ms;
  for (size_t i : to_compile) {
    if (cands[i].hit) {
      ++rep.store_hits;
    } else {
      ++rep.compiled;
    }
  }
  if (!pipeline) benchBatch(std::move(first));
  // Pruning must not remove every candidate: with no vendor candidate and no other JIT candidate
  // left, the would-be-pruned ones are benchmarked after all.
  if (!set_aside.empty()) {
    if (survivors == 0) {
      std::vector<size_t> batch;
      for (auto& [i, why] : set_aside)
        if (cands[i].dup_of < 0) batch.push_back(i);  // duplicates copy their original's result
      benchBatch(std::move(batch));
    } else {
      for (auto& [i, why] : set_aside) {
        fail(cands[i], Status::OutOfResources("pruned: " + why));
        ++rep.pruned;
      }
    }
  }
  rep.bench_wall_ms = bench_ms;
  rep.bench_overlap_ms = overlap_ms;
  for (auto& c : cands) {
    if (c.dup_of < 0 || !c.live) continue;
    const Cand& o = cands[c.dup_of];
    c.r.status = o.r.status;
    c.r.stats = o.r.stats;
    c.r.max_error = o.r.max_error;
    c.r.date = o.r.date;
    c.r.reason = "identical binary to " + o.r.config + " (benchmarked once)" +
                 (o.r.status == Code::kOk ? "" : ": " + o.r.reason);
    c.live = o.live;
  }

  // 9. Choose, record.
  std::set<std::string> recorded;
  for (auto& c : cands) {
    rep.candidates.push_back(c.r);
    if (c.recorded) recorded.insert(c.r.source + "|" + c.r.config);
  }
  int w = chooseWinner(rep.candidates);
  if (w >= 0 && cands[w].dup_of >= 0) w = cands[w].dup_of;
  DbEntry e;
  e.key = key;
  if (w >= 0) {
    rep.winner = rep.candidates[w].config;
    rep.winner_source = rep.candidates[w].source;
    rep.winner_stats = rep.candidates[w].stats;
    e.winner = rep.winner;
    e.winner_source = rep.winner_source;
    e.winner_stats = rep.winner_stats;
    if (!rep.candidates[w].code_object_key.empty())
      e.code_object_keys.push_back(rep.candidates[w].code_object_key);
  }
  e.candidates = rep.candidates;
  e.date = isoUtcNow();
  for (const auto& c : rep.candidates) {
    if (persistentFailure(c) && c.reason.rfind("skipped", 0) != 0 && !recorded.count(c.source + "|" + c.config)) {
      Status st = fs.db->recordCandidate(key, c);
      if (!st.ok()) log() << "ktune: could not record a failed candidate: " << st.toString() << "\n";
    }
  }
  if (w >= 0) {
    Status st = fs.db->record(e);
    if (!st.ok()) log() << "ktune: could not write the tuning database: " << st.toString() << "\n";
  }
  rep.total_wall_ms = ms_since(t_start);
  progress({f.name, key, "done", total, total, rep.winner});
  if (opts.options.verbose) {
    log() << rep.tree();
    log() << "  compile " << fmt3(rep.compile_wall_ms) << " ms, bench " << fmt3(rep.bench_wall_ms)
          << " ms (" << fmt3(rep.bench_overlap_ms) << " ms of it while compiling), total " << fmt3(rep.total_wall_ms) << " ms (host wall)\n";
  }
  return rep;
}

// ---------------------------------------------------------------- benchmarking one candidate

void Tuner::Impl::benchOne(const detail::ErasedFamily& f, const void* p, Cand& c,
                           const BenchOptions& bo_in, double best, StreamHandle s,
                           TuneReport* rep) {
  std::function<Status()> run;
  using PhaseClock = std::chrono::steady_clock;
  auto t_phase = PhaseClock::now();
  auto lap = [&](double TuneReport::*field) {
    const auto now = PhaseClock::now();
    if (rep) rep->*field += std::chrono::duration<double, std::milli>(now - t_phase).count();
    t_phase = now;
  };
  if (c.vendor_source.empty()) {
    auto h = loadFunction(c.r.code_object_key, c.co);
    lap(&TuneReport::load_ms);
    if (!h.ok()) {
      Status st = h.status();
      fail(c, st.code() == Code::kOutOfResources ? st : Status::LaunchError(st.toString()));
      return;
    }
    FunctionHandle fn = *h;
    run = [&, fn] {
      if (f.before_launch) KTUNE_RETURN_IF_ERROR(f.before_launch(c.config, p, s));
      KernelArgs args;
      f.args(p, args);
      return backend->launch(fn, c.dims.grid, c.dims.block, c.dims.shared, args.data(), s);
    };
  } else {
    run = [&] { return f.vendor_launch(c.r.config, p, s); };
  }
  // Verify first: it is also the smoke test (faults, launch errors) before any timing.
  if (f.verify) {
    Status st = f.pre_run ? f.pre_run(p, s) : Status::Ok();
    if (st.ok()) st = run();
    if (st.ok()) st = backend->synchronize(s);
    if (st.ok()) st = backend->checkError();
    if (!st.ok()) {
      (void)backend->checkError();  // clear the sticky error for the next candidate
      fail(c, st);
      return;
    }
    auto v = f.verify(p, s);
    if (!v.ok()) {
      fail(c, v.status());
      return;
    }
    c.r.max_error = v->max_abs_error;
    if (!v->ok) {
      fail(c, v->toStatus());
      return;
    }
  }
  lap(&TuneReport::verify_ms);
  BenchOptions bo = bo_in;
  bo.best_ms = best;
  std::function<Status(int)> before;
  if (f.pre_timed_run) before = [&](int) { return f.pre_timed_run(p, s); };
  else if (f.pre_run) before = [&](int) { return f.pre_run(p, s); };
  TimingStats partial;
  auto stats = bench->measure(s, run, bo, before, &partial);
  lap(&TuneReport::measure_ms);
  if (!stats.ok()) {
    (void)backend->checkError();
    c.r.stats = partial;
    fail(c, stats.status());
    return;
  }
  c.r.stats = *stats;
  c.r.status = Code::kOk;
  c.r.date = isoUtcNow();
}

bool Tuner::Impl::makeWorker(std::string* why) {
  if (worker) return true;
  auto exe = findWorkerExecutable(opts.options.worker_path);
  if (!exe.ok()) {
    *why = exe.status().toString();
    return false;
  }
  WorkerLaunch wl;
  wl.executable = *exe;
  wl.cache_dir = opts.options.cache_dir;
  wl.backend = backend->name();
  wl.device = opts.options.device;
  wl.plugins = opts.options.worker_plugins;
  worker = std::make_unique<WorkerSupervisor>(std::move(wl), opts.isolation);
  return true;
}

void Tuner::Impl::recordPartial(FamilyState& fs, const std::string& key,
                                const CandidateResult& r) {
  Status st = fs.db->recordCandidate(key, r);
  if (!st.ok()) log() << "ktune: could not record a partial result: " << st.toString() << "\n";
}

bool Tuner::Impl::benchIsolated(FamilyState& fs, const void* p, const std::string& key,
                                std::vector<Cand>& cands, const std::vector<size_t>& todo,
                                double* best, std::vector<bool>* done, std::string* why,
                                int* bench_index) {
  const detail::ErasedFamily& f = fs.f;
  if (!f.args_json || !f.make_problem) {
    *why = "family " + f.name + " has no args_json/make_problem, so a worker cannot rebuild its "
           "problem (add both to benchmark it isolated)";
    return false;
  }
  if (!makeWorker(why)) return false;
  WorkerBatch b;
  b.family = f.name;
  b.key = key;
  b.args_json = f.args_json(p);
  b.bench = opts.bench;
  b.best_ms = *best;
  for (size_t i : todo) {
    const Cand& c = cands[i];
    WorkerCandidate wc;
    wc.config = c.r.config;
    wc.source = c.vendor_source.empty() ? "jit" : c.vendor_source;
    wc.code_object_key = c.r.code_object_key;
    b.candidates.push_back(std::move(wc));
  }
  const int total = static_cast<int>(cands.size());
  auto startProgress = [&](size_t j) {
    if (j < todo.size())
      progress({f.name, key, "bench", ++*bench_index, total, cands[todo[j]].r.config});
  };
  startProgress(0);
  Status st = worker->run(b, [&](size_t j, const CandidateResult& r) {
    Cand& c = cands[todo[j]];
    const std::string co_key = c.r.code_object_key;
    c.r = r;
    c.r.code_object_key = co_key;
    if (c.r.status != Code::kOk) c.live = false;
    if (c.r.status == Code::kOk && (*best <= 0 || r.stats.median_ms < *best))
      *best = r.stats.median_ms;
    (*done)[todo[j]] = true;
    recordPartial(fs, key, c.r);
    c.recorded = true;
    startProgress(j + 1);
  });
  if (st.ok()) return true;
  *why = st.toString();
  // Fall back in-process only when the worker never got going: once candidates ran there, the
  // ones left may include the kind that crashed it, and must not run in the tuner's process.
  bool any_done = false;
  for (size_t i : todo) any_done = any_done || (*done)[i];
  if (!opts.isolation.fallback_in_process || any_done) {
    for (size_t i : todo) {
      if ((*done)[i]) continue;
      fail(cands[i], Status::Unavailable("isolated benchmarking failed: " + st.toString()));
      (*done)[i] = true;
    }
    return true;
  }
  return false;
}

// ---------------------------------------------------------------- isolation (worker side)

void Tuner::prestartWorker() {
  if (!impl_->opts.options.isolate) return;
  std::lock_guard<std::mutex> l(impl_->bench_mu);
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
  FamilyState* fs = nullptr;
  {
    std::lock_guard<std::mutex> l(impl_->families_mu);
    for (auto& f : impl_->families) {
      if (f->f.name == family) fs = f.get();
    }
  }
  if (!fs) return Status::NotFound("family '" + family + "' is not registered in this process");
  if (!fs->f.make_problem) {
    return Status::Unsupported("family '" + family + "' has no make_problem");
  }
  return fs->f.make_problem(args_json);
}

CandidateResult Tuner::benchmarkCandidate(const std::string& family, const void* p,
                                          const WorkerCandidate& wc, const BenchOptions& bench,
                                          double best_ms, StreamHandle s) {
  Cand c;
  c.r.config = wc.config;
  c.r.source = wc.source.empty() ? "jit" : wc.source;
  c.r.code_object_key = wc.code_object_key;
  FamilyState* fs = nullptr;
  {
    std::lock_guard<std::mutex> l(impl_->families_mu);
    for (auto& f : impl_->families) {
      if (f->f.name == family) fs = f.get();
    }
  }
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
    c.dims = f.launch(c.config, p, impl_->device);
    // The parent compiled it into the shared store; recompile only if the entry vanished.
    auto co = wc.code_object_key.empty() ? Expected<CodeObject>(Status::NotFound("no key"))
                                         : impl_->store->get(wc.code_object_key);
    if (!co.ok()) {
      std::string k, note;
      bool hit = false;
      co = impl_->compileConfig(*fs, c.config, p, &k, &hit, &note);
      if (co.ok()) c.r.code_object_key = k;
    }
    if (!co.ok()) {
      fail(c, co.status());
      return c.r;
    }
    c.co = std::move(co).value();
  }
  std::lock_guard<std::mutex> bl(impl_->bench_mu);
  impl_->benchOne(f, p, c, bench, best_ms, s);
  return c.r;
}

// ---------------------------------------------------------------- offline tuning

Expected<OfflineTuneReport> Tuner::tuneFromFile(const std::string& path, StreamHandle s) {
  KTUNE_ASSIGN_OR_RETURN(std::string text, readFile(path));
  OfflineTuneReport out;
  std::istringstream in(text);
  std::string line;
  std::set<std::string> done;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ++out.lines;
    auto skip = [&](const std::string& why) {
      ++out.skipped;
      out.messages.push_back("line " + std::to_string(out.lines) + ": " + why);
    };
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("family") ||
        !j["family"].is_string()) {
      skip("not a JSON object with a \"family\"");
      continue;
    }
    std::string fam = j["family"].get<std::string>();
    std::string key = j.value("key", std::string());
    if (!done.insert(fam + "|" + key).second) {
      ++out.already_tuned;
      continue;
    }
    FamilyState* fs = nullptr;
    {
      std::lock_guard<std::mutex> l(impl_->families_mu);
      for (auto& f : impl_->families) {
        if (f->f.name == fam) fs = f.get();
      }
    }
    if (!fs) {
      skip("family '" + fam + "' is not registered on this tuner");
      continue;
    }
    if (!fs->f.make_problem) {
      skip("family '" + fam + "' has no make_problem, so recorded keys cannot be re-created");
      continue;
    }
    // appendUntunedKey writes the problem's args_json fields beside family/key/date.
    nlohmann::json a = j;
    a.erase("family");
    a.erase("key");
    a.erase("date");
    std::string args = a.dump();
    auto prob = fs->f.make_problem(args);
    if (!prob.ok()) {
      skip("make_problem failed: " + prob.status().toString());
      continue;
    }
    std::string k2 = keyString(fs, prob->get());
    if (!key.empty() && k2 != key) {
      out.messages.push_back("line " + std::to_string(out.lines) + ": recorded key '" + key +
                             "' re-created as '" + k2 + "'");
    }
    if (auto e = fs->db->lookup(k2); e && !e->winner.empty()) {
      ++out.already_tuned;
      continue;
    }
    auto rep = tune(fs, prob->get(), s);
    if (!rep.ok()) {
      skip("tuning " + k2 + " failed: " + rep.status().toString());
    } else if (rep->winner.empty()) {
      // Name a few distinct reasons: "no candidate passed" alone cannot be acted on.
      std::set<std::string> reasons;
      for (const auto& c : rep->candidates)
        if (c.status != Code::kOk && reasons.size() < 3) reasons.insert(c.reason.substr(0, 160));
      std::string why;
      for (const auto& r : reasons) why += (why.empty() ? " (" : "; ") + r;
      skip("tuning " + k2 + ": no candidate passed" + (why.empty() ? "" : why + ")"));
    } else {
      ++out.tuned;
    }
  }
  return out;
}

}  // namespace ktune
