// An entry mirrored from a shared cache (`ktune remote pull` records it with "unverified": true) is
// data until it has run correctly here: the first call compiles its winner, runs it once and checks
// the output before using it. A tampered winner (one of the family's configs that computes the
// wrong result) is rejected and the key tuned here; a good one is used ("pulled") and recorded as
// verified. Simulated backend, no Redis needed.
#include <gtest/gtest.h>

#include <string>

#include "autotune/database.h"
#include "tests/unit/tuner_sim_env.h"

namespace ktune {
namespace {

// Tunes n=1024 once, then rewrites its database entry as a pull would leave it, with `winner`.
void recordPulled(tunertest::Env& env, const std::string& winner) {
  {
    auto tuner = Engine::create(env.backend, env.options());
    ASSERT_TRUE(tuner.ok());
    auto fam = addFamily(**tuner, env.family());
    ASSERT_TRUE(fam.ok());
    auto p = env.problem(1024);
    ASSERT_TRUE((*fam)(p).ok());
  }
  const std::string path = env.dir + "/db/scale.json";
  auto any = TuningDatabase::open(path, Validator{}, "scale");
  ASSERT_TRUE(any.ok());
  ASSERT_EQ((*any)->validators().size(), 1u);
  auto db = TuningDatabase::open(path, (*any)->validators()[0].first, "scale");
  ASSERT_TRUE(db.ok());
  auto entries = (*db)->entries();
  ASSERT_EQ(entries.size(), 1u);
  DbEntry e = entries[0];
  e.winner = winner;
  e.unverified = true;
  e.code_object_keys.clear();
  ASSERT_TRUE((*db)->record(e).ok());
}

std::optional<DbEntry> onlyEntry(const tunertest::Env& env) {
  const std::string path = env.dir + "/db/scale.json";
  auto any = TuningDatabase::open(path, Validator{}, "scale");
  if (!any.ok() || (*any)->validators().empty()) return std::nullopt;
  auto db = TuningDatabase::open(path, (*any)->validators()[0].first, "scale");
  auto entries = (*db)->entries();
  if (entries.size() != 1) return std::nullopt;
  return entries[0];
}

TEST(SharedVerify, PulledWinnerIsVerifiedOnFirstUseThenTrusted) {
  tunertest::Env env;
  recordPulled(env, "BLOCK=256,VEC=2");
  auto tuner = Engine::create(env.backend, env.options());
  ASSERT_TRUE(tuner.ok());
  auto fam = addFamily(**tuner, env.family());
  ASSERT_TRUE(fam.ok());
  auto p = env.problem(1024);
  const int64_t l0 = env.backend->totalLaunches();
  ASSERT_TRUE((*fam)(p).ok());
  EXPECT_EQ(env.backend->totalLaunches() - l0, 2) << "one check before use, then the call";
  auto sel = fam->lookup(p);
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->origin, "pulled");
  EXPECT_EQ(sel->winner, "BLOCK=256,VEC=2");
  auto e = onlyEntry(env);
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->unverified) << "recorded as verified: later processes trust it";
  EXPECT_EQ(e->code_object_keys.size(), 1u) << "the object compiled here";
}

TEST(SharedVerify, TamperedPulledWinnerIsRejectedBeforeUse) {
  tunertest::Env env;
  env.wrong.insert("BLOCK=64,VEC=1");
  recordPulled(env, "BLOCK=64,VEC=1");
  auto tuner = Engine::create(env.backend, env.options());
  ASSERT_TRUE(tuner.ok());
  auto fam = addFamily(**tuner, env.family());
  ASSERT_TRUE(fam.ok());
  auto p = env.problem(1024);
  ASSERT_TRUE((*fam)(p).ok());
  auto sel = fam->lookup(p);
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->origin, "memory") << "tuned here after the rejection";
  EXPECT_NE(sel->winner, "BLOCK=64,VEC=1");
  EXPECT_NE(env.log.str().find("rejected"), std::string::npos) << env.log.str();
  std::vector<float> x(1024), y(1024);
  ASSERT_TRUE(env.backend->copyToHost(x.data(), p.x, 4096).ok());
  ASSERT_TRUE(env.backend->copyToHost(y.data(), p.y, 4096).ok());
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(y[i], 2.f * x[i]) << i;
  auto e = onlyEntry(env);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->winner, "BLOCK=64,VEC=1");
  EXPECT_FALSE(e->unverified);
}

}  // namespace
}  // namespace ktune
