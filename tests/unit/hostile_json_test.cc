// JSON from outside the process cannot crash it (issue 28): a document nested 300k levels deep
// (600 KB, under every size cap) in a database file, a store metadata file, a `db import` file, a
// C API space_json, a journal line or a tune item is a clear error, never a stack overflow in
// nlohmann's recursive copy; files over the stated limits are refused before they are read; keys
// with terminal escape sequences are printed escaped (`ktune db show`).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "autotune/database.h"
#include "autotune/journal.h"
#include "base/format.h"
#include "base/fs.h"
#include "base/json_bounded.h"
#include "cli_fixture.h"
#include "compiler/store/store.h"
#include "ktune/ktune.h"

namespace ktune {
namespace {

// 300k levels of '[' ... ']': about 600 KB.
std::string deepArray(size_t depth = 300000) { return std::string(depth, '[') + std::string(depth, ']'); }

struct TmpDir {
  std::string path;
  TmpDir() {
    char t[] = "/tmp/ktune-hostile-json-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TmpDir() { (void)removeTree(path); }
};

// A sparse file of `bytes` (no disk used): only its size matters to the readers.
void sparseFile(const std::string& path, off_t bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, bytes), 0);
  ::close(fd);
}

TEST(JsonBounded, DepthAndSizeAreCheckedBeforeParsing) {
  auto ok = parseJsonBounded(R"({"a": [1, {"b": "[[[[ not counted inside a string \" [["}]})");
  ASSERT_TRUE(ok.ok()) << ok.status().toString();
  EXPECT_EQ((*ok)["a"][0], 1);

  auto deep = parseJsonBounded(deepArray());
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), Code::kCorrupt);
  EXPECT_NE(deep.status().message().find("nested deeper than 64 levels"), std::string::npos)
      << deep.status().message();

  JsonLimits lim;
  lim.max_depth = 3;
  lim.code = Code::kInvalidArgument;
  EXPECT_TRUE(parseJsonBounded("[[[1]]]", lim).ok());
  EXPECT_EQ(parseJsonBounded("[[[[1]]]]", lim).status().code(), Code::kInvalidArgument);

  lim.max_bytes = 10;
  auto big = parseJsonBounded("[1,2,3,4,5,6,7]", lim);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("larger than the limit of 10 bytes"), std::string::npos);

  auto broken = parseJsonBounded("{\"a\": ");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("not valid JSON"), std::string::npos);
  EXPECT_TRUE(parseJsonOrDiscarded(deepArray()).is_discarded());
}

TEST(JsonBounded, DeepDatabaseFileOpensEmptyWithAWarning) {
  TmpDir d;
  const std::string path = d.path + "/rmsnorm_bf16.json";
  ASSERT_TRUE(writeFileAtomic(path, "{\"schema\": 1, \"family\": \"rmsnorm_bf16\", \"devices\": " +
                                        deepArray() + "}")
                  .ok());
  auto db = TuningDatabase::open(path, Validator{}, "rmsnorm_bf16");
  ASSERT_TRUE(db.ok()) << db.status().toString();
  EXPECT_TRUE((*db)->entries().empty());
  ASSERT_FALSE((*db)->warnings().empty());
  EXPECT_NE((*db)->warnings()[0].find("nested deeper"), std::string::npos) << (*db)->warnings()[0];
  auto sum = inspectDatabase(*readFile(path));
  ASSERT_FALSE(sum.ok());
  EXPECT_EQ(sum.status().code(), Code::kCorrupt);
}

TEST(JsonBounded, OversizedDatabaseFileIsRefusedBeforeReading) {
  TmpDir d;
  const std::string path = d.path + "/big.json";
  sparseFile(path, off_t(kDatabaseMaxBytes) + 1);
  auto db = TuningDatabase::open(path, Validator{}, "big");
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.status().message().find("64 MiB"), std::string::npos) << db.status().toString();
}

TEST(JsonBounded, DeepImportIsRefused) {
  TmpDir d;
  auto db = TuningDatabase::open(d.path + "/f.json", Validator{}, "f");
  ASSERT_TRUE(db.ok());
  Status s = (*db)->importJson(deepArray());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("nested deeper"), std::string::npos) << s.message();
  EXPECT_FALSE(pathExists(d.path + "/f.json")) << "a refused import must not write the database";
}

TEST(JsonBounded, DeepOrOversizedStoreMetadataReadsAsCorrupt) {
  TmpDir d;
  auto store = CodeObjectStore::open(d.path);
  ASSERT_TRUE(store.ok());
  const std::string key(64, 'a'), key2(64, 'b');
  ASSERT_TRUE(makeDirs(d.path + "/objects/aa").ok());
  ASSERT_TRUE(makeDirs(d.path + "/objects/bb").ok());
  ASSERT_TRUE(writeFileAtomic(d.path + "/objects/aa/" + key + ".json", deepArray()).ok());
  sparseFile(d.path + "/objects/bb/" + key2 + ".json", off_t(kStoreMetadataMaxBytes) + 1);
  auto got = (*store)->get(key);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kCorrupt);
  EXPECT_NE(got.status().message().find("nested deeper"), std::string::npos);
  auto big = (*store)->get(key2);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Code::kCorrupt);
  EXPECT_NE(big.status().message().find("4 MiB"), std::string::npos) << big.status().message();
  auto list = (*store)->list();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 2u);
  EXPECT_EQ((*store)->verify().corrupt.size(), 2u);
  auto portable = codeObjectFromPortable(key, deepArray(), "bin");
  EXPECT_EQ(portable.status().code(), Code::kCorrupt);
}

TEST(JsonBounded, DeepJournalLineIsSkipped) {
  TmpDir d;
  const std::string db = d.path + "/f.json";
  TuningJournal j(db, "f", "v");
  CandidateResult c;
  c.config = "A=1";
  c.stats.runs = 3;
  ASSERT_TRUE(j.append("k", c).ok());
  {
    std::ofstream(db + ".journal", std::ios::app) << deepArray() << "\n";
  }
  ASSERT_TRUE(j.append("k", c).ok());
  auto got = j.candidatesFor("k");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].config, "A=1");
  EXPECT_TRUE(j.compact("k").ok());
}

TEST(JsonBounded, DeepCApiSpaceIsAnError) {
  TmpDir d;
  ktune_tuner_options o = KTUNE_TUNER_OPTIONS_INIT;
  o.backend = "sim";
  o.cache_dir = d.path.c_str();
  ktune_tuner* t = nullptr;
  ASSERT_EQ(ktune_tuner_create_ex(&o, &t), KTUNE_OK) << ktune_last_error();
  static const ktune_arg kArgs[] = {{"n", KTUNE_ARG_I64}};
  ktune_family_desc desc = KTUNE_FAMILY_DESC_INIT;
  desc.name = "deep";
  desc.source = "KTUNE_KERNEL void deep(long long n) {}";
  desc.entry = "deep";
  const std::string space = "{\"params\": {\"B\": " + deepArray() + "}}";
  desc.space_json = space.c_str();
  desc.args = kArgs;
  desc.num_args = 1;
  desc.grid[0] = "1";
  desc.block[0] = "1";
  ktune_family* f = nullptr;
  EXPECT_EQ(ktune_family_register(t, &desc, &f), KTUNE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ktune_last_error()).find("nested deeper"), std::string::npos)
      << ktune_last_error();
  // The same family with a sane space; a deep database imported into it is refused.
  desc.space_json = R"({"params": {"B": [1, 2]}})";
  ASSERT_EQ(ktune_family_register(t, &desc, &f), KTUNE_OK) << ktune_last_error();
  const std::string deep_db = "{\"schema\": 1, \"devices\": " + deepArray() + "}";
  EXPECT_EQ(ktune_db_import(t, "deep", deep_db.c_str()), KTUNE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ktune_last_error()).find("nested deeper"), std::string::npos)
      << ktune_last_error();
  ktune_tuner_destroy(t);
}

TEST(Printable, EscapesControlSequencesAndBadUtf8) {
  EXPECT_EQ(printable("pow2(n)=1024"), "pow2(n)=1024");
  EXPECT_EQ(printable("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(printable("\r\a\x7f"), "\\x0d\\x07\\x7f");
  EXPECT_EQ(printable("\xc2\x9b" "31m"), "\\xc2\\x9b31m");  // C1 CSI
  EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");  // valid UTF-8 passes
  EXPECT_EQ(printable("a\\b"), "a\\\\b");
  EXPECT_EQ(printable("l1\nl2\t\x1b", true), "l1\nl2\t\\x1b");
}

class HostileJsonCli : public Cli {};

// `ktune db show/ls/verify` on a database a hostile user wrote: a key holding an ANSI sequence is
// printed escaped; a deeply nested file is reported, not a crash.
TEST_F(HostileJsonCli, DbCommandsEscapeKeysAndSurviveDeepFiles) {
  const std::string db_dir = cache_ + "/db";
  ASSERT_TRUE(makeDirs(db_dir).ok());
  nlohmann::json doc = {
      {"schema", 1},
      {"family", "evil"},
      {"devices",
       {{{"validator", {{"backend", "sim"}, {"arch", "sm_90a"}, {"device_name", "d\x1b[31m"}}},
         {"entries",
          {{"k\x1b]0;pwned\x07\x1b[2J", {{"winner", "B=1"}, {"stats", {{"median_ms", 1}}}}}}}}}}};
  ASSERT_TRUE(writeFileAtomic(db_dir + "/evil.json", doc.dump()).ok());
  CliRun r = ktune({"db", "show", "evil"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
  EXPECT_HAS(r.out, "\\x1b]0;pwned\\x07\\x1b[2J");
  r = ktune({"db", "ls"});
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;

  ASSERT_TRUE(writeFileAtomic(db_dir + "/deep.json", deepArray()).ok());
  for (const char* sub : {"ls", "verify"}) {
    r = ktune({"db", sub});
    EXPECT_EQ(r.code, 4) << sub << ": " << r.out << r.err;  // corrupt, reported
    EXPECT_HAS(r.out + r.err, "nested deeper");
  }
  r = ktune({"db", "show", "deep"});  // opens empty with the reason as a warning
  EXPECT_HAS(r.err, "nested deeper");
  std::ofstream(root_ + "/deep_import.json") << deepArray();
  r = ktune({"db", "import", root_ + "/deep_import.json"});
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_HAS(r.err, "nested deeper");
}

}  // namespace
}  // namespace ktune
