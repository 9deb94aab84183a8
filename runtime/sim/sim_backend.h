// ktune simulated backend — a deterministic, CPU-only Backend for testing the engine.
//
// It never pretends to be a GPU: DeviceInfo.vendor is always Vendor::kSimulated, whatever limits
// the test describes (an H100-like or MI300X-like DeviceInfo is supplied by the caller; nothing is
// hard-coded here). Device memory is host memory behind fake device addresses; copies are
// bounds-checked (kInvalidArgument on overrun). Modules come from SimCompiler code objects
// (format "sim"); a function is a kernel registered by name with registerKernel(). A launch runs
// the kernel's optional host implementation and advances the stream's simulated clock by the
// kernel's cost (plus optional seeded noise); events record that clock, so elapsedMs() measures
// simulated device time exactly and reproducibly.
// Thread safety: every method may be called from several threads (one internal mutex).
#pragma once

#include <atomic>
#include <cstring>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/backend.h"

namespace ktune {

class SimBackend;

// What a simulated kernel sees at launch.
struct SimLaunch {
  Dim3 grid, block;
  size_t dynamic_shared = 0;
  void** args = nullptr;  // KernelArgs::data(): args[i] points at the i-th argument's bytes
  SimBackend* backend = nullptr;
  std::string entry;
  // -D defines that were compiled into the code object (sorted by name).
  const std::vector<std::pair<std::string, std::string>>* defines = nullptr;

  // Integer value of define `name`, or `fallback` when absent or not an integer.
  int64_t define(const std::string& name, int64_t fallback = 0) const;
  // Value of the i-th argument as T (the caller knows the kernel's signature).
  template <typename T>
  T arg(size_t i) const {
    T v;
    std::memcpy(&v, args[i], sizeof(T));
    return v;
  }
};

struct SimKernel {
  // Optional host implementation (reads/writes memory via backend->hostPtr). Its Status is the
  // launch's result: return DeviceFault/Timeout to inject faults. Called without the backend
  // mutex held, so it may call backend methods.
  std::function<Status(const SimLaunch&)> run;
  // Simulated device milliseconds of one launch; unset = SimOptions::default_cost_ms.
  std::function<double(const SimLaunch&)> cost;
  // Optional: decides whether a module holding this kernel loads (inject "config fails to load").
  std::function<Status(const std::vector<std::pair<std::string, std::string>>& defines)> on_load;
};

struct SimOptions {
  // The device to report. vendor is forced to kSimulated. Limits that are 0 are not checked.
  DeviceInfo device;
  // Relative noise (stddev as a fraction of the cost) added to every launch; 0 = exact.
  double noise = 0;
  uint64_t seed = 1;
  double default_cost_ms = 0.01;
  // Simulated bandwidth of memset/copy on a stream (bytes per ms); 0 = they take no time.
  double memory_bytes_per_ms = 0;
  // Identical devices reported by devices() (each `device`), each with its own default stream and
  // clock; setDevice picks the one the default stream means. Memory and modules are shared by all
  // (the engine's multi-device tests only need separate clocks). At least 1.
  int device_count = 1;
  // A device fault (kDeviceFault from a kernel) loses the context, as an illegal address does on
  // CUDA: checkError() no longer clears it and every later synchronize, launch, module load and
  // allocation fails with it. Off: the fault is reported once and cleared (a recoverable trap).
  bool faults_lose_context = false;
  // SMs per GPC, the unit a thread-block cluster must fit in (maxActiveClusters): each GPC holds
  // floor(its SMs x blocks per SM / cluster blocks) clusters, the last GPC the SMs left over.
  // 0: one GPC of all SMs.
  int sms_per_gpc = 0;
};

class SimBackend : public Backend {
 public:
  explicit SimBackend(SimOptions opts = {});
  ~SimBackend() override;

  // Registers (or replaces) the kernel that modules look up under `name`. Thread-safe.
  void registerKernel(const std::string& name, SimKernel k);
  // Host address behind a device pointer (interior pointers allowed); nullptr if not allocated.
  void* hostPtr(DevicePtr p);
  // Bytes from `p` to the end of its allocation; 0 if not allocated.
  size_t bytesAvailable(DevicePtr p);
  // Launches of `entry` so far (successful or not).
  int64_t launchCount(const std::string& entry) const;
  int64_t totalLaunches() const;
  // Launches of `entry` so far that asked for a programmatic dependent launch (launchWith with
  // kLaunchProgrammaticWait); the simulated device runs them as ordinary launches.
  int64_t programmaticLaunchCount(const std::string& entry) const;
  // memset8/memset32 calls that succeeded so far, and the bytes they wrote (what a test sees of
  // the benchmarker's L2 flush before each timed run).
  int64_t memsetCount() const;
  int64_t memsetBytes() const;
  // Simulated clock of a stream, ms (the default stream: the current device's).
  double streamClockMs(StreamHandle s = {});
  // Simulated clock of device `ordinal`'s default stream, ms (0 for an unknown ordinal): how much
  // simulated device time was spent on that device.
  double deviceClockMs(int ordinal) const;
  const SimOptions& options() const { return opts_; }
  // Stream capture, simulated (what cuStreamBeginCapture / cuStreamEndCapture do to a stream):
  // while any stream captures, alloc, free, copies to or from the host, synchronisations and
  // module loads from a thread not in relaxed mode (relaxCaptureMode) fail with kUnsupported and
  // count as capture violations, as CUDA's global capture mode refuses them.
  void setCapturing(StreamHandle s, bool on);
  int64_t captureViolations() const;
  Expected<bool> isCapturing(StreamHandle s) override;
  Status relaxCaptureMode() override;
  // Whether library kernels (a family's vendor candidates) are said to load lazily (off by default,
  // like a driver in eager mode): the engine then runs no vendor config inside a capture that has
  // not run outside one in this process.
  void setLazyLoading(bool on) { lazy_loading_ = on; }
  bool lazyLoading() override { return lazy_loading_; }

  Vendor vendor() const override { return Vendor::kSimulated; }
  std::string name() const override { return "sim"; }
  std::string version() const override { return "sim-1"; }
  Expected<std::vector<DeviceInfo>> devices() override;
  Status setDevice(int ordinal) override;

  Expected<DevicePtr> alloc(size_t bytes) override;
  Status free(DevicePtr p) override;
  Status copyToDevice(DevicePtr dst, const void* src, size_t bytes) override;
  Status copyToHost(void* dst, DevicePtr src, size_t bytes) override;
  Status copyDeviceToDevice(DevicePtr dst, DevicePtr src, size_t bytes,
                            StreamHandle s = {}) override;
  Status memset8(DevicePtr dst, uint8_t value, size_t bytes, StreamHandle s = {}) override;
  Status memset32(DevicePtr dst, uint32_t value, size_t count, StreamHandle s = {}) override;

  Expected<StreamHandle> createStream() override;
  Status destroyStream(StreamHandle s) override;
  Status synchronize(StreamHandle s = {}) override;
  Expected<EventHandle> createEvent() override;
  Status destroyEvent(EventHandle e) override;
  Status recordEvent(EventHandle e, StreamHandle s = {}) override;
  Status synchronizeEvent(EventHandle e) override;
  Expected<float> elapsedMs(EventHandle start, EventHandle end) override;

  Expected<ModuleHandle> loadModule(const std::string& image) override;
  Status unloadModule(ModuleHandle m) override;
  Expected<FunctionHandle> getFunction(ModuleHandle m, const std::string& name) override;
  Expected<FunctionAttributes> attributes(FunctionHandle f) override;
  Status setMaxDynamicShared(FunctionHandle f, int64_t bytes) override;
  Status launch(FunctionHandle f, Dim3 grid, Dim3 block, size_t dynamic_shared, void** args,
                StreamHandle s = {}) override;
  Status launchWith(FunctionHandle f, Dim3 grid, Dim3 block, size_t dynamic_shared, void** args,
                    StreamHandle s, unsigned flags) override;
  Expected<int> occupancyBlocksPerSm(FunctionHandle f, int block_threads,
                                     size_t dynamic_shared) override;
  // From occupancyBlocksPerSm and SimOptions::sms_per_gpc; clusters of more than 8 blocks (the
  // portable limit) get 0.
  Expected<int> maxActiveClusters(FunctionHandle f, Dim3 cluster, int block_threads,
                                  size_t dynamic_shared) override;
  Status checkError() override;

 private:
  struct Stream;
  struct Event;
  struct Module;
  struct Function;
  Stream* stream(StreamHandle s);
  Status rangeCheck(DevicePtr p, size_t bytes, const char* what, unsigned char** host);
  void advance(Stream* st, double ms);

  SimOptions opts_;
  // Ok, or the fault that lost the context (SimOptions::faults_lose_context).
  Status lostContext() const;
  mutable std::mutex mu_;
  std::map<DevicePtr, std::vector<unsigned char>> mem_;  // base address -> bytes
  DevicePtr next_addr_;
  std::map<std::string, std::shared_ptr<SimKernel>> kernels_;
  std::map<std::string, int64_t> launch_counts_;
  std::map<std::string, int64_t> programmatic_counts_;
  int64_t total_launches_ = 0;
  int64_t memset_count_ = 0, memset_bytes_ = 0;
  // One default stream per device; current_ is the device setDevice chose (one per backend, not
  // per thread: the engine benchmarks from one thread at a time).
  std::vector<std::unique_ptr<Stream>> default_streams_;
  int current_ = 0;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<Function>> functions_;  // freed with the backend
  // Loaded modules; like a driver context, the backend frees what was not unloaded.
  std::vector<std::unique_ptr<Module>> modules_;
  Status sticky_;
  Status lost_;  // the fault that lost the context (faults_lose_context)
  std::vector<void*> capturing_;  // streams capturing now (guarded by mu_)
  int64_t capture_violations_ = 0;
  std::atomic<bool> lazy_loading_{false};
  Status captureGuard(const char* what);
};

// Parsed form of a "sim" code object (written by compiler/sim/sim_compiler.cc).
struct SimImage {
  std::string entry, arch;
  std::vector<std::pair<std::string, std::string>> defines;
  int registers = 0;
  int64_t shared_bytes = 0, local_bytes = 0;
  int max_threads = 0;
};
// kInvalidArgument when `binary` is not a sim code object (e.g. a cubin).
Expected<SimImage> parseSimImage(const std::string& binary);

// Convenience factory (used by openBackend("sim") when the runtime engineer wires it).
std::unique_ptr<SimBackend> makeSimBackend(SimOptions opts = {});

}  // namespace ktune
