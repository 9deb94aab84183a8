// Multi-device tuning (autotune/device_pool.h) on N simulated devices in one process: the
// benchmark work of a key is spread evenly (the busiest device's simulated time at most 1.25x an
// even share), nothing is measured twice, and the winners are those of a one-device run; the
// device lists the CLI accepts; and `ktune tune --devices` end to end on KTUNE_SIM_DEVICES.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/device_pool.h"
#include "base/fs.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"
#include "tests/unit/spec_family.h"
#include "tests/unit/cli_fixture.h"

namespace ktune {
namespace {

DeviceInfo simGpu(const std::string& name = "sim pool device") {
  DeviceInfo d;
  d.name = name;
  d.arch = "sm_90a";
  d.multiprocessors = 132;
  d.warp_size = 32;
  d.shared_per_block = 48 * 1024;
  d.max_threads_per_block = 1024;
  d.l2_bytes = 1 << 16;
  return d;
}

struct Nothing {
  int64_t n = 1;
};

// 24 configs whose simulated cost is their COST define (us), all distinct; the cheapest wins.
testfamily::SpecFamily<Nothing> costFamily() {
  testfamily::SpecFamily<Nothing> fam;
  auto& [f, x] = fam;
  f.name = "pool_cost";
  f.source = "// simulated: pool_cost()";
  f.entry = "pool_cost";
  for (int i = 0; i < 24; ++i) x.configs.push_back(Config{{"COST", int64_t(20 + (i * 37) % 50 + i)}});
  f.key = [](const Nothing& p, KeyFields& k) { k.add("n", p.n); };
  f.launch = [](const Knobs&, const Nothing&, const DeviceFacts&) { return Launch::linear(1, 64); };
  f.args = [](const Nothing& p, ArgPack& a) { a.add(p.n); };
  x.default_config = x.configs.front();
  return fam;
}

struct PoolRun {
  TuneReport rep;
  std::vector<double> device_ms;  // each simulated device's clock after the run
};

PoolRun tuneOn(int n_devices) {
  char tmpl[] = "/tmp/ktune-pool-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  SimOptions so;
  so.device = simGpu();
  so.device_count = n_devices;
  auto sim = std::make_shared<SimBackend>(so);
  sim->registerKernel("pool_cost", SimKernel{nullptr, [](const SimLaunch& l) {
                                               return double(l.define("COST")) * 1e-3;
                                             }, nullptr});
  EngineOptions eo;
  eo.options.cache_dir = dir;
  eo.options.warmup_ms = 0.5;
  eo.options.rep_ms = 2;
  eo.options.compile_threads = 1;
  // The finalists' interleaved rounds (finalists_test) run on device 0 after the spread; without
  // them each device's clock is exactly the pool's share, which this test checks.
  eo.options.finalists = 0;
  // Every candidate timed, so the spread and its totals compare with the one-device run's.
  eo.options.search = "exhaustive";
  // Early rejection after the estimate only: a first run far above the best ends a candidate at
  // once (benchmarker.h), which leaves so little work per candidate that a 24-candidate spread over
  // 4 devices is dominated by the first candidates, timed in full before any best exists; the
  // usual rejection after the estimate (median above 2x the best) still happens.
  eo.bench.abort_factor = 2;  // one run above 4x the best: none of these 24 configs
  for (int d = 0; d < n_devices && n_devices > 1; ++d) eo.options.devices.push_back(d);
  eo.compiler = std::make_shared<SimCompiler>();
  PoolRun out;
  auto tu = Engine::create(sim, eo);
  EXPECT_TRUE(tu.ok()) << tu.status().toString();
  if (!tu.ok()) return out;
  auto fam = addFamily(**tu, costFamily());
  EXPECT_TRUE(fam.ok()) << fam.status().toString();
  auto rep = fam->tune(Nothing{});
  EXPECT_TRUE(rep.ok()) << rep.status().toString();
  if (rep.ok()) out.rep = *rep;
  for (int d = 0; d < n_devices; ++d) out.device_ms.push_back(sim->deviceClockMs(d));
  (void)removeTree(dir);
  return out;
}

std::map<std::string, std::string> outcomes(const TuneReport& r) {
  std::map<std::string, std::string> m;
  for (const auto& c : r.candidates)
    m[c.config] = std::string(codeName(c.status)) + (c.status == Code::kOk ? "" : ": " + c.reason);
  return m;
}

TEST(DevicePool, SpreadsTheBenchmarkWorkEvenlyWithTheSameWinners) {
  const PoolRun one = tuneOn(1);
  ASSERT_EQ(one.rep.winner, "COST=20");
  EXPECT_TRUE(one.rep.devices.empty());  // the one-device path is unchanged
  for (const auto& c : one.rep.candidates) EXPECT_EQ(c.device, -1) << c.config;
  const double total1 = one.device_ms[0];
  ASSERT_GT(total1, 0);
  for (int n : {2, 4}) {
    SCOPED_TRACE(std::to_string(n) + " devices");
    const PoolRun r = tuneOn(n);
    EXPECT_EQ(r.rep.winner, one.rep.winner);
    EXPECT_EQ(r.rep.winner_stats.median_ms, one.rep.winner_stats.median_ms);
    EXPECT_EQ(outcomes(r.rep), outcomes(one.rep));  // same candidates, same results and rejections
    const double total = std::accumulate(r.device_ms.begin(), r.device_ms.end(), 0.0);
    const double busiest = *std::max_element(r.device_ms.begin(), r.device_ms.end());
    EXPECT_NEAR(total, total1, 1e-6 * total1) << "the work was spread, not repeated";
    EXPECT_LE(busiest, 1.25 * total / n) << "busiest " << busiest << " ms of " << total << " ms";
    std::printf("%d devices: busiest %.3f ms = %.3f x an even share of %.3f ms\n", n, busiest,
                busiest / (total / n), total);
    // The report says who ran what, and its busy times are the devices' clocks.
    ASSERT_EQ(r.rep.devices.size(), size_t(n));
    int counted = 0;
    for (int d = 0; d < n; ++d) {
      EXPECT_EQ(r.rep.devices[size_t(d)].device, d);
      EXPECT_GT(r.rep.devices[size_t(d)].candidates, 0);
      EXPECT_NEAR(r.rep.devices[size_t(d)].busy_ms, r.device_ms[size_t(d)], 1e-3);
      counted += r.rep.devices[size_t(d)].candidates;
      int ran_here = 0;
      for (const auto& c : r.rep.candidates) ran_here += c.device == d;
      EXPECT_EQ(ran_here, r.rep.devices[size_t(d)].candidates);
    }
    EXPECT_EQ(counted, 24);
  }
}

TEST(DevicePool, DeviceLists) {
  const std::vector<DeviceInfo> devs = {simGpu(), simGpu(), simGpu("other model"), simGpu()};
  auto all = parseDeviceList("all", devs, 0);
  ASSERT_TRUE(all.ok()) << all.status().toString();
  EXPECT_EQ(*all, (std::vector<int>{0, 1, 3}));  // same model as device 0 only
  auto some = parseDeviceList("1,0", devs, 0);
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(*some, (std::vector<int>{1, 0}));
  for (const char* bad : {"", "0,", "0,,1", "x", "-1", "0,4", "0,2", "1,3", "0,0", "99999"}) {
    SCOPED_TRACE(bad);
    auto r = parseDeviceList(bad, devs, 0);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  }
  // In code: a GPU backend needs isolation for several devices; the tuner's device must be listed.
  EXPECT_FALSE(checkDeviceList({1, 3}, devs, 0).ok());
  EXPECT_TRUE(checkDeviceList({}, devs, 0).ok());
  SimOptions so;
  so.device = simGpu();
  so.device_count = 2;
  auto sim = std::make_shared<SimBackend>(so);
  EngineOptions eo;
  eo.options.cache_dir = "/tmp/ktune-pool-unused";
  eo.options.devices = {0, 2};
  eo.compiler = std::make_shared<SimCompiler>();
  auto tu = Engine::create(sim, eo);
  ASSERT_FALSE(tu.ok());
  EXPECT_NE(tu.status().message().find("no device 2"), std::string::npos) << tu.status().toString();
}

// `ktune tune gemm --devices all` on 2 simulated devices: the same winner as on device 0 alone,
// every measured candidate names its device, and the devices' busy times are even.
using DevicePoolCli = Cli;

TEST_F(DevicePoolCli, TuneSpreadsOverSimulatedDevices) {
  const std::vector<std::string> env = {"KTUNE_BACKEND=sim", "KTUNE_SIM_DEVICES=2",
                                        "KTUNE_REMOTE_CACHE=", "KTUNE_ISOLATE="};
  const std::vector<std::string> gemm = {"tune", "gemm", "--m", "128", "--n", "128", "--k", "128",
                                         "--kinds", "mma", "--json", "--quiet", "--devices"};
  auto withDevices = [&](const std::string& d) {
    auto a = gemm;
    a.push_back(d);
    return a;
  };
  CliRun one = ktune(withDevices("0"), root_ + "/one", env);
  ASSERT_EQ(one.code, 0) << one.err;
  CliRun two = ktune(withDevices("all"), root_ + "/two", env);
  ASSERT_EQ(two.code, 0) << two.err;
  auto j1 = nlohmann::json::parse(one.out, nullptr, false);
  auto j2 = nlohmann::json::parse(two.out, nullptr, false);
  ASSERT_TRUE(j1.is_object() && j2.is_object()) << one.out << two.out;
  EXPECT_EQ(j2["winner"], j1["winner"]);
  EXPECT_FALSE(j1.contains("devices"));
  ASSERT_TRUE(j2.contains("devices")) << two.out;
  ASSERT_EQ(j2["devices"].size(), 2u);
  double total = 0, busiest = 0;
  for (const auto& d : j2["devices"]) {
    EXPECT_GT(d["candidates"].get<int>(), 0);
    total += d["busy_ms"].get<double>();
    busiest = std::max(busiest, d["busy_ms"].get<double>());
  }
  EXPECT_LE(busiest, 1.25 * total / 2);
  // The wall time the devices worked, and the finalists' share of the bench stage.
  ASSERT_TRUE(j2.contains("devices_wall_ms")) << two.out;
  EXPECT_GT(j2["devices_wall_ms"].get<double>(), 0.0);
  EXPECT_GT(j2["finalists_ms"].get<double>(), 0.0);
  EXPECT_LE(j2["finalists_ms"].get<double>(), j2["bench_wall_ms"].get<double>());
  std::set<int> used;
  for (const auto& c : j2["candidates"])
    if (c.contains("device")) used.insert(c["device"].get<int>());
  EXPECT_EQ(used, (std::set<int>{0, 1}));
  // A device that is not there is a usage error, before anything is tuned.
  CliRun bad = ktune(withDevices("0,5"), root_ + "/bad", env);
  EXPECT_NE(bad.code, 0);
  EXPECT_HAS(bad.err, "no device 5");
}

}  // namespace
}  // namespace ktune
