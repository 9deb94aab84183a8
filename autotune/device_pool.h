// Multi-device tuning on one host (internal to the engine): the candidates of a tuning run are
// spread over several devices of the same model (Options::devices), each device taking the next
// candidate as soon as it is free.
//
//   with isolation  one ktune-worker per device (WorkerSupervisor with --device d), each driven by
//                   its own long-lived thread of the pool (a worker dies with the thread that
//                   started it, PR_SET_PDEATHSIG), one candidate per request with the best median
//                   so far, so early rejection works across devices;
//   in process      only the simulated backend (its modules and memory are shared by its devices):
//                   the devices take turns in this thread, the next candidate going to the device
//                   whose measured busy time is lowest — the order in which free devices would
//                   pick work, computed from device time, so a test's assignment is reproducible.
//
// Besides the spread candidates, the lanes take tasks of the run that need one worker: building
// the key's problem in every worker while the candidates compile (prepare), and whole worker
// batches (runBatches: the finalists' rounds, on the tuner's own device first), so no extra worker
// process starts for them.
//
// Which device ran a candidate is its CandidateResult::device; per-device counts and busy times go
// to TuneReport::devices, the wall time the lanes worked to TuneReport::devices_wall_ms. The
// winner is chosen as on one device: every candidate is measured whole on one device, and only
// the device it ran on differs.
//
// A job (one batch of the run) ends when all its candidates are done: with the pipeline, batches
// that hold fewer candidates than devices (a cold store, compiles trickling in) leave devices idle
// until the next batch.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "autotune/isolation.h"
#include "autotune/run_candidate.h"
#include "base/device.h"
#include "base/status.h"

namespace ktune {

// "all" = every device of the same model (name and arch) as `primary`; "0,2" = those ordinals.
// kInvalidArgument for a malformed list, an ordinal that is not on the backend, a device of another
// model, or a list without `primary` (the tuner's own device, where vendor candidates and the
// final launch run).
Expected<std::vector<int>> parseDeviceList(const std::string& text,
                                           const std::vector<DeviceInfo>& devs, int primary);
// The same checks for a list given in code (Options::devices).
Status checkDeviceList(const std::vector<int>& list, const std::vector<DeviceInfo>& devs,
                       int primary);

namespace detail {

class TunerEngine;

class DevicePool {
 public:
  // `devices` as checked by checkDeviceList (more than one).
  DevicePool(TunerEngine& e, std::vector<int> devices);
  // Stops the lane threads; each closes its worker first.
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  const std::vector<int>& devices() const { return devices_; }
  // Whether the devices can be driven from this process (the simulated backend).
  bool inProcess() const;
  // Starts the lane threads and their workers without waiting for them (Engine::prestartWorker).
  void prestart();
  // Benchmarks b's candidates through one worker per device. false with *why when no worker could
  // benchmark any of them (the caller decides, as for one worker); candidates a dead worker left
  // fail with kUnavailable once some others ran. Called under the engine's benchmark lock.
  bool benchWorkers(IsolatedBatch& b, std::string* why);
  // Asks every lane's worker to build the problem of `family` from `args_json` now (no wait), so
  // that runs while the candidates compile instead of on each lane's first candidate.
  void prepare(const std::string& family, const std::string& args_json);
  // Runs batches[j] whole in the worker of lane (primary + j) mod N, all lanes at once, and
  // returns when every batch is done: the first error, if any. on_result(j, k, result) is called
  // for candidate k of batch j as it comes, one call at a time.
  using BatchResult = std::function<void(size_t batch, size_t k, const CandidateResult&)>;
  Status runBatches(const std::vector<WorkerBatch>& batches, const BatchResult& on_result);
  // Benchmarks b's candidates in this process, the devices taking turns (inProcess() only;
  // kUnsupported otherwise, nothing done). Called under the engine's benchmark lock.
  Status benchInProcess(IsolatedBatch& b);

 private:
  struct Shared;
  struct Lane;
  bool startLanes(std::string* why);  // once; false when there is no worker executable
  void laneLoop(Lane& lane);
  // The candidates of the current job, taken one at a time until none is left (sh.mu held by l).
  void laneJob(Lane& lane, std::unique_lock<std::mutex>& l);
  // Records candidate i's result (from device `device`) into the run (under shared_->mu when
  // lanes run).
  void finish(IsolatedBatch& b, size_t i, int device, double busy_ms);
  TunerEngine& e_;
  std::vector<int> devices_;
  std::unique_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Lane>> lanes_;
};

}  // namespace detail
}  // namespace ktune
