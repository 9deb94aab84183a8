// Vendor algorithms carried over to an unseen key by their heuristic rank (autotune/predict.h,
// rankRule): the pure rule over database entries, and end to end on the simulated backend with a
// fake vendor library whose algorithms take simulated time (a memset on the caller's stream).
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "autotune/predict.h"
#include "tests/support/gate.h"
#include "tests/unit/tuner_sim_env.h"

namespace ktune {
namespace {

using tunertest::Env;
using tunertest::Scale;

CandidateResult cand(const std::string& cfg, double ms, const std::string& source = "jit") {
  CandidateResult c;
  c.config = cfg;
  c.source = source;
  c.stats.median_ms = ms;
  c.stats.runs = 10;
  return c;
}

// A tuned key with the vendor's heuristic ranks 0 (the default), 1 and 2 and a JIT config A; the
// serialised algorithms differ per key (`tag`), as cuBLASLt's do.
DbEntry entry(const std::string& key, const std::string& tag, double r1_ms, double r2_ms) {
  DbEntry e;
  e.key = key;
  const std::string r0 = "fake:idx=0:algo=" + tag + "0";
  e.candidates = {cand(r0, 1.2, "fakeblas"), cand("fake:idx=1:algo=" + tag + "1", r1_ms, "fakeblas"),
                  cand("fake:idx=2:algo=" + tag + "2", r2_ms, "fakeblas"), cand("A", 1.5)};
  double best = 1e9;
  for (const auto& c : e.candidates)
    if (c.stats.median_ms < best) best = c.stats.median_ms, e.winner = c.config, e.winner_source = c.source;
  e.vs_default.baseline = r0;
  e.vs_default.baseline_source = "fakeblas";
  e.vs_default.rounds = 6;
  return e;
}

const auto kAll = [](const std::string&) { return true; };

TEST(PredictVendorRank, RankIsReadFromTheVendorId) {
  EXPECT_EQ(predict::vendorRank("cublaslt:idx=2:algo=00ff"), 2);
  EXPECT_EQ(predict::vendorRank("idx=13:algo=00"), 13);
  EXPECT_EQ(predict::vendorRank("cublaslt:algo=00"), -1);
  EXPECT_EQ(predict::vendorRank("cublaslt:idx=x:algo=00"), -1);
  EXPECT_EQ(predict::vendorRank("cublaslt:idx=2"), -1);  // no field after it: not a ranked id
}

// Rank 2 beat the default (rank 0) at both nearest neighbours along M: the new key runs its own
// rank-2 algorithm; rank 1 (slower than the default) never.
TEST(PredictVendorRank, ARankFasterThanTheDefaultAtBothNearestNeighboursIsPredicted) {
  std::vector<DbEntry> es = {entry("M=16,N=64", "a", 1.3, 1.0), entry("M=32,N=64", "b", 1.3, 1.05)};
  auto idx = predict::indexEntries(es);
  auto p = predict::predict(idx, "M=24,N=64", kAll);
  EXPECT_EQ(p.source, predict::kVendorRank);
  EXPECT_EQ(p.config, std::string(predict::kVendorRank) + "2");
  EXPECT_EQ(p.basis, "neighbours");
  EXPECT_GT(p.score, p.default_score);
  // The new key's list has no rank 2: the default stays.
  auto q = predict::predict(idx, "M=24,N=64",
                            [](const std::string& c) { return c.rfind(predict::kVendorRank, 0) != 0; });
  EXPECT_EQ(q.source, predict::kDefaultClass);
}

// No rank without the evidence the rule asks for: slower than the default at one of the two
// neighbours; a gain within the margin; one neighbour only; neighbours that differ from the new
// key in a second field (another N: another heuristic list).
TEST(PredictVendorRank, TheDefaultStaysWithoutTwoAgreeingNeighboursAlongOneField) {
  auto source = [](std::vector<DbEntry> es, const std::string& key) {
    return predict::predict(predict::indexEntries(es), key, kAll).source;
  };
  EXPECT_EQ(source({entry("M=16,N=64", "a", 1.3, 1.0), entry("M=32,N=64", "b", 1.3, 1.25)}, "M=24,N=64"),
            predict::kDefaultClass);
  EXPECT_EQ(source({entry("M=16,N=64", "a", 1.3, 1.19), entry("M=32,N=64", "b", 1.3, 1.19)}, "M=24,N=64"),
            predict::kDefaultClass);
  EXPECT_EQ(source({entry("M=16,N=64", "a", 1.3, 1.0)}, "M=24,N=64"), predict::kDefaultClass);
  EXPECT_EQ(source({entry("M=16,N=64", "a", 1.3, 1.0), entry("M=32,N=64", "b", 1.3, 1.0)}, "M=24,N=128"),
            predict::kDefaultClass);
}

// A JIT config that passes the JIT rule stays the prediction: the rank rule only replaces the default.
TEST(PredictVendorRank, AJitPickIsKept) {
  std::vector<DbEntry> es = {entry("M=16,N=64", "a", 1.3, 1.0), entry("M=32,N=64", "b", 1.3, 1.0)};
  for (auto& e : es) e.candidates[3].stats.median_ms = 0.9, e.winner = "A", e.winner_source = "jit";
  auto p = predict::predict(predict::indexEntries(es), "M=24,N=64", kAll);
  EXPECT_EQ(p.source, "jit");
  EXPECT_EQ(p.config, "A");
}

// End to end on the simulated backend: the neighbours' tuning runs time every rank the fake
// library offers and record them in the database; an unseen key between them is predicted (and,
// with tuning off, runs) its own rank-2 algorithm, which was the fastest at both.
TEST(ShapesVendorRank, TheNeighboursTuningRecordsEachRankAndAnUnseenKeyRunsItsOwn) {
  const double bytes_per_ms = 1e7;
  Env env(/*noise=*/0, /*seed=*/1, bytes_per_ms);
  for (int64_t b : {64, 128, 256, 512, 1024, 2048})
    for (int64_t v : {1, 2, 4}) env.cost["BLOCK=" + std::to_string(b) + ",VEC=" + std::to_string(v)] = 0.5;
  const std::map<int, double> rank_ms = {{0, 0.2}, {1, 0.3}, {2, 0.1}};
  const DevicePtr scratch = *env.backend->alloc(size_t(0.3 * bytes_per_ms) + 1);
  std::mutex mu;
  std::vector<std::string> launched;
  size_t ranks_of_new_key = 3;
  auto family = [&] {
    testfamily::SpecFamily<Scale> fam = env.family();
    fam.spec.vendor_candidates = [&](const Scale& p) {
      std::vector<VendorCandidate> v;
      const size_t n = p.n == 2048 ? ranks_of_new_key : 3;
      for (size_t r = 0; r < n; ++r)
        v.push_back({"fake:idx=" + std::to_string(r) + ":n=" + std::to_string(p.n), "fakeblas", r == 0});
      return v;
    };
    fam.spec.vendor_launch = [&](const std::string& id, const Scale& p, StreamHandle s) -> Status {
      auto* x = static_cast<float*>(env.backend->hostPtr(p.x));
      auto* y = static_cast<float*>(env.backend->hostPtr(p.y));
      for (int64_t i = 0; i < p.n; ++i) y[i] = 2 * x[i];
      {
        std::lock_guard<std::mutex> l(mu);
        launched.push_back(id);
      }
      const double ms = rank_ms.at(predict::vendorRank(id));
      return env.backend->memset8(scratch, 0, size_t(ms * bytes_per_ms), s);
    };
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
      // which it was stopped as slower (a lower bound, which the rule reads as "not faster").
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
  EXPECT_EQ(pred.config, "fake:idx=2:n=2048");  // the new shape's own rank-2 algorithm
  StreamHandle s = env.backend->createStream().value();
  env.backend->setCapturing(s, true);
  ASSERT_TRUE(f(p, s).ok());  // an untuned key inside a capture runs its prediction
  env.backend->setCapturing(s, false);
  EXPECT_EQ(f.lookup(p)->origin, "predicted");
  {
    std::lock_guard<std::mutex> l(mu);
    ASSERT_FALSE(launched.empty());
    EXPECT_EQ(launched.back(), "fake:idx=2:n=2048");
  }
  std::vector<float> y(2048);
  ASSERT_TRUE(env.backend->copyToHost(y.data(), p.y, y.size() * 4).ok());
  EXPECT_EQ(y[5], 2.f * (float(5 % 17) - 8.f));
  gate.open();
  t->waitBackground();
  EXPECT_EQ(f.lookup(p)->origin, "memory");
  ASSERT_TRUE(env.backend->destroyStream(s).ok());
  // A new shape whose heuristic list is shorter than the predicted rank runs its default.
  ranks_of_new_key = 2;
  auto t2 = Engine::create(env.backend, env.options(/*tuning=*/false)).value();
  auto f2 = addFamily(*t2, family()).value();
  auto q = f2.predict(env.problem(2048)).value();
  EXPECT_EQ(q.config, "fake:idx=0:n=2048");
  EXPECT_EQ(q.basis, "default beats the rest");
}

}  // namespace
}  // namespace ktune
