// EngineOptions::context_later (`ktune tune gemm`): Engine::create returns while the device's
// context is still being made, so a family registers and precompiles its first key's first wave
// before any context exists; the key's tuning run then takes those compiles (done, or still
// running: the store runs one compile per object) and compiles no config a second time.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "autotune/autotuner.h"
#include "compiler/store/store.h"
#include "tests/support/gate.h"
#include "tests/unit/tuner_sim_env.h"

namespace ktune {
namespace {

using tunertest::Env;
using tunertest::Scale;

// The context is held back (setDevice off the test's thread waits on a gate) until the test opens
// it; `made` once a setDevice got through (on the test's thread at once: an engine that made the
// context in create() sets it there); `compiles_before` counts the compiles started before.
struct HeldContext {
  testsupport::Gate gate;
  std::atomic<bool> made{false};
  std::atomic<int> compiles_before{0};
  explicit HeldContext(Env& env) {
    const auto test_thread = std::this_thread::get_id();
    env.on_set_device = [this, test_thread](int) {
      if (std::this_thread::get_id() != test_thread) gate.wait();
      made = true;
    };
    env.on_compile = [this](const std::string&) {
      if (!made) ++compiles_before;
    };
  }
};

size_t storeEntries(const std::string& dir) {
  auto store = CodeObjectStore::open(dir);
  if (!store.ok()) return 0;
  auto entries = (*store)->list();
  return entries.ok() ? entries->size() : 0;
}

// Engine::create with context_later: returns while its context is still being made.
Expected<std::unique_ptr<Engine>> laterEngine(Env& env) {
  EngineOptions o = env.options();
  o.context_later = true;
  return Engine::create(env.backend, o);
}

TEST(ContextLater, FirstWaveCompilesBeforeTheContextAndTheRunCompilesNoneAgain) {
  Env env;
  env.cost["BLOCK=256,VEC=2"] = 0.01;
  HeldContext held(env);
  auto t = laterEngine(env);
  ASSERT_TRUE(t.ok()) << t.status().toString();
  auto fam = addFamily(**t, env.family());
  ASSERT_TRUE(fam.ok()) << fam.status().toString();
  Scale key;  // the key and launch dims only: no buffers before the context
  key.n = 5000;
  auto pre = fam->precompile(key);
  ASSERT_TRUE(pre.ok()) << pre.status().toString();
  EXPECT_GT(*pre, 0u);
  EXPECT_FALSE(held.made.load()) << "the context was made before the first wave compiled";
  EXPECT_EQ(held.compiles_before.load(), env.compiler->compileCount());
  EXPECT_EQ(size_t(env.compiler->compileCount()), *pre);
  held.gate.open();
  ASSERT_TRUE((*t)->awaitDevice().ok());
  EXPECT_TRUE(held.made.load());
  const int before = env.compiler->compileCount();
  auto rep = fam->tune(env.problem(5000));
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->winner, "BLOCK=256,VEC=2") << rep->tree();
  EXPECT_EQ(rep->store_hits, int(*pre)) << rep->tree();  // the first wave, from the store
  EXPECT_EQ(env.compiler->compileCount() - before, rep->compiled);
  EXPECT_EQ(size_t(env.compiler->compileCount()), storeEntries(env.dir));  // each config once
}

// As `ktune tune gemm` runs it: the first wave compiles on a thread of its own, the context is let
// through while those compiles still run, and the tuning run starts beside them: every config is
// compiled once (the run waits for the precompile's compile instead of starting its own).
TEST(ContextLater, TuningRunBesideTheRunningFirstWaveCompilesEachConfigOnce) {
  Env env;
  env.cost["BLOCK=256,VEC=2"] = 0.01;
  env.compile_delay_ms = 20;  // compiles still running when the run asks for them
  HeldContext held(env);
  auto t = laterEngine(env);
  ASSERT_TRUE(t.ok()) << t.status().toString();
  auto fam = addFamily(**t, env.family());
  ASSERT_TRUE(fam.ok()) << fam.status().toString();
  Scale key;
  key.n = 5000;
  Expected<size_t> pre = Status::Internal("not run");
  std::thread first([&] { pre = fam->precompile(key); });
  while (held.compiles_before.load() == 0) std::this_thread::yield();
  held.gate.open();
  auto rep = fam->tune(env.problem(5000));  // awaits the context itself
  first.join();
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  ASSERT_TRUE(pre.ok()) << pre.status().toString();
  EXPECT_EQ(rep->winner, "BLOCK=256,VEC=2") << rep->tree();
  EXPECT_GT(held.compiles_before.load(), 0);
  EXPECT_EQ(size_t(env.compiler->compileCount()), storeEntries(env.dir));  // each config once
}

// Without context_later, create() makes the context on the calling thread, as before.
TEST(ContextLater, OffMakesTheContextInCreate) {
  Env env;
  HeldContext held(env);
  auto t = Engine::create(env.backend, env.options());
  ASSERT_TRUE(t.ok()) << t.status().toString();
  EXPECT_TRUE(held.made.load());
  EXPECT_TRUE((*t)->awaitDevice().ok());
}

}  // namespace
}  // namespace ktune
