// What isolation_worker_test.cc and its part isolation_resume_part.cc share (one program): a
// simulated device with the isolation test kernels, the tuner options that start the real
// ktune-worker with the sim plugin, and a fresh tuner with one test family registered.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <ostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>

#include "autotune/autotuner.h"
#include "base/fs.h"
#include "tests/unit/isolation_families.h"

namespace ktune::isotest::env {

// The engine options of the isolation tests: the real ktune-worker (KTUNE_WORKER_PATH) with the
// sim plugin, tiny do_bench budgets, 2 compile threads, no finalists (the counts the tests check
// are the bench stage's), no in-process fallback (a broken worker must fail the tests visibly).
inline EngineOptions isoEngineOptions(const std::string& cache_dir, std::ostream* log, bool isolate) {
  EngineOptions t;
  t.options.cache_dir = cache_dir;
  t.options.warmup_ms = 0.2;
  t.options.rep_ms = 1.0;
  t.options.compile_threads = 2;
  t.options.isolate = isolate;
  t.options.finalists = 0;
  t.options.worker_path = KTUNE_WORKER_PATH;
  t.options.worker_plugins = {KTUNE_ISOLATION_SIM_PLUGIN};
  t.isolation.fallback_in_process = false;
  t.log = log;
  return t;
}

struct IsoEnv {
  std::string dir;
  std::shared_ptr<SimBackend> backend;
  std::ostringstream log;
  std::mutex mu;
  std::map<std::string, int> launches;  // "BLOCK=b,MODE=m" -> launches in this process

  IsoEnv() {
    char tmpl[] = "/tmp/ktune-isolation-XXXXXX";
    dir = ::mkdtemp(tmpl);
    SimOptions o;
    o.device = isotest::isoDevice();
    backend = std::make_shared<SimBackend>(o);
    isotest::registerIsoKernels(*backend, [this](int64_t block, int64_t mode) {
      std::lock_guard<std::mutex> l(mu);
      ++launches[isotest::cfg(block, mode).toString()];
    });
  }
  ~IsoEnv() { (void)removeTree(dir); }

  EngineOptions options(bool isolate = true) {
    EngineOptions t = isoEngineOptions(dir, &log, isolate);
    t.compiler = std::make_shared<SimCompiler>();
    t.ir_compiler = t.compiler;  // generated modules (iso_generated) become sim binaries too
    return t;
  }
};

inline const CandidateResult* find(const TuneReport& r, const std::string& config) {
  for (const auto& c : r.candidates) {
    if (c.config == config) return &c;
  }
  return nullptr;
}

// Registers the test families on a fresh tuner and returns the handle of `name`.
struct Tuned {
  std::unique_ptr<Engine> tuner;
  Family<IsoProblem> fam;
};
inline Tuned make(IsoEnv& env, const std::string& name, EngineOptions o) {
  Tuned t;
  auto tu = Engine::create(env.backend, std::move(o));
  EXPECT_TRUE(tu.ok()) << tu.status().toString();
  t.tuner = std::move(tu).value();
  auto all = isotest::isoFamilies();
  for (auto& [n, cs] : all) {
    if (n != name) continue;
    auto f = addFamily(*t.tuner, isotest::isoFamily(env.backend.get(), n, cs));
    EXPECT_TRUE(f.ok()) << f.status().toString();
    t.fam = *f;
  }
  return t;
}

}  // namespace ktune::isotest::env
