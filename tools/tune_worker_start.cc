#include "tools/tune_worker_start.h"

#include <chrono>
#include <cstdlib>
#include <string>

#include "autotune/isolation.h"
#include "autotune/worker_prestart.h"
#include "base/clock.h"
#include "base/fs.h"
#include "tools/tune_output.h"

namespace ktune::cli {

Expected<WorkerStart> workerStartFromEnv() {
  const char* v = std::getenv("KTUNE_WORKER_START");
  const std::string s = v ? v : "";
  if (s.empty() || s == "early") return WorkerStart::kEarly;
  if (s == "tuner") return WorkerStart::kTuner;
  if (s == "context") return WorkerStart::kContext;
  return Status::InvalidArgument("KTUNE_WORKER_START='" + s +
                                 "': expected early, tuner or context");
}

void prestartWorkerIfIsolating(const Options& opts, const TuneRequest& t) {
  const bool isolate = opts.isolate_explicit ? opts.isolate : !t.args.has("--no-isolate");
  if (!isolate || opts.backend == "sim" || t.args.has("--no-gpu") || t.args.has("--devices")) return;
  if (!pathExists("/dev/nvidiactl") && !pathExists("/dev/kfd")) return;
  const auto t0 = std::chrono::steady_clock::now();
  auto wl = earlyWorkerLaunch(opts);
  if (wl.ok()) (void)prestartWorkerEarly(std::move(*wl), IsolationOptions{});
  noteProcessMs("worker_spawn_ms", msSince(t0));
}

}  // namespace ktune::cli
