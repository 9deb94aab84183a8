// Tuning journal (autotune/journal.h): partial results appended per candidate beside the
// database, read back for resuming, compacted when the key is recorded; and what a candidate's
// record costs there compared with a rewrite of the whole database. No GPU needed.
#include "autotune/journal.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>

#include "base/fs.h"

namespace ktune {
namespace {

struct TmpDir {
  std::string path;
  TmpDir() {
    char t[] = "/tmp/ktune-journal-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TmpDir() { (void)removeTree(path); }
};

CandidateResult cand(const std::string& config, Code status, double median_ms) {
  CandidateResult c;
  c.config = config;
  c.status = status;
  c.stats.median_ms = median_ms;
  c.stats.runs = status == Code::kOk ? 50 : 0;
  c.reason = status == Code::kOk ? "" : "failed on purpose";
  return c;
}

TEST(Journal, AppendsReadsBackAndCompactsOneKey) {
  TmpDir dir;
  const std::string db = dir.path + "/gemm.json";
  TuningJournal j(db, "gemm", "cuda/sm_90a");
  TuningJournal other_family(db, "rmsnorm", "cuda/sm_90a");
  TuningJournal other_device(db, "gemm", "hip/gfx942");
  ASSERT_TRUE(j.append("M=1", cand("A=1", Code::kOk, 2.0)).ok());
  ASSERT_TRUE(j.append("M=1", cand("A=2", Code::kCompileError, 0)).ok());
  ASSERT_TRUE(j.append("M=2", cand("A=1", Code::kOk, 3.0)).ok());
  ASSERT_TRUE(other_family.append("M=1", cand("B=1", Code::kOk, 1.0)).ok());
  ASSERT_TRUE(other_device.append("M=1", cand("A=9", Code::kOk, 1.0)).ok());
  ASSERT_TRUE(j.append("M=1", cand("A=1", Code::kOk, 1.5)).ok());  // measured again: replaces
  EXPECT_EQ(j.path(), db + ".journal");
  EXPECT_FALSE(pathExists(db)) << "a partial result must not write the database";

  auto m1 = j.candidatesFor("M=1");
  ASSERT_EQ(m1.size(), 2u);
  EXPECT_EQ(m1[0].config, "A=1");
  EXPECT_DOUBLE_EQ(m1[0].stats.median_ms, 1.5);
  EXPECT_EQ(m1[1].status, Code::kCompileError);
  EXPECT_FALSE(m1[1].date.empty());
  EXPECT_EQ(other_family.candidatesFor("M=1").size(), 1u);
  EXPECT_EQ(other_device.candidatesFor("M=1").size(), 1u);

  // A killed writer's torn line is skipped, and dropped by the next compaction.
  {
    FILE* f = std::fopen(j.path().c_str(), "a");
    ASSERT_NE(f, nullptr);
    std::fputs("{\"family\":\"gemm\",\"valid", f);
    std::fclose(f);
  }
  EXPECT_EQ(j.candidatesFor("M=1").size(), 2u);
  ASSERT_TRUE(j.compact("M=1").ok());
  EXPECT_TRUE(j.candidatesFor("M=1").empty());
  EXPECT_EQ(j.candidatesFor("M=2").size(), 1u);               // other keys kept
  EXPECT_EQ(other_family.candidatesFor("M=1").size(), 1u);    // other families kept
  EXPECT_EQ(other_device.candidatesFor("M=1").size(), 1u);    // other validators kept
  ASSERT_TRUE(j.compact("M=2").ok());
  ASSERT_TRUE(other_family.compact("M=1").ok());
  ASSERT_TRUE(other_device.compact("M=1").ok());
  EXPECT_FALSE(pathExists(j.path())) << "an empty journal is removed";
  EXPECT_TRUE(j.compact("M=3").ok());  // nothing to do
  EXPECT_FALSE(j.append("", cand("A=1", Code::kOk, 1)).ok());
}

// The record time per candidate, before (TuningDatabase::recordCandidate: lock, re-read, rewrite
// of the whole file) and after (one appended line), on a database that already holds 10 tuned
// GEMM-sized keys (82 candidates each); 20 candidates are timed each way (kept short for CI).
// Printed for the notes; the test asserts only what the two paths leave behind.
TEST(Journal, RecordTimePerCandidateAgainstADatabaseRewrite) {
  TmpDir dir;
  const std::string path = dir.path + "/gemm.json";
  Validator v{"0.1.0", "sim", "1", "sim", "1", "Sim GPU", "sm_90a"};
  auto db = TuningDatabase::open(path, v, "gemm");
  ASSERT_TRUE(db.ok());
  constexpr int kCands = 82, kKeys = 10, kTimed = 20;
  for (int k = 0; k < kKeys; ++k) {
    DbEntry e;
    e.key = "M=" + std::to_string(k);
    e.winner = "A=0";
    for (int i = 0; i < kCands; ++i) e.candidates.push_back(cand("A=" + std::to_string(i), Code::kOk, 1 + i));
    ASSERT_TRUE((*db)->record(e).ok());
  }
  using Clock = std::chrono::steady_clock;
  auto perCandidateUs = [&](const std::function<Status(int)>& rec) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kTimed; ++i) EXPECT_TRUE(rec(i).ok());
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kTimed;
  };
  const double rewrite_us = perCandidateUs([&](int i) {
    return (*db)->recordCandidate("M=new", cand("A=" + std::to_string(i), Code::kOk, 1));
  });
  TuningJournal j(path, "gemm", v.id());
  const double append_us = perCandidateUs(
      [&](int i) { return j.append("M=new2", cand("A=" + std::to_string(i), Code::kOk, 1)); });
  std::printf("record time per candidate (%d keys x %d candidates in the database): "
              "database rewrite %.1f us, journal append %.1f us\n",
              kKeys, kCands, rewrite_us, append_us);
  EXPECT_EQ((*db)->candidatesFor("M=new").size(), size_t(kTimed));
  EXPECT_EQ(j.candidatesFor("M=new2").size(), size_t(kTimed));
}

}  // namespace
}  // namespace ktune
