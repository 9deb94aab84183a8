// ktune-worker — the isolation worker (see autotune/isolation.h). Started by a Engine with
// Options::isolate; not meant to be run by hand. It opens the backend, loads plugins (user
// families), registers them on its own Engine over the shared store, and serves bench requests on
// stdin/stdout until EOF. Exit status: 0 on EOF, 3 after a candidate faulted the device (its
// context is lost), 2 on a start-up error (printed on stderr, which the tuner reports).
//
// The worker lives with the ops, not in the engine: the engine's side is serveWorker and the
// Engine; the built-in ops (row-wise, GEMM) are registered on that Engine here, after the plugins,
// through the same registration calls a plugin's ktune_register_families makes
// (registerBuiltinOps). The engine itself knows no op (tests/layering_check.py).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/isolation.h"
#include "base/dylib.h"
#include "base/options.h"
#include "ops/builtin.h"
#include "runtime/backend.h"

namespace {

using RegisterFn = ktune::Status (*)(ktune::Engine&);
using BackendFn = ktune::Status (*)(std::shared_ptr<ktune::Backend>*,
                                    std::shared_ptr<ktune::Compiler>*);

int fail(const std::string& msg) {
  std::fprintf(stderr, "ktune-worker: %s\n", msg.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Its start-up split, sent with the hello (IsolationStats::worker_ms): the worker's start is on
  // a tuning run's critical path (the first candidate waits for it).
  const auto t_main = std::chrono::steady_clock::now();
  std::map<std::string, double> startup_ms;
  auto mark = [&](const char* what) {
    startup_ms[what] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_main).count();
  };
  std::string cache_dir, backend_name = "auto";
  int device = 0;
  std::vector<std::string> plugins;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--cache-dir" && (v = value())) {
      cache_dir = v;
    } else if (a == "--backend" && (v = value())) {
      backend_name = v;
    } else if (a == "--device" && (v = value())) {
      device = std::atoi(v);
    } else if (a == "--plugin" && (v = value())) {
      plugins.push_back(v);
    } else {
      return fail("unknown or incomplete argument '" + a +
                  "' (usage: ktune-worker --cache-dir DIR [--backend B] [--device N] "
                  "[--plugin LIB.so]...)");
    }
  }
  auto env = ktune::Options::fromEnv();
  if (!env.ok()) return fail(env.status().toString());
  ktune::EngineOptions topts;
  topts.options = *env;
  if (!cache_dir.empty()) topts.options.cache_dir = cache_dir;
  topts.options.isolate = false;  // the worker benchmarks in-process
  topts.options.tuning = true;
  topts.options.device = device;
  topts.log = &std::cerr;

  std::vector<ktune::DynLib> libs;
  std::shared_ptr<ktune::Backend> backend;
  for (const auto& p : plugins) {
    auto lib = ktune::DynLib::open({p}, "ktune worker plugin");
    if (!lib.ok()) return fail(lib.status().toString());
    BackendFn bf = nullptr;
    if (lib->bind(bf, "ktune_worker_backend").ok() && bf && !backend) {
      std::shared_ptr<ktune::Compiler> compiler;
      ktune::Status st = bf(&backend, &compiler);
      if (!st.ok()) return fail("plugin " + p + ": ktune_worker_backend: " + st.toString());
      if (compiler) topts.compiler = compiler;
    }
    libs.push_back(std::move(lib).value());
  }
  if (!backend) {
    if (backend_name == "sim") {
      return fail("backend 'sim' needs a plugin that exports ktune_worker_backend");
    }
    auto b = ktune::openBackend(backend_name);
    if (!b.ok()) return fail(b.status().toString());
    backend = std::shared_ptr<ktune::Backend>(std::move(b).value());
  }
  mark("backend");
  auto created = ktune::Engine::create(backend, topts);
  if (!created.ok()) return fail(created.status().toString());
  mark("engine");
  // Shared: the GEMM op keeps a reference to its tuner.
  std::shared_ptr<ktune::Engine> tuner(std::move(created).value());
  for (size_t i = 0; i < libs.size(); ++i) {
    RegisterFn rf = nullptr;
    ktune::Status st = libs[i].bind(rf, "ktune_register_families");
    if (!st.ok()) return fail("plugin " + plugins[i] + ": " + st.toString());
    st = rf(*tuner);
    if (!st.ok()) return fail("plugin " + plugins[i] + ": ktune_register_families: " + st.toString());
  }
  // The built-in ops (row-wise and GEMM) can be rebuilt from their args JSON, so the worker serves
  // them too (on a device they cannot use, e.g. a simulated one, they are not registered). `ops`
  // is declared after `tuner`, so the GEMM op goes first.
  auto ops = ktune::registerBuiltinOps(tuner);
  if (!ops.ok()) return fail(ops.status().toString());
  if (backend->vendor() != ktune::Vendor::kSimulated) {
    for (const auto& n : ops->notes) std::fprintf(stderr, "ktune-worker: %s\n", n.c_str());
  }
  mark("ops");
  ktune::Status st = ktune::serveWorker(*tuner, 0, 1, startup_ms);
  if (st.code() == ktune::Code::kDeviceFault) {
    std::fprintf(stderr, "ktune-worker: %s\n", st.toString().c_str());
    std::fflush(stderr);
    std::_Exit(3);  // skip destructors: the device context is broken
  }
  if (!st.ok()) return fail(st.toString());
  return 0;
}
