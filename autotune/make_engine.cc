// The engine's set-up and the parts of it the facade reaches through methods: creating it from a
// backend and options, registering a family, the isolation worker's start and counters.
#include <atomic>
#include <iostream>
#include <memory>
#include <thread>
#include <utility>

#include "autotune/compile_pool.h"
#include "autotune/compile_workers.h"
#include "autotune/device_pool.h"
#include "autotune/isolation.h"
#include "autotune/engine.h"
#include "autotune/l2_flush_store.h"
#include "base/clock.h"
#include "base/format.h"
#include "base/fs.h"
#include "base/timeline.h"
#include "base/version.h"
#include "compiler/store/store.h"

namespace ktune {
namespace detail {
namespace {
// Unique in the process (an address can be reused by a later family): FamilyState::id.
std::atomic<uint64_t> g_next_family_id{1};

// Options::compile_processes: the compiler goes behind helper processes. They start with the
// first compile request, one per request while all are busy (up to one per compile thread), not
// here: a run whose key is in the database or whose code objects are all in the store compiles
// nothing, and 15 workers loading NVRTC beside the process's own set-up cost a warm 4096^3 tuning
// 0.1-0.2 s on the GPU machine (bench/NOTES.md). Without the worker executable: in-process.
void useCompileWorkers(EngineOptions& opts, const std::string& arch) {
  auto exe = findWorkerExecutable(opts.options.worker_path);
  if (!exe.ok()) {
    if (opts.options.verbose)
      (opts.log ? *opts.log : std::cerr) << "ktune: compiling in this process: "
                                         << exe.status().message() << "\n";
    return;
  }
  const int n = CompilePool::threadsFor(size_t(1) << 16, opts.options.compile_threads, true);
  opts.compiler = std::make_shared<ProcessCompiler>(opts.compiler, *exe, arch, n);
}
}  // namespace

Expected<std::unique_ptr<TunerEngine>> TunerEngine::create(std::shared_ptr<Backend> backend,
                                                           EngineOptions opts) {
  if (!backend) return Status::InvalidArgument("Engine::create: null backend");
  // Where a process's engine set-up goes (KTUNE_VERBOSE=1; a warm GPU run spent ~200 ms here).
  const auto t0 = std::chrono::steady_clock::now();
  double compiler_ms = 0, store_ms = 0;
  std::unique_ptr<TunerEngine> e(new TunerEngine());
  KTUNE_ASSIGN_OR_RETURN(auto devs, backend->devices());
  const int dev = opts.options.device;
  if (dev < 0 || dev >= static_cast<int>(devs.size())) {
    return Status::NotFound("Engine::create: device " + std::to_string(dev) +
                            " not found (" + std::to_string(devs.size()) + " devices on backend " +
                            backend->name() + ")");
  }
  KTUNE_RETURN_IF_ERROR(checkDeviceList(opts.options.devices, devs, dev).withContext("Engine::create"));
  if (opts.options.devices.size() > 1 && !opts.options.isolate &&
      backend->vendor() != Vendor::kSimulated) {
    return Status::InvalidArgument("Engine::create: spreading candidates over several GPUs needs "
                                   "isolation, one worker per GPU (options.isolate / KTUNE_ISOLATE=1)");
  }
  const double devices_ms = msSince(t0);
  if (opts.context_later) {
    // EngineOptions::context_later: the context on a thread of its own; the compiler and the
    // store below, and what the caller does before awaitDevice(), overlap it.
    e->context_thread = std::thread([b = backend, dev, self = e.get()] {
      const auto tc = std::chrono::steady_clock::now();
      self->context_status = b->setDevice(dev);
      if (timelineOn()) timelineMark("context_ready", strprintf("%.1f ms", msSince(tc)));
    });
  } else {
    KTUNE_RETURN_IF_ERROR(backend->setDevice(dev));
  }
  e->device = devs[dev];
  // Background tuning on a GPU benchmarks in the isolation worker unless told otherwise: a faulting
  // candidate in this process would poison the caller's context (a sticky illegal-address error
  // was seen with in-process tuning, bench/NOTES.md), and the worker's allocations and
  // synchronisations cannot touch the caller's stream captures.
  if (opts.options.background && backend->vendor() != Vendor::kSimulated &&
      !opts.options.isolate_explicit && !opts.options.isolate) {
    opts.options.isolate = true;
    opts.isolation.fallback_in_process = true;
  }
  const double device_ms = msSince(t0);
  // A worker opens the arch's own compiler (or a plain simulated one): a compiler the caller built
  // (its own include path, a test hook) compiles in this process.
  const bool worker_compiler = !opts.compiler || opts.compiler->name() == "sim";
  if (!opts.compiler) {
    const auto tc = std::chrono::steady_clock::now();
    auto c = compilerForArch(e->device.arch, opts.options.clang);
    compiler_ms = msSince(tc);
    if (!c.ok()) return c.status().withContext("Engine::create: no compiler for " + e->device.arch);
    opts.compiler = std::shared_ptr<Compiler>(std::move(c).value());
  }
  if (!opts.compiler->supportsArch(e->device.arch)) {
    return Status::Unsupported("Engine::create: compiler " + opts.compiler->name() +
                               " cannot target " + e->device.arch);
  }
  if (opts.options.compile_processes && worker_compiler) useCompileWorkers(opts, e->device.arch);
  if (opts.options.cache_dir.empty()) opts.options.cache_dir = Options::defaultCacheDir();
  const auto ts = std::chrono::steady_clock::now();
  KTUNE_ASSIGN_OR_RETURN(e->store_, CodeObjectStore::open(opts.options.cache_dir));
  store_ms = msSince(ts);
  if (opts.options.search != "guided" && opts.options.search != "exhaustive")
    return Status::InvalidArgument("Engine::create: options.search must be guided or exhaustive, got '" +
                                   opts.options.search + "'");
  if (!(opts.options.budget_s >= 0))
    return Status::InvalidArgument("Engine::create: options.budget_s must be >= 0");
  if (!opts.search) opts.search = searchNamed(opts.options.search);
  // The budgets live in options (one place, the environment's too). bench.* may only hold the
  // defaults or the values create() copied there (options taken from another tuner's options()).
  auto budget_ok = [](double bench, double def, double opt) { return bench == def || bench == opt; };
  if (!budget_ok(opts.bench.warmup_ms, BenchOptions{}.warmup_ms, opts.options.warmup_ms) ||
      !budget_ok(opts.bench.rep_ms, BenchOptions{}.rep_ms, opts.options.rep_ms)) {
    return Status::InvalidArgument(
        "Engine::create: set the do_bench budgets in options.warmup_ms / options.rep_ms "
        "(KTUNE_WARMUP_MS / KTUNE_REP_MS), not in bench.warmup_ms / bench.rep_ms");
  }
  opts.bench.warmup_ms = opts.options.warmup_ms;
  opts.bench.rep_ms = opts.options.rep_ms;
  // A real device's run count follows the wall cost of a run (flush and launch included); the
  // simulated device's host time is the simulator's, not a device's, so it counts device time.
  opts.bench.count_overhead = backend->name() != "sim";
  e->compiler_ = opts.compiler;
  e->ir_compiler = opts.ir_compiler;
  e->backend = std::move(backend);
  const std::string& arch = e->device.arch;
  e->space_backend = Arch(arch).spaceBackend();
  e->validator = Validator{KTUNE_VERSION,
                              e->backend->name(),
                              e->device.driver_version.empty() ? e->backend->version()
                                                                  : e->device.driver_version,
                              e->compiler_->name(),
                              e->compiler_->version(),
                              e->device.name,
                              arch};
  e->opts = std::move(opts);
  setFlushKernelStore(e->store_);  // the read flush kernel is a store hit in a warm process
  // The isolation worker builds its Engine here too, so both sides flush alike.
  const auto tb = std::chrono::steady_clock::now();
  e->bench = std::make_unique<Benchmarker>(
      *e->backend, e->device, L2Flush::compilerFor(*e->backend, *e->compiler_),
      e->opts.log);
  const double bench_ms = msSince(tb);
  if (e->opts.options.devices.size() > 1)
    e->devices = std::make_shared<DevicePool>(*e, e->opts.options.devices);
  if (e->opts.options.verbose)
    e->log() << strprintf("ktune: engine set-up %.0f ms: device %.0f, compiler %.0f, store %.0f, "
                          "benchmarker %.0f ms\n", msSince(t0), device_ms, compiler_ms, store_ms,
                          bench_ms);
  if (timelineOn())
    timelineMark("engine_created", strprintf("devices %.1f context %.1f compiler %.1f store %.1f "
                                             "benchmarker %.1f", devices_ms, device_ms - devices_ms,
                                             compiler_ms, store_ms, bench_ms));
  return e;
}

Status TunerEngine::awaitContext() {
  if (!opts.context_later) return Status::Ok();
  {
    std::lock_guard<std::mutex> l(context_mu);
    if (context_thread.joinable()) context_thread.join();
  }
  KTUNE_RETURN_IF_ERROR(context_status);
  return backend->setDevice(opts.options.device);  // current on this thread too
}

TunerEngine::~TunerEngine() {
  {
    std::lock_guard<std::mutex> l(context_mu);
    if (context_thread.joinable()) context_thread.join();
  }
  shapes->stop();  // the background thread stops before the modules go
  for (ModuleHandle m : modules) (void)backend->unloadModule(m);
}

Expected<FamilyState*> TunerEngine::addFamily(ErasedFamily f) {
  std::lock_guard<std::mutex> l(families_mu);
  for (auto& g : families) {
    if (g->f.name == f.name)
      return Status::InvalidArgument("family '" + f.name + "': already registered on this tuner");
  }
  std::string path = opts.options.database_path.empty()
                         ? joinPath(joinPath(opts.options.cache_dir, "db"), f.name + ".json")
                         : opts.options.database_path;
  KTUNE_ASSIGN_OR_RETURN(auto db, TuningDatabase::open(path, validator, f.name));
  for (const auto& w : db->warnings()) log() << "ktune: " << w << "\n";
  if (!f.verify && f.jit() && !f.no_verify) {
    // Unverified candidates can win with wrong results: say so, once per family.
    log() << "ktune: family " << f.name << ": no verify function, so candidates are timed "
          << "unverified ("
          << (f.verify_hint.empty() ? "add TypedKernelSpec::verify, or set "
                                      "TypedKernelSpec::no_verify to make this choice explicit"
                                    : f.verify_hint)
          << ")\n";
  }
  auto st = std::make_unique<FamilyState>();
  st->id = g_next_family_id.fetch_add(1, std::memory_order_relaxed);
  st->f = std::move(f);
  st->journal = std::make_unique<TuningJournal>(db->path(), st->f.name, validator.id());
  st->db = std::move(db);
  families.push_back(std::move(st));
  return families.back().get();
}

TuningDatabase* TunerEngine::database(const std::string& family) {
  FamilyState* fs = findFamily(family);
  return fs ? fs->db.get() : nullptr;
}

void TunerEngine::prestartWorker() {
  if (!opts.options.isolate) return;
  std::lock_guard<std::mutex> l(bench_mu);
  if (devices) {  // one worker per device instead (device_pool.h)
    devices->prestart();
    return;
  }
  std::string ignored;
  if (makeWorker(&ignored)) (void)worker->prestart();
}

void TunerEngine::prepareWorkerEarly(const std::string& family, const std::string& args_json) {
  if (!opts.options.isolate) return;
  std::lock_guard<std::mutex> l(bench_mu);
  prepareWorkers(family, args_json);
}

IsolationStats TunerEngine::isolationStats() {
  std::lock_guard<std::mutex> l(bench_mu);
  IsolationStats s = worker ? worker->stats() : IsolationStats{};
  s.fallbacks = iso_fallback.fallbacks;
  return s;
}

void TunerEngine::prepareBench(const BenchOptions& b) {
  std::lock_guard<std::mutex> l(bench_mu);
  bench->prepare(b);
}

}  // namespace detail
}  // namespace ktune
