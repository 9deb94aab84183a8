// The code-object store under concurrency (part of the store_test program: KTUNE_TEST_PARTS in
// tests/CMakeLists.txt): writers from several processes and threads never tear an entry, an
// entry replaced with different bytes never reads as corrupt, and threads asking for one missing
// object share one compile.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "base/fs.h"
#include "compiler/store/store.h"
#include "tests/unit/store_test_util.h"

namespace ktune {
namespace {

using namespace storetest;  // NOLINT: the shared fake compiler and fixture (store_test_util.h)

// 4 processes x 4 threads, each doing getOrCompile/get on a mix of shared and private keys while
// others write them. Any corrupt read, failed call or wrong binary makes a child exit non-zero.
TEST_F(StoreTest, ConcurrentWritersFromProcessesAndThreadsNeverTear) {
  ASSERT_TRUE(openStore());
  constexpr int kProcs = 4, kThreads = 4, kShared = 12, kPrivate = 6, kRounds = 3;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int failures = 0;
      {
        auto store = CodeObjectStore::open(dir_);
        if (!store.ok()) ::_exit(10);
        FakeCompiler fc;
        std::atomic<int> bad{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
          threads.emplace_back([&, t] {
            FakeCompiler local;
            for (int round = 0; round < kRounds; ++round) {
              for (int i = 0; i < kShared + kPrivate; ++i) {
                int id = i < kShared ? (i + t) % kShared : i;
                std::string entry = i < kShared ? "shared" + std::to_string(id)
                                                : "p" + std::to_string(p) + "_t" +
                                                      std::to_string(t) + "_" + std::to_string(i);
                CompileRequest req = request(entry, id % 3 == 0 ? kDumpIsa : kDumpNone);
                std::string note;
                auto o = (*store)->getOrCompile(local, req, nullptr, &note);
                CodeObject want = fc.compile(req).value();
                if (!o.ok() || o->binary != want.binary || !note.empty()) ++bad;
                // Same-key overwrite while others read: put() must not uncommit a good entry.
                if (round == 1 && !(*store)->put(codeObjectKey(req, "fake", "1.0"), want).ok())
                  ++bad;
                auto g = (*store)->get(codeObjectKey(req, "fake", "1.0"));
                if (!g.ok() || g->binary != want.binary) ++bad;
              }
            }
          });
        }
        for (auto& th : threads) th.join();
        failures = bad.load();
      }
      ::_exit(failures == 0 ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  auto store = openStore();
  VerifyReport v = store->verify();
  EXPECT_EQ(v.checked, kShared + kProcs * kThreads * kPrivate);
  for (const auto& [k, why] : v.corrupt) ADD_FAILURE() << k << ": " << why;
  // No stray temp files from completed writes.
  for (const auto& e : fs::recursive_directory_iterator(dir_ + "/objects")) {
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  }
}

// A compiler that is not bit-reproducible: writers of one key store different bytes. Readers
// may see "not found" while an entry is replaced, but never a false "corrupt".
TEST_F(StoreTest, ReplacingAnEntryWithDifferentBytesNeverReadsAsCorrupt) {
  ASSERT_TRUE(openStore());
  std::vector<std::string> keys;
  for (int i = 0; i < 3; ++i) keys.push_back(codeObjectKey(request("nd" + std::to_string(i)), "f", "1"));
  std::vector<pid_t> kids;
  for (int p = 0; p < 3; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto store = CodeObjectStore::open(dir_);
      if (!store.ok()) ::_exit(10);
      std::atomic<int> bad{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
          for (int round = 0; round < (t == 0 ? 40 : 400); ++round) {
            const std::string& key = keys[size_t(round + t) % keys.size()];
            if (t == 0) {
              CodeObject o;
              o.binary = "pid" + std::to_string(::getpid()) + "r" + std::to_string(round) +
                         std::string(size_t(100 + round * 7), 'b');
              o.dumps["isa"] = "isa of " + o.binary.substr(0, 12);
              if (!(*store)->put(key, o).ok()) ++bad;
            } else {
              auto g = (*store)->get(key);
              if (!g.ok() && g.status().code() != Code::kNotFound) ++bad;
              if (g.ok() && g->dumps.at("isa") != "isa of " + g->binary.substr(0, 12)) ++bad;
            }
          }
        });
      }
      for (auto& th : threads) th.join();
      ::_exit(bad.load() == 0 ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  VerifyReport v = openStore()->verify();
  EXPECT_EQ(v.checked, 3);
  EXPECT_TRUE(v.corrupt.empty());
}

// A compiler that takes a while, counting its compiles from any thread.
class SlowCompiler : public FakeCompiler {
 public:
  Expected<CodeObject> compile(const CompileRequest& req) override {
    ++slow_compiles;
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    return FakeCompiler::compile(req);
  }
  std::atomic<int> slow_compiles{0};
};

// Threads of one process asking for the same missing object while its compile runs wait for that
// compile instead of starting their own (InFlightCompiles): one compile, every caller the same
// binary, none a hit; the next caller is a store hit. A tuning run and the look-ahead precompile of
// the next key (Engine::precompile) meet like this on the kernels two keys share.
TEST_F(StoreTest, OneCompilePerKeyWhileItRunsInThisProcess) {
  auto store = openStore();
  ASSERT_TRUE(store);
  SlowCompiler sc;
  const CompileRequest req = request("inflight", kDumpNone);
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<std::string> bins(kThreads);
  std::atomic<int> hits{0}, failed{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      bool hit = true;
      auto o = store->getOrCompile(sc, req, &hit);
      if (!o.ok()) ++failed;
      else bins[t] = o->binary;
      if (hit) ++hits;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(sc.slow_compiles.load(), 1);
  EXPECT_EQ(hits.load(), 0);
  for (const auto& b : bins) EXPECT_EQ(b, bins[0]);
  bool hit = false;
  ASSERT_TRUE(store->getOrCompile(sc, req, &hit).ok());
  EXPECT_TRUE(hit);
  EXPECT_EQ(sc.slow_compiles.load(), 1);
  // A failed compile is not kept: the next caller compiles again.
  CompileRequest bad = request("inflight_bad", kDumpNone);
  bad.source += "\n#error x";
  EXPECT_FALSE(store->getOrCompile(sc, bad).ok());
  EXPECT_FALSE(store->getOrCompile(sc, bad).ok());
  EXPECT_EQ(sc.slow_compiles.load(), 3);
}


// Two stores opened on one directory in one process (`ktune tune`'s early first wave compiles
// through an engine of its own beside the tuner's) share the wait: one compile, the other caller
// joins it (not a hit), and the next caller of either store is a hit. A store on another
// directory compiles its own.
TEST_F(StoreTest, OneCompilePerKeyAcrossStoresOnOneDirectory) {
  auto a = openStore(), b = openStore();
  ASSERT_TRUE(a && b);
  SlowCompiler sc;
  const CompileRequest req = request("inflight_two", kDumpNone);
  bool hit_a = true, hit_b = true;
  std::thread ta([&] { EXPECT_TRUE(a->getOrCompile(sc, req, &hit_a).ok()); });
  std::thread tb([&] { EXPECT_TRUE(b->getOrCompile(sc, req, &hit_b).ok()); });
  ta.join();
  tb.join();
  EXPECT_EQ(sc.slow_compiles.load(), 1);
  EXPECT_FALSE(hit_a);
  EXPECT_FALSE(hit_b);
  bool hit = false;
  ASSERT_TRUE(b->getOrCompile(sc, req, &hit).ok());
  EXPECT_TRUE(hit);
  auto other = CodeObjectStore::open(dir_ + "_other");
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->getOrCompile(sc, req, &hit).ok());
  EXPECT_FALSE(hit);
  EXPECT_EQ(sc.slow_compiles.load(), 2);
}


}  // namespace
}  // namespace ktune
