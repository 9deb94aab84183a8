// Isolated benchmarking overhead: candidates per second of a tuning run with isolation on (the
// candidates run in a supervised ktune-worker) vs off (in this process), same family, same keys,
// code objects already in the store (so both sides time benchmarking, not compiling).
// GPU only; prints "no GPU: ..." and exits 0 without one.
// Run: ./isolation_bench [rounds=3]. Needs ktune-worker (build/tools, or KTUNE_WORKER) and the
// test plugin build/tests/libktune_isolation_gpu_plugin.so (or KTUNE_WORKER_PLUGINS).
// Target (reliability issue): overhead <= 10%, i.e. on/off candidates/s >= 0.90.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "base/fs.h"
#include "bench/isolation_gpu_families.h"

namespace {

std::string selfDir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string s(buf, size_t(n));
  return s.substr(0, s.rfind('/'));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ktune;
  int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  auto env = Options::fromEnv();
  if (!env.ok()) {
    std::fprintf(stderr, "%s\n", env.status().toString().c_str());
    return 2;
  }
  auto b = openBackend(env->backend == "sim" ? "none" : env->backend);
  if (!b.ok()) {
    std::printf("no GPU: %s\n", b.status().toString().c_str());
    return 0;
  }
  std::shared_ptr<Backend> backend(std::move(b).value());
  char tmpl[] = "/tmp/ktune-isolation-bench-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::string plugin = env->worker_plugins.empty()
                           ? selfDir() + "/../tests/libktune_isolation_gpu_plugin.so"
                           : env->worker_plugins.front();
  const std::vector<int64_t> sizes = {1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24};

  // secs/cands: every key; steady_*: keys after the first (the worker is already running).
  double steady_off = 0, steady_on = 0;
  int steady_off_n = 0, steady_on_n = 0;
  auto tuneAll = [&](bool isolate, double* secs, int* cands, IsolationStats* st) -> Status {
    EngineOptions t;
    t.options = *env;
    t.options.cache_dir = dir;
    t.options.isolate = isolate;
    t.options.retry_failed = false;
    t.options.worker_plugins = {plugin};
    t.isolation.fallback_in_process = false;
    KTUNE_ASSIGN_OR_RETURN(auto tuner, Engine::create(backend, t));
    KTUNE_ASSIGN_OR_RETURN(auto fam,
                           tuner->add(isogpu::userFamily(backend.get(), "iso_user_good", false)));
    std::vector<std::shared_ptr<isogpu::UserProblem>> probs;
    for (int64_t n : sizes) {
      KTUNE_ASSIGN_OR_RETURN(auto p, isogpu::makeUserProblem(backend.get(), n));
      probs.push_back(p);
    }
    for (size_t i = 0; i < probs.size(); ++i) {
      auto t0 = std::chrono::steady_clock::now();
      KTUNE_ASSIGN_OR_RETURN(TuneReport r, fam.tune(*probs[i]));
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      int n = 0;
      for (const auto& c : r.candidates) n += c.status == Code::kOk || c.status == Code::kTimeout;
      *secs += dt;
      *cands += n;
      if (i > 0 && st) {
        (isolate ? steady_on : steady_off) += dt;
        (isolate ? steady_on_n : steady_off_n) += n;
      }
    }
    if (st) *st = tuner->isolationStats();
    return Status::Ok();
  };

  // Warm-up: compiles into the store, starts the GPU clocks.
  double w = 0;
  int wc = 0;
  Status s = tuneAll(false, &w, &wc, nullptr);
  if (!s.ok()) {
    std::fprintf(stderr, "warm-up failed: %s\n", s.toString().c_str());
    return 1;
  }
  double off_s = 0, on_s = 0;
  int off_n = 0, on_n = 0;
  IsolationStats st;
  for (int r = 0; r < rounds; ++r) {  // alternate, so drift hits both sides alike
    s = tuneAll(false, &off_s, &off_n, &st);
    if (s.ok()) s = tuneAll(true, &on_s, &on_n, &st);
    if (!s.ok()) {
      std::fprintf(stderr, "failed: %s\n", s.toString().c_str());
      return 1;
    }
  }
  double off_rate = off_n / off_s, on_rate = on_n / on_s;
  std::printf("device: %s\n", backend->devices()->at(0).name.c_str());
  std::printf("family iso_user_good, %zu keys x 4 configs, %d rounds, warmup %.0f ms rep %.0f ms\n",
              sizes.size(), rounds, env->warmup_ms, env->rep_ms);
  std::printf("isolation off: %d candidates in %.3f s = %.2f candidates/s\n", off_n, off_s, off_rate);
  std::printf("isolation on : %d candidates in %.3f s = %.2f candidates/s (worker starts per run %d)\n",
              on_n, on_s, on_rate, st.starts);
  std::printf("on/off = %.3f including one worker start per tuner\n", on_rate / off_rate);
  double so = steady_off_n / steady_off, sn = steady_on_n / steady_on;
  std::printf("steady state (worker running): off %.2f, on %.2f candidates/s, on/off = %.3f "
              "(target >= 0.90)\n", so, sn, sn / so);
  (void)removeTree(dir);
  return 0;
}
