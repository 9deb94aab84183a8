// `ktune db` on populated, shared, hostile and corrupt databases (regression tests for the aborts
// of `db show` / `db ls`, the family mixing of a shared KTUNE_DB, unsafe files, FIFOs and devices
// given as files), and the database library behaviour behind them.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "autotune/database.h"
#include "base/fs.h"
#include "tests/unit/cli_fixture.h"
#include "tests/unit/tuner_sim_env.h"

namespace ktune {
namespace {

using nlohmann::json;

Validator dev(const std::string& name) {
  return Validator{"0.1.0", "cuda", "580", "nvrtc", "13.0", name, "sm_90a"};
}

DbEntry entry(const std::string& key, const std::string& winner) {
  DbEntry e;
  e.key = key;
  e.winner = winner;
  e.winner_stats.median_ms = 0.012;
  CandidateResult ok;
  ok.config = winner;
  ok.stats.median_ms = 0.012;
  CandidateResult bad;
  bad.config = "BLOCK=4096";
  bad.status = Code::kOutOfResources;
  bad.reason = "needs 300 KiB of shared memory";
  e.candidates = {ok, bad};
  return e;
}

class CliDb : public Cli {
 protected:
  std::string dbFile(const std::string& family) { return cache_ + "/db/" + family + ".json"; }
  // Two device blocks of family "rmsnorm_bf16", two keys on the first.
  void populate() {
    ASSERT_TRUE(makeDirs(cache_ + "/db", 0700).ok());
    auto a = TuningDatabase::open(dbFile("rmsnorm_bf16"), dev("H100"), "rmsnorm_bf16");
    ASSERT_TRUE(a.ok());
    // Configs of rmsnorm_bf16's real space: `db import` refuses others (the export round trip).
    ASSERT_TRUE((*a)->record(entry("rows=64,cols=4096", "VEC=8,THREADS=256,ROWS_PER_BLOCK=1,OCC=0")).ok());
    ASSERT_TRUE((*a)->record(entry("rows=1,cols=4096", "VEC=8,THREADS=128,ROWS_PER_BLOCK=1,OCC=0")).ok());
    auto b = TuningDatabase::open(dbFile("rmsnorm_bf16"), dev("H200"), "rmsnorm_bf16");
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE((*b)->record(entry("rows=64,cols=4096", "VEC=8,THREADS=512,ROWS_PER_BLOCK=1,OCC=0")).ok());
  }
  void write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
    ::chmod(path.c_str(), 0600);
  }
};

TEST_F(CliDb, EverySubcommandOnAPopulatedDatabase) {
  populate();
  CliRun r = ktune({"db", "ls"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "rmsnorm_bf16");
  EXPECT_HAS(r.out, "2 entries");
  EXPECT_HAS(r.out, "1 entries");
  r = ktune({"db", "ls", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_array() && j.size() == 1) << r.out;
  EXPECT_EQ(j[0]["families"][0]["family"], "rmsnorm_bf16");
  EXPECT_EQ(j[0]["families"][0]["devices"].size(), 2u);

  // show FAMILY used to abort (invalid_iterator.212) on any populated database.
  r = ktune({"db", "show", "rmsnorm_bf16"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "rows=64,cols=4096  [H100 sm_90a]");
  EXPECT_HAS(r.out, "rows=64,cols=4096  [H200 sm_90a]");
  EXPECT_HAS(r.out, "winner VEC=8,THREADS=256,ROWS_PER_BLOCK=1,OCC=0  12.00 us");
  EXPECT_HAS(r.out, "3 entries");
  r = ktune({"db", "show", "rmsnorm_bf16", "rows=1,cols=4096"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "winner VEC=8,THREADS=128,ROWS_PER_BLOCK=1,OCC=0");
  EXPECT_HAS(r.out, "out_of_resources: needs 300 KiB");
  EXPECT_HAS(r.out, "1 entry");
  r = ktune({"db", "show", "rmsnorm_bf16", "rows=64,cols=4096", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << r.out;
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["candidates"].size(), 2u);
  r = ktune({"db", "show", "rmsnorm_bf16", "nosuch"});
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, "no entry 'nosuch'");
  r = ktune({"db", "show", "nosuchfamily"});
  EXPECT_EQ(r.code, 1);

  r = ktune({"db", "verify"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_HAS(r.out, "1 database checked, 0 problems");

  r = ktune({"db", "export", "rmsnorm_bf16", "-o", root_ + "/export.json"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = ktune({"db", "rm", "rmsnorm_bf16", "rows=64,cols=4096", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  j = json::parse(r.out, nullptr, false);
  EXPECT_EQ(j["device_blocks"], 2) << r.out;
  EXPECT_HAS(ktune({"db", "show", "rmsnorm_bf16"}).out, "1 entry");
  r = ktune({"db", "rm", "rmsnorm_bf16", "rows=64,cols=4096"});
  EXPECT_EQ(r.code, 1) << "removing a missing key";
  r = ktune({"db", "import", root_ + "/export.json", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  j = json::parse(r.out, nullptr, false);
  EXPECT_EQ(j["into"][0]["family"], "rmsnorm_bf16") << r.out;
  EXPECT_HAS(ktune({"db", "show", "rmsnorm_bf16"}).out, "3 entries");
  r = ktune({"db", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_HAS(r.out, "usage: ktune db ls");
}

// An entry `remote pull` wrote is marked as not yet verified, and long configs and reasons are
// shown whole (a cut made two different candidates read the same).
TEST_F(CliDb, ShowMarksUnverifiedEntriesAndPrintsConfigsWhole) {
  ASSERT_TRUE(makeDirs(cache_ + "/db", 0700).ok());
  auto a = TuningDatabase::open(dbFile("rmsnorm_bf16"), dev("H100"), "rmsnorm_bf16");
  ASSERT_TRUE(a.ok());
  DbEntry e = entry("rows=64,cols=4096", "VEC=8,THREADS=256,ROWS_PER_BLOCK=1,OCC=0");
  e.unverified = true;
  const std::string long_cfg(90, 'X');
  const std::string long_why = "needs " + std::string(100, 'y') + " end";
  e.candidates[1].config = long_cfg;
  e.candidates[1].reason = long_why;
  ASSERT_TRUE((*a)->record(e).ok());
  ASSERT_TRUE((*a)->record(entry("rows=1,cols=4096", "VEC=8,THREADS=128,ROWS_PER_BLOCK=1,OCC=0")).ok());
  CliRun r = ktune({"db", "show", "rmsnorm_bf16", "rows=64,cols=4096"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "UNVERIFIED");
  EXPECT_HAS(r.out, long_cfg);
  EXPECT_HAS(r.out, long_why);
  EXPECT_EQ(ktune({"db", "show", "rmsnorm_bf16", "rows=1,cols=4096"}).out.find("UNVERIFIED"),
            std::string::npos);
  r = ktune({"db", "show", "rmsnorm_bf16", "rows=64,cols=4096", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_array() && j.size() == 1) << r.out;
  EXPECT_EQ(j[0]["unverified"], true);
}

TEST_F(CliDb, MistypedDevicesAndValidatorNeverAbort) {
  ASSERT_TRUE(makeDirs(cache_ + "/db", 0700).ok());
  // "devices" a number: used to abort `db ls` (type_error.306). The file is corrupt: exit 4.
  write(dbFile("a"), R"({"schema": 1, "family": "a", "devices": 5})");
  // "validator" a string: the library skips the block with a warning; ls lists the file.
  write(dbFile("b"), R"({"schema": 1, "family": "b", "devices": [{"validator": "x", "entries": {}}]})");
  write(dbFile("c"), "{\"family\": \"c\", \"devices\": [");
  // `db show` reads each as the library does: exit 0, no entries, and the warning that says what
  // is wrong (`db ls` and `db verify` below are the commands that fail on corruption).
  for (auto [fam, warning] : {std::pair<const char*, const char*>{"a", "\"devices\" is not an array"},
                              {"b", ""},
                              {"c", "not valid JSON"}}) {
    CliRun r = ktune({"db", "show", fam});
    EXPECT_EQ(r.code, 0) << fam << ": " << r.out << r.err;
    EXPECT_EQ(r.out, "0 entries\n") << fam;
    if (*warning) {
      EXPECT_HAS(r.err, "warning: tuning database '" + dbFile(fam) + "' " + warning);
    }
  }
  CliRun r = ktune({"db", "ls"});
  EXPECT_EQ(r.code, 4) << "an unparsable database is not a success\n" << r.out << r.err;
  EXPECT_HAS(r.out, "b  (");
  EXPECT_HAS(r.out, "CORRUPT");
  r = ktune({"db", "verify"});
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_HAS(r.out, "\"devices\" is not an array");
  EXPECT_HAS(r.out, "no \"validator\" object");
  EXPECT_HAS(r.out, "not valid JSON");
  r = ktune({"db", "verify", "--json"});
  EXPECT_EQ(r.code, 4);
  EXPECT_TRUE(json::parse(r.out, nullptr, false).is_array()) << r.out;
}

TEST_F(CliDb, FifoDeviceAndDirectoryAreRefusedWithoutBlocking) {
  const std::string fifo = root_ + "/fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Each one as a database to import and as a kernel source: exit 2 with the reason for that
  // kind of file (a directory says so; a FIFO and a device are "not a regular file").
  for (const std::string& f : {fifo, std::string("/dev/zero"), root_}) {
    const std::string why = f == root_ ? "is a directory" : "not a regular file";
    CliRun r = ktune({"db", "import", f});
    EXPECT_EQ(r.code, 2) << f << ": " << r.err;
    EXPECT_HAS(r.err, why);
    r = ktune({"compile", f, "--arch", "sm_90a", "--entry", "k"});
    EXPECT_EQ(r.code, 2) << f << ": " << r.err;
    EXPECT_HAS(r.err, why);
  }
  // A source that does not exist: exit 1 (failed), naming it.
  CliRun r = ktune({"compile", root_ + "/missing.cu", "--arch", "sm_90a", "--entry", "k"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_HAS(r.err, "cannot open '" + root_ + "/missing.cu'");
  // The helper itself: the cap holds for a regular file too.
  write(root_ + "/big", std::string(4096, 'x'));
  auto t = readFile(root_ + "/big", 100);
  ASSERT_FALSE(t.ok());
  EXPECT_HAS(t.status().message(), "larger than 100 bytes");
}

TEST_F(CliDb, DatabaseOthersCanWriteIsRefused) {
  populate();
  ASSERT_EQ(::chmod(dbFile("rmsnorm_bf16").c_str(), 0666), 0);
  CliRun r = ktune({"db", "show", "rmsnorm_bf16"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_HAS(r.err, "chmod 600");
  auto db = TuningDatabase::open(dbFile("rmsnorm_bf16"), dev("H100"), "rmsnorm_bf16");
  ASSERT_FALSE(db.ok());
  EXPECT_HAS(db.status().message(), "mode 666");
}

// rmsnorm_bf16 and rmsnorm_f16 build the same key strings: in one KTUNE_DB file each family must
// see only its own entries (the second used to take the first one's winners).
TEST_F(CliDb, SharedDatabaseKeepsFamiliesApart) {
  const std::string shared = root_ + "/shared.json";
  auto bf = TuningDatabase::open(shared, dev("H100"), "rmsnorm_bf16");
  auto f16 = TuningDatabase::open(shared, dev("H100"), "rmsnorm_f16");
  ASSERT_TRUE(bf.ok() && f16.ok());
  ASSERT_TRUE((*bf)->record(entry("rows=64,cols=4096", "BLOCK=256")).ok());
  ASSERT_TRUE((*f16)->reload().ok());
  EXPECT_FALSE((*f16)->lookup("rows=64,cols=4096")) << "f16 sees bf16's winner";
  ASSERT_TRUE((*f16)->record(entry("rows=64,cols=4096", "BLOCK=1024")).ok());
  ASSERT_TRUE((*bf)->reload().ok());
  EXPECT_EQ((*bf)->lookup("rows=64,cols=4096")->winner, "BLOCK=256");
  EXPECT_EQ((*f16)->lookup("rows=64,cols=4096")->winner, "BLOCK=1024");
  auto text = readFile(shared);
  ASSERT_TRUE(text.ok());
  json doc = json::parse(*text);
  EXPECT_EQ(doc["schema"], 2);
  EXPECT_TRUE(doc["families"].contains("rmsnorm_bf16") && doc["families"].contains("rmsnorm_f16"));

  CliRun r = ktune({"db", "ls"}, "", {"KTUNE_DB=" + shared});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "rmsnorm_bf16  (" + shared);
  EXPECT_HAS(r.out, "rmsnorm_f16  (" + shared);
  r = ktune({"db", "show", "rmsnorm_f16", "--json"}, "", {"KTUNE_DB=" + shared});
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_EQ(j.size(), 1u) << r.out;
  EXPECT_EQ(j[0]["winner"], "BLOCK=1024");
  r = ktune({"db", "export", "rmsnorm_f16"}, "", {"KTUNE_DB=" + shared});
  ASSERT_EQ(r.code, 0);
  j = json::parse(r.out, nullptr, false);
  EXPECT_EQ(j["family"], "rmsnorm_f16");
  EXPECT_EQ(j["schema"], 1) << "one family exports in the single-family form";
}

// A file written by an older ktune (schema 1, one family) is read as that family's, stays
// invisible to the others, and keeps its entries when another family joins the file.
TEST_F(CliDb, SchemaOneFilesAreMigrated) {
  const std::string old = root_ + "/old.json";
  json doc = {{"schema", 1}, {"family", "rmsnorm_bf16"},
              {"devices", json::array({{{"validator", {{"ktune_version", "0.1.0"}, {"backend", "cuda"},
                                                        {"driver_version", "580"}, {"compiler", "nvrtc"},
                                                        {"compiler_version", "13.0"}, {"device_name", "H100"},
                                                        {"arch", "sm_90a"}}},
                                        {"entries", {{"k", {{"winner", "BLOCK=256"}}}}}}})}};
  write(old, doc.dump(2));
  auto bf = TuningDatabase::open(old, dev("H100"), "rmsnorm_bf16");
  ASSERT_TRUE(bf.ok());
  EXPECT_EQ((*bf)->lookup("k")->winner, "BLOCK=256");
  auto f16 = TuningDatabase::open(old, dev("H100"), "rmsnorm_f16");
  ASSERT_TRUE(f16.ok());
  EXPECT_FALSE((*f16)->lookup("k"));
  for (const auto& w : (*f16)->warnings()) ADD_FAILURE() << "unexpected warning: " << w;
  ASSERT_TRUE((*f16)->record(entry("k", "BLOCK=64")).ok());
  ASSERT_TRUE((*bf)->reload().ok());
  EXPECT_EQ((*bf)->lookup("k")->winner, "BLOCK=256");
  // A schema-1 file naming no family belongs to whoever opens it, as before.
  write(root_ + "/anon.json", R"({"schema": 1, "devices": []})");
  auto anon = TuningDatabase::open(root_ + "/anon.json", dev("H100"), "silu_mul_bf16");
  ASSERT_TRUE(anon.ok());
  ASSERT_TRUE((*anon)->record(entry("k", "BLOCK=64")).ok());
  EXPECT_EQ(json::parse(*readFile(root_ + "/anon.json"))["family"], "silu_mul_bf16");
}

// A database that cannot be written reports it once per key, not once per candidate.
TEST_F(CliDb, UnwritableDatabaseIsReportedOncePerKey) {
  write(root_ + "/file", "x");
  const std::string path = root_ + "/file/db.json";  // parent is a file: every write fails
  auto db = TuningDatabase::open(path, dev("H100"), "f");
  ASSERT_TRUE(db.ok());
  CandidateResult c;
  c.config = "BLOCK=1";
  EXPECT_FALSE((*db)->recordCandidate("k1", c).ok());
  for (int i = 2; i < 10; ++i) {
    c.config = "BLOCK=" + std::to_string(i);
    EXPECT_TRUE((*db)->recordCandidate("k1", c).ok()) << "candidate " << i << " reported again";
  }
  EXPECT_FALSE((*db)->recordCandidate("k2", c).ok()) << "another key is reported";
  EXPECT_FALSE((*db)->record(entry("k1", "BLOCK=1")).ok()) << "the final entry always reports";
}

// A database winner that is not in the family's own space (a file shared with another family, a
// hand edit) is never run: it is refused with a message and the key is tuned again.
TEST(DbWinnerSpace, AWinnerOutsideTheSpaceIsRetuned) {
  tunertest::Env env;
  auto tuner = Engine::create(env.backend, env.options());
  ASSERT_TRUE(tuner.ok()) << tuner.status().toString();
  auto fam = addFamily(**tuner, env.family());
  ASSERT_TRUE(fam.ok()) << fam.status().toString();
  tunertest::Scale p = env.problem(4096);
  auto sel = fam->lookup(p);
  ASSERT_TRUE(sel.ok());
  DbEntry bogus;
  bogus.key = sel->key;
  bogus.winner = "BLOCK=96,VEC=3";  // parses, compiles on the simulated compiler, not in the space
  ASSERT_TRUE((*tuner)->database("scale")->record(bogus).ok());
  ASSERT_TRUE((*fam)(p).ok());
  EXPECT_NE(env.log.str().find("not in family scale's config space"), std::string::npos)
      << env.log.str();
  EXPECT_NE(env.last_launched, "BLOCK=96,VEC=3") << "the foreign winner ran";
  auto after = (*tuner)->database("scale")->lookup(sel->key);
  ASSERT_TRUE(after.has_value());
  EXPECT_NE(after->winner, "BLOCK=96,VEC=3");
  // A pin naming a parameter the family does not have is refused as well.
  tunertest::Scale q = env.problem(1 << 20);
  auto sel2 = fam->lookup(q);
  ASSERT_TRUE(sel2.ok());
  bogus.key = sel2->key;
  bogus.winner = "BLOCK=128,VEC=1,TILE=4";
  bogus.pinned = true;
  ASSERT_TRUE((*tuner)->database("scale")->record(bogus).ok());
  ASSERT_TRUE((*fam)(q).ok());
  EXPECT_NE(env.log.str().find("unknown parameter 'TILE'"), std::string::npos) << env.log.str();
}

}  // namespace
}  // namespace ktune
