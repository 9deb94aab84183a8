#include "autotune/device_pool.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "autotune/engine.h"
#include "autotune/partial_record.h"
#include "base/clock.h"

namespace ktune {

Status checkDeviceList(const std::vector<int>& list, const std::vector<DeviceInfo>& devs,
                       int primary) {
  if (primary < 0 || primary >= int(devs.size()))
    return Status::InvalidArgument("devices: the tuner's device " + std::to_string(primary) +
                                   " is not on the backend");
  std::set<int> seen;
  for (int d : list) {
    if (d < 0 || d >= int(devs.size()))
      return Status::InvalidArgument("devices: no device " + std::to_string(d) + " (the backend has " +
                                     std::to_string(devs.size()) + ")");
    if (!seen.insert(d).second)
      return Status::InvalidArgument("devices: device " + std::to_string(d) + " listed twice");
    const DeviceInfo &a = devs[size_t(d)], &p = devs[size_t(primary)];
    if (a.name != p.name || a.arch != p.arch)
      return Status::InvalidArgument("devices: device " + std::to_string(d) + " (" + a.name + ", " +
                                     a.arch + ") is not the same model as device " +
                                     std::to_string(primary) + " (" + p.name + ", " + p.arch +
                                     "): one winner per key must hold for every device");
  }
  if (!list.empty() && !seen.count(primary))
    return Status::InvalidArgument("devices: the list must include the tuner's own device " +
                                   std::to_string(primary));
  return Status::Ok();
}

Expected<std::vector<int>> parseDeviceList(const std::string& text,
                                           const std::vector<DeviceInfo>& devs, int primary) {
  std::vector<int> out;
  if (text == "all") {
    if (primary < 0 || primary >= int(devs.size()))
      return Status::InvalidArgument("devices: the tuner's device is not on the backend");
    for (size_t d = 0; d < devs.size(); ++d) {
      if (devs[d].name == devs[size_t(primary)].name && devs[d].arch == devs[size_t(primary)].arch)
        out.push_back(int(d));
    }
    return out;
  }
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos)
      return Status::InvalidArgument("--devices '" + text + "': expected all or ordinals like 0,1");
    out.push_back(std::stoi(item));
    pos = comma + 1;
  }
  KTUNE_RETURN_IF_ERROR(checkDeviceList(out, devs, primary));
  return out;
}

namespace detail {

using Clock = std::chrono::steady_clock;


// State shared by the caller's thread and the lane threads, under mu.
struct DevicePool::Shared {
  std::mutex mu;
  std::condition_variable work_cv;  // a job started, a candidate came back, or stop
  std::condition_variable idle_cv;  // a lane finished its part of the job
  bool stop = false;
  uint64_t generation = 0;          // one per job
  IsolatedBatch* job = nullptr;
  std::deque<size_t> queue;         // candidates of the job not yet taken
  int in_flight = 0;                // candidates a lane is running now
  int working = 0;                  // lanes not yet done with the job
  std::string why;                  // the last worker failure
  std::string args_json;            // the job's problem (the family's args_json, made once)
};

struct DevicePool::Lane {
  int device = 0;
  std::thread thread;
  std::unique_ptr<WorkerSupervisor> worker;  // created, used and destroyed in `thread`
  bool dead = false;                         // its worker cannot be used (not restarted)
  uint64_t seen = 0;
  // Run by `thread` before it looks at a job (prepare, runBatches); under Shared::mu.
  std::deque<std::function<void(WorkerSupervisor&)>> tasks;
};

DevicePool::DevicePool(TunerEngine& e, std::vector<int> devices)
    : e_(e), devices_(std::move(devices)), shared_(std::make_unique<Shared>()) {}

DevicePool::~DevicePool() {
  {
    std::lock_guard<std::mutex> l(shared_->mu);
    shared_->stop = true;
  }
  shared_->work_cv.notify_all();
  for (auto& lane : lanes_) lane->thread.join();
}

bool DevicePool::inProcess() const { return e_.runtime().vendor() == Vendor::kSimulated; }

void DevicePool::finish(IsolatedBatch& b, size_t i, int device, double busy_ms) {
  Cand& c = b.cands[i];
  c.r.device = device;
  if (c.r.status != Code::kOk) c.live = false;
  if (c.r.status == Code::kOk && c.r.stats.runs > 0 && (*b.best <= 0 || c.r.stats.median_ms < *b.best))
    *b.best = c.r.stats.median_ms;
  (*b.done)[i] = true;
  recordPartial(e_, b.fs, b.key, c.r, b.write_reported);
  c.recorded = true;
  if (!b.rep) return;
  for (auto& d : b.rep->devices) {
    if (d.device != device) continue;
    ++d.candidates;
    d.busy_ms += busy_ms;
  }
}

// Makes sure b.rep->devices lists every device (busy times accumulate over a key's batches).
static void addShares(IsolatedBatch& b, const std::vector<int>& devices) {
  if (!b.rep || !b.rep->devices.empty()) return;
  for (int d : devices) b.rep->devices.push_back({d, 0, 0.0});
}

Status DevicePool::benchInProcess(IsolatedBatch& b) {
  if (!inProcess())
    return Status::Unsupported("several devices in one process: only the simulated backend");
  addShares(b, devices_);
  const auto t0 = Clock::now();
  KTUNE_ASSIGN_OR_RETURN(EventHandle e0, e_.runtime().createEvent());
  auto e1 = e_.runtime().createEvent();
  if (!e1.ok()) {
    (void)e_.runtime().destroyEvent(e0);
    return e1.status();
  }
  for (size_t i : b.todo) {
    if ((*b.done)[i]) continue;
    size_t lane = 0;  // the device that has been busy least so far would be free first
    for (size_t k = 1; k < devices_.size(); ++k)
      if (b.rep && b.rep->devices[k].busy_ms < b.rep->devices[lane].busy_ms) lane = k;
    Cand& c = b.cands[i];
    e_.progress({b.fs.f.name, b.key, "bench", ++*b.bench_index, b.total, c.r.config});
    Status st = e_.runtime().setDevice(devices_[lane]);
    if (st.ok()) st = e_.runtime().recordEvent(e0);
    if (!st.ok()) {
      fail(c, st);
    } else {
      e_.benchOne(b.fs.f, b.p, c, b.bench ? *b.bench : e_.engineOptions().bench, *b.best, {}, b.rep);
    }
    float ms = 0;
    if (st.ok() && e_.runtime().recordEvent(*e1).ok() && e_.runtime().synchronizeEvent(*e1).ok()) {
      auto t = e_.runtime().elapsedMs(e0, *e1);
      if (t.ok()) ms = *t;
    }
    finish(b, i, devices_[lane], ms);
  }
  (void)e_.runtime().destroyEvent(e0);
  (void)e_.runtime().destroyEvent(*e1);
  if (b.rep) b.rep->devices_wall_ms += msSince(t0);
  return e_.runtime().setDevice(e_.options().device);
}

void DevicePool::laneLoop(Lane& lane) {
  Shared& sh = *shared_;
  // Start-up (process, device context) overlaps the compiles; failures show in the first run().
  (void)lane.worker->prestart();
  std::unique_lock<std::mutex> l(sh.mu);
  for (;;) {
    sh.work_cv.wait(l, [&] {
      return sh.stop || !lane.tasks.empty() || lane.seen != sh.generation;
    });
    if (sh.stop) break;
    if (!lane.tasks.empty()) {
      auto task = std::move(lane.tasks.front());
      lane.tasks.pop_front();
      l.unlock();
      task(*lane.worker);
      l.lock();
      sh.idle_cv.notify_all();
      continue;
    }
    lane.seen = sh.generation;
    laneJob(lane, l);
    --sh.working;
    sh.idle_cv.notify_all();
  }
  l.unlock();
  lane.worker.reset();  // closes the worker from the thread that started it
}

void DevicePool::laneJob(Lane& lane, std::unique_lock<std::mutex>& l) {
  Shared& sh = *shared_;
  IsolatedBatch& b = *sh.job;
  for (;;) {
    // Wait while others run the last candidates: a worker that dies gives its candidate back.
    sh.work_cv.wait(l, [&] { return sh.stop || !sh.queue.empty() || sh.in_flight == 0; });
    if (sh.stop || lane.dead || sh.queue.empty()) return;
    const size_t i = sh.queue.front();
    sh.queue.pop_front();
    if ((*b.done)[i]) continue;
    const Cand& c = b.cands[i];
    WorkerBatch wb;
    wb.family = b.fs.f.name;
    wb.key = b.key;
    wb.args_json = sh.args_json;
    wb.bench = b.bench ? *b.bench : e_.engineOptions().bench;
    wb.best_ms = *b.best;
    wb.candidates.push_back({c.r.config, c.vendor_source.empty() ? "jit" : c.vendor_source,
                             c.r.code_object_key});
    e_.progress({b.fs.f.name, b.key, "bench", ++*b.bench_index, b.total, c.r.config});
    ++sh.in_flight;
    l.unlock();
    const auto t0 = Clock::now();
    std::optional<CandidateResult> got;
    Status st = lane.worker->run(wb, [&](size_t, const CandidateResult& r) { got = r; });
    const double ms = msSince(t0);
    l.lock();
    --sh.in_flight;
    if (got) {
      Cand& mc = b.cands[i];
      const std::string co_key = mc.r.code_object_key;
      mc.r = *got;
      mc.r.code_object_key = co_key;
      finish(b, i, lane.device, ms);
    } else {
      lane.dead = true;  // it could not start or serve this family: the others take over
      sh.why = "device " + std::to_string(lane.device) + ": " + st.toString();
      sh.queue.push_front(i);
    }
    sh.work_cv.notify_all();
  }
}

bool DevicePool::startLanes(std::string* why) {
  if (!lanes_.empty()) return true;
  for (int d : devices_) {
    auto wl = e_.workerLaunch(d);
    if (!wl.ok()) {
      lanes_.clear();
      *why = wl.status().toString();
      return false;
    }
    auto lane = std::make_unique<Lane>();
    lane->device = d;
    lane->worker = std::make_unique<WorkerSupervisor>(std::move(*wl), e_.engineOptions().isolation);
    lanes_.push_back(std::move(lane));
  }
  for (auto& lane : lanes_) lane->thread = std::thread([this, p = lane.get()] { laneLoop(*p); });
  return true;
}

void DevicePool::prestart() {
  std::string ignored;  // reported by the first benchWorkers
  (void)startLanes(&ignored);
}

bool DevicePool::benchWorkers(IsolatedBatch& b, std::string* why) {
  Shared& sh = *shared_;
  if (!startLanes(why)) return false;
  addShares(b, devices_);
  const auto t0 = Clock::now();
  std::string args = b.fs.f.args_json(b.p);
  std::unique_lock<std::mutex> l(sh.mu);
  sh.queue.clear();
  for (size_t i : b.todo)
    if (!(*b.done)[i]) sh.queue.push_back(i);
  if (sh.queue.empty()) return true;
  sh.args_json = std::move(args);
  sh.job = &b;
  sh.working = int(lanes_.size());
  ++sh.generation;
  sh.work_cv.notify_all();
  sh.idle_cv.wait(l, [&] { return sh.working == 0; });
  sh.job = nullptr;
  sh.queue.clear();
  if (b.rep) b.rep->devices_wall_ms += msSince(t0);
  bool any_done = false;
  for (size_t i : b.todo) any_done = any_done || (*b.done)[i];
  if (!any_done) {
    *why = sh.why;
    return false;
  }
  for (size_t i : b.todo) {
    if ((*b.done)[i]) continue;
    fail(b.cands[i], Status::Unavailable("isolated benchmarking failed: " + sh.why));
    (*b.done)[i] = true;
  }
  return true;
}

void DevicePool::prepare(const std::string& family, const std::string& args_json) {
  std::string ignored;  // reported by the first benchWorkers
  if (!startLanes(&ignored)) return;
  std::lock_guard<std::mutex> l(shared_->mu);
  for (auto& lane : lanes_) {
    lane->tasks.push_back(
        [family, args_json](WorkerSupervisor& w) { (void)w.prepare(family, args_json); });
  }
  shared_->work_cv.notify_all();
}

Status DevicePool::runBatches(const std::vector<WorkerBatch>& batches,
                              const BatchResult& on_result) {
  std::string why;
  if (!startLanes(&why)) return Status::Unavailable(why);
  Shared& sh = *shared_;
  size_t primary = 0;  // the tuner's own device: a single batch (the finalists) runs there
  for (size_t k = 0; k < lanes_.size(); ++k)
    if (lanes_[k]->device == e_.options().device) primary = k;
  std::vector<Status> status(batches.size());
  size_t left = batches.size();
  std::unique_lock<std::mutex> l(sh.mu);
  for (size_t j = 0; j < batches.size(); ++j) {
    lanes_[(primary + j) % lanes_.size()]->tasks.push_back([&, j](WorkerSupervisor& w) {
      Status st = w.run(batches[j], [&](size_t k, const CandidateResult& r) {
        std::lock_guard<std::mutex> g(sh.mu);
        on_result(j, k, r);
      });
      std::lock_guard<std::mutex> g(sh.mu);
      status[j] = std::move(st);
      --left;
    });
  }
  sh.work_cv.notify_all();
  sh.idle_cv.wait(l, [&] { return left == 0; });
  for (const Status& st : status)
    if (!st.ok()) return st;
  return Status::Ok();
}

}  // namespace detail
}  // namespace ktune
