// Hostile input through the public APIs: garbage config strings, overflow-sized spaces, bad store
// keys, unsafe / non-directory / read-only cache dirs, a write that fails half way (file size limit:
// the kernel's EFBIG takes the same path as ENOSPC), broken tuning-database files, compilers given
// unknown archs or sources that do not compile, and degenerate kernel arguments / launch dims.
// Every case must give a clear Status (what was wrong, what to do), never a crash, a torn file or a
// lost entry. Runs without a GPU; compiler cases skip visibly when no compiler is installed.
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <functional>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/database.h"
#include "autotune/ops/rowwise.h"
#include "base/config.h"
#include "base/fs.h"
#include "compiler/compiler.h"
#include "compiler/store/store.h"
#include "runtime/backend.h"
#include "runtime/launch_check.h"
#include "templates/gemm.h"
#include "templates/rowwise.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
// EXPECT that `hay` contains `needle` (plain gtest; the unit tests do not link gmock).
#define EXPECT_HAS(hay, needle)                                                   \
  EXPECT_NE(std::string(hay).find(needle), std::string::npos)                     \
      << "'" << std::string(hay) << "' does not contain '" << (needle) << "'"

// A private scratch directory per test, removed afterwards (immutable flags cleared first).
class Hostile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "ktune-hostile-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const auto& p : immutable_) setImmutable(p, false);
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Makes `p` read-only for everyone including root: chattr +i (needs CAP_LINUX_IMMUTABLE, which
  // root has in CI) or, for a normal user, chmod 0500. False when neither takes effect.
  bool makeReadOnly(const std::string& p) {
    if (::geteuid() == 0) {
      if (!setImmutable(p, true)) return false;
      immutable_.push_back(p);
    } else {
      if (::chmod(p.c_str(), 0500) != 0) return false;
    }
    // Probe: can we still create a file there?
    std::string probe = p + "/.probe";
    int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      ::close(fd);
      ::unlink(probe.c_str());
      return false;
    }
    return true;
  }
  static bool setImmutable(const std::string& p, bool on) {
    int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return false;
    int flags = 0;
    bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (ok) {
      flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
      ok = ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    ::close(fd);
    return ok;
  }

  std::string dir_;
  std::vector<std::string> immutable_;
};

// Lowers RLIMIT_FSIZE for the scope (SIGXFSZ ignored), so a write past `bytes` fails with EFBIG
// from the kernel: a real mid-write failure without root, mounts or LD_PRELOAD.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit r = saved_;
    r.rlim_cur = bytes;
    ok_ = ::setrlimit(RLIMIT_FSIZE, &r) == 0;
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  sighandler_t old_handler_ = SIG_DFL;
  bool ok_ = false;
};

std::vector<std::string> tempFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path());
  }
  return out;
}

// ---- config strings and spaces -----------------------------------------------------------------

TEST(HostileConfig, GarbageStringsAreInvalidArgumentNamingTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"BLOCK_M", "not NAME=VALUE"},
      {"=4", "bad parameter name"},
      {"1X=4", "bad parameter name"},
      {"A=1,,B=2", "not NAME=VALUE"},
      {"A=1,", "not NAME=VALUE"},
      {"A=1,A=2", "given twice"},
      {"A=", "bad value"},
      {"A=x y", "bad value"},
      {"A=+3", "bad value"},
      {"A=99999999999999999999", "out of range"},
      {"A=-99999999999999999999", "out of range"},
      {std::string("A=1\0B=2", 7), "bad value"},
      {"A=\xff\xfe", "bad value"},
      {"A=1;B=2", "bad value"},
  };
  for (const auto& [text, want] : cases) {
    auto c = Config::parse(text);
    ASSERT_FALSE(c.ok()) << "'" << text << "' parsed as " << c->toString();
    EXPECT_EQ(c.status().code(), Code::kInvalidArgument) << text;
    EXPECT_HAS(c.status().message(), want) << text;
  }
  // Extremes that are valid must round-trip exactly.
  for (const char* text : {"A=-9223372036854775808", "A=9223372036854775807", "  A = 007 ",
                           "_=-", "A=1.5e3,B=x-y_z"}) {
    auto c = Config::parse(text);
    ASSERT_TRUE(c.ok()) << text << ": " << c.status().toString();
    auto again = Config::parse(c->toString());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *c) << text;
  }
}

TEST(HostileConfig, SpaceValidateNamesUnknownMissingAndViolatedParameters) {
  ConfigSpace s;
  s.addInts("BLOCK_M", {64, 128}).addInts("num_warps", {4, 8}).constrain(
      "BLOCK_M >= 16 * num_warps",
      [](const Config& c) { return c.getInt("BLOCK_M") >= 16 * c.getInt("num_warps"); });
  auto st = s.validate(*Config::parse("BLOCK_M=64,num_warps=4,EVIL=1"));
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_HAS(st.message(), "unknown parameter 'EVIL'");
  st = s.validate(*Config::parse("BLOCK_M=64"));
  EXPECT_HAS(st.message(), "lacks parameter 'num_warps'");
  st = s.validate(*Config::parse("BLOCK_M=64,num_warps=8"));
  EXPECT_HAS(st.message(), "violates BLOCK_M >= 16 * num_warps");
  // A string where the space has integers: the constraint sees 0 and rejects it, no crash.
  st = s.validate(*Config::parse("BLOCK_M=big,num_warps=4"));
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(s.validate(*Config::parse("BLOCK_M=128,num_warps=8")).ok());
}

TEST(HostileConfig, OverflowSizedSpaceSaturatesInsteadOfWrapping) {
  ConfigSpace s;
  // 16^17 = 2^68 points: the product does not fit in size_t.
  for (int i = 0; i < 17; ++i) {
    std::vector<int64_t> v(16);
    for (int j = 0; j < 16; ++j) v[size_t(j)] = j;
    s.addInts("P" + std::to_string(i), v);
  }
  EXPECT_EQ(s.rawSize(), SIZE_MAX);
  ConfigSpace empty_list;
  empty_list.addInts("A", {1, 2}).addInts("B", {});
  EXPECT_EQ(empty_list.rawSize(), 0u);
  EXPECT_TRUE(empty_list.enumerate().accepted.empty());
}

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

// ---- tuning database files ---------------------------------------------------------------------

Validator h100() {
  return {"0.1.0", "cuda", "13.0", "nvrtc", "13.0", "NVIDIA H100 80GB HBM3", "sm_90a"};
}

std::string validDb() {
  return R"({
  "devices": [{
    "entries": {
      "good": {"winner": "A=1", "stats": {"median_ms": 1.0, "runs": 10}},
      "also_good": {"winner": "A=2"}
    },
    "validator": {"arch": "sm_90a", "backend": "cuda", "compiler": "nvrtc",
                  "compiler_version": "13.0", "device_name": "NVIDIA H100 80GB HBM3",
                  "driver_version": "13.0", "ktune_version": "0.1.0"}
  }],
  "family": "rmsnorm",
  "schema": 1
})";
}

TEST_F(Hostile, BrokenDatabaseFilesOpenEmptyWithWarningAndAreKeptAside) {
  const std::string valid = validDb();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated", valid.substr(0, valid.size() / 2)},
      {"empty", ""},
      {"hand_broken", "{\"devices\": [,], \"schema\": 1}"},
      {"not_object", "[1, 2, 3]"},
      {"schema_string", R"({"schema": "one", "devices": []})"},
      {"devices_object", R"({"schema": 1, "devices": {"a": 1}})"},
      {"entries_array", R"({"schema": 1, "devices": [{"validator": {}, "entries": []}]})"},
      {"binary", std::string("\x00\xff\xfe{\"", 5)},
  };
  for (const auto& [name, text] : cases) {
    SCOPED_TRACE(name);
    const std::string f = path(name + "/rmsnorm.json");
    ASSERT_TRUE(makeDirs(path(name)).ok());
    ASSERT_TRUE(writeFileAtomic(f, text).ok());
    // Another family's valid file next to it must be untouched by anything below.
    ASSERT_TRUE(writeFileAtomic(path(name + "/gemm.json"), valid).ok());
    auto db = TuningDatabase::open(f, h100(), "rmsnorm");
    ASSERT_TRUE(db.ok()) << db.status().toString();
    EXPECT_TRUE((*db)->entries().empty());
    ASSERT_FALSE((*db)->warnings().empty());
    EXPECT_HAS((*db)->warnings()[0], f);
    EXPECT_HAS((*db)->warnings()[0], "corrupt-");
    EXPECT_EQ(*readFile(f), text) << "opening must not modify the broken file";
    DbEntry e;
    e.key = "new";
    e.winner = "A=3";
    ASSERT_TRUE((*db)->record(e).ok());
    std::string aside;
    for (const auto& p : fs::directory_iterator(path(name))) {
      if (p.path().filename().string().rfind("rmsnorm.json.corrupt-", 0) == 0) aside = p.path();
    }
    ASSERT_FALSE(aside.empty()) << "broken file not kept aside";
    EXPECT_EQ(*readFile(aside), text);
    EXPECT_EQ(*readFile(path(name + "/gemm.json")), valid);
    auto reopened = TuningDatabase::open(f, h100(), "rmsnorm");
    ASSERT_TRUE(reopened.ok());
    EXPECT_TRUE((*reopened)->warnings().empty()) << (*reopened)->warnings()[0];
    EXPECT_TRUE((*reopened)->lookup("new").has_value());
  }
}

TEST_F(Hostile, WrongTypesInOneEntryLoseNoOtherEntry) {
  nlohmann::json doc = nlohmann::json::parse(validDb());
  auto& entries = doc["devices"][0]["entries"];
  entries["winner_number"] = {{"winner", 7}};
  entries["runs_string"] = {{"winner", "A=3"}, {"stats", {{"runs", "many"}}}};
  entries["runs_huge"] = {{"winner", "A=4"}, {"stats", {{"runs", 1e300}}}};
  entries["runs_nan_like"] = {{"winner", "A=5"}, {"stats", {{"median_ms", "fast"}}}};
  entries["code_objects_int"] = {{"winner", "A=6"}, {"code_objects", 5}};
  entries["candidates_garbage"] = {{"winner", "A=7"},
                                   {"candidates", {{{"status", 3}, {"stats", {{"runs", -1e20}}}}}}};
  const std::string f = path("db.json");
  ASSERT_TRUE(writeFileAtomic(f, doc.dump(2)).ok());
  auto db = TuningDatabase::open(f, h100(), "rmsnorm");
  ASSERT_TRUE(db.ok());
  EXPECT_TRUE((*db)->lookup("good").has_value());
  EXPECT_TRUE((*db)->lookup("also_good").has_value());
  for (const char* bad : {"winner_number", "runs_string", "runs_huge", "runs_nan_like",
                          "code_objects_int", "candidates_garbage"}) {
    EXPECT_FALSE((*db)->lookup(bad).has_value()) << bad;
    bool warned = false;
    for (const auto& w : (*db)->warnings()) warned |= w.find(bad) != std::string::npos;
    EXPECT_TRUE(warned) << "no warning names the malformed entry " << bad;
  }
  DbEntry e;
  e.key = "new";
  e.winner = "A=9";
  ASSERT_TRUE((*db)->record(e).ok());
  // The malformed entries stay in the file for the user to fix; the good ones are all there.
  auto after = nlohmann::json::parse(*readFile(f));
  for (const char* k : {"good", "also_good", "winner_number", "runs_huge", "new"})
    EXPECT_TRUE(after["devices"][0]["entries"].contains(k)) << k;
}

TEST_F(Hostile, NewerSchemaIsNeverModified) {
  const std::string f = path("db.json");
  std::string text = validDb();
  text.replace(text.find("\"schema\": 1"), 11, "\"schema\": 99");
  ASSERT_TRUE(writeFileAtomic(f, text).ok());
  auto db = TuningDatabase::open(f, h100(), "rmsnorm");
  ASSERT_TRUE(db.ok());
  EXPECT_TRUE((*db)->entries().empty());
  ASSERT_FALSE((*db)->warnings().empty());
  EXPECT_HAS((*db)->warnings()[0], "newer ktune");
  DbEntry e;
  e.key = "k";
  e.winner = "A=1";
  Status st = (*db)->record(e);
  EXPECT_EQ(st.code(), Code::kUnsupported);
  EXPECT_HAS(st.message(), "upgrade ktune");
  EXPECT_EQ(*readFile(f), text);
  EXPECT_EQ((*db)->importJson("{not json").code(), Code::kInvalidArgument);
  EXPECT_EQ(TuningDatabase::open("", h100()).status().code(), Code::kInvalidArgument);
}

// ---- compilers -------------------------------------------------------------------------------

TEST(HostileCompile, UnknownOrMalformedArchIsAClearError) {
  for (const char* arch : {"", "sm_", "sm_1", "sm_9999", "gfx", "gfx1", "gfx9999", "x86_64",
                           "sm_90a;rm -rf /", "../sm_90"}) {
    auto c = compilerForArch(arch);
    if (c.ok()) {
      // An arch that picks a compiler must still be refused by it, before any compile happens.
      CompileRequest req;
      req.arch = arch;
      req.entry = "k";
      req.source = "extern \"C\" __global__ void k() {}";
      auto r = (*c)->compile(req);
      ASSERT_FALSE(r.ok()) << arch;
      EXPECT_NE(r.status().code(), Code::kOk);
      continue;
    }
    EXPECT_TRUE(c.status().code() == Code::kUnsupported || c.status().code() == Code::kUnavailable)
        << arch << ": " << c.status().toString();
    EXPECT_FALSE(c.status().message().empty());
  }
  auto c = compilerForArch("x86_64");
  EXPECT_HAS(c.status().message(), "unknown arch 'x86_64'");
  EXPECT_HAS(c.status().message(), "sm_90a");
}

// Every installed compiler: NVRTC (sm_90a), hiprtc (gfx90a), clang-19 (gfx942).
struct Installed {
  std::vector<std::pair<std::string, std::unique_ptr<Compiler>>> compilers;  // arch, compiler
  std::string why_none;
};
Installed installedCompilers() {
  Installed out;
  for (const char* arch : {"sm_90a", "gfx90a", "gfx942"}) {
    auto c = compilerForArch(arch);
    if (c.ok()) {
      out.compilers.emplace_back(arch, std::move(*c));
    } else {
      out.why_none += std::string(arch) + ": " + c.status().message() + "; ";
    }
  }
  return out;
}

TEST(HostileCompile, BrokenEmptyAndEntrylessSourcesAreClearErrors) {
  Installed all = installedCompilers();
  if (all.compilers.empty()) KTUNE_SKIP_WITHOUT_TOOL("no compiler: " << all.why_none);
  for (auto& [arch, compiler] : all.compilers) {
    SCOPED_TRACE(compiler->name() + " " + arch);
    CompileRequest req;
    req.arch = arch;
    req.source_name = "broken.cu";
    req.entry = "broken";
    req.source =
        "#include \"prelude.cuh\"\nKTUNE_KERNEL void broken(float* p) {\n  p[0] = undeclared_thing;\n}\n";
    auto r = compiler->compile(req);
    ASSERT_FALSE(r.ok()) << "compiled a kernel using an undeclared identifier";
    EXPECT_EQ(r.status().code(), Code::kCompileError) << r.status().toString();
    EXPECT_HAS(r.status().message(), "undeclared_thing");  // the log line
    EXPECT_HAS(r.status().message(), "broken.cu");

    req.source = "";
    req.entry = "nothing";
    r = compiler->compile(req);
    ASSERT_FALSE(r.ok()) << "an empty source has no kernel 'nothing'";
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
    EXPECT_HAS(r.status().message(), "empty source");

    req.source = "#include \"prelude.cuh\"\nKTUNE_KERNEL void present(float* p) { p[0] = 1.0f; }\n";
    req.entry = "absent";
    r = compiler->compile(req);
    ASSERT_FALSE(r.ok()) << "entry 'absent' is not in the source";
    EXPECT_HAS(r.status().message(), "absent");

    // Malformed request fields are refused before the compiler runs.
    req.entry = "present";
    req.defines = {{"BAD NAME", "1"}};
    r = compiler->compile(req);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
    req.defines = {{"OK", "1\n#include \"/etc/passwd\""}};
    r = compiler->compile(req);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
    req.defines.clear();
    req.entry = "";
    r = compiler->compile(req);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
    req.entry = "present";
    r = compiler->compile(req);
    EXPECT_TRUE(r.ok()) << "the valid kernel must still compile: " << r.status().toString();
  }
}

// ---- runtime -------------------------------------------------------------------------------

TEST(HostileRuntime, KernelArgsWithNoArgumentsAndEmptyBlobs) {
  KernelArgs a;
  EXPECT_EQ(a.count(), 0u);
  (void)a.data();  // nullptr or not: the driver accepts either for zero arguments
  a.addBytes(nullptr, 0, 0);  // an empty struct argument: no bytes, no alignment
  EXPECT_EQ(a.count(), 1u);
  ASSERT_NE(a.data(), nullptr);
  a.add(int32_t{7});
  int32_t v = 0;
  std::memcpy(&v, a.data()[1], sizeof v);
  EXPECT_EQ(v, 7);
  a.clear();
  EXPECT_EQ(a.count(), 0u);
}

TEST(HostileRuntime, ZeroAndOverflowingLaunchDimsAreRefusedBeforeTheDriver) {
  LaunchLimits lim;
  lim.max_block[0] = lim.max_block[1] = 1024;
  lim.max_block[2] = 64;
  lim.max_grid[0] = 2147483647u;
  lim.max_grid[1] = lim.max_grid[2] = 65535;
  lim.max_threads_per_block = 1024;
  lim.max_dynamic_shared = 232448;
  struct Case {
    Dim3 grid, block;
    size_t shared;
    Code code;
  };
  const Case cases[] = {
      {{0, 1, 1}, {128, 1, 1}, 0, Code::kInvalidArgument},
      {{1, 1, 1}, {0, 1, 1}, 0, Code::kInvalidArgument},
      {{1, 0, 1}, {1, 1, 1}, 0, Code::kInvalidArgument},
      {{1, 1, 1}, {1, 1, 0}, 0, Code::kInvalidArgument},
      {{UINT_MAX, 1, 1}, {1, 1, 1}, 0, Code::kInvalidArgument},
      // 1024^3 threads overflows 32 bits; the product must be computed wide.
      {{1, 1, 1}, {1024, 1024, 64}, 0, Code::kInvalidArgument},
      {{1, 1, 1}, {65536, 65536, 1}, 0, Code::kInvalidArgument},
      {{1, 1, 1}, {128, 1, 1}, SIZE_MAX, Code::kOutOfResources},
  };
  for (const auto& c : cases) {
    Status st = checkLaunch(c.grid, c.block, c.shared, lim);
    EXPECT_EQ(st.code(), c.code) << c.grid.x << "," << c.grid.y << " / " << c.block.x << ","
                                 << c.block.y << "," << c.block.z << ": " << st.toString();
    EXPECT_FALSE(st.message().empty());
  }
  // No driver here: the backends say so instead of crashing.
  auto cuda = openCudaBackend();
  if (!cuda.ok()) {
    EXPECT_EQ(cuda.status().code(), Code::kUnavailable);
    EXPECT_FALSE(cuda.status().message().empty());
  }
  EXPECT_FALSE(openBackend("no-such-backend").ok());
}


// ---- op arguments: sizes, pointers, dtypes, strides ---------------------------------------

TEST(HostileOps, RowwiseArgsAreRejectedBeforeAnyLaunch) {
  RmsNormArgs good;
  good.dtype = DType::kBF16;
  good.rows = 4;
  good.cols = 4096;
  good.x = 0x10000;
  good.y = 0x20000;
  good.weight = 0x30000;
  ASSERT_TRUE(validate(good).ok()) << validate(good).toString();
  struct Case {
    const char* what;
    std::function<void(RmsNormArgs&)> edit;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"null x", [](RmsNormArgs& a) { a.x = 0; }, "x is null"},
      {"null y", [](RmsNormArgs& a) { a.y = 0; }, "y is null"},
      {"misaligned x", [](RmsNormArgs& a) { a.x += 1; }, "not aligned"},
      {"misaligned weight", [](RmsNormArgs& a) { a.weight += 3; }, "not aligned"},
      {"zero rows", [](RmsNormArgs& a) { a.rows = 0; }, "must be > 0"},
      {"negative cols", [](RmsNormArgs& a) { a.cols = -4096; }, "must be > 0"},
      {"huge cols", [](RmsNormArgs& a) { a.cols = int64_t(1) << 40; }, "2^31-1"},
      {"short stride", [](RmsNormArgs& a) { a.x_stride = 100; }, "smaller than cols"},
      {"negative stride", [](RmsNormArgs& a) { a.y_stride = -8192; }, "stride"},
      {"weight dtype", [](RmsNormArgs& a) { a.weight_dtype = DType::kF16; }, "weight dtype"},
      {"residual half set", [](RmsNormArgs& a) { a.residual = 0x40000; }, "both"},
      {"int8 dtype", [](RmsNormArgs& a) { a.dtype = DType::kI8; }, "rmsnorm"},
      {"nan eps", [](RmsNormArgs& a) { a.eps = std::nanf(""); }, "eps"},
      {"overflowing rows x stride",
       [](RmsNormArgs& a) {
         a.rows = int64_t(1) << 50;
         a.x_stride = int64_t(1) << 30;
       },
       "overflow"},
  };
  for (const auto& c : cases) {
    RmsNormArgs a = good;
    c.edit(a);
    Status st = validate(a);
    EXPECT_FALSE(st.ok()) << c.what;
    EXPECT_TRUE(st.code() == Code::kInvalidArgument || st.code() == Code::kUnsupported)
        << c.what << ": " << st.toString();
    EXPECT_HAS(st.message(), c.want) << c.what;
  }

  SiluMulArgs s;
  s.rows = 16;
  s.d = 14336;
  s.x = 0x10000;
  s.out = 0x80000;
  ASSERT_TRUE(validate(s).ok());
  SiluMulArgs bad = s;
  bad.d = int64_t(1) << 62;  // 2*d does not fit in int64
  EXPECT_FALSE(validate(bad).ok());
  bad = s;
  bad.x_stride = 100;
  EXPECT_HAS(validate(bad).message(), "x_stride");
  bad = s;
  bad.out = 0x80001;
  EXPECT_HAS(validate(bad).message(), "not aligned");
  bad = s;
  bad.rows = -1;
  EXPECT_HAS(validate(bad).message(), "must be > 0");
  bad = s;
  bad.rows = int64_t(1) << 62;
  EXPECT_HAS(validate(bad).message(), "overflow");
}

TEST(HostileOps, GemmShapesAreValidatedWithClearMessages) {
  using namespace gemm;
  GemmShape good = denseShape(Layout::kNN, ElemType::kBF16, ElemType::kBF16, 128, 256, 64);
  ASSERT_TRUE(validate(good).ok());
  struct Case {
    const char* what;
    std::function<void(GemmShape&)> edit;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"zero M", [](GemmShape& s) { s.m = 0; }, "positive"},
      {"negative K", [](GemmShape& s) { s.k = -1; }, "positive"},
      {"M over int32", [](GemmShape& s) { s.m = int64_t(1) << 31; }, "int32"},
      {"f32 inputs", [](GemmShape& s) { s.ab = ElemType::kF32; }, "f16 or bf16"},
      {"short lda", [](GemmShape& s) { s.lda = 8; }, "lda=8"},
      {"short ldb", [](GemmShape& s) { s.ldb = 0; }, "ldb=0"},
      {"negative ldc", [](GemmShape& s) { s.ldc = -256; }, "ldc=-256"},
      {"nan alpha", [](GemmShape& s) { s.alpha = std::nanf(""); }, "finite"},
      {"inf beta", [](GemmShape& s) { s.beta = INFINITY; }, "finite"},
      {"overflowing lda", [](GemmShape& s) { s.lda = INT64_MAX; }, "overflow"},
  };
  for (const auto& c : cases) {
    GemmShape s = good;
    c.edit(s);
    Status st = validate(s);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << c.what << ": " << st.toString();
    EXPECT_HAS(st.message(), c.want) << c.what;
  }
}

}  // namespace
}  // namespace ktune
