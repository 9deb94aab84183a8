// A full disk (ENOSPC) for real, not simulated with RLIMIT_FSIZE (which gives EFBIG): the test
// re-runs itself with tests/unit/enospc_shim.c preloaded, which fails writes with ENOSPC once a
// byte budget is spent, only for files below the test's own directory. The child cases (named
// DISABLED_ so they run only when asked for) drive the code-object store, the tuning database and
// the untuned-keys file; the CLI cases run the real `ktune` binary under the shim. Each checks:
// a clear error naming the full disk, no torn file at the final path, no temp files left behind,
// earlier entries intact, and a successful retry once space is back.
//
// Under ASan (scripts/sanitize.sh) the children get ASAN_OPTIONS=...:verify_asan_link_order=0,
// since the preloaded, uninstrumented shim then comes before libasan in the link order.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/database.h"
#include "base/fs.h"
#include "tests/unit/db_entry_util.h"
#include "base/sha256.h"
#include "base/subprocess.h"
#include "compiler/store/store.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

#define EXPECT_HAS(hay, needle)                               \
  EXPECT_NE(std::string(hay).find(needle), std::string::npos) \
      << "'" << std::string(hay) << "' does not contain '" << (needle) << "'"

constexpr const char* kNoSpace = "No space left on device";

// ---- helpers shared by parent and child ------------------------------------------------------

// Temp files writeFileAtomic leaves behind on a failed write would carry ".tmp." in their name.
std::vector<std::string> leftoverTempFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->path().filename().string().find(".tmp.") != std::string::npos)
      out.push_back(it->path().string());
  }
  return out;
}

std::string slurp(const std::string& path) {
  auto t = readFile(path);
  return t.ok() ? *t : std::string("<unreadable: ") + t.status().toString() + ">";
}

// ---- the child side: runs with the shim loaded -----------------------------------------------

// The shim's control functions, found in the running process (null: shim not loaded).
struct Shim {
  void (*set_budget)(long long) = nullptr;
  long (*failures)() = nullptr;
  long (*syncs)() = nullptr;
  static Shim get() {
    Shim s;
    s.set_budget =
        reinterpret_cast<void (*)(long long)>(dlsym(RTLD_DEFAULT, "ktune_enospc_set_budget"));
    s.failures = reinterpret_cast<long (*)()>(dlsym(RTLD_DEFAULT, "ktune_enospc_failures"));
    s.syncs = reinterpret_cast<long (*)()>(dlsym(RTLD_DEFAULT, "ktune_enospc_syncs"));
    return s;
  }
};

class EnospcChild : public ::testing::Test {
 protected:
  void SetUp() override {
    shim_ = Shim::get();
    ASSERT_NE(shim_.set_budget, nullptr)
        << "run by enospc_test's parent cases only (shim not loaded)";
    const char* dir = std::getenv("KTUNE_TEST_ENOSPC_DIR");
    ASSERT_NE(dir, nullptr);
    dir_ = dir;
    shim_.set_budget(-1);
  }
  void TearDown() override {
    if (shim_.set_budget) shim_.set_budget(-1);
  }
  void expectDiskFull(const Status& s) {
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.code(), Code::kIoError) << s.toString();
    EXPECT_HAS(s.toString(), kNoSpace);
  }
  void expectNoTempFiles() {
    auto left = leftoverTempFiles(dir_);
    EXPECT_TRUE(left.empty()) << left.size() << " temp file(s) left, first: " << left[0];
  }
  Shim shim_;
  std::string dir_;
};

CodeObject makeObject(const std::string& seed, bool dumps) {
  CodeObject o;
  std::string h = sha256Hex(seed);
  for (int i = 0; i < 64; ++i) o.binary += h + std::to_string(i);
  o.format = "sim";
  o.arch = "gfx90a";
  o.entry = "k_" + seed;
  o.lowered_entry = o.entry;
  o.compiler = "fake";
  o.compiler_version = "1.0";
  o.resources.registers = 40;
  if (dumps) {
    o.dumps["isa"] = std::string(1500, 'i') + seed;
    o.dumps["source"] = std::string(700, 's') + seed;
  }
  return o;
}

// Budgets from "nothing fits" through every write of a put(): each must fail cleanly or succeed.
TEST_F(EnospcChild, DISABLED_CodeStore) {
  auto store = CodeObjectStore::open(dir_ + "/cache");
  ASSERT_TRUE(store.ok()) << store.status().toString();
  const std::string key_a = sha256Hex("a"), key_b = sha256Hex("b");
  const CodeObject a = makeObject("a", true), b = makeObject("b", true);
  ASSERT_TRUE((*store)->put(key_a, a).ok());

  const size_t need = b.binary.size() + b.dumps.at("isa").size() + b.dumps.at("source").size();
  int failed = 0;
  for (long long budget : {0LL, 1LL, 100LL, 1000LL, 2199LL, 2200LL, 3000LL, (long long)need - 1,
                           (long long)need, (long long)need + 10}) {
    SCOPED_TRACE("budget " + std::to_string(budget) + " of " + std::to_string(need) + "+json");
    shim_.set_budget(budget);
    Status s = (*store)->put(key_b, b);
    shim_.set_budget(-1);
    ASSERT_FALSE(s.ok()) << "the metadata never fits in these budgets";
    ++failed;
    expectDiskFull(s);
    EXPECT_HAS(s.toString(), "cannot store code object " + key_b);
    EXPECT_HAS(s.toString(), "disk full");
    // Not committed: a reader sees no entry, never a torn one.
    auto got_b = (*store)->get(key_b);
    EXPECT_EQ(got_b.status().code(), Code::kNotFound) << got_b.status().toString();
    expectNoTempFiles();
    auto got_a = (*store)->get(key_a);
    ASSERT_TRUE(got_a.ok()) << got_a.status().toString();
    EXPECT_EQ(got_a->binary, a.binary);
    EXPECT_EQ(got_a->dumps, a.dumps);
  }
  EXPECT_GE(shim_.failures(), failed);
  VerifyReport report = (*store)->verify();
  EXPECT_TRUE(report.corrupt.empty())
      << report.corrupt[0].first << ": " << report.corrupt[0].second;

  // Space is back: the same put succeeds and reads back intact.
  ASSERT_TRUE((*store)->put(key_b, b).ok());
  auto got_b = (*store)->get(key_b);
  ASSERT_TRUE(got_b.ok()) << got_b.status().toString();
  EXPECT_EQ(got_b->binary, b.binary);
  EXPECT_EQ(got_b->dumps, b.dumps);
  expectNoTempFiles();
}

// A compile whose result cannot be cached is still usable: getOrCompile returns it with a note.
class OneObjectCompiler : public Compiler {
 public:
  std::string name() const override { return "fake"; }
  std::string version() const override { return "1.0"; }
  bool supportsArch(const std::string&) const override { return true; }
  Expected<CodeObject> compile(const CompileRequest& req) override {
    ++compiles;
    CodeObject o = makeObject(req.entry, false);
    o.entry = req.entry;
    return o;
  }
  std::atomic<int> compiles{0};
};

TEST_F(EnospcChild, DISABLED_GetOrCompileStillReturnsTheObject) {
  auto store = CodeObjectStore::open(dir_ + "/cache");
  ASSERT_TRUE(store.ok()) << store.status().toString();
  OneObjectCompiler compiler;
  CompileRequest req;
  req.source = "extern \"C\" __global__ void k() {}";
  req.source_name = "k.cu";
  req.entry = "k";
  req.arch = "gfx90a";
  shim_.set_budget(500);
  bool hit = true;
  std::string note;
  auto obj = (*store)->getOrCompile(compiler, req, &hit, &note);
  shim_.set_budget(-1);
  ASSERT_TRUE(obj.ok()) << obj.status().toString();
  EXPECT_FALSE(hit);
  EXPECT_EQ(obj->binary, makeObject("k", false).binary);
  EXPECT_HAS(note, kNoSpace);
  expectNoTempFiles();
  // Next time it is compiled again (nothing was cached) and now stored: the third call hits.
  ASSERT_TRUE((*store)->getOrCompile(compiler, req, &hit, &note).ok());
  EXPECT_FALSE(hit);
  ASSERT_TRUE((*store)->getOrCompile(compiler, req, &hit, &note).ok());
  EXPECT_TRUE(hit);
  EXPECT_EQ(compiler.compiles.load(), 2);
}

// ENOSPC that only shows at fsync (delayed allocation, NFS): the old file must survive.
TEST_F(EnospcChild, DISABLED_LateFailureAtFsync) {
  const std::string path = dir_ + "/settings.json";
  ASSERT_TRUE(writeFileAtomic(path, "old content\n").ok());
  shim_.set_budget(4);  // the shim runs in fsync mode for this case (KTUNE_TEST_ENOSPC_MODE)
  Status s = writeFileAtomic(path, std::string(4096, 'n'));
  shim_.set_budget(-1);
  expectDiskFull(s);
  EXPECT_HAS(s.toString(), "cannot fsync");
  EXPECT_EQ(slurp(path), "old content\n");
  expectNoTempFiles();
  ASSERT_TRUE(writeFileAtomic(path, "new content\n").ok());
  EXPECT_EQ(slurp(path), "new content\n");
}

Validator validator() {
  Validator v;
  v.ktune_version = "0.1.0";
  v.backend = "sim";
  v.device_name = "Sim GPU";
  v.arch = "gfx90a";
  v.compiler = "fake";
  v.compiler_version = "1.0";
  v.driver_version = "1";
  return v;
}

TEST_F(EnospcChild, DISABLED_TuningDatabase) {
  const std::string path = dir_ + "/db/rmsnorm.json";
  auto db = TuningDatabase::open(path, validator(), "rmsnorm");
  ASSERT_TRUE(db.ok()) << db.status().toString();
  ASSERT_TRUE((*db)->record(winnerEntry("m=1", "BLOCK=128")).ok());
  ASSERT_TRUE((*db)->record(winnerEntry("m=2", "BLOCK=256")).ok());
  const std::string before = slurp(path);
  const long long size = (long long)before.size();

  for (long long budget : {0LL, 1LL, size / 2, size, size + 100}) {
    SCOPED_TRACE("budget " + std::to_string(budget) + ", file " + std::to_string(size));
    shim_.set_budget(budget);
    Status s = (*db)->record(winnerEntry("m=3", "BLOCK=512"));
    // A key of its own per round: recordCandidate reports a write failure once per key.
    Status c = (*db)->recordCandidate("m=4," + std::to_string(budget), CandidateResult{});
    shim_.set_budget(-1);
    expectDiskFull(s);
    EXPECT_HAS(s.toString(), "cannot update tuning database '" + path + "'");
    expectDiskFull(c);
    // The file on disk is exactly the old one; this object's view did not change either.
    EXPECT_EQ(slurp(path), before);
    EXPECT_FALSE((*db)->lookup("m=3"));
    ASSERT_TRUE((*db)->lookup("m=1"));
    EXPECT_EQ((*db)->lookup("m=1")->winner, "BLOCK=128");
    expectNoTempFiles();
  }
  auto fresh = TuningDatabase::open(path, validator(), "rmsnorm");
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE((*fresh)->warnings().empty()) << (*fresh)->warnings()[0];
  EXPECT_EQ((*fresh)->entries().size(), 2u);

  ASSERT_TRUE((*db)->record(winnerEntry("m=3", "BLOCK=512")).ok());
  fresh = TuningDatabase::open(path, validator(), "rmsnorm");
  ASSERT_TRUE(fresh.ok());
  ASSERT_EQ((*fresh)->entries().size(), 3u);
  EXPECT_EQ((*fresh)->lookup("m=3")->winner, "BLOCK=512");
  EXPECT_EQ((*fresh)->lookup("m=2")->winner, "BLOCK=256");
}

// README: partial results (every finished candidate) are written atomically but not fsync'd;
// the final entry is. Counted at the system call: fsync/fdatasync on files of the database's
// directory.
TEST_F(EnospcChild, DISABLED_FinalEntryIsFsyncedPartialResultsAreNot) {
  ASSERT_NE(shim_.syncs, nullptr);
  const std::string path = dir_ + "/db/rmsnorm.json";
  auto db = TuningDatabase::open(path, validator(), "rmsnorm");
  ASSERT_TRUE(db.ok()) << db.status().toString();
  const long start = shim_.syncs();
  for (int i = 0; i < 3; ++i) {
    CandidateResult c;
    c.config = "BLOCK=" + std::to_string(64 << i);
    ASSERT_TRUE((*db)->recordCandidate("m=1", c).ok());
  }
  EXPECT_EQ(shim_.syncs(), start) << "a partial result was fsync'd";
  EXPECT_EQ((*db)->candidatesFor("m=1").size(), 3u);
  ASSERT_TRUE((*db)->record(winnerEntry("m=1", "BLOCK=128")).ok());
  EXPECT_GE(shim_.syncs(), start + 1) << "the final entry was not fsync'd";
}

TEST_F(EnospcChild, DISABLED_UntunedKeysAppend) {
  const std::string path = dir_ + "/untuned.jsonl";
  ASSERT_TRUE(appendUntunedKey(path, "rmsnorm", "m=1", R"({"m": 1})").ok());
  ASSERT_TRUE(appendUntunedKey(path, "rmsnorm", "m=2", R"({"m": 2})").ok());
  const std::string before = slurp(path);
  // 0: nothing fits; 10 and 40: part of the line is written before the disk fills (short write).
  for (long long budget : {0LL, 10LL, 40LL}) {
    SCOPED_TRACE("budget " + std::to_string(budget));
    shim_.set_budget(budget);
    Status s = appendUntunedKey(path, "rmsnorm", "m=3", R"({"m": 3})");
    shim_.set_budget(-1);
    expectDiskFull(s);
    EXPECT_HAS(s.toString(), "cannot append to untuned-keys file");
    EXPECT_EQ(slurp(path), before) << "a torn line was left at the end";
  }
  ASSERT_TRUE(appendUntunedKey(path, "rmsnorm", "m=3", R"({"m": 3})").ok());
  std::ifstream in(path);
  std::vector<std::string> keys;
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << "unparsable line '" << line << "'";
    keys.push_back(j.value("key", ""));
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"m=1", "m=2", "m=3"}));
}

// The shim follows only its own directory: gtest's output and other files are untouched.
TEST_F(EnospcChild, DISABLED_OnlyItsDirectoryIsFull) {
  const std::string outside = fs::path(dir_).parent_path().string() + "/outside.txt";
  shim_.set_budget(0);
  Status in = writeFileAtomic(dir_ + "/inside.txt", "x");
  Status out = writeFileAtomic(outside, std::string(10000, 'o'));
  shim_.set_budget(-1);
  expectDiskFull(in);
  EXPECT_TRUE(out.ok()) << out.toString();
  EXPECT_EQ(slurp(outside).size(), 10000u);
  EXPECT_FALSE(pathExists(dir_ + "/inside.txt"));
}

// ---- the parent side ---------------------------------------------------------------------

std::string selfExe() {
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec).string();
}

// The environment a child gets: the shim preloaded for `dir`, and ASan told to accept it.
std::vector<std::string> shimEnv(const std::string& dir, const std::string& extra = "") {
  std::string preload = KTUNE_ENOSPC_SHIM;
  if (const char* p = std::getenv("LD_PRELOAD"); p && *p) preload = std::string(p) + ":" + preload;
  std::string asan = "verify_asan_link_order=0";
  if (const char* a = std::getenv("ASAN_OPTIONS"); a && *a) asan = std::string(a) + ":" + asan;
  std::vector<std::string> env = {"env", "LD_PRELOAD=" + preload, "ASAN_OPTIONS=" + asan,
                                  "KTUNE_TEST_ENOSPC_DIR=" + dir};
  if (!extra.empty()) env.push_back(extra);
  return env;
}

class Enospc : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "ktune-enospc-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = fs::canonical(tmpl).string();  // the shim compares path prefixes
    dir_ = root_ + "/full";
    ASSERT_TRUE(makeDirs(dir_).ok());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // Runs one DISABLED_ child case of this executable under the shim and expects it to pass.
  void runChild(const std::string& name, const std::string& extra_env = "") {
    auto argv = shimEnv(dir_, extra_env);
    argv.insert(argv.end(), {selfExe(), "--gtest_also_run_disabled_tests",
                             "--gtest_filter=EnospcChild.DISABLED_" + name});
    auto r = runProcess(argv, "", 300000);
    ASSERT_TRUE(r.ok()) << r.status().toString();
    EXPECT_FALSE(r->signaled) << "child killed by signal " << r->term_signal << "\n"
                              << r->out << r->err;
    EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
    EXPECT_HAS(r->out, "[  PASSED  ] 1 test");
  }

  struct Run {
    int code = -1;
    std::string out, err;
  };
  // `ktune args...` with KTUNE_CACHE_DIR under the shim's directory; budget < 0: unlimited.
  Run ktune(const std::vector<std::string>& args, long long budget) {
    auto argv = shimEnv(dir_, "KTUNE_TEST_ENOSPC_AFTER=" + std::to_string(budget));
    argv.push_back("KTUNE_CACHE_DIR=" + dir_ + "/cache");
    argv.push_back(KTUNE_CLI_PATH);
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = runProcess(argv, "", 120000);
    Run out;
    if (!r.ok()) {
      ADD_FAILURE() << "cannot run ktune: " << r.status().toString();
      return out;
    }
    EXPECT_FALSE(r->signaled) << "ktune killed by signal " << r->term_signal << "\n" << r->err;
    out.code = r->signaled ? -1 : r->exit_code;
    out.out = r->out;
    out.err = r->err;
    return out;
  }

  // A database file (outside the full directory) holding `keys`, for `ktune db import`.
  std::string dbFile(const std::string& name, const std::vector<std::string>& keys) {
    const std::string path = root_ + "/" + name;
    auto db = TuningDatabase::open(path, validator(), "rmsnorm");
    EXPECT_TRUE(db.ok());
    for (const auto& k : keys) EXPECT_TRUE((*db)->record(winnerEntry(k, "BLOCK=64")).ok());
    return path;
  }

  std::string root_, dir_;
};

TEST_F(Enospc, CodeStore) { runChild("CodeStore"); }
TEST_F(Enospc, GetOrCompileStillReturnsTheObject) { runChild("GetOrCompileStillReturnsTheObject"); }
TEST_F(Enospc, LateFailureAtFsync) {
  runChild("LateFailureAtFsync", "KTUNE_TEST_ENOSPC_MODE=fsync");
}
TEST_F(Enospc, TuningDatabase) { runChild("TuningDatabase"); }
TEST_F(Enospc, UntunedKeysAppend) { runChild("UntunedKeysAppend"); }
TEST_F(Enospc, FinalEntryIsFsyncedPartialResultsAreNot) {
  runChild("FinalEntryIsFsyncedPartialResultsAreNot");
}
TEST_F(Enospc, OnlyItsDirectoryIsFull) { runChild("OnlyItsDirectoryIsFull"); }

TEST_F(Enospc, CliDbImportAndExport) {
  const std::string first = dbFile("first.json", {"m=1", "m=2"});
  const std::string second = dbFile("second.json", {"m=3"});
  Run r = ktune({"db", "import", first}, -1);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string target = dir_ + "/cache/db/rmsnorm.json";
  const std::string before = slurp(target);
  ASSERT_NE(before.find("m=2"), std::string::npos) << before;

  for (long long budget : {0LL, 100LL, (long long)before.size()}) {
    SCOPED_TRACE("budget " + std::to_string(budget));
    r = ktune({"db", "import", second}, budget);
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_HAS(r.err, kNoSpace);
    EXPECT_HAS(r.err, "disk full");
    EXPECT_EQ(slurp(target), before);
    auto left = leftoverTempFiles(dir_);
    EXPECT_TRUE(left.empty()) << left[0];
  }
  r = ktune({"db", "export", "rmsnorm", "-o", dir_ + "/export.json"}, 10);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_HAS(r.err, kNoSpace);
  EXPECT_FALSE(pathExists(dir_ + "/export.json"));
  EXPECT_TRUE(leftoverTempFiles(dir_).empty());

  // Space is back: the import lands, both files' entries are there, export works.
  r = ktune({"db", "import", second}, -1);
  ASSERT_EQ(r.code, 0) << r.err;
  r = ktune({"db", "export", "rmsnorm", "-o", dir_ + "/export.json"}, -1);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(slurp(dir_ + "/export.json"), nullptr, false);
  ASSERT_TRUE(j.is_object());
  const std::string text = j.dump();
  for (const char* k : {"m=1", "m=2", "m=3"}) EXPECT_HAS(text, k);
}

}  // namespace
}  // namespace ktune
