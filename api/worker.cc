// ktune_worker_main: the isolation worker's program (worker.h; protocol in autotune/isolation.h).
// It opens the backend, loads the plugins (user families), registers them on its own engine over
// the shared store, and serves bench requests on stdin/stdout until EOF. It lives in the API layer,
// inside libktune, because a plugin registers through the public API (ktune/plugin.hpp: an
// Autotuner over this engine) and links libktune.so: one copy of the library in the process.
//
// The built-in ops (row-wise, GEMM) are registered on the same engine after the plugins, through
// the registration the plugins use (ops/builtin.h). The engine itself knows no op
// (tests/layering_check.py).
#include "api/worker.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/internal.h"
#include "autotune/compile_workers.h"
#include "autotune/device_compare.h"
#include "autotune/isolation.h"
#include "base/dylib.h"
#include "base/format.h"
#include "base/fs.h"
#include "base/options.h"
#include "base/timeline.h"
#include "compiler/sim/sim_compiler.h"
#include "ktune/plugin.hpp"
#include "ops/buffers.h"
#include "ops/device_fill.h"
#include "ops/builtin.h"
#include "ops/vendor/cublaslt.h"
#include "runtime/backend.h"

namespace ktune {
namespace {

// The library's own test plugins (tests/unit/isolation_*_plugin.cc) register on the engine and may
// supply the backend (a simulated one with fault injection); not part of the public contract.
using FamiliesFn = Status (*)(Engine&);
using BackendFn = Status (*)(std::shared_ptr<Backend>*, std::shared_ptr<Compiler>*);

struct WorkerArgs {
  std::string cache_dir, backend = "auto";
  int device = 0;
  std::vector<std::string> plugins;
};

Expected<WorkerArgs> parseArgs(int argc, char** argv) {
  WorkerArgs w;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--cache-dir" && (v = value())) {
      w.cache_dir = v;
    } else if (a == "--backend" && (v = value())) {
      w.backend = v;
    } else if (a == "--device" && (v = value())) {
      w.device = std::atoi(v);
    } else if (a == "--plugin" && (v = value())) {
      w.plugins.push_back(v);
    } else {
      return Status::InvalidArgument("unknown or incomplete argument '" + a +
                                     "' (usage: ktune-worker --cache-dir DIR [--backend B] "
                                     "[--device N] [--plugin LIB.so]...)");
    }
  }
  return w;
}

// Loads every plugin; the first that exports ktune_worker_backend supplies the backend and
// compiler. Otherwise the worker opens `backend` itself: the simulated one with its compiler (the
// plugins then register their simulated kernels on it), or a GPU backend.
Status openPlugins(const WorkerArgs& w, std::vector<DynLib>* libs, Autotuner::Impl* impl,
                   EngineOptions* eo) {
  for (const auto& p : w.plugins) {
    KTUNE_ASSIGN_OR_RETURN(auto lib, DynLib::open({p}, "ktune worker plugin"));
    BackendFn bf = nullptr;
    if (lib.bind(bf, "ktune_worker_backend").ok() && bf && !impl->backend) {
      std::shared_ptr<Compiler> compiler;
      Status st = bf(&impl->backend, &compiler);
      if (!st.ok()) return st.withContext("plugin " + p + ": ktune_worker_backend");
      if (compiler) eo->compiler = compiler;
    }
    libs->push_back(std::move(lib));
  }
  if (impl->backend) return Status::Ok();
  if (w.backend == "sim") {
    SimOptions so;
    so.device = api::simulatedDevice();
    impl->sim = std::make_shared<SimBackend>(so);
    impl->backend = impl->sim;
    eo->compiler = std::make_shared<SimCompiler>();
    eo->ir_compiler = eo->compiler;
    return Status::Ok();
  }
  KTUNE_ASSIGN_OR_RETURN(auto b, openBackend(w.backend));
  impl->backend = std::shared_ptr<Backend>(std::move(b));
  return Status::Ok();
}

// Each plugin registers its families: through the public entry (ktune_register_kernels, on the
// Autotuner over this engine) or, for the library's own test plugins, on the engine itself.
Status registerPlugins(const WorkerArgs& w, const std::vector<DynLib>& libs, Autotuner& tuner) {
  for (size_t i = 0; i < libs.size(); ++i) {
    const std::string what = "plugin " + w.plugins[i];
    RegisterKernelsFn pub = nullptr;
    if (libs[i].bind(pub, "ktune_register_kernels").ok() && pub) {
      KTUNE_RETURN_IF_ERROR(pub(tuner).withContext(what + ": ktune_register_kernels"));
      continue;
    }
    FamiliesFn internal = nullptr;
    if (!libs[i].bind(internal, "ktune_register_families").ok() || !internal)
      return Status::NotFound(what + " exports neither ktune_register_kernels (ktune/plugin.hpp) "
                              "nor ktune_register_families");
    KTUNE_RETURN_IF_ERROR(internal(*tuner.impl().tuner).withContext(what + ": ktune_register_families"));
  }
  return Status::Ok();
}

int fail(const Status& st) {
  std::fprintf(stderr, "ktune-worker: %s\n", st.toString().c_str());
  return 2;
}

// `ktune-worker --compile ARCH COMPILER [NICE]`: a compile worker (autotune/compile_workers.h). It
// opens no device: the compiler the parent names ("sim": the simulated one; else the arch's).
int compileWorker(const std::string& arch, const std::string& compiler, int nice) {
  auto env = Options::fromEnv();
  if (!env.ok()) return fail(env.status());
  const std::string clang = env->clang;
  auto open = [&](const std::string& name, const std::string& a) -> Expected<std::shared_ptr<Compiler>> {
    if (name == "sim") return std::shared_ptr<Compiler>(std::make_shared<SimCompiler>());
    KTUNE_ASSIGN_OR_RETURN(auto c, compilerForArch(a, clang));
    return std::shared_ptr<Compiler>(std::move(c));
  };
  Status st = serveCompiles(0, 1, arch, compiler, open, nice);
  return st.ok() ? 0 : fail(st);
}

}  // namespace
}  // namespace ktune

extern "C" int ktune_worker_main(int argc, char** argv) {
  using namespace ktune;
  // Its start-up split, sent with the hello (IsolationStats::worker_ms): the worker's start is on
  // a tuning run's critical path (the first candidate waits for it).
  const auto t_main = std::chrono::steady_clock::now();
  std::map<std::string, double> startup_ms;
  auto mark = [&](const char* what) {
    startup_ms[what] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_main).count();
    timelineMark((std::string("worker_") + what).c_str());
  };
  timelineMark("worker_main", strprintf("age %.1f ms", processAgeMs()));
  if ((argc == 4 || argc == 5) && std::string(argv[1]) == "--compile")
    return compileWorker(argv[2], argv[3], argc == 5 ? std::atoi(argv[4]) : 0);
  auto args = parseArgs(argc, argv);
  if (!args.ok()) return fail(args.status());
  // The GEMM op (registered below) opens cuBLASLt after the device: its loading starts once the
  // driver has (below). A worker started before its tuner opened the GPU is told "auto"
  // (worker_prestart.h).
  auto env = Options::fromEnv();
  if (!env.ok()) return fail(env.status());
  const bool lt = args->backend == "cuda" || (args->backend == "auto" && pathExists("/dev/nvidiactl"));
  const bool lt_after = env->lt_preload != "early";  // KTUNE_LT_PRELOAD
  if (lt && !lt_after) cublaslt::preloadLibrary();
  EngineOptions eo;
  eo.options = *env;
  if (!args->cache_dir.empty()) eo.options.cache_dir = args->cache_dir;
  eo.options.isolate = false;  // the worker benchmarks in-process
  eo.options.compile_processes = false;  // and compiles in-process (it compiles little)
  eo.options.tuning = true;
  eo.options.device = args->device;
  eo.log = &std::cerr;
  // The context on a thread while NVRTC loads and the ops register (neither needs it); the GEMM
  // op's vendor library opens once it exists (KTUNE_WORKER_CONTEXT). Not with plugins: they may
  // use the device when they register.
  const bool beside = args->plugins.empty() && env->worker_context == "beside";
  eo.context_later = beside;

  std::vector<DynLib> libs;  // declared first: unloaded after everything that may call into them
  auto impl = std::make_unique<Autotuner::Impl>();
  if (Status st = openPlugins(*args, &libs, impl.get(), &eo); !st.ok()) return fail(st);
  mark("backend");
  // Once the driver has started (cuInit): beside the context's creation (Engine::create).
  if (lt && lt_after) cublaslt::preloadLibrary();
  auto created = Engine::create(impl->backend, eo);
  if (!created.ok()) return fail(created.status());
  impl->tuner = std::shared_ptr<Engine>(std::move(created).value());
  std::shared_ptr<Engine> engine = impl->tuner;
  std::unique_ptr<Autotuner> tuner = AutotunerAccess::wrap(std::move(impl));
  if (!beside) mark("engine");
  if (Status st = registerPlugins(*args, libs, *tuner); !st.ok()) return fail(st);
  // The built-in ops (row-wise and GEMM) can be rebuilt from their args JSON, so the worker serves
  // them too (on a device they cannot use, e.g. a simulated one, they are not registered). `ops`
  // is declared after `tuner`, so the GEMM op goes first.
  // The GEMM op's cuBLASLt warm-up (its first heuristic query) starts with a problem whose
  // answers are not kept (ops/vendor_answers.h): on a warm cache the reference runs the kept
  // default and nothing waits for the library's one-time set-up.
  GemmOp::OpOptions gemm_opts;
  gemm_opts.warm_up_later = true;
  gemm_opts.vendor_later = beside;
  // The reference of a kept default left to the first check (KTUNE_EARLY_JIT): a warm race's
  // early wave is timed while the library sets up.
  gemm_opts.defer_reference = env->early_jit;
  auto ops = registerBuiltinOps(engine, gemm_opts);
  if (!ops.ok()) return fail(ops.status());
  if (beside) {
    if (Status st = engine->awaitDevice(); !st.ok()) return fail(st);
    mark("engine");  // the device's context made, as without `beside`
    if (ops->gemm) ops->gemm->openVendor();
  }
  if (engine->backend().vendor() != Vendor::kSimulated) {
    for (const auto& n : ops->notes) std::fprintf(stderr, "ktune-worker: %s\n", n.c_str());
  }
  mark("ops");
  // Each key's problem is built anew (serveWorker keeps one at a time): the largest fill of each
  // operand stays on the device, so the next key's random inputs are a device copy of its prefix
  // (ops/buffers.h); the LLM suite's keys share their N x K. For the worker's life.
  keepRandomFills(&engine->backend());
  // ...generated on the device (ops/device_fill.h): the same values as the tuner's.
  enableDeviceFill(engine->backend(), engine->compiler(), &engine->store(), engine->device());
  // The candidates' checks compare with this process's trusted outputs on the device
  // (autotune/device_compare.h): a few bytes read back instead of the sampled rows.
  enableDeviceCompare(engine->backend(), engine->compiler(), &engine->store(), engine->device());
  Status st = serveWorker(*engine, 0, 1, startup_ms);
  disableDeviceCompare();
  disableDeviceFill();
  if (st.code() == Code::kDeviceFault) {
    std::fprintf(stderr, "ktune-worker: %s\n", st.toString().c_str());
    std::fflush(stderr);
    std::_Exit(3);  // skip destructors: the device context is broken
  }
  if (!st.ok()) return fail(st);
  return 0;
}
