#pragma once
// When `ktune tune` starts its isolation worker (internal to the CLI). The worker and this process
// each start the driver (cuInit, the primary context), cuBLASLt and a tuner; on one GPU the two
// starts contend (bench/NOTES.md, issue 34). KTUNE_WORKER_START picks the order, a measurement
// knob: "early" (the default: before this process opens its GPU, worker_prestart.h), "tuner"
// (once this process's tuner exists: after its cuInit, beside its context) or "context" (once
// this process's context exists, for a GEMM run; other runs start it as "tuner" does).
#include "base/options.h"
#include "base/status.h"
#include "tools/tune_request.h"

namespace ktune::cli {

enum class WorkerStart { kEarly, kTuner, kContext };

// KTUNE_WORKER_START's value (unset or empty: kEarly); any other value is an error naming the
// three.
Expected<WorkerStart> workerStartFromEnv();

// Starts the isolation worker before this process opens its GPU, so the two start-ups overlap
// (worker_prestart.h); the tuner made later takes it. Only where the tuner will isolate on one
// real GPU and a GPU device node exists (a CPU-only machine analyses without a GPU: no worker).
void prestartWorkerIfIsolating(const Options& opts, const TuneRequest& t);

}  // namespace ktune::cli
