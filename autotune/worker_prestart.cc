#include "autotune/worker_prestart.h"

#include <mutex>
#include <utility>

namespace ktune {

namespace {

struct Early {
  WorkerLaunch launch;
  IsolationOptions iso;
  std::unique_ptr<WorkerSupervisor> worker;
};

std::mutex mu;
Early& early() {
  static Early* e = new Early;  // never destroyed: a worker left untaken dies with the process
  return *e;
}

bool sameWatchdog(const IsolationOptions& a, const IsolationOptions& b) {
  return a.timeout_floor_ms == b.timeout_floor_ms && a.timeout_factor == b.timeout_factor &&
         a.startup_timeout_ms == b.startup_timeout_ms;
}

}  // namespace

Expected<WorkerLaunch> earlyWorkerLaunch(const Options& opts) {
  KTUNE_ASSIGN_OR_RETURN(std::string exe, findWorkerExecutable(opts.worker_path));
  WorkerLaunch wl;
  wl.executable = std::move(exe);
  wl.cache_dir = opts.cache_dir.empty() ? Options::defaultCacheDir() : opts.cache_dir;
  wl.backend = opts.backend.empty() ? "auto" : opts.backend;
  wl.device = opts.device;
  wl.plugins = opts.worker_plugins;
  return wl;
}

Status prestartWorkerEarly(WorkerLaunch launch, IsolationOptions iso) {
  auto w = std::make_unique<WorkerSupervisor>(launch, iso);
  KTUNE_RETURN_IF_ERROR(w->prestart());
  std::lock_guard<std::mutex> l(mu);
  early() = Early{std::move(launch), iso, std::move(w)};
  return Status::Ok();
}

std::unique_ptr<WorkerSupervisor> takeEarlyWorker(const WorkerLaunch& launch,
                                                  const IsolationOptions& iso) {
  std::lock_guard<std::mutex> l(mu);
  Early& e = early();
  if (!e.worker) return nullptr;
  const WorkerLaunch& s = e.launch;
  const bool match = s.executable == launch.executable && s.cache_dir == launch.cache_dir &&
                     (s.backend == launch.backend || s.backend == "auto") &&
                     s.device == launch.device && s.plugins == launch.plugins &&
                     sameWatchdog(e.iso, iso);
  if (!match) return nullptr;
  return std::move(e.worker);
}

bool stopEarlyWorker() {
  std::unique_ptr<WorkerSupervisor> w;
  {
    std::lock_guard<std::mutex> l(mu);
    w = std::move(early().worker);
  }
  return w != nullptr;  // its destructor ends the process (EOF, then SIGKILL) and reaps it
}

}  // namespace ktune
