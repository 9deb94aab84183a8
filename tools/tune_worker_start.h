#pragma once
// `ktune tune`'s isolation worker start and the tuning process's own driver start (internal to the
// CLI). The worker and this process each start the driver (cuInit, the primary context), cuBLASLt
// and a tuner; on one GPU the two contexts' creation contends (bench/NOTES.md, issue 34).
#include "base/options.h"
#include "base/status.h"
#include "tools/tune_request.h"

namespace ktune::cli {

// Starts the isolation worker before this process opens its GPU, so the two start-ups overlap
// (worker_prestart.h); the tuner made later takes it. Only where the tuner will isolate on one
// real GPU and a GPU device node exists (a CPU-only machine analyses without a GPU: no worker).
// The worker is spawned with CUDA_DEVICE_MAX_CONNECTIONS=1 (one hardware work queue: it times on
// one stream) unless the environment sets that variable; Options::worker_connections
// (KTUNE_WORKER_CONNECTIONS) = N > 0 sets N, 0 leaves the environment's. This process's own
// environment is as before once it has spawned.
void prestartWorkerIfIsolating(const Options& opts, const TuneRequest& t);

// This process's CUDA_DEVICE_MAX_CONNECTIONS (the hardware work queues its context is made with),
// set after the early worker was started (which keeps the environment's) and before the driver
// starts: 1 where the worker times the candidates (this process isolates on a real GPU, as
// prestartWorkerIfIsolating decides) and the environment sets none — its context then took ~100
// ms less to make beside the worker's, and the worker's ~50 ms less beside it (bench/NOTES.md,
// issue 34); workers this process starts later inherit it (they time on one stream).
// Options::tuner_connections (KTUNE_TUNER_CONNECTIONS) = N > 0 sets N in any case, 0 leaves the
// environment's.
void limitTunerConnections(const Options& opts, const TuneRequest& t);

// Whether `ktune tune` shows the driver device 0 alone (CUDA_VISIBLE_DEVICES=0, for this process
// and the workers it spawns), set before the driver starts: a run on one GPU (device 0, no
// --devices, --no-gpu, simulated or HIP backend) of a CUDA host whose environment sets no
// CUDA_VISIBLE_DEVICES. cuInit then opens one GPU instead of every GPU of the host: 0.44 s over
// two, 0.22 s with one visible, on the critical path of a cold and of a warm run
// (bench/NOTES.md, issue 34). Device 0 stays device 0 (the variable's indices follow the
// driver's order); another device is left as it is (its ordinal would change).
bool showsOneGpu(const Options& opts, const TuneRequest& t, bool env_sets_visible, bool cuda_host);
void limitVisibleDevices(const Options& opts, const TuneRequest& t);

}  // namespace ktune::cli
