// Starting the isolation worker before this process opens its own GPU (internal to autotune/;
// the CLI's tune command uses it). A tuning process and its worker each pay the same start-up:
// exec, the driver's context, the vendor library, their tuner. Started one after the other (the
// worker once the parent's tuner exists) they add up; started together they overlap. The next
// TunerEngine that wants a worker with the same launch and watchdog takes the one started here.
#pragma once

#include <memory>

#include "autotune/isolation.h"
#include "base/options.h"

namespace ktune {

// The launch a tuner made from `opts` would use for its worker on opts.device, before any
// backend is open: the backend is opts.backend ("auto" is resolved by the worker as the tuner
// will resolve it), the cache the default one when opts.cache_dir is empty. kNotFound when there
// is no worker executable.
Expected<WorkerLaunch> earlyWorkerLaunch(const Options& opts);

// Starts a worker for `launch` now, without waiting for it (one at a time per process: a second
// call stops the first one's worker unless it was taken).
Status prestartWorkerEarly(WorkerLaunch launch, IsolationOptions iso);

// The worker prestartWorkerEarly started, when its launch matches `launch` (a backend of "auto"
// matches any) and its watchdog settings `iso`; null otherwise (a started one that does not
// match stays until the next prestart or the process ends: it may still be asked for).
std::unique_ptr<WorkerSupervisor> takeEarlyWorker(const WorkerLaunch& launch,
                                                  const IsolationOptions& iso);

// Stops the worker prestartWorkerEarly started, unless a tuner took it; true when there was one.
// A GPU in exclusive-process mode admits one context: when this process cannot open the GPU
// while an early worker may hold it, the caller stops it and tries again (its tuner then starts
// a worker of its own, which cannot open the GPU either, and benchmarks in process, as before).
bool stopEarlyWorker();

}  // namespace ktune
