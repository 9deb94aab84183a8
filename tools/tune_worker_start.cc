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

namespace {
bool isolatesOnGpu(const Options& opts, const TuneRequest& t) {
  const bool isolate = opts.isolate_explicit ? opts.isolate : !t.args.has("--no-isolate");
  if (!isolate || opts.backend == "sim" || t.args.has("--no-gpu") || t.args.has("--devices"))
    return false;
  return pathExists("/dev/nvidiactl") || pathExists("/dev/kfd");
}
}  // namespace

void limitTunerConnections(const Options& opts, const TuneRequest& t) {
  if (opts.tuner_connections > 0) {
    ::setenv("CUDA_DEVICE_MAX_CONNECTIONS", std::to_string(opts.tuner_connections).c_str(), 1);
  } else if (opts.tuner_connections < 0 && isolatesOnGpu(opts, t) &&
             !std::getenv("CUDA_DEVICE_MAX_CONNECTIONS")) {
    ::setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 1);
  }
}

bool showsOneGpu(const Options& opts, const TuneRequest& t, bool env_sets_visible, bool cuda_host) {
  return cuda_host && !env_sets_visible && opts.device == 0 && opts.backend != "sim" &&
         opts.backend != "hip" && !t.args.has("--no-gpu") && !t.args.has("--devices");
}

void limitVisibleDevices(const Options& opts, const TuneRequest& t) {
  if (showsOneGpu(opts, t, std::getenv("CUDA_VISIBLE_DEVICES") != nullptr,
                  pathExists("/dev/nvidiactl")))
    ::setenv("CUDA_VISIBLE_DEVICES", "0", 1);
}

namespace {
// The early worker's CUDA_DEVICE_MAX_CONNECTIONS (Options::worker_connections), set in this
// process's environment for its spawn and restored after it; limitTunerConnections then sets
// this process's own. Nothing else runs yet: no thread reads the environment meanwhile.
class WorkerConnections {
 public:
  explicit WorkerConnections(const Options& opts) {
    const char* cur = std::getenv(kVar);
    if (cur) saved_ = cur;
    had_ = cur != nullptr;
    if (opts.worker_connections > 0) set(std::to_string(opts.worker_connections));
    else if (opts.worker_connections < 0 && !had_) set("1");
  }
  ~WorkerConnections() {
    if (!changed_) return;
    if (had_) ::setenv(kVar, saved_.c_str(), 1);
    else ::unsetenv(kVar);
  }

 private:
  void set(const std::string& v) {
    ::setenv(kVar, v.c_str(), 1);
    changed_ = true;
  }
  static constexpr const char* kVar = "CUDA_DEVICE_MAX_CONNECTIONS";
  std::string saved_;
  bool had_ = false, changed_ = false;
};
}  // namespace

void prestartWorkerIfIsolating(const Options& opts, const TuneRequest& t) {
  if (!isolatesOnGpu(opts, t)) return;
  const auto t0 = std::chrono::steady_clock::now();
  auto wl = earlyWorkerLaunch(opts);
  if (wl.ok()) {
    WorkerConnections connections(opts);  // for the spawn only
    (void)prestartWorkerEarly(std::move(*wl), IsolationOptions{});
  }
  noteProcessMs("worker_spawn_ms", msSince(t0));
}

}  // namespace ktune::cli
