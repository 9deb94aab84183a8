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

Status limitTunerConnections() {
  const char* v = std::getenv("KTUNE_TUNER_CONNECTIONS");
  if (!v) return Status::Ok();
  const std::string s = v;
  char* end = nullptr;
  const long n = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || n < 1 || n > 32)
    return Status::InvalidArgument("KTUNE_TUNER_CONNECTIONS='" + s + "': expected 1 to 32");
  ::setenv("CUDA_DEVICE_MAX_CONNECTIONS", s.c_str(), 1);
  return Status::Ok();
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
