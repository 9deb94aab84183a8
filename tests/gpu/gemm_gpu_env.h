// The GEMM GPU tests' shared environment (one per test program): the CUDA backend, NVRTC, the
// GEMM runner and cuBLASLt, opened once; a test skips, visibly, with the reason the environment
// gives. Each program defines gemm_gpu::env() with what its device must have (openEnv's
// `unsupported`), so the mma tests and the fp8 tests share one setup and one device buffer.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "autotune/autotuner.h"
#include "compiler/compiler.h"
#include "ops/gemm.h"
#include "ops/vendor/cublaslt.h"
#include "runtime/backend.h"

namespace ktune::gemm_gpu {

struct Env {
  std::shared_ptr<Backend> backend;
  std::unique_ptr<Compiler> compiler;
  DeviceInfo dev;
  std::unique_ptr<GemmRunner> runner;
  std::unique_ptr<cublaslt::CublasLt> lt;
  std::string skip;     // non-empty: why the tests skip
  std::string lt_skip;  // non-empty: why cuBLASLt is not there
};

// Opens the first CUDA device; `unsupported` says what the device lacks for these tests ("" if
// nothing), and that becomes the skip reason.
inline Env* openEnv(const std::function<std::string(const DeviceInfo&)>& unsupported) {
  auto* e = new Env();
  auto skip = [e](std::string why) {
    e->skip = std::move(why);
    return e;
  };
  auto b = openCudaBackend();
  if (!b.ok()) return skip("no GPU: " + b.status().toString());
  e->backend = std::move(b).value();
  auto devs = e->backend->devices();
  if (!devs.ok() || devs->empty()) return skip("no GPU: no CUDA device");
  if (Status s = e->backend->setDevice(0); !s.ok()) return skip("no GPU: " + s.toString());
  e->dev = (*devs)[0];
  if (std::string why = unsupported(e->dev); !why.empty()) return skip(why);
  auto c = compilerForArch(e->dev.arch);
  if (!c.ok()) return skip("no compiler for " + e->dev.arch + ": " + c.status().toString());
  e->compiler = std::move(c).value();
  e->runner = std::make_unique<GemmRunner>(*e->backend, *e->compiler, e->dev);
  auto lt = cublaslt::CublasLt::open();
  if (lt.ok()) e->lt = std::move(lt).value();
  else e->lt_skip = lt.status().toString();
  return e;
}

Env& env();  // defined by each test program

// A device buffer freed on scope exit.
struct DevBuf {
  DevicePtr p = 0;
  size_t bytes = 0;
  DevBuf() = default;
  explicit DevBuf(size_t n) : bytes(std::max<size_t>(n, 16)) {
    auto r = env().backend->alloc(bytes);
    EXPECT_TRUE(r.ok()) << r.status().toString();
    if (r.ok()) p = *r;
  }
  ~DevBuf() {
    if (p) (void)env().backend->free(p);
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

// The tuner options of the op tests (the tuned GEMM op end to end): a fresh cache in the temp
// folder `name`, short do_bench budgets (2 ms warm-up, 8 ms measurement), `vendor_algos`
// cuBLASLt candidates.
inline EngineOptions opTestOptions(const std::string& name, int vendor_algos) {
  EngineOptions o;
  o.options.cache_dir = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::remove_all(o.options.cache_dir);
  o.options.warmup_ms = 2;
  o.options.rep_ms = 8;
  o.options.vendor_algos = vendor_algos;
  return o;
}

// Compiles all (kind, config, shape) instances on several threads first (NVRTC is slow per
// kernel; the GPU machine has many cores), so a test's budget goes to running them.
inline void precompile(const std::vector<std::tuple<gemm::KernelKind, Config, gemm::GemmShape>>& jobs) {
  const unsigned n = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  std::vector<std::thread> th;
  for (unsigned i = 0; i < n; ++i)
    th.emplace_back([&] {
      for (size_t j; (j = next++) < jobs.size();) {
        const auto& [k, c, s] = jobs[j];
        auto r = env().runner->compile(k, c, s);
        EXPECT_TRUE(r.ok()) << gemm::kernelKindName(k) << " " << c.toString() << " | "
                            << gemm::shapeKey(s) << ": " << r.status().toString();
      }
    });
  for (auto& t : th) t.join();
}

}  // namespace ktune::gemm_gpu

#define REQUIRE_GPU()                                                         \
  do {                                                                        \
    if (!::ktune::gemm_gpu::env().skip.empty())                               \
      GTEST_SKIP() << ::ktune::gemm_gpu::env().skip;                          \
  } while (0)
