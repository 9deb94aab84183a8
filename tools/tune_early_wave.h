// `ktune tune gemm`'s early first wave: the first key's first compiles started before the driver
// has started. The wave's configs follow from the device's arch, limits and SM count, which the
// tuner reads after cuInit (100-190 ms on a host with one GPU, 370-500 ms with two:
// bench/NOTES.md), while NVML answers the compute capability, the CUDA core count and the name in
// ~20 ms — when no cuInit runs beside it: NVML waits for one (on a one-GPU host it answered 9 ms
// after the tuner's cuInit ended), so it is asked first, on the caller's thread, before the worker
// and the tuner start the driver. A thread then builds an engine of its own over the predicted
// device (the arch's fixed limits, the SMs from the cores; a device that runs nothing) on the
// tuner's code-object store and compiles the first key's first wave there (GemmOp::precompile). The
// tuner's own first wave (GemmLookahead::startFirst) finds those objects in the store or joins
// their compiles (the store runs one compile per object in the process, over every store on its
// directory). The prediction only chooses what to compile early: the tuning run uses the driver's
// device, so a wrong prediction (another GPU, a MIG slice) costs compiles, never a result; the
// timeline says whether it held. Only into an empty store (a cold run). On by default
// (Options::early_wave; KTUNE_EARLY_WAVE=0 turns it off; bench/NOTES.md, issue 34).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/device.h"
#include "base/options.h"
#include "compiler/compiler.h"
#include "ops/gemm.h"

namespace ktune::cli {

// One GPU as NVML describes it.
struct NvmlGpu {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  unsigned cores = 0;  // CUDA cores
};

// Every GPU NVML lists (libnvidia-ml.so.1, loaded here), in NVML's order; empty without NVML.
std::vector<NvmlGpu> nvmlGpus();

// The device the driver will report as `ordinal`, from NVML's GPUs: only where every GPU is alike
// (NVML's order is not the driver's under CUDA_VISIBLE_DEVICES or CUDA_DEVICE_ORDER) and of a
// compute capability whose limits are fixed (9.0: Hopper, 128 cores per SM); nullopt otherwise.
// The fields the driver alone knows (L2 size, memory, clocks, bus id) stay 0 / empty.
std::optional<DeviceInfo> predictDevice(const std::vector<NvmlGpu>& gpus, int ordinal);

// The first field a first wave depends on where `predicted` and `real` differ, "" when none does.
std::string predictionMiss(const DeviceInfo& predicted, const DeviceInfo& real);

class EarlyWave {
 public:
  EarlyWave() = default;
  ~EarlyWave();  // waits for the wave
  EarlyWave(const EarlyWave&) = delete;
  EarlyWave& operator=(const EarlyWave&) = delete;

  // Compiles `shape`'s first wave on a thread: an engine with `opts` (the tuner's: its store, its
  // compile threads and processes) over `device`, a GemmOp with `gopts`. With `skip_recorded`, a
  // key the database holds (the run will answer it from there) compiles nothing. `compiler`:
  // the engine's compiler (null: the arch's own, as the tuner's). Once only.
  void start(const Options& opts, const DeviceInfo& device, const gemm::GemmShape& shape,
             GemmOp::OpOptions gopts, bool skip_recorded, std::shared_ptr<Compiler> compiler = {});
  // Predicts the device from NVML (on this thread, ~20 ms: call it before the driver starts); go()
  // then start()s the wave, or does nothing where there is no prediction. Between the two the
  // caller sets its environment (the worker's spawn, CUDA_DEVICE_MAX_CONNECTIONS,
  // tune_worker_start.h): no thread of the wave reads the environment while it changes.
  void predictFromNvml(const Options& opts, const gemm::GemmShape& shape, GemmOp::OpOptions gopts,
                       bool skip_recorded);
  void go();
  bool started() const { return thread_.joinable() || done_; }
  // Waits for the wave; the code objects it compiled (store misses; 0 if it failed or skipped).
  size_t awaitCompiled();
  // Marks on the timeline whether the prediction held for the driver's device (nothing while
  // NVML has not answered yet).
  void check(const DeviceInfo& real) const;

 private:
  void run(const Options& opts, const DeviceInfo& device, const gemm::GemmShape& shape,
           const GemmOp::OpOptions& gopts, bool skip_recorded,
           const std::shared_ptr<Compiler>& compiler);
  std::thread thread_;
  bool done_ = false;
  mutable std::mutex mu_;
  std::optional<DeviceInfo> predicted_;  // under mu_
  std::function<void()> pending_;         // predictFromNvml's start, for go()
  std::atomic<size_t> compiled_{0};
  std::shared_ptr<void> keep_;  // the wave's GemmOp and engine: its compile workers stay up
};

// Whether the code-object store at `dir` holds any object (a shard directory with entries).
bool storeHoldsObjects(const std::string& dir);

struct TuneRequest;
// `ktune tune gemm`'s early wave for the request's first key, with the tuner's options, where the
// request tunes GEMM keys on a GPU of this process (not the simulated device, a remote cache,
// --no-gpu, --no-lookahead or --devices) into an empty store and Options::early_wave is on. Call
// it before the driver starts (NVML on the caller's thread); the wave starts on its own thread
// at wave.go(), once the caller's environment is set.
void startEarlyWave(EarlyWave& wave, const Options& opts, const TuneRequest& t);

}  // namespace ktune::cli
