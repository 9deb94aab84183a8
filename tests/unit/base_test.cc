// Base layer: Status, Config parsing, ConfigSpace enumeration, sha256, atomic files, locks,
// subprocess, Options parsing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <thread>

#include "base/config.h"
#include "base/device.h"
#include "base/dylib.h"
#include "base/format.h"
#include "base/fs.h"
#include "base/json_fields.h"
#include "base/options.h"
#include "base/sha256.h"
#include "base/status.h"
#include "base/subprocess.h"

namespace ktune {
namespace {

std::string tempDir() {
  char tmpl[] = "/tmp/ktune-base-test-XXXXXX";
  char* d = ::mkdtemp(tmpl);
  return d ? d : "/tmp";
}

TEST(Status, CodesAndContext) {
  Status s = Status::CompileError("bad token").withContext("nvrtc sm_90a");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kCompileError);
  EXPECT_EQ(s.toString(), "compile_error: nvrtc sm_90a: bad token");
  EXPECT_TRUE(Status::Ok().ok());
  Expected<int> e = Status::NotFound("x");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kNotFound);
  Expected<int> v = 3;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 3);
}

// KTUNE_DYLIB_ENTRY_POINTS: one list declares the pointers and binds them (libm's, here); a
// missing entry point is the error, naming it.
#define KTUNE_TEST_LIBM(X) \
  X(double, cos, (double)) \
  X(double, sqrt, (double))
#define KTUNE_TEST_LIBM_MISSING(X) \
  X(double, cos, (double))         \
  X(int, no_such_function, (void))
struct TestLibm {
  KTUNE_DYLIB_ENTRY_POINTS(KTUNE_TEST_LIBM)
};
struct TestLibmMissing {
  KTUNE_DYLIB_ENTRY_POINTS(KTUNE_TEST_LIBM_MISSING)
};

TEST(DynLib, EntryPointTableDeclaresAndBinds) {
  auto lib = DynLib::open({"libm.so.6"}, "libm");
  ASSERT_TRUE(lib.ok()) << lib.status().toString();
  TestLibm m;
  EXPECT_EQ(m.cos, nullptr);
  ASSERT_TRUE(m.bindEntryPoints(*lib, "").ok());
  EXPECT_DOUBLE_EQ(m.cos(0.0), 1.0);
  EXPECT_DOUBLE_EQ(m.sqrt(16.0), 4.0);
  TestLibmMissing bad;
  Status s = bad.bindEntryPoints(*lib, "");
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_NE(s.message().find("no_such_function"), std::string::npos) << s.toString();
}

TEST(Config, StableStringAndParseRoundTrip) {
  Config c{{"num_warps", int64_t(4)}, {"BLOCK_M", int64_t(128)}, {"instr", std::string("mma")}};
  EXPECT_EQ(c.toString(), "BLOCK_M=128,instr=mma,num_warps=4");
  auto p = Config::parse(" num_warps = 4 , BLOCK_M=128,instr=mma ");
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(*p, c);
  EXPECT_EQ(p->getInt("BLOCK_M"), 128);
  EXPECT_EQ(p->getStr("instr"), "mma");
  EXPECT_EQ(p->getInt("missing", -1), -1);
  EXPECT_TRUE(Config::parse("").ok());
}

TEST(Config, ParseErrorsAreClear) {
  for (const char* bad : {"BLOCK_M", "=3", "1abc=3", "A=1,A=2", "A=$x", "A=99999999999999999999999"}) {
    auto p = Config::parse(bad);
    EXPECT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_FALSE(p.status().message().empty());
  }
}

TEST(ConfigSpace, EnumeratesConstrainsAndPrechecksShared) {
  ConfigSpace s;
  s.addInts("BLOCK_M", {64, 128, 256})
      .addInts("BLOCK_K", {32, 64})
      .addInts("num_stages", {2, 3, 4})
      .addInts("waves_per_eu", {0, 2}, "hip")
      .constrain("BLOCK_M >= 2*BLOCK_K", [](const Config& c) {
        return c.getInt("BLOCK_M") >= 2 * c.getInt("BLOCK_K");
      })
      .sharedBytes([](const Config& c) {
        return c.getInt("num_stages") * c.getInt("BLOCK_M") * c.getInt("BLOCK_K") * 2 * 2;
      });
  EXPECT_EQ(s.rawSize("cuda"), 18u);
  EXPECT_EQ(s.rawSize("hip"), 36u);
  auto all = s.enumerate("cuda");
  EXPECT_EQ(all.accepted.size() + all.rejected.size(), 18u);
  for (const auto& c : all.accepted) EXPECT_GE(c.getInt("BLOCK_M"), 2 * c.getInt("BLOCK_K"));
  EXPECT_FALSE(all.accepted.front().has("waves_per_eu"));
  // 64 KiB limit: 256x64x4 stages x 4 B = 256 KiB must be dropped with a reason.
  auto lim = s.enumerate("cuda", 64 * 1024);
  bool saw_shared_reason = false;
  for (const auto& r : lim.rejected) {
    if (r.reason.find("shared") != std::string::npos) saw_shared_reason = true;
  }
  EXPECT_TRUE(saw_shared_reason);
  for (const auto& c : lim.accepted) EXPECT_LE(s.sharedBytesOf(c), 64 * 1024);
  auto hip = s.enumerate("hip");
  EXPECT_TRUE(hip.accepted.front().has("waves_per_eu"));
  EXPECT_TRUE(s.validate(all.accepted.front(), "cuda").ok());
  EXPECT_FALSE(s.validate(Config{{"BLOCK_M", int64_t(64)}}, "cuda").ok());
}

// An optional parameter (a probe knob): never enumerated nor counted, not required, checked by the
// constraints when present.
TEST(ConfigSpace, OptionalParameterIsValidatedButNotEnumerated) {
  ConfigSpace s;
  s.addInts("BLOCK_M", {64, 128}).addOptionalInts("PROBE", {0, 1}).constrain(
      "PROBE (absent: 0) is 0 or 1", [](const Config& c) { return c.getInt("PROBE", 0) <= 1; });
  EXPECT_EQ(s.rawSize(), 2u);
  const auto all = s.enumerate();
  ASSERT_EQ(all.accepted.size(), 2u);
  for (const Config& c : all.accepted) EXPECT_FALSE(c.has("PROBE"));
  Config c{{"BLOCK_M", int64_t(64)}};
  EXPECT_TRUE(s.validate(c).ok());
  c.set("PROBE", int64_t(1));
  EXPECT_TRUE(s.validate(c).ok());
  c.set("PROBE", int64_t(2));
  EXPECT_EQ(s.validate(c).code(), Code::kInvalidArgument);
  EXPECT_FALSE(s.validate(Config{{"PROBE", int64_t(1)}}).ok());  // BLOCK_M is still required
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string million(1000000, 'a');
  EXPECT_EQ(sha256Hex(million), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_NE(Sha256().field("ab").field("c").hexDigest(), Sha256().field("a").field("bc").hexDigest());
}

// RFC 4231 test cases 1-4, 6 and 7 (5 truncates the output, which ktune never does).
TEST(HmacSha256, Rfc4231Vectors) {
  EXPECT_EQ(hmacSha256Hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmacSha256Hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hmacSha256Hex(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::string key4;
  for (int i = 1; i <= 25; ++i) key4.push_back(char(i));
  EXPECT_EQ(hmacSha256Hex(key4, std::string(50, '\xcd')),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  const std::string big_key(131, '\xaa');
  EXPECT_EQ(hmacSha256Hex(big_key, "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hmacSha256Hex(big_key,
                          "This is a test using a larger than block-size key and a larger than "
                          "block-size data. The key needs to be hashed before being used by the "
                          "HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  // Incremental updates give the same MAC as one call.
  EXPECT_EQ(HmacSha256("Jefe").update("what do ya ").update("want for nothing?").hexDigest(),
            hmacSha256Hex("Jefe", "what do ya want for nothing?"));
  EXPECT_TRUE(constantTimeEqual("abc", "abc"));
  EXPECT_FALSE(constantTimeEqual("abc", "abd"));
  EXPECT_FALSE(constantTimeEqual("abc", "ab"));
}

TEST(Fs, AtomicWriteReadAndSafeNames) {
  std::string d = tempDir();
  std::string f = joinPath(d, "x.json");
  ASSERT_TRUE(writeFileAtomic(f, "hello").ok());
  auto r = readFile(f);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "hello");
  ASSERT_TRUE(writeFileAtomic(f, "world").ok());
  EXPECT_EQ(*readFile(f), "world");
  auto names = listDir(d);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 1u) << "temp files must not be left behind";
  EXPECT_EQ(readFile(joinPath(d, "missing")).status().code(), Code::kNotFound);
  EXPECT_FALSE(isSafeFileName("../etc/passwd"));
  EXPECT_FALSE(isSafeFileName(".."));
  EXPECT_FALSE(isSafeFileName(""));
  EXPECT_TRUE(isSafeFileName("rmsnorm.json"));
  ASSERT_TRUE(removeTree(d).ok());
}

TEST(Fs, PrivateDirChecks) {
  std::string d = tempDir();
  std::string sub = joinPath(d, "a/b/c");
  ASSERT_TRUE(makeDirs(sub, 0700).ok());
  EXPECT_TRUE(checkPrivateDir(sub).ok());
  ::chmod(sub.c_str(), 0777);
  Status s = checkPrivateDir(sub);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("chmod 700"), std::string::npos) << s.message();
  ASSERT_TRUE(removeTree(d).ok());
}

TEST(Fs, LockExcludesOtherProcesses) {
  std::string d = tempDir();
  std::string lockp = joinPath(d, "db.lock");
  std::string counter = joinPath(d, "counter");
  ASSERT_TRUE(writeFileAtomic(counter, "0").ok());
  const int kProcs = 4, kIters = 25;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    if (pid == 0) {
      for (int i = 0; i < kIters; ++i) {
        auto l = FileLock::acquire(lockp, 10000);
        if (!l.ok()) ::_exit(2);
        int v = std::atoi(readFile(counter)->c_str());
        if (!writeFileAtomic(counter, std::to_string(v + 1)).ok()) ::_exit(3);
      }
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int st = 0;
    ::waitpid(k, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  EXPECT_EQ(*readFile(counter), std::to_string(kProcs * kIters));
  // A held lock times out for a second holder with kBusy.
  auto a = FileLock::acquire(lockp, 1000);
  ASSERT_TRUE(a.ok());
  pid_t pid = ::fork();
  if (pid == 0) {
    auto b = FileLock::acquire(lockp, 50);
    ::_exit(!b.ok() && b.status().code() == Code::kBusy ? 0 : 1);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ASSERT_TRUE(removeTree(d).ok());
}

TEST(Fs, ParentDirIgnoresTrailingSlashes) {
  EXPECT_EQ(parentDir("a/b/c.json"), "a/b");
  EXPECT_EQ(parentDir("a/b/"), "a");
  EXPECT_EQ(parentDir("/top"), "/");
  EXPECT_EQ(parentDir("/"), "/");
  EXPECT_EQ(parentDir("file"), ".");
}

TEST(Format, StrprintfNeverTruncates) {
  EXPECT_EQ(strprintf("%.4f ms", 1.5), "1.5000 ms");
  EXPECT_EQ(strprintf("%s", ""), "");
  const std::string big(1000, 'x');  // longer than the small buffer
  EXPECT_EQ(strprintf("<%s>", big.c_str()), "<" + big + ">");
}

TEST(Format, ExpandIncludesReplacesKnownNamesRecursivelyAndKeepsTheRest) {
  const std::map<std::string, std::string> files = {
      {"a.cuh", "int a;\n#include \"b.cuh\"\n"}, {"b.cuh", "int b;"}, {"self.cuh", "#include \"self.cuh\""}};
  const auto lookup = [&](std::string_view name) -> std::string_view {
    const auto it = files.find(std::string(name));
    return it == files.end() ? std::string_view() : std::string_view(it->second);
  };
  // Known names expand (recursively, each part ending its line); unknown ones stay as written.
  EXPECT_EQ(expandIncludes("x\n#include \"a.cuh\"\n#include \"prelude.cuh\"\ny", lookup),
            "x\nint a;\nint b;\n#include \"prelude.cuh\"\ny");
  // A cycle stops at the depth limit, the last line left as an include.
  EXPECT_EQ(expandIncludes("#include \"self.cuh\"", lookup, 3), "#include \"self.cuh\"\n");
  EXPECT_EQ(expandIncludes("", lookup), "");
}

struct TwoFields {
  int count = 0;
  std::string name;
};
constexpr std::array<const char*, 2> kTwoNames = {"count", "name"};
template <typename T>
auto twoMembers(T& t) {
  return std::tie(t.count, t.name);
}

TEST(JsonFields, OneListWritesAndReadsBack) {
  TwoFields in{7, "x"};
  const nlohmann::json j = jsonfields::writeFields(kTwoNames, twoMembers(in));
  EXPECT_EQ(j.dump(), R"({"count":7,"name":"x"})");
  TwoFields out;
  jsonfields::readFields(j, kTwoNames, twoMembers(out));
  EXPECT_EQ(out.count, 7);
  EXPECT_EQ(out.name, "x");
  // Missing fields keep their value; a number out of the member's range is an error, not a wrap.
  TwoFields keep{3, "k"};
  jsonfields::readFields(nlohmann::json::object(), kTwoNames, twoMembers(keep));
  EXPECT_EQ(keep.count, 3);
  EXPECT_THROW(jsonfields::readFields(nlohmann::json{{"count", 1e300}}, kTwoNames,
                                      twoMembers(keep)),
               std::out_of_range);
}

TEST(Subprocess, CapturesOutputExitCodeAndTimeout) {
  auto r = runProcess({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 3);
  auto cat = runProcess({"cat"}, std::string(200000, 'x'));
  ASSERT_TRUE(cat.ok());
  EXPECT_EQ(cat->out.size(), 200000u);
  auto slow = runProcess({"sleep", "10"}, "", 200);
  ASSERT_TRUE(slow.ok());
  EXPECT_TRUE(slow->timed_out);
  EXPECT_FALSE(runProcess({"ktune-no-such-program"}).ok());
}

TEST(Options, EnvironmentParsedInOnePlace) {
  ::setenv("KTUNE_CACHE_DIR", "/tmp/ktune-opt-test", 1);
  ::setenv("KTUNE_TUNING", "0", 1);
  ::setenv("KTUNE_REP_MS", "25", 1);
  auto o = Options::fromEnv();
  ASSERT_TRUE(o.ok()) << o.status().toString();
  EXPECT_EQ(o->cache_dir, "/tmp/ktune-opt-test");
  EXPECT_FALSE(o->tuning);
  EXPECT_DOUBLE_EQ(o->rep_ms, 25.0);
  ::setenv("KTUNE_REP_MS", "abc", 1);
  auto bad = Options::fromEnv();
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("KTUNE_REP_MS"), std::string::npos);
  ::unsetenv("KTUNE_REP_MS");
  ::unsetenv("KTUNE_TUNING");
  ::unsetenv("KTUNE_CACHE_DIR");
}

// Arch: one parse of an architecture name instead of string-prefix tests spread over the tree.
TEST(Arch, VendorGenerationAndSpaceBackend) {
  struct Case {
    const char* name;
    Vendor vendor;
    int generation;
    const char* space;
  };
  for (const Case& c : {Case{"sm_90a", Vendor::kNvidia, 90, "cuda"},
                        Case{"sm_80", Vendor::kNvidia, 80, "cuda"},
                        Case{"gfx90a", Vendor::kAmd, 9, "hip"},
                        Case{"gfx942", Vendor::kAmd, 9, "hip"},
                        Case{"gfx1100", Vendor::kAmd, 11, "hip"},
                        Case{"gfx1030", Vendor::kAmd, 10, "hip"},
                        Case{"sim", Vendor::kSimulated, 0, ""},
                        Case{"", Vendor::kSimulated, 0, ""},
                        Case{"sm_", Vendor::kNvidia, 0, "cuda"}}) {
    SCOPED_TRACE(c.name);
    const Arch a(c.name);
    EXPECT_EQ(a.name(), c.name);
    EXPECT_EQ(a.vendor(), c.vendor);
    EXPECT_EQ(a.isNvidia(), c.vendor == Vendor::kNvidia);
    EXPECT_EQ(a.isAmd(), c.vendor == Vendor::kAmd);
    EXPECT_EQ(a.generation(), c.generation);
    EXPECT_STREQ(a.spaceBackend(), c.space);
  }
}

}  // namespace
}  // namespace ktune
