// Hostile input through the public APIs: bad store keys, unsafe / non-directory / read-only cache
// dirs and writes that fail half way, for the code-object store and the files under it
// (compiler/store, base/fs).
// Every case must give a clear Status (what was wrong, what to do), never a crash, a torn file or
// a lost entry. Runs without a GPU.
// First: it sets the diagnostics every hostile test needs before any other include.
#include "tests/unit/hostile_fixture.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "autotune/database.h"
#include "base/fs.h"
#include "compiler/compiler.h"
#include "compiler/store/store.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

using hostile::FileSizeLimit;
using hostile::Hostile;
using hostile::tempFilesIn;
namespace fs = std::filesystem;

// ---- code-object store ---------------------------------------------------------------------

CodeObject fakeObject(const std::string& bytes) {
  CodeObject o;
  o.binary = bytes;
  o.format = "sim";
  o.arch = "gfx90a";
  o.entry = o.lowered_entry = "k";
  o.compiler = "fake";
  o.compiler_version = "1";
  o.dumps["isa"] = "s_endpgm\n";
  return o;
}

class FakeCompiler : public Compiler {
 public:
  std::string name() const override { return "fake"; }
  std::string version() const override { return "1"; }
  bool supportsArch(const std::string&) const override { return true; }
  Expected<CodeObject> compile(const CompileRequest& req) override {
    return fakeObject("compiled:" + req.source);
  }
};

TEST_F(Hostile, StoreRejectsBadKeysBeforeTouchingAnyPath) {
  auto store = CodeObjectStore::open(path("store"));
  ASSERT_TRUE(store.ok()) << store.status().toString();
  const std::string upper(64, 'A');
  const std::vector<std::string> bad = {"",
                                        "../../etc",
                                        "../../etc/passwd",
                                        "/etc/passwd",
                                        std::string(64, 'z'),
                                        upper,
                                        std::string(63, 'a'),
                                        std::string(65, 'a'),
                                        std::string(62, 'a') + "/.",
                                        std::string(32, 'a') + std::string(1, '\0') +
                                            std::string(31, 'a')};
  for (const auto& key : bad) {
    EXPECT_EQ((*store)->get(key).status().code(), Code::kInvalidArgument) << key;
    EXPECT_EQ((*store)->put(key, fakeObject("x")).code(), Code::kInvalidArgument) << key;
    EXPECT_EQ((*store)->remove(key).code(), Code::kInvalidArgument) << key;
    EXPECT_EQ((*store)->metadataJson(key).status().code(), Code::kInvalidArgument) << key;
    auto st = (*store)->get(key).status();
    EXPECT_HAS(st.message(), "64 lowercase hex") << key;
  }
  for (const std::string& prefix :
       std::vector<std::string>{"", "../..", "xyz", "a/b", std::string(65, 'a')}) {
    auto r = (*store)->resolve(prefix);
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << prefix;
  }
  // Nothing was created anywhere but the store's own directory.
  EXPECT_FALSE(pathExists(path("etc")));
  std::vector<std::string> top;
  for (const auto& e : fs::directory_iterator(dir_)) top.push_back(e.path().filename());
  EXPECT_EQ(top, std::vector<std::string>{"store"});
  // A put with a dump name that would escape the entry's directory is refused too.
  CodeObject o = fakeObject("x");
  o.dumps["../../evil"] = "boom";
  auto st = (*store)->put(std::string(64, 'a'), o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_HAS(st.message(), "dump names must be");
}

TEST_F(Hostile, CacheDirThatIsAFileIsRefusedClearly) {
  ASSERT_TRUE(writeFileAtomic(path("file"), "not a dir").ok());
  auto s = CodeObjectStore::open(path("file"));
  ASSERT_FALSE(s.ok());
  EXPECT_HAS(s.status().message(), "not a directory");
  // A cache dir *below* a file cannot be created; the message names the path.
  auto below = CodeObjectStore::open(path("file/sub"));
  ASSERT_FALSE(below.ok());
  EXPECT_HAS(below.status().message(), path("file"));
  // A database under a file: a clear I/O error naming the path (at open or at the first write).
  auto db = TuningDatabase::open(path("file/db.json"), Validator{});
  Status st = db.status();
  if (db.ok()) {
    DbEntry e;
    e.key = "k";
    e.winner = "A=1";
    st = (*db)->record(e);
  }
  EXPECT_EQ(st.code(), Code::kIoError) << st.toString();
  EXPECT_HAS(st.message(), path("file"));
}

TEST_F(Hostile, WorldWritableCacheDirIsRefusedWithTheFix) {
  ASSERT_TRUE(makeDirs(path("shared")).ok());
  ASSERT_EQ(::chmod(path("shared").c_str(), 0777), 0);
  auto s = CodeObjectStore::open(path("shared"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_HAS(s.status().message(), "mode 777");
  EXPECT_HAS(s.status().message(), "chmod 700");
  ASSERT_EQ(::chmod(path("shared").c_str(), 0720), 0);  // group-writable is as bad
  EXPECT_FALSE(CodeObjectStore::open(path("shared")).ok());
  ASSERT_EQ(::chmod(path("shared").c_str(), 0700), 0);
  EXPECT_TRUE(CodeObjectStore::open(path("shared")).ok());
}

TEST_F(Hostile, CacheDirOwnedBySomeoneElseIsRefused) {
  std::string victim;
  if (::geteuid() == 0) {
    ASSERT_TRUE(makeDirs(path("theirs")).ok());
    ASSERT_EQ(::chown(path("theirs").c_str(), 4242, 4242), 0);
    victim = path("theirs");
  } else {
    victim = "/usr";  // root-owned, 0755: exactly what an unprivileged user must refuse
  }
  auto s = CodeObjectStore::open(victim);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_HAS(s.status().message(), "not by you");
  EXPECT_HAS(s.status().message(), "KTUNE_CACHE_DIR");
}

TEST_F(Hostile, WriteFailingMidwayLeavesOldContentAndNoTempFile) {
  const std::string f = path("data.bin");
  ASSERT_TRUE(writeFileAtomic(f, "old content").ok());
  {
    FileSizeLimit limit(4096);
    ASSERT_TRUE(limit.ok());
    Status st = writeFileAtomic(f, std::string(100000, 'n'));
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), Code::kIoError);
    EXPECT_HAS(st.message(), "cannot write");
    EXPECT_HAS(st.message(), f);
  }
  EXPECT_EQ(*readFile(f), "old content");
  EXPECT_TRUE(tempFilesIn(dir_).empty());
}

TEST_F(Hostile, StorePutFailingMidwayKeepsOldEntriesAndGetOrCompileStillWorks) {
  auto store = CodeObjectStore::open(path("store"));
  ASSERT_TRUE(store.ok());
  const std::string good(64, 'a'), big(64, 'b');
  ASSERT_TRUE((*store)->put(good, fakeObject("small")).ok());
  {
    FileSizeLimit limit(8192);
    ASSERT_TRUE(limit.ok());
    Status st = (*store)->put(big, fakeObject(std::string(200000, 'x')));
    EXPECT_EQ(st.code(), Code::kIoError) << st.toString();
    EXPECT_HAS(st.message(), "cannot store code object " + big);
    // Through getOrCompile: the object comes back, the note says why it was not cached.
    FakeCompiler c;
    CompileRequest req;
    req.source = std::string(100000, 's');
    req.entry = "k";
    req.arch = "gfx90a";
    bool hit = true;
    std::string note;
    auto obj = (*store)->getOrCompile(c, req, &hit, &note);
    ASSERT_TRUE(obj.ok()) << obj.status().toString();
    EXPECT_FALSE(hit);
    EXPECT_HAS(note, "not cached");
  }
  EXPECT_EQ((*store)->get(big).status().code(), Code::kNotFound);  // never half-committed
  auto old = (*store)->get(good);
  ASSERT_TRUE(old.ok()) << old.status().toString();
  EXPECT_EQ(old->binary, "small");
  EXPECT_TRUE((*store)->verify().corrupt.empty());
  EXPECT_TRUE(tempFilesIn(dir_).empty());
}

TEST_F(Hostile, DatabaseWriteFailingMidwayKeepsTheOldFile) {
  const std::string f = path("db/rmsnorm.json");
  auto db = TuningDatabase::open(f, Validator{}, "rmsnorm");
  ASSERT_TRUE(db.ok());
  DbEntry e;
  e.key = "k1";
  e.winner = "A=1";
  ASSERT_TRUE((*db)->record(e).ok());
  const std::string before = *readFile(f);
  {
    FileSizeLimit limit(before.size() + 64);
    ASSERT_TRUE(limit.ok());
    DbEntry big;
    big.key = "k2";
    big.winner = "A=2";
    big.candidates.resize(200);
    for (auto& c : big.candidates) c.reason = std::string(100, 'r');
    Status st = (*db)->record(big);
    EXPECT_EQ(st.code(), Code::kIoError) << st.toString();
    EXPECT_HAS(st.message(), "cannot update tuning database");
  }
  EXPECT_EQ(*readFile(f), before);
  auto again = TuningDatabase::open(f, Validator{}, "rmsnorm");
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE((*again)->lookup("k1").has_value());
  EXPECT_TRUE(tempFilesIn(dir_).empty());
}

TEST_F(Hostile, ReadOnlyCacheDirReadsButRefusesWritesClearly) {
  auto store = CodeObjectStore::open(path("store"));
  ASSERT_TRUE(store.ok());
  const std::string a = "aa" + std::string(62, '1'), a2 = "aa" + std::string(62, '2'),
                    b = "bb" + std::string(62, '1');
  ASSERT_TRUE((*store)->put(a, fakeObject("A")).ok());
  auto db = TuningDatabase::open(path("db/x.json"), Validator{}, "x");
  ASSERT_TRUE(db.ok());
  DbEntry e;
  e.key = "k";
  e.winner = "A=1";
  ASSERT_TRUE((*db)->record(e).ok());
  const std::string db_before = *readFile(path("db/x.json"));
  if (!makeReadOnly(path("store/objects")) || !makeReadOnly(path("store/objects/aa")) ||
      !makeReadOnly(path("db"))) {
    KTUNE_SKIP_WITHOUT_TOOL("cannot make a directory read-only here (no CAP_LINUX_IMMUTABLE as "
                            "root, or a file system without chattr); the read-only cache case is "
                            "untested");
  }
  auto got = (*store)->get(a);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->binary, "A");
  for (const auto& key : {a2, b}) {
    Status st = (*store)->put(key, fakeObject("new"));
    EXPECT_EQ(st.code(), Code::kIoError) << key << ": " << st.toString();
    EXPECT_HAS(st.message(), "cannot store code object " + key);
  }
  FakeCompiler c;
  CompileRequest req;
  req.source = "src";
  req.entry = "k";
  req.arch = "gfx90a";
  std::string note;
  auto obj = (*store)->getOrCompile(c, req, nullptr, &note);
  ASSERT_TRUE(obj.ok());
  EXPECT_HAS(note, "not cached");
  DbEntry e2 = e;
  e2.key = "k2";
  Status st = (*db)->record(e2);
  EXPECT_EQ(st.code(), Code::kIoError) << st.toString();
  EXPECT_EQ(*readFile(path("db/x.json")), db_before);
  ASSERT_TRUE((*db)->lookup("k").has_value());
}

}  // namespace
}  // namespace ktune
