// Tuning database: round trip, validator isolation, pins, corrupt files, cross-process locking,
// blacklist/partial candidates, export/import, untuned-key log. No GPU needed.
#include "autotune/database.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/fs.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Validator h100() {
  return {"0.1.0", "cuda", "13.0", "nvrtc", "13.0", "NVIDIA H100 80GB HBM3", "sm_90a"};
}
Validator mi300() {
  return {"0.1.0", "hip", "6.2", "hiprtc", "6.2", "AMD Instinct MI300X", "gfx942"};
}

BenchStats stats(double median) {
  BenchStats s;
  s.median_ms = median;
  s.p20_ms = median * 0.9;
  s.p80_ms = median * 1.1;
  s.min_ms = median * 0.8;
  s.max_ms = median * 1.5;
  s.mean_ms = median * 1.01;
  s.std_ms = 0.01;
  s.runs = 100;
  return s;
}

DbEntry entry(const std::string& key, const std::string& winner, double ms = 0.5) {
  DbEntry e;
  e.key = key;
  e.winner = winner;
  e.winner_stats = stats(ms);
  CandidateResult ok;
  ok.config = winner;
  ok.stats = stats(ms);
  ok.code_object_key = std::string(64, 'a');
  ok.max_error = 1e-3;
  ok.date = "2025-01-01T00:00:00Z";
  CandidateResult bad;
  bad.config = "BLOCK=1024";
  bad.status = Code::kOutOfResources;
  bad.reason = "shared 240 KiB > 227 KiB";
  bad.date = "2025-01-01T00:00:01Z";
  e.candidates = {ok, bad};
  e.code_object_keys = {std::string(64, 'a')};
  return e;
}

// Runs `fn(i)` in `n` forked children; expects each to exit 0.
void inChildren(int n, const std::function<int(int)>& fn) {
  std::vector<pid_t> kids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(fn(i));
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int st = 0;
    ASSERT_EQ(::waitpid(pid, &st, 0), pid);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
  }
}

class DatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            ("ktune_db_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(root_);
    path_ = (root_ / "db" / "rmsnorm.json").string();
  }
  void TearDown() override { fs::remove_all(root_); }
  std::shared_ptr<TuningDatabase> open(Validator v = h100(), const std::string& path = "") {
    auto db = TuningDatabase::open(path.empty() ? path_ : path, v, "rmsnorm");
    EXPECT_TRUE(db.ok()) << db.status().toString();
    return db.ok() ? *db : nullptr;
  }
  std::vector<std::string> corruptAsides() {
    std::vector<std::string> out;
    if (!fs::exists(root_ / "db")) return out;
    for (const auto& e : fs::directory_iterator(root_ / "db")) {
      if (e.path().filename().string().find("rmsnorm.json.corrupt-") == 0) {
        out.push_back(e.path().string());
      }
    }
    return out;
  }
  fs::path root_;
  std::string path_;
};

TEST_F(DatabaseTest, MissingFileIsEmptyAndRoundTripSurvivesReopen) {
  auto db = open();
  ASSERT_TRUE(db);
  EXPECT_TRUE(db->entries().empty());
  EXPECT_TRUE(db->warnings().empty());
  EXPECT_FALSE(db->lookup("M=4096,N=4096").has_value());
  EXPECT_EQ(db->path(), path_);

  ASSERT_TRUE(db->record(entry("M=4096,N=4096", "BLOCK=256,num_warps=8", 0.25)).ok());
  ASSERT_TRUE(db->record(entry("M=1,N=4096", "BLOCK=64,num_warps=1", 0.01)).ok());
  EXPECT_TRUE(db->lookup("M=4096,N=4096").has_value());  // visible in memory at once

  auto again = open();
  auto e = again->lookup("M=4096,N=4096");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->key, "M=4096,N=4096");
  EXPECT_EQ(e->winner, "BLOCK=256,num_warps=8");
  EXPECT_EQ(e->winner_source, "jit");
  EXPECT_DOUBLE_EQ(e->winner_stats.median_ms, 0.25);
  EXPECT_DOUBLE_EQ(e->winner_stats.p20_ms, 0.25 * 0.9);
  EXPECT_DOUBLE_EQ(e->winner_stats.p80_ms, 0.25 * 1.1);
  EXPECT_DOUBLE_EQ(e->winner_stats.std_ms, 0.01);
  EXPECT_EQ(e->winner_stats.runs, 100);
  EXPECT_FALSE(e->pinned);
  EXPECT_FALSE(e->date.empty());  // filled by record()
  ASSERT_EQ(e->candidates.size(), 2u);
  EXPECT_EQ(e->candidates[0].code_object_key, std::string(64, 'a'));
  EXPECT_DOUBLE_EQ(e->candidates[0].max_error, 1e-3);
  EXPECT_EQ(e->candidates[1].status, Code::kOutOfResources);
  EXPECT_EQ(e->candidates[1].reason, "shared 240 KiB > 227 KiB");
  EXPECT_EQ(e->code_object_keys, std::vector<std::string>{std::string(64, 'a')});
  auto all = again->entries();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].key, "M=1,N=4096");  // sorted

  // The file is indented, human-readable and documents schema/family.
  std::string text = readFile(path_).value();
  EXPECT_NE(text.find("\n  \"devices\""), std::string::npos) << text.substr(0, 200);
  json doc = json::parse(text);
  EXPECT_EQ(doc["schema"], 1);
  EXPECT_EQ(doc["family"], "rmsnorm");
  EXPECT_EQ(doc["devices"][0]["validator"]["device_name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(doc["devices"][0]["entries"]["M=1,N=4096"]["winner"], "BLOCK=64,num_warps=1");
  EXPECT_EQ(doc["devices"][0]["entries"]["M=1,N=4096"]["candidates"][1]["status"],
            "out_of_resources");

  ASSERT_TRUE(again->remove("M=1,N=4096").ok());
  EXPECT_FALSE(open()->lookup("M=1,N=4096").has_value());
  EXPECT_TRUE(again->remove("never-there").ok());
  EXPECT_EQ(again->record(entry("", "x")).code(), Code::kInvalidArgument);
  EXPECT_EQ(TuningDatabase::open("", h100()).status().code(), Code::kInvalidArgument);
}

TEST_F(DatabaseTest, OtherValidatorsEntriesArePreservedAndInvisible) {
  auto nv = open(h100());
  auto amd = open(mi300());
  ASSERT_TRUE(nv->record(entry("k1", "A")).ok());
  ASSERT_TRUE(amd->record(entry("k2", "B")).ok());  // reloads: must not drop k1
  ASSERT_TRUE(nv->record(entry("k3", "C")).ok());   // reloads: must not drop k2

  auto nv2 = open(h100());
  EXPECT_TRUE(nv2->lookup("k1").has_value());
  EXPECT_TRUE(nv2->lookup("k3").has_value());
  EXPECT_FALSE(nv2->lookup("k2").has_value());
  auto amd2 = open(mi300());
  EXPECT_FALSE(amd2->lookup("k1").has_value());
  ASSERT_TRUE(amd2->lookup("k2").has_value());
  EXPECT_EQ(amd2->lookup("k2")->winner, "B");

  // A different driver version is a different validator.
  Validator newer_driver = h100();
  newer_driver.driver_version = "13.1";
  EXPECT_FALSE(open(newer_driver)->lookup("k1").has_value());

  auto vs = nv2->validators();
  ASSERT_EQ(vs.size(), 2u);
  std::map<std::string, int> counts;
  for (const auto& [v, n] : vs) counts[v.id()] = n;
  EXPECT_EQ(counts[h100().id()], 2);
  EXPECT_EQ(counts[mi300().id()], 1);
  EXPECT_NE(h100().id(), mi300().id());
  EXPECT_NE(h100().id().find("sm_90a"), std::string::npos);
}

TEST_F(DatabaseTest, HandPinnedEntrySurvivesRecord) {
  auto db = open();
  ASSERT_TRUE(db->record(entry("k", "BLOCK=128")).ok());
  // A user edits the file: picks another winner and pins it.
  json doc = json::parse(readFile(path_).value());
  doc["devices"][0]["entries"]["k"]["winner"] = "BLOCK=512";
  doc["devices"][0]["entries"]["k"]["pinned"] = true;
  ASSERT_TRUE(writeFileAtomic(path_, doc.dump(2)).ok());

  // The stale in-memory copy does not matter: record() re-reads the file under the lock.
  EXPECT_TRUE(db->record(entry("k", "BLOCK=64")).ok());
  ASSERT_TRUE(db->lookup("k").has_value());
  EXPECT_EQ(db->lookup("k")->winner, "BLOCK=512");
  EXPECT_TRUE(db->lookup("k")->pinned);
  auto fresh = open();
  EXPECT_EQ(fresh->lookup("k")->winner, "BLOCK=512");
  EXPECT_TRUE(fresh->lookup("k")->pinned);
  // Other keys still record normally; explicit remove() does remove a pinned entry.
  EXPECT_TRUE(fresh->record(entry("k2", "BLOCK=64")).ok());
  EXPECT_EQ(fresh->lookup("k2")->winner, "BLOCK=64");
  EXPECT_TRUE(fresh->remove("k").ok());
  EXPECT_FALSE(open()->lookup("k").has_value());
}

// A pinned entry that cannot be read (the winner field misspelt, as libFuzzer found) is not a
// usable pin: record() replaces it instead of keeping the key untuned for good.
TEST_F(DatabaseTest, UnreadablePinnedEntryIsReplacedByRecord) {
  auto db = open();
  ASSERT_TRUE(db->record(entry("k", "BLOCK=128")).ok());
  json doc = json::parse(readFile(path_).value());
  auto& e = doc["devices"][0]["entries"]["k"];
  e["winneu"] = e["winner"];
  e.erase("winner");
  e["pinned"] = true;
  ASSERT_TRUE(writeFileAtomic(path_, doc.dump(2)).ok());
  auto db2 = open();
  EXPECT_FALSE(db2->lookup("k").has_value());
  EXPECT_FALSE(db2->warnings().empty());  // the malformed entry is reported at load
  ASSERT_TRUE(db2->record(entry("k", "BLOCK=64")).ok());
  ASSERT_TRUE(db2->lookup("k").has_value());
  EXPECT_EQ(db2->lookup("k")->winner, "BLOCK=64");
  EXPECT_FALSE(db2->lookup("k")->pinned);
  EXPECT_EQ(open()->lookup("k")->winner, "BLOCK=64");
}

TEST_F(DatabaseTest, CorruptFileOpensEmptyWithWarningAndIsKeptAside) {
  auto db = open();
  ASSERT_TRUE(db->record(entry("k", "BLOCK=128")).ok());
  std::string good = readFile(path_).value();
  const std::string broken = good.substr(0, good.size() / 2);  // truncated mid-write
  ASSERT_TRUE(writeFileAtomic(path_, broken).ok());

  auto c = open();
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->entries().empty());
  ASSERT_FALSE(c->warnings().empty());
  EXPECT_NE(c->warnings()[0].find("not valid JSON"), std::string::npos) << c->warnings()[0];
  EXPECT_EQ(readFile(path_).value(), broken);  // untouched until the first write
  EXPECT_TRUE(corruptAsides().empty());

  ASSERT_TRUE(c->record(entry("k2", "BLOCK=32")).ok());
  auto asides = corruptAsides();
  ASSERT_EQ(asides.size(), 1u);
  EXPECT_EQ(readFile(asides[0]).value(), broken);  // nothing a user could recover is lost
  auto after = open();
  EXPECT_TRUE(after->warnings().empty());
  EXPECT_TRUE(after->lookup("k2").has_value());
  EXPECT_FALSE(after->lookup("k").has_value());

  // Structurally wrong but valid JSON is corrupt too; empty file as well.
  for (const std::string& junk : {std::string("[]"), std::string("{\"devices\": \"x\"}"),
                                   std::string(""), std::string("\xff\xfe garbage")}) {
    ASSERT_TRUE(writeFileAtomic(path_, junk).ok());
    auto j = open();
    EXPECT_TRUE(j->entries().empty()) << junk;
    EXPECT_FALSE(j->warnings().empty()) << junk;
  }
  // reload() picks up a repaired file and clears the warning.
  auto j = open();
  ASSERT_TRUE(writeFileAtomic(path_, good).ok());
  ASSERT_TRUE(j->reload().ok());
  EXPECT_TRUE(j->warnings().empty());
  EXPECT_TRUE(j->lookup("k").has_value());
}

TEST_F(DatabaseTest, MalformedSingleEntryIsSkippedWithWarningButKeptInFile) {
  auto db = open();
  ASSERT_TRUE(db->record(entry("good", "BLOCK=128")).ok());
  json doc = json::parse(readFile(path_).value());
  doc["devices"][0]["entries"]["bad"] = json{{"winner", 42}};  // hand edit gone wrong
  ASSERT_TRUE(writeFileAtomic(path_, doc.dump(2)).ok());

  auto d = open();
  EXPECT_TRUE(d->lookup("good").has_value());
  EXPECT_FALSE(d->lookup("bad").has_value());
  ASSERT_EQ(d->warnings().size(), 1u);
  EXPECT_NE(d->warnings()[0].find("'bad'"), std::string::npos) << d->warnings()[0];
  ASSERT_TRUE(d->record(entry("other", "BLOCK=64")).ok());
  json after = json::parse(readFile(path_).value());
  EXPECT_EQ(after["devices"][0]["entries"]["bad"]["winner"], 42);  // the user can still fix it
  EXPECT_TRUE(corruptAsides().empty());
}

TEST_F(DatabaseTest, NewerSchemaIsReadOnly) {
  fs::create_directories(root_ / "db");
  const std::string future = R"({"schema": 99, "devices": [], "family": "rmsnorm"})";
  ASSERT_TRUE(writeFileAtomic(path_, future).ok());
  auto db = open();
  ASSERT_FALSE(db->warnings().empty());
  EXPECT_NE(db->warnings()[0].find("newer"), std::string::npos);
  EXPECT_EQ(db->record(entry("k", "x")).code(), Code::kUnsupported);
  EXPECT_EQ(readFile(path_).value(), future);
}

TEST_F(DatabaseTest, ConcurrentProcessesRecordingDifferentKeysLoseNothing) {
  constexpr int kProcs = 6, kThreads = 2, kKeys = 8;
  inChildren(kProcs, [&](int p) {
    auto db = TuningDatabase::open(path_, h100(), "rmsnorm");
    if (!db.ok()) return 10;
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
      ts.emplace_back([&, t] {
        for (int k = 0; k < kKeys; ++k) {
          std::string key = "p" + std::to_string(p) + "_t" + std::to_string(t) + "_k" +
                            std::to_string(k);
          if (!(*db)->record(entry(key, "BLOCK=" + std::to_string(k))).ok()) ++bad;
          CandidateResult c;
          c.config = "BLOCK=" + std::to_string(k);
          if (!(*db)->recordCandidate("shared_key", c).ok()) ++bad;
        }
      });
    }
    for (auto& t : ts) t.join();
    return bad.load() == 0 ? 0 : 1;
  });
  auto db = open();
  EXPECT_TRUE(db->warnings().empty());
  EXPECT_EQ(db->entries().size(), size_t(kProcs * kThreads * kKeys));
  for (int p = 0; p < kProcs; ++p) {
    for (int t = 0; t < kThreads; ++t) {
      for (int k = 0; k < kKeys; ++k) {
        std::string key =
            "p" + std::to_string(p) + "_t" + std::to_string(t) + "_k" + std::to_string(k);
        auto e = db->lookup(key);
        ASSERT_TRUE(e.has_value()) << key;
        EXPECT_EQ(e->winner, "BLOCK=" + std::to_string(k));
      }
    }
  }
  EXPECT_EQ(db->candidatesFor("shared_key").size(), size_t(kKeys));  // upserted by config
  EXPECT_TRUE(corruptAsides().empty());
}

TEST_F(DatabaseTest, CandidatesAndBlacklistRoundTrip) {
  auto db = open();
  CandidateResult fail;
  fail.config = "BLOCK_M=256,BLOCK_N=256";
  fail.status = Code::kCompileError;
  fail.reason = "ptxas error: too much shared data";
  CandidateResult wrong;
  wrong.config = "BLOCK_M=64,SPLIT_K=4";
  wrong.status = Code::kWrongResult;
  wrong.reason = "max error 0.5 > tolerance 0.01";
  wrong.max_error = 0.5;
  CandidateResult vendor;
  vendor.config = "cublaslt:algo=21,tile=12";
  vendor.source = "cublaslt";
  vendor.stats = stats(0.3);
  ASSERT_TRUE(db->recordCandidate("gemm_k", fail).ok());
  ASSERT_TRUE(db->recordCandidate("gemm_k", wrong).ok());
  ASSERT_TRUE(db->recordCandidate("gemm_k", vendor).ok());

  auto cs = open()->candidatesFor("gemm_k");  // a later run resumes / skips these
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_EQ(cs[0].config, fail.config);
  EXPECT_EQ(cs[0].status, Code::kCompileError);
  EXPECT_EQ(cs[0].reason, fail.reason);
  EXPECT_FALSE(cs[0].date.empty());
  EXPECT_EQ(cs[1].status, Code::kWrongResult);
  EXPECT_DOUBLE_EQ(cs[1].max_error, 0.5);
  EXPECT_EQ(cs[2].source, "cublaslt");
  EXPECT_DOUBLE_EQ(cs[2].stats.median_ms, 0.3);
  EXPECT_TRUE(open(mi300())->candidatesFor("gemm_k").empty());

  // Re-measuring a candidate replaces it rather than duplicating it.
  wrong.status = Code::kOk;
  wrong.reason.clear();
  ASSERT_TRUE(db->recordCandidate("gemm_k", wrong).ok());
  cs = db->candidatesFor("gemm_k");
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_EQ(cs[1].status, Code::kOk);

  // Finishing the key clears its partial results; the failures the entry lists stay
  // blacklisted (a forced re-tune still skips them), successes are not repeated.
  ASSERT_TRUE(db->record(entry("gemm_k", "BLOCK=128")).ok());
  cs = open()->candidatesFor("gemm_k");
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].config, "BLOCK=1024");
  EXPECT_EQ(cs[0].status, Code::kOutOfResources);
  EXPECT_EQ(open()->lookup("gemm_k")->candidates[1].status, Code::kOutOfResources);
  // A partial result for the same candidate takes precedence over the entry's copy.
  CandidateResult retried;
  retried.config = "BLOCK=1024";
  retried.status = Code::kTimeout;
  ASSERT_TRUE(db->recordCandidate("gemm_k", retried).ok());
  cs = db->candidatesFor("gemm_k");
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].status, Code::kTimeout);
  EXPECT_EQ(db->recordCandidate("", fail).code(), Code::kInvalidArgument);
}

TEST_F(DatabaseTest, ExportImportRespectsPins) {
  auto src = open();
  ASSERT_TRUE(src->record(entry("k1", "FROM_EXPORT")).ok());
  ASSERT_TRUE(src->record(entry("k2", "FROM_EXPORT")).ok());
  CandidateResult c;
  c.config = "X=1";
  ASSERT_TRUE(src->recordCandidate("k9", c).ok());
  ASSERT_TRUE(open(mi300())->record(entry("amd", "FROM_EXPORT")).ok());
  ASSERT_TRUE(src->reload().ok());
  auto text = src->exportJson();
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(json::parse(*text), json::parse(readFile(path_).value()));

  const std::string other_path = (root_ / "user" / "mine.json").string();
  auto dst = open(h100(), other_path);
  DbEntry pinned = entry("k1", "MY_PIN");
  pinned.pinned = true;
  ASSERT_TRUE(dst->record(pinned).ok());
  ASSERT_TRUE(dst->importJson(*text).ok());
  auto d2 = open(h100(), other_path);
  EXPECT_EQ(d2->lookup("k1")->winner, "MY_PIN");
  EXPECT_EQ(d2->lookup("k2")->winner, "FROM_EXPORT");
  EXPECT_EQ(d2->candidatesFor("k9").size(), 1u);
  EXPECT_EQ(open(mi300(), other_path)->lookup("amd")->winner, "FROM_EXPORT");

  std::string before = readFile(other_path).value();
  EXPECT_EQ(dst->importJson("{broken").code(), Code::kInvalidArgument);
  EXPECT_EQ(dst->importJson("[1,2]").code(), Code::kInvalidArgument);
  EXPECT_EQ(readFile(other_path).value(), before);
}

TEST_F(DatabaseTest, UntunedKeysFromSeveralProcessesAreWholeLines) {
  const std::string log = (root_ / "untuned" / "keys.jsonl").string();
  constexpr int kProcs = 4, kLines = 50;
  const std::string pad(300, 'x');  // long lines make interleaving visible if it happened
  inChildren(kProcs, [&](int p) {
    for (int i = 0; i < kLines; ++i) {
      std::string args = R"({"M": )" + std::to_string(i) + R"(, "proc": )" + std::to_string(p) +
                         R"(, "pad": ")" + pad + "\"}";
      if (!appendUntunedKey(log, "gemm", "M=" + std::to_string(i), args).ok()) return 1;
    }
    return 0;
  });
  std::istringstream in(readFile(log).value());
  std::string line;
  int n = 0;
  std::map<int, int> per_proc;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "torn line: " << line.substr(0, 120);
    EXPECT_EQ(j["family"], "gemm");
    EXPECT_EQ(j["key"], "M=" + std::to_string(j["M"].get<int>()));
    EXPECT_EQ(j["pad"], pad);
    EXPECT_TRUE(j.contains("date"));
    ++per_proc[j["proc"].get<int>()];
    ++n;
  }
  EXPECT_EQ(n, kProcs * kLines);
  for (int p = 0; p < kProcs; ++p) EXPECT_EQ(per_proc[p], kLines);
  EXPECT_TRUE(appendUntunedKey(log, "gemm", "k", "").ok());
  EXPECT_EQ(appendUntunedKey(log, "gemm", "k", "[1]").code(), Code::kInvalidArgument);
  EXPECT_EQ(appendUntunedKey(log, "gemm", "k", "{oops").code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace ktune
