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
void prestartWorkerIfIsolating(const Options& opts, const TuneRequest& t);

// KTUNE_TUNER_CONNECTIONS=N (1..32; a measurement knob): this process's CUDA_DEVICE_MAX_CONNECTIONS
// (the hardware work queues its context creates), set after the early worker was started (which
// keeps the environment's) and before the driver starts. Unset: nothing changes. Any other value
// is an error.
Status limitTunerConnections();

}  // namespace ktune::cli
