// Multi-device tuning through isolation workers (autotune/device_pool.h): one ktune-worker per
// device (the simulated plugin opens device d of KTUNE_SIM_DEVICES), each taking the next
// candidate when free. Winners and failure reasons equal a one-device run's, crashed candidates
// included; every candidate names the device that ran it. (Which device gets which candidate
// depends on timing here; device_pool_test checks the balance deterministically.)
#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <sstream>
#include <string>

#include "base/fs.h"
#include "tests/unit/isolation_families.h"

namespace ktune {
namespace {

struct Outcome {
  std::string winner;
  // Per config: "measured" (timed, or stopped early as slower than the best so far: which ones
  // depends on the order the devices finish in) or the failure's code.
  std::map<std::string, std::string> status;
  std::map<int, int> per_device;  // device -> candidates reported by TuneReport::devices
  std::map<int, int> named;       // device -> candidates naming it
  std::string reasons;            // every failed candidate's reason
};

Outcome tuneFamily(const std::string& family, int n_devices) {
  char tmpl[] = "/tmp/ktune-isodev-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  ::setenv("KTUNE_SIM_DEVICES", std::to_string(n_devices).c_str(), 1);  // the workers' too
  SimOptions so;
  so.device = isotest::isoDevice();
  so.device_count = n_devices;
  auto sim = std::make_shared<SimBackend>(so);
  isotest::registerIsoKernels(*sim);
  EngineOptions eo;
  eo.options.cache_dir = dir;
  eo.options.warmup_ms = 0.2;
  eo.options.rep_ms = 1.0;
  eo.options.isolate = true;
  eo.options.worker_path = KTUNE_WORKER_PATH;
  eo.options.worker_plugins = {KTUNE_ISOLATION_SIM_PLUGIN};
  for (int d = 0; d < n_devices && n_devices > 1; ++d) eo.options.devices.push_back(d);
  eo.isolation.fallback_in_process = false;
  // The overlap gate waits up to 20 s for the other device before it fails the candidate: the
  // watchdog must not kill the waiting worker first.
  if (family == "iso_overlap") {
    eo.isolation.timeout_floor_ms = 60000;
    // Every candidate compiled first, then one batch for the devices: pipelined batches may hold
    // a single candidate, which only one device can run.
    eo.options.pipeline = false;
  }
  eo.compiler = std::make_shared<SimCompiler>();
  std::ostringstream log;
  eo.log = &log;
  Outcome out;
  {
    auto tu = Engine::create(sim, eo);
    EXPECT_TRUE(tu.ok()) << tu.status().toString();
    if (!tu.ok()) return out;
    std::vector<Config> configs;
    for (auto& [n, cs] : isotest::isoFamilies())
      if (n == family) configs = cs;
    auto fam = addFamily(**tu, isotest::isoFamily(sim.get(), family, configs));
    EXPECT_TRUE(fam.ok()) << fam.status().toString();
    auto p = isotest::makeIsoProblem(sim.get(), 1000);
    auto rep = fam->tune(*p);
    EXPECT_TRUE(rep.ok()) << rep.status().toString() << "\n" << log.str();
    if (rep.ok()) {
      out.winner = rep->winner;
      for (const auto& c : rep->candidates) {
        const bool measured = c.status == Code::kOk || c.reason.rfind("slower than best", 0) == 0;
        out.status[c.config] = measured ? "measured" : codeName(c.status);
        if (!measured) out.reasons += c.config + ": " + c.reason + "\n";
        if (c.device >= 0) ++out.named[c.device];
      }
      // A device whose worker started late may get no candidate at all (the pool hands work to
      // whichever worker is free): it is reported with 0, so `named` counts it as 0 too.
      for (const auto& d : rep->devices) {
        out.per_device[d.device] = d.candidates;
        out.named.emplace(d.device, 0);
      }
    }
    EXPECT_EQ(sim->launchCount("iso_scale"), 0) << "a candidate ran in the tuner's process";
  }
  ::unsetenv("KTUNE_SIM_DEVICES");
  (void)removeTree(dir);
  return out;
}

TEST(IsolationDevices, OneWorkerPerDeviceSameWinnersAsOneDevice) {
  for (const std::string family : {"iso_good", "iso_faults"}) {
    SCOPED_TRACE(family);
    const Outcome one = tuneFamily(family, 1);
    EXPECT_EQ(one.winner, "BLOCK=256,MODE=0");
    EXPECT_TRUE(one.per_device.empty());
    const Outcome two = tuneFamily(family, 2);
    EXPECT_EQ(two.winner, one.winner);
    EXPECT_EQ(two.status, one.status);  // crashes and faults are the same results on any device
    ASSERT_EQ(two.per_device.size(), 2u);
    EXPECT_EQ(two.per_device, two.named);
    int sum = 0;
    for (const auto& [d, n] : two.per_device) {
      EXPECT_TRUE(d == 0 || d == 1);
      sum += n;
    }
    EXPECT_EQ(sum, int(one.status.size()));
  }
}

// The devices benchmark at the same time: every candidate of iso_overlap passes a gate that lets
// a launch on one device return only once a candidate has started on the other device (both
// workers see the gate's folder), so serialised devices fail each candidate with "devices never
// overlapped" (after a bounded wait) instead of passing. No timing is asserted.
TEST(IsolationDevices, DevicesBenchmarkAtTheSameTime) {
  const Outcome two = tuneFamily("iso_overlap", 2);
  EXPECT_EQ(two.winner, "BLOCK=256,MODE=6");
  EXPECT_EQ(two.reasons, "") << "the devices did not benchmark at the same time";
  for (const auto& [config, status] : two.status) EXPECT_EQ(status, "measured") << config;
  ASSERT_EQ(two.per_device.size(), 2u);
  for (const auto& [d, n] : two.per_device) EXPECT_GT(n, 0) << "device " << d;
}

}  // namespace
}  // namespace ktune
