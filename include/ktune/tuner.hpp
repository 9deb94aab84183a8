// ktune — the tuner: a device, its code-object store and tuning databases, the families
// registered on it, and the device memory and streams a caller needs to use them.
//
//   auto opts = ktune::TunerOptions::fromEnv();                 // or set fields yourself
//   KTUNE_ASSIGN_OR_RETURN(auto tuner, ktune::Autotuner::create(*opts));
//   KTUNE_ASSIGN_OR_RETURN(ktune::Kernel k, tuner->addKernel(spec));   // see kernel.hpp
//
// A call: key -> in-memory table (hit: launch) -> tuning database (hit: load the code object
// from the store, launch) -> tuning off: the default config; tuning on: compile every config of
// the space (store hits skipped), benchmark, pick the fastest, record it, launch.
// Errors are values; nothing here throws or exits. Thread safety: every method may be called
// from any thread; an Autotuner must outlive the Kernels it returned and calls in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ktune/export.h"
#include "ktune/kernel.hpp"
#include "ktune/options.hpp"
#include "ktune/report.hpp"
#include "ktune/sim.hpp"
#include "ktune/stats.hpp"
#include "ktune/status.hpp"
#include "ktune/types.hpp"

namespace ktune {

class KTUNE_API Autotuner {
 public:
  // Opens options.backend ("auto" | "cuda" | "hip" | "sim"), device options.device, the store
  // under options.cache_dir (default: TunerOptions::defaultCacheDir()) and picks the compiler
  // for the device's architecture. Errors: kUnavailable (no driver / device; the message says
  // what is missing), kNotFound (no such device), kInvalidArgument (unknown backend, unsafe
  // cache directory).
  static Expected<std::unique_ptr<Autotuner>> create(const TunerOptions& options);
  ~Autotuner();
  Autotuner(const Autotuner&) = delete;
  Autotuner& operator=(const Autotuner&) = delete;

  // Background tuning (options.background): blocks until every key queued so far is tuned (or
  // failed), then returns; and how many keys the background thread has tuned. Neither starts
  // anything: without background tuning the first returns at once and the second is 0. For
  // warm-up before timing, and for tests that must not wait by sleeping.
  void waitBackground();
  uint64_t backgroundTuned() const;

  // Registers a kernel family from data (kernel.hpp) and opens its tuning database.
  // kInvalidArgument naming the field for a bad spec or a name already registered here.
  Expected<Kernel> addKernel(const KernelSpec& spec);

  // What is known about `key` of `family` (a registered kernel, or a tuned op's family such as
  // "rmsnorm_bf16" or "gemm"): the database entry with every candidate. kNotFound when the family
  // is not registered on this tuner or the key was never tuned.
  Expected<KeyReport> report(const std::string& family, const std::string& key) const;

  // Tuning database of a registered family: the whole file as JSON text, merging entries into
  // it from such text, and removing one key (it is tuned again on its next call).
  Expected<std::string> exportDatabase(const std::string& family) const;
  Status importDatabase(const std::string& family, const std::string& json);
  Status removeKey(const std::string& family, const std::string& key);
  // The code-object store: its directory, and removing every entry (compiled again on demand).
  std::string cacheDir() const;
  Status clearCache();
  // The isolation worker this tuner starts when isolation is on: TunerOptions::worker_path
  // (KTUNE_WORKER) when set, else ktune-worker beside the program, then beside this library (an
  // installed libktune.so finds <prefix>/bin/ktune-worker), then on PATH. kNotFound naming every
  // place looked at. Thread-safe.
  Expected<std::string> workerPath() const;

  // The device: backend name ("cuda", "hip", "sim"), device name and architecture ("sm_90a",
  // "gfx942"; "sim" for the simulated device).
  std::string backendName() const;
  std::string deviceName() const;
  std::string arch() const;

  // Device memory and streams of the tuner's backend (alloc(0) is an error; free(0) a no-op).
  Expected<DevicePtr> alloc(size_t bytes);
  Status free(DevicePtr p);
  Status copyToDevice(DevicePtr dst, const void* src, size_t bytes);
  Status copyToHost(void* dst, DevicePtr src, size_t bytes);
  Expected<StreamHandle> createStream();
  Status destroyStream(StreamHandle s);
  Status synchronize(StreamHandle s = {});

  // do_bench: times `fn` (which enqueues device work on `stream`) with the harness that times
  // tuning candidates: one call to surface errors, a few timed calls to estimate its cost, warm-up
  // and measured run counts from the budgets, then per measured run: before_run (if given), the
  // cache flush, a device event, fn, a device event. The first error of fn / before_run / the
  // device is returned. On the simulated backend the times are the simulated kernels' costs.
  // Not for concurrent use with tuning on the same stream (their timings would overlap).
  Expected<BenchStats> benchmark(const std::function<Status()>& fn,
                                 const BenchSettings& settings = {}, StreamHandle stream = {},
                                 const std::function<Status()>& before_run = nullptr);

  // Simulated backend only: registers the host function that stands in for `entry`
  // (sim.hpp). kUnsupported on a GPU backend.
  Status registerSimKernel(const std::string& entry, SimKernelFns fns);

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  friend struct AutotunerAccess;  // the library's isolation worker wraps its own engine
  explicit Autotuner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktune
