// The vendor library's heuristic ranks in the tuning database (issue 35): every rank a tuning run
// times is recorded with its time, which a prediction rule over vendor ranks and the held-out bench
// read (autotune/predict.h: vendorRank). On the simulated backend with a fake vendor library whose
// algorithms take simulated time (a memset on the caller's stream).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "autotune/predict.h"
#include "tests/support/gate.h"
#include "tests/unit/tuner_sim_env.h"

namespace ktune {
namespace {

using tunertest::Env;
using tunertest::Scale;

// A fake vendor library of three ranked algorithms (rank 0 the heuristic's default) that compute
// y = 2x and take rank_ms[rank] of simulated time (a memset of that many bytes on the stream);
// every launch's id is recorded.
struct FakeVendors {
  Env& env;
  std::map<int, double> rank_ms;
  double bytes_per_ms;
  DevicePtr scratch = 0;
  std::mutex mu;
  std::vector<std::string> launched;
  // Lazy loading, as the library would see it: ids run outside a capture (loaded), and launches
  // inside one of an id never run outside (a module loaded inside the capture).
  std::set<std::string> ran_outside;
  int cold_in_capture = 0;
  void forget() {  // a fresh process: nothing of the library loaded
    std::lock_guard<std::mutex> l(mu);
    ran_outside.clear();
  }

  FakeVendors(Env& e, std::map<int, double> ms, double bpm)
      : env(e), rank_ms(std::move(ms)), bytes_per_ms(bpm),
        scratch(*e.backend->alloc(size_t(0.3 * bpm) + 1)) {}

  // Each rank's output tile (rows along the problem's n, columns across `cols` output columns)
  // and split-K count, when set: the library marks the wide-tile rule's pick as GemmOp's cuBLASLt
  // candidates do, with the device's multiprocessor count.
  std::vector<predict::VendorTile> tiles;
  int64_t cols = 4096;

  void addTo(testfamily::SpecFamily<Scale>& fam) {
    fam.spec.vendor_candidates = [this](const Scale& p) {
      std::vector<VendorCandidate> v;
      for (size_t r = 0; r < 3; ++r)
        v.push_back({"fake:idx=" + std::to_string(r) + ":n=" + std::to_string(p.n), "fakeblas", r == 0});
      const int sms = env.backend->devices().value().front().multiprocessors;
      const size_t i = predict::wideTilePick(p.n, cols, sms, tiles);
      if (i > 0) v[i].predicted = true;
      return v;
    };
    fam.spec.vendor_launch = [this](const std::string& id, const Scale& p, StreamHandle s) -> Status {
      auto* x = static_cast<float*>(env.backend->hostPtr(p.x));
      auto* y = static_cast<float*>(env.backend->hostPtr(p.y));
      for (int64_t i = 0; i < p.n; ++i) y[i] = 2 * x[i];
      {
        auto c = env.backend->isCapturing(s);
        const bool capturing = c.ok() && *c;
        std::lock_guard<std::mutex> l(mu);
        launched.push_back(id);
        if (capturing && !ran_outside.count(id)) ++cold_in_capture;
        if (!capturing) ran_outside.insert(id);
      }
      const double ms = rank_ms.at(predict::vendorRank(id));
      return env.backend->memset8(scratch, 0, size_t(ms * bytes_per_ms), s);
    };
  }
};

TEST(PredictVendorRank, RankIsReadFromTheVendorId) {
  EXPECT_EQ(predict::vendorRank("cublaslt:idx=2:algo=00ff"), 2);
  EXPECT_EQ(predict::vendorRank("idx=13:algo=00"), 13);
  EXPECT_EQ(predict::vendorRank("cublaslt:algo=00"), -1);
  EXPECT_EQ(predict::vendorRank("cublaslt:idx=x:algo=00"), -1);
  EXPECT_EQ(predict::vendorRank("cublaslt:idx=2"), -1);  // no field after it: not a ranked id
}

// The tuning runs of two keys time every rank the fake library offers and record each in the
// database, and an unseen key between them runs the default (rank 0), not the rank that won at both.
TEST(ShapesVendorRank, TuningRecordsEveryRankAndAnUnseenKeyRunsTheDefault) {
  const double bytes_per_ms = 1e7;
  Env env(/*noise=*/0, /*seed=*/1, bytes_per_ms);
  env.costEvery(0.5);
  FakeVendors vendors(env, {{0, 0.2}, {1, 0.3}, {2, 0.1}}, bytes_per_ms);
  auto family = [&] {
    testfamily::SpecFamily<Scale> fam = env.family();
    vendors.addTo(fam);
    return fam;
  };
  {
    auto t = Engine::create(env.backend, env.options()).value();
    auto f = addFamily(*t, family()).value();
    for (int64_t n : {1024, 4096}) ASSERT_TRUE(f(env.problem(n)).ok());
    for (const char* key : {"n=1024,dtype=f32", "n=4096,dtype=f32"}) {
      auto e = t->database("scale")->lookup(key);
      ASSERT_TRUE(e.has_value()) << key;
      EXPECT_EQ(e->winner_source, "fakeblas");
      // Every rank is recorded: timed in full where it came near the best, else with the time at
      // which it was stopped as slower (a lower bound).
      std::map<int, const CandidateResult*> ranks;
      for (const auto& c : e->candidates)
        if (c.source == "fakeblas") ranks[predict::vendorRank(c.config)] = &c;
      ASSERT_EQ(ranks.size(), 3u) << key;
      EXPECT_EQ(ranks[0]->status, Code::kOk);
      EXPECT_EQ(ranks[2]->status, Code::kOk);
      EXPECT_GE(ranks[1]->stats.median_ms, ranks[0]->stats.median_ms);
      EXPECT_LT(ranks[2]->stats.median_ms, ranks[0]->stats.median_ms);
    }
  }
  // A fresh engine; its tuning of the unseen key (queued by the captured call) waits at the gate
  // until the test has seen which algorithm the call ran.
  EngineOptions o = env.options();
  o.options.background_duty = 1;
  auto t = Engine::create(env.backend, o).value();
  testsupport::Gate gate;
  testfamily::SpecFamily<Scale> fam = family();
  auto reset = fam.spec.before_run;
  fam.spec.before_run = [&gate, reset](const Scale& p, StreamHandle s) {
    EXPECT_TRUE(gate.wait());
    return reset(p, s);
  };
  auto f = addFamily(*t, std::move(fam)).value();
  Scale p = env.problem(2048);
  auto pred = f.predict(p).value();
  EXPECT_EQ(pred.source, "fakeblas");
  EXPECT_EQ(pred.config, "fake:idx=0:n=2048");  // the new shape's own default
  EXPECT_EQ(pred.basis, "default beats the rest");
  StreamHandle s = env.backend->createStream().value();
  env.backend->setCapturing(s, true);
  ASSERT_TRUE(f(p, s).ok());  // an untuned key inside a capture runs its prediction, the default
  env.backend->setCapturing(s, false);
  EXPECT_EQ(f.lookup(p)->origin, "default");
  {
    std::lock_guard<std::mutex> l(vendors.mu);
    ASSERT_FALSE(vendors.launched.empty());
    EXPECT_EQ(vendors.launched.back(), "fake:idx=0:n=2048");
  }
  std::vector<float> y(2048);
  ASSERT_TRUE(env.backend->copyToHost(y.data(), p.y, y.size() * 4).ok());
  EXPECT_EQ(y[5], 2.f * (float(5 % 17) - 8.f));
  gate.open();
  t->waitBackground();
  EXPECT_EQ(f.lookup(p)->origin, "memory");
  ASSERT_TRUE(env.backend->destroyStream(s).ok());
}

// The wide-tile rule (predict.h): from M >= kWideTileMinRows, a default whose tile is narrower
// than kWideTileCols across N, and whose grid (tiles x split-K) fills 7/8 of the multiprocessors,
// gives way to the first of ranks 1..kRaceVendor with a wide tile, if that one pads M to at most
// 5% more rows than the default. Tiles are {rows along M, columns along N, split-K}; held-out
// keys, 132 SMs.
TEST(PredictWideTile, TheFirstWideRankReplacesANarrowDefaultThatPadsNoLess) {
  using T = predict::VendorTile;
  const int sms = 132;
  auto pick = [sms](int64_t m, int64_t n, const std::vector<T>& l) {
    return predict::wideTilePick(m, n, sms, l);
  };
  // 215 x 4096 x 14336: #0 64 across N x 112 along M (128 CTAs); #1, 128 x 112, ran 0.77 of it.
  const std::vector<T> l215 = {{112, 64}, {112, 128, 2}, {216, 64, 2}, {72, 192, 2}};
  EXPECT_EQ(pick(215, 4096, l215), 1u);
  EXPECT_EQ(pick(127, 4096, l215), 0u);  // under kWideTileMinRows
  EXPECT_EQ(pick(215, 4096, {{112, 128}, {112, 256}}), 0u);  // #0 wide already
  EXPECT_EQ(pick(300, 4096, {{152, 64}, {152, 96}, {152, 128}}), 2u);  // 96 is narrow
  // 160 x 4096 x 4096 (#2 ran 0.884 of #0): from M = 128 on, not 192.
  EXPECT_EQ(pick(160, 4096, {{96, 64}, {64, 96}, {80, 128, 2}}), 2u);
  // 361 x 4096 x 4096 (0.879): #2 (96 rows) pads to 384, #0 (184) to 368: 4.3% more, within 5%.
  EXPECT_EQ(pick(361, 4096, {{184, 64}, {128, 96}, {96, 128}, {192, 64}}), 2u);
  // M = 229: #1 (64 rows) pads to 256, #0 (120) to 240: 6.7% more; the rule keeps the default
  // rather than looking further (#2 would pad to 240).
  EXPECT_EQ(pick(229, 4096, {{120, 64}, {64, 128}, {80, 128}}), 0u);
  EXPECT_EQ(pick(224, 4096, {{112, 64}, {56, 128}}), 1u);  // equal padding: 224 both
  // 199 x 6144 x 4096: #0's 200 x 64 tiles make 96 CTAs, under 7/8 of 132 SMs (#1 ran 1.007-1.021x
  // #0 at M = 197-199); on a device of 108 SMs they fill 7/8 of it.
  const std::vector<T> l199 = {{200, 64}, {104, 128}, {128, 96}, {72, 192}};
  EXPECT_EQ(pick(199, 6144, l199), 0u);
  EXPECT_EQ(predict::wideTilePick(199, 6144, 108, l199), 1u);
  // 164 x 4096 x 14336 (0.906): #0 splits K in two, 64 x 2 = 128 CTAs; unsplit it would be 64.
  EXPECT_EQ(pick(164, 4096, {{168, 64, 2}, {88, 128, 2}}), 1u);
  EXPECT_EQ(pick(164, 4096, {{168, 64, 1}, {88, 128, 2}}), 0u);
  // Only ranks 1..kRaceVendor; unknown tiles, split-K counts or SM counts (0) never pick.
  EXPECT_EQ(pick(300, 4096, {{152, 64}, {152, 64}, {152, 96}, {152, 64}, {152, 128}}), 0u);
  EXPECT_EQ(pick(300, 4096, {{0, 0}, {152, 128}}), 0u);
  EXPECT_EQ(pick(300, 4096, {{152, 64}, {0, 0}, {152, 128}}), 2u);
  EXPECT_EQ(pick(300, 4096, {{152, 64, 0}, {152, 128}}), 0u);
  EXPECT_EQ(predict::wideTilePick(300, 4096, 0, {{152, 64}, {152, 128}}), 0u);
  EXPECT_EQ(pick(300, 4096, {}), 0u);
}

// An unseen key whose vendor default has a narrow tile, with nothing tuned, runs the vendor's
// wide-tile pick at once (inside a capture too), and its prediction says so; a key under
// kWideTileMinRows keeps the default, and so does one whose default's grid fills too few of the
// device's multiprocessors. M = 160 (128 CTAs of 112 x 64 over 4096 columns, the held-out
// 215 x 4096 x 14336's tiles) is picked only from M = 128 on.
TEST(ShapesVendorRank, AnUnseenKeyRunsTheWideTilePickInPlaceOfANarrowDefault) {
  const double bytes_per_ms = 1e7;
  Env env(/*noise=*/0, /*seed=*/1, bytes_per_ms);
  env.costEvery(0.5);
  FakeVendors vendors(env, {{0, 0.2}, {1, 0.1}, {2, 0.15}}, bytes_per_ms);
  vendors.tiles = {{112, 64}, {112, 128}, {216, 64}};
  EngineOptions o = env.options();
  o.options.background_duty = 1;
  auto t = Engine::create(env.backend, o).value();
  testsupport::Gate gate;  // the keys' background work waits until the test has looked
  testfamily::SpecFamily<Scale> fam = env.family();
  vendors.addTo(fam);
  auto make = fam.spec.make_problem;
  fam.spec.make_problem = [&gate, make](const std::string& j) {
    EXPECT_TRUE(gate.wait());
    return make(j);
  };
  auto f = addFamily(*t, std::move(fam)).value();
  Scale p = env.problem(160), small = env.problem(127);
  auto pred = f.predict(p).value();
  EXPECT_EQ(pred.source, "fakeblas");
  EXPECT_EQ(pred.config, "fake:idx=1:n=160");
  EXPECT_EQ(pred.basis, predict::kVendorTilesBasis);
  EXPECT_EQ(pred.rule, "wide tile");
  EXPECT_EQ(f.predict(small).value().config, "fake:idx=0:n=127");
  vendors.cols = 1024;  // 16 x 2 CTAs on the simulated device's 132 SMs
  EXPECT_EQ(f.predict(env.problem(161)).value().basis, "no tuned neighbours");
  vendors.cols = 4096;
  StreamHandle s = env.backend->createStream().value();
  env.backend->setCapturing(s, true);
  ASSERT_TRUE(f(p, s).ok());
  ASSERT_TRUE(f(small, s).ok());
  env.backend->setCapturing(s, false);
  EXPECT_EQ(f.lookup(p)->origin, "predicted");
  EXPECT_EQ(f.lookup(p)->winner, "fake:idx=1:n=160");
  EXPECT_EQ(f.lookup(small)->origin, "default");
  {
    std::lock_guard<std::mutex> l(vendors.mu);
    ASSERT_EQ(vendors.launched.size(), 2u);
    EXPECT_EQ(vendors.launched[0], "fake:idx=1:n=160");
    EXPECT_EQ(vendors.launched[1], "fake:idx=0:n=127");
  }
  gate.open();
  t->waitBackground();
  ASSERT_TRUE(env.backend->destroyStream(s).ok());
}

// The race's set and pick (predict.h): the default first, the prediction, then the vendor's next
// kRaceVendor picks; a config replaces the default only when it beats it by kRaceMargin.
TEST(PredictRace, TheSetHoldsTheDefaultThePredictionAndTheNextVendorPicks) {
  const predict::RaceEntry d{"v:idx=0", "blas"}, jit{"BLOCK=64", "jit"};
  const std::vector<predict::RaceEntry> vendor = {
      d, {"v:idx=1", "blas"}, {"v:idx=2", "blas"}, {"v:idx=3", "blas"}, {"v:idx=4", "blas"}};
  auto set = predict::raceSet(d, jit, vendor);
  ASSERT_EQ(set.size(), 5u);
  EXPECT_EQ(set[0], d);
  EXPECT_EQ(set[1], jit);
  EXPECT_EQ(set[4].config, "v:idx=3");  // ranks 1-3; rank 4 stays out
  set = predict::raceSet(d, d, vendor);  // the prediction is the default: no duplicate
  ASSERT_EQ(set.size(), 4u);
  EXPECT_EQ(set[1].config, "v:idx=1");
  const double t = predict::kRaceMaxMs / 2;  // a default short enough to race
  EXPECT_EQ(predict::racePick({t, 0.98 * t, 0.99 * t}, 1), 0u);  // within the margin: the default
  EXPECT_EQ(predict::racePick({t, 0.95 * t, 0.90 * t}, 0), 2u);
  EXPECT_EQ(predict::racePick({t, 0.0, 0.5 * t}, 0), 2u);    // a failed entry is never picked
  EXPECT_EQ(predict::racePick({0.0, 0.7 * t, 0.5 * t}, 0), 2u);  // no default time: the fastest
  EXPECT_EQ(predict::racePick({0.0, 0.0}, 0), std::string::npos);
  // A default longer than kRaceMaxMs: no race, the prediction (index `keep`) stays.
  const double big = 2 * predict::kRaceMaxMs;
  EXPECT_EQ(predict::racePick({big, 0.5 * big, 0.4 * big}, 1), 1u);
  EXPECT_EQ(predict::racePick({big, 0.5 * big}, 0), 0u);
}

// An unseen key queued for background tuning is raced first: its prediction (the default, rank 0)
// is replaced by the fastest of rank 0-2 for the key itself (rank 2) before its full tuning starts,
// and the tuning's winner replaces that in turn. The background thread's problems are built by
// make_problem: its first call (the race) and its second (the tuning) wait at gates.
TEST(ShapesVendorRank, AnUnseenKeyIsRacedAmongTheDefaultAndTheVendorPicksBeforeItsTuning) {
  const double bytes_per_ms = 1e7;
  Env env(/*noise=*/0, /*seed=*/1, bytes_per_ms);
  env.costEvery(0.5);
  // Short enough to race (predict::kRaceMaxMs).
  FakeVendors vendors(env, {{0, 0.1}, {1, 0.15}, {2, 0.05}}, bytes_per_ms);
  testsupport::Gate race_gate, tune_gate;
  std::atomic<int> made{0};
  testfamily::SpecFamily<Scale> fam = env.family();
  vendors.addTo(fam);
  auto make = fam.spec.make_problem;
  fam.spec.make_problem = [&, make](const std::string& j) {
    const int n = made++;
    EXPECT_TRUE((n == 0 ? race_gate : tune_gate).wait()) << n;
    return make(j);
  };
  EngineOptions o = env.options();
  o.options.background_duty = 1;
  auto t = Engine::create(env.backend, o).value();
  auto f = addFamily(*t, std::move(fam)).value();
  Scale p = env.problem(2048);
  StreamHandle s = env.backend->createStream().value();
  env.backend->setCapturing(s, true);
  ASSERT_TRUE(f(p, s).ok());  // inside a capture: the prediction (the default) runs, the key is queued
  env.backend->setCapturing(s, false);
  EXPECT_EQ(f.lookup(p)->origin, "default");
  EXPECT_EQ(t->backgroundRaced(), 0u);
  race_gate.open();
  for (int i = 0; i < 2000 && t->backgroundRaced() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(t->backgroundRaced(), 1u);
  EXPECT_EQ(made.load(), 2);  // the tuning has not started its problem: it waits at its gate
  auto sel = f.lookup(p);
  EXPECT_EQ(sel->origin, "raced");
  EXPECT_EQ(sel->winner, "fake:idx=2:n=2048");
  ASSERT_TRUE(f(p, s).ok());
  ASSERT_TRUE(env.backend->synchronize(s).ok());
  {
    std::lock_guard<std::mutex> l(vendors.mu);
    EXPECT_EQ(vendors.launched.back(), "fake:idx=2:n=2048");
  }
  tune_gate.open();
  t->waitBackground();
  EXPECT_EQ(f.lookup(p)->origin, "memory");
  EXPECT_EQ(t->backgroundRaced(), 1u);
  ASSERT_TRUE(env.backend->destroyStream(s).ok());
}

// Under lazy loading (CUDA's default) a vendor kernel loads on its first run in the process, so
// inside a capture only a vendor config that has run here outside one may run. In a fresh engine a
// captured call of a key whose database winner is a vendor config is refused naming prepare()
// (nothing is loaded to run instead); prepare() runs the winner once on a problem of its own and
// loads the JIT default; then the key's winner runs in a capture, and an unseen key, whose vendor
// default has never run here, runs the loaded JIT default. No vendor kernel first runs inside a
// capture. Under eager loading the unseen key runs its vendor default.
TEST(ShapesVendorCapture, UnderLazyLoadingACaptureRunsOnlyVendorKernelsThatRanOutsideIt) {
  const double bytes_per_ms = 1e7;
  Env env(/*noise=*/0, /*seed=*/1, bytes_per_ms);
  env.costEvery(0.5);
  env.backend->setLazyLoading(true);
  FakeVendors vendors(env, {{0, 0.05}, {1, 0.3}, {2, 0.3}}, bytes_per_ms);
  {
    auto t = Engine::create(env.backend, env.options()).value();
    testfamily::SpecFamily<Scale> fam = env.family();
    vendors.addTo(fam);
    auto f = addFamily(*t, std::move(fam)).value();
    ASSERT_TRUE(f(env.problem(1024)).ok());
    EXPECT_EQ(t->database("scale")->lookup("n=1024,dtype=f32")->winner, "fake:idx=0:n=1024");
  }
  vendors.forget();
  EngineOptions o = env.options();
  o.options.background_duty = 1;
  auto t = Engine::create(env.backend, o).value();
  testsupport::Gate gate;  // the captured keys' background work waits until the test has looked
  std::atomic<bool> armed{false};
  testfamily::SpecFamily<Scale> fam = env.family();
  vendors.addTo(fam);
  auto make = fam.spec.make_problem;
  fam.spec.make_problem = [&, make](const std::string& j) {
    if (armed) {
      EXPECT_TRUE(gate.wait());
    }
    return make(j);
  };
  auto f = addFamily(*t, std::move(fam)).value();
  Scale tuned = env.problem(1024), unseen = env.problem(2048), other = env.problem(4096);
  StreamHandle s = env.backend->createStream().value();
  env.backend->setCapturing(s, true);
  Status st = f(tuned, s);
  env.backend->setCapturing(s, false);
  EXPECT_EQ(st.code(), Code::kUnsupported) << st.toString();
  EXPECT_NE(st.message().find("prepare()"), std::string::npos) << st.toString();
  ASSERT_TRUE(f.prepare(tuned, s).ok());
  armed = true;
  env.backend->setCapturing(s, true);
  ASSERT_TRUE(f(tuned, s).ok());
  ASSERT_TRUE(f(unseen, s).ok());
  env.backend->setCapturing(s, false);
  EXPECT_EQ(f.lookup(tuned)->winner, "fake:idx=0:n=1024");
  EXPECT_EQ(f.lookup(unseen)->winner_source, "jit");
  EXPECT_EQ(f.lookup(unseen)->origin, "default");
  std::vector<float> y(2048);
  ASSERT_TRUE(env.backend->copyToHost(y.data(), unseen.y, y.size() * 4).ok());
  EXPECT_EQ(y[5], 2.f * (float(5 % 17) - 8.f));  // the JIT default computed it
  env.backend->setLazyLoading(false);  // eager: every kernel of the library is loaded
  env.backend->setCapturing(s, true);
  ASSERT_TRUE(f(other, s).ok());
  env.backend->setCapturing(s, false);
  EXPECT_EQ(f.lookup(other)->winner, "fake:idx=0:n=4096");
  {
    std::lock_guard<std::mutex> l(vendors.mu);
    EXPECT_EQ(vendors.cold_in_capture, 1);  // only the eager one
  }
  EXPECT_EQ(env.backend->captureViolations(), 0);
  gate.open();
  t->waitBackground();
  EXPECT_EQ(f.lookup(unseen)->origin, "memory");
  ASSERT_TRUE(env.backend->destroyStream(s).ok());
}

}  // namespace
}  // namespace ktune
