// Every environment variable the README documents (section "Environment"), set in the real
// environment and read back through Options::fromEnv(), the one place ktune reads them: each
// reaches its field, and each typed one rejects a bad value naming the variable. The README list
// is parsed too, so a variable documented there without a case here fails the test.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "base/fs.h"
#include "base/options.h"

namespace ktune {
namespace {

// Sets variables for one scope and restores what was there before.
class ScopedEnv {
 public:
  void set(const std::string& name, const std::string& value) {
    remember(name);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& name) {
    remember(name);
    ::unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    for (const auto& [name, old] : saved_) {
      if (old) {
        ::setenv(name.c_str(), old->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  void remember(const std::string& name) {
    if (saved_.count(name)) return;
    const char* v = ::getenv(name.c_str());
    saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

struct Case {
  std::string value;                            // a valid, non-default value
  std::function<bool(const Options&)> applied;  // the field shows it
  std::string bad;                              // "" = any string is accepted
};

// A key file for KTUNE_REMOTE_KEY_FILE (mode 0600, a trailing newline that is not part of the key).
std::string keyFile() {
  static const std::string path = [] {
    char tmpl[] = "/tmp/ktune-keyfile-XXXXXX";
    std::string dir = mkdtemp(tmpl);
    std::string f = dir + "/fleet.key";
    EXPECT_TRUE(writeFileAtomic(f, "0123456789abcdef-fleet\n", 0600).ok());
    return f;
  }();
  return path;
}

const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> k = {
      {"KTUNE_CACHE_DIR",
       {"/tmp/ktune-env-cache",
        [](const Options& o) { return o.cache_dir == "/tmp/ktune-env-cache"; }, ""}},
      {"KTUNE_TUNING", {"0", [](const Options& o) { return !o.tuning; }, "maybe"}},
      {"KTUNE_RECORD_UNTUNED",
       {"/tmp/untuned.jsonl",
        [](const Options& o) { return o.record_untuned_path == "/tmp/untuned.jsonl"; }, ""}},
      {"KTUNE_DB",
       {"/tmp/tuned.json", [](const Options& o) { return o.database_path == "/tmp/tuned.json"; },
        ""}},
      {"KTUNE_CURATED",
       {"/tmp/curated.json", [](const Options& o) { return o.curated_path == "/tmp/curated.json"; },
        ""}},
      {"KTUNE_VERBOSE", {"2", [](const Options& o) { return o.verbose == 2; }, "loud"}},
      {"KTUNE_COMPILE_THREADS",
       {"3", [](const Options& o) { return o.compile_threads == 3; }, "-1"}},
      {"KTUNE_PIPELINE", {"0", [](const Options& o) { return !o.pipeline; }, "sometimes"}},
      {"KTUNE_COMPILE_PROCESSES", {"1", [](const Options& o) { return o.compile_processes && o.compile_processes_explicit; }, "often"}},
      {"KTUNE_WARMUP_MS", {"7.5", [](const Options& o) { return o.warmup_ms == 7.5; }, "abc"}},
      {"KTUNE_REP_MS", {"33", [](const Options& o) { return o.rep_ms == 33.0; }, "0"}},
      {"KTUNE_STATIC_PRUNE", {"0", [](const Options& o) { return !o.static_prune; }, "2"}},
      {"KTUNE_SEARCH", {"exhaustive", [](const Options& o) { return o.search == "exhaustive" && o.search_explicit; }, "random"}},
      {"KTUNE_BACKGROUND_DUTY",
       {"0.5", [](const Options& o) { return o.background_duty == 0.5; }, "0"}},
      {"KTUNE_BUDGET", {"1.5", [](const Options& o) { return o.budget_s == 1.5 && o.search_explicit; }, "-1"}},
      {"KTUNE_LT_PRELOAD", {"early", [](const Options& o) { return o.lt_preload == "early"; }, "later"}},
      {"KTUNE_EARLY_WAVE", {"0", [](const Options& o) { return !o.early_wave; }, "soon"}},
      {"KTUNE_TUNER_CONNECTIONS",
       {"0", [](const Options& o) { return o.tuner_connections == 0; }, "33"}},
      {"KTUNE_WORKER_CONNECTIONS",
       {"4", [](const Options& o) { return o.worker_connections == 4; }, "-2"}},
      {"KTUNE_EARLY_JIT", {"0", [](const Options& o) { return !o.early_jit; }, "first"}},
      {"KTUNE_VENDOR_ANSWERS", {"0", [](const Options& o) { return !o.vendor_answers; }, "kept"}},
      {"KTUNE_WORKER_CONTEXT",
       {"first", [](const Options& o) { return o.worker_context == "first"; }, "later"}},
      {"KTUNE_VENDOR_ALGOS", {"3", [](const Options& o) { return o.vendor_algos == 3; }, "x"}},
      {"KTUNE_FINALISTS", {"2", [](const Options& o) { return o.finalists == 2; }, "-1"}},
      {"KTUNE_FINALIST_MARGIN",
       {"0.02", [](const Options& o) { return o.finalist_margin == 0.02; }, "0.7"}},
      {"KTUNE_FINALIST_PAIRING",
       {"adjacent", [](const Options& o) { return o.finalist_pairing == "adjacent"; }, "paired"}},
      {"KTUNE_BACKEND", {"sim", [](const Options& o) { return o.backend == "sim"; }, "opencl"}},
      {"KTUNE_SIM_DEVICES", {"4", [](const Options& o) { return o.sim_devices == 4; }, "65"}},
      {"KTUNE_CLANG", {"/opt/clang", [](const Options& o) { return o.clang == "/opt/clang"; }, ""}},
      {"KTUNE_RETRY_FAILED", {"1", [](const Options& o) { return o.retry_failed; }, "yes please"}},
      {"KTUNE_PDL", {"0", [](const Options& o) { return !o.pdl; }, "later"}},
      {"KTUNE_ISOLATE",
       {"1", [](const Options& o) { return o.isolate && o.isolate_explicit; }, "on-ish"}},
      {"KTUNE_WORKER",
       {"/opt/ktune-worker", [](const Options& o) { return o.worker_path == "/opt/ktune-worker"; },
        ""}},
      {"KTUNE_WORKER_PLUGINS",
       {"/a/one.so:/b/two.so",
        [](const Options& o) {
          return o.worker_plugins == std::vector<std::string>{"/a/one.so", "/b/two.so"};
        },
        ""}},
      {"KTUNE_REMOTE_CACHE",
       {"redis://127.0.0.1:6390/2",
        [](const Options& o) { return o.remote_cache == "redis://127.0.0.1:6390/2"; },
        "http://cache:80"}},
      {"KTUNE_REMOTE_TIMEOUT_MS",
       {"40", [](const Options& o) { return o.remote_timeout_ms == 40; }, "soon"}},
      {"KTUNE_REMOTE_KEY_FILE",
       {keyFile(), [](const Options& o) { return o.remote_key == "0123456789abcdef-fleet"; },
        "/nonexistent/fleet.key"}},
      // PATH: a variable every test environment has, longer than the 16-byte minimum.
      {"KTUNE_REMOTE_KEY_VAR",
       {"PATH", [](const Options& o) { return o.remote_key == std::string(::getenv("PATH")); },
        "KTUNE_TEST_VARIABLE_NOBODY_SETS"}},
      {"KTUNE_LEASE_MS", {"900", [](const Options& o) { return o.lease_ms == 900; }, "long"}},
      {"KTUNE_LEASE_WAIT_MS",
       {"1200", [](const Options& o) { return o.lease_wait_ms == 1200; }, "forever"}},
  };
  return k;
}

// Every KTUNE_* name in the README's "## Environment" section (the C API's KTUNE_* constants
// and CMake options documented elsewhere are not environment variables).
std::set<std::string> documented() {
  auto readme = readFile(std::string(KTUNE_SOURCE_DIR) + "/README.md");
  EXPECT_TRUE(readme.ok());
  std::set<std::string> out;
  if (!readme.ok()) return out;
  const size_t from = readme->find("\n## Environment\n");
  EXPECT_NE(from, std::string::npos) << "README.md has no '## Environment' section";
  if (from == std::string::npos) return out;
  const size_t to = readme->find("\n## ", from + 1);
  const std::string text = readme->substr(from, to == std::string::npos ? std::string::npos : to - from);
  const std::regex name(R"(KTUNE_[A-Z_]+[A-Z])");
  for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it)
    out.insert(it->str());
  return out;
}

TEST(OptionsFromEnv, EveryDocumentedVariableReachesItsField) {
  ScopedEnv env;
  for (const auto& [name, c] : cases()) env.unset(name);
  for (const auto& [name, c] : cases()) {
    SCOPED_TRACE(name + "=" + c.value);
    auto before = Options::fromEnv();
    ASSERT_TRUE(before.ok()) << before.status().toString();
    EXPECT_FALSE(c.applied(*before)) << "the test value equals the default: it proves nothing";
    env.set(name, c.value);
    auto o = Options::fromEnv();
    ASSERT_TRUE(o.ok()) << o.status().toString();
    EXPECT_TRUE(c.applied(*o));
    env.unset(name);
  }
  for (const std::string& name : documented()) {
    if (name == "KTUNE_TEST_ENOSPC_DIR" || name.rfind("KTUNE_WITH_", 0) == 0 ||
        name.rfind("KTUNE_BUILD_", 0) == 0 || name == "KTUNE_SANITIZE" ||
        name == "KTUNE_REQUIRE_TOOLS" || name == "KTUNE_TEST_QUICK" ||
        name == "KTUNE_PLUGIN_EXPORT" || name == "KTUNE_TIMELINE")
      continue;  // CMake options, the test suite's settings (TestSettingsFromEnv below), the
                 // plugin entry's export macro (<ktune/plugin.hpp>) and the timeline's file
                 // (timelinePathFromEnv, below)
    EXPECT_TRUE(cases().count(name)) << name << " is documented in README.md but not tested here";
  }
}

TEST(OptionsFromEnv, BadValuesAreRefusedNamingTheVariable) {
  ScopedEnv env;
  for (const auto& [name, c] : cases()) env.unset(name);
  for (const auto& [name, c] : cases()) {
    if (c.bad.empty()) continue;
    SCOPED_TRACE(name + "=" + c.bad);
    env.set(name, c.bad);
    auto o = Options::fromEnv();
    ASSERT_FALSE(o.ok());
    EXPECT_EQ(o.status().code(), Code::kInvalidArgument);
    EXPECT_NE(o.status().message().find(name), std::string::npos) << o.status().toString();
    env.unset(name);
  }
}

// The test suite's settings are read beside the options (base/options.cc) but are not public
// options: each reaches TestSettings, and a bad value is refused naming the variable.
TEST(TestSettingsFromEnv, EachReachesItsFieldAndBadValuesAreRefused) {
  ScopedEnv env;
  env.unset("KTUNE_REQUIRE_TOOLS");
  env.unset("KTUNE_TEST_QUICK");
  auto d = testSettingsFromEnv();
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_FALSE(d->require_tools);
  EXPECT_FALSE(d->test_quick);
  env.set("KTUNE_REQUIRE_TOOLS", "1");
  env.set("KTUNE_TEST_QUICK", "1");
  auto t = testSettingsFromEnv();
  ASSERT_TRUE(t.ok()) << t.status().toString();
  EXPECT_TRUE(t->require_tools);
  EXPECT_TRUE(t->test_quick);
  for (const char* name : {"KTUNE_REQUIRE_TOOLS", "KTUNE_TEST_QUICK"}) {
    env.set(name, "perhaps");
    auto bad = testSettingsFromEnv();
    ASSERT_FALSE(bad.ok()) << name;
    EXPECT_NE(bad.status().message().find(name), std::string::npos) << bad.status().toString();
    env.set(name, "1");
  }
}

// A key others could read, or too short to be a secret, is refused (it would authenticate code
// objects that run on the GPU).
TEST(OptionsFromEnv, RemoteKeyFileMustBePrivateAndLongEnough) {
  ScopedEnv env;
  env.unset("KTUNE_REMOTE_KEY_VAR");
  const std::string dir = keyFile().substr(0, keyFile().rfind('/'));
  const std::string open_key = dir + "/open.key", short_key = dir + "/short.key";
  ASSERT_TRUE(writeFileAtomic(open_key, "0123456789abcdef-fleet", 0644).ok());
  ASSERT_TRUE(writeFileAtomic(short_key, "short", 0600).ok());
  env.set("KTUNE_REMOTE_KEY_FILE", open_key);
  auto o = Options::fromEnv();
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("chmod 600"), std::string::npos) << o.status().toString();
  env.set("KTUNE_REMOTE_KEY_FILE", short_key);
  o = Options::fromEnv();
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("16 bytes"), std::string::npos) << o.status().toString();
  env.set("KTUNE_REMOTE_KEY_VAR", "PATH");  // both at once: ambiguous
  env.set("KTUNE_REMOTE_KEY_FILE", keyFile());
  EXPECT_FALSE(Options::fromEnv().ok());
}

TEST(OptionsFromEnv, CacheDirFallsBackToXdgThenHome) {
  ScopedEnv env;
  env.unset("KTUNE_CACHE_DIR");
  env.set("XDG_CACHE_HOME", "/tmp/xdg");
  EXPECT_EQ(Options::fromEnv()->cache_dir, "/tmp/xdg/ktune");
  env.unset("XDG_CACHE_HOME");
  env.set("HOME", "/tmp/home");
  EXPECT_EQ(Options::fromEnv()->cache_dir, "/tmp/home/.cache/ktune");
  env.set("KTUNE_CACHE_DIR", "/tmp/explicit");  // wins over both
  env.set("XDG_CACHE_HOME", "/tmp/xdg");
  EXPECT_EQ(Options::fromEnv()->cache_dir, "/tmp/explicit");
}

TEST(TimelinePathFromEnv, ReadsTheVariableAndNothingWhenUnsetOrEmpty) {
  ScopedEnv env;
  env.unset("KTUNE_TIMELINE");
  EXPECT_EQ(timelinePathFromEnv(), "");
  env.set("KTUNE_TIMELINE", "");
  EXPECT_EQ(timelinePathFromEnv(), "");
  env.set("KTUNE_TIMELINE", "/tmp/ktune-timeline.txt");
  EXPECT_EQ(timelinePathFromEnv(), "/tmp/ktune-timeline.txt");
}

}  // namespace
}  // namespace ktune
