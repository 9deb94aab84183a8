// autotune/database.cc's write path skips reading the file again when it is exactly what this
// object wrote last (same inode, size, times). Whatever else changed the file in between must
// still be read: another database object of this process, another process, a hand edit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autotune/database.h"
#include "autotune/database_json.h"
#include "base/fs.h"
#include "tests/unit/db_entry_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;

Validator h100() {
  return {"0.1.0", "cuda", "13.0", "nvrtc", "13.0", "NVIDIA H100 80GB HBM3", "sm_90a"};
}

class DatabaseCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("ktune_db_cache_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    path_ = (root_ / "db" / "gemm.json").string();
  }
  void TearDown() override { fs::remove_all(root_); }
  std::shared_ptr<TuningDatabase> open() {
    auto db = TuningDatabase::open(path_, h100(), "gemm");
    EXPECT_TRUE(db.ok()) << db.status().toString();
    return db.ok() ? *db : nullptr;
  }
  fs::path root_;
  std::string path_;
};

TEST_F(DatabaseCacheTest, TwoObjectsOnOneFileAlternatingLoseNothing) {
  auto a = open(), b = open();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(a->record(winnerEntry("a" + std::to_string(i), "X=1")).ok());
    ASSERT_TRUE(b->record(winnerEntry("b" + std::to_string(i), "X=2")).ok());
  }
  auto c = open();
  EXPECT_EQ(c->entries().size(), 8u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(c->lookup("a" + std::to_string(i)).has_value()) << i;
    EXPECT_TRUE(c->lookup("b" + std::to_string(i)).has_value()) << i;
  }
}

TEST_F(DatabaseCacheTest, AFileChangedBetweenTwoWritesIsReadAgain) {
  auto a = open();
  ASSERT_TRUE(a->record(winnerEntry("k1", "X=1")).ok());
  // Another writer's version of the file: k1's winner changed, k9 added (same size is not
  // needed: the rename gives the file another inode).
  auto text = readFile(path_);
  ASSERT_TRUE(text.ok());
  auto j = nlohmann::json::parse(*text);
  auto& entries = j["devices"][0]["entries"];
  entries["k9"] = entries["k1"];
  entries["k1"]["winner"] = "X=7";
  ASSERT_TRUE(writeFileAtomic(path_, j.dump(2), 0600, false).ok());
  ASSERT_TRUE(a->record(winnerEntry("k2", "X=2")).ok());
  auto c = open();
  ASSERT_TRUE(c->lookup("k9").has_value());
  ASSERT_TRUE(c->lookup("k1").has_value());
  EXPECT_EQ(c->lookup("k1")->winner, "X=7");
  EXPECT_TRUE(c->lookup("k2").has_value());
}

TEST_F(DatabaseCacheTest, RepeatedWritesOfOneObjectKeepEveryEntry) {
  auto a = open();
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(a->record(winnerEntry("k" + std::to_string(i), "X=1")).ok());
  ASSERT_TRUE(a->remove("k3").ok());
  auto c = open();
  EXPECT_EQ(c->entries().size(), 5u);
  EXPECT_FALSE(c->lookup("k3").has_value());
}

TEST_F(DatabaseCacheTest, TwoFamiliesInOneFileKeepEachOthersEntries) {
  auto g = open();
  auto r = TuningDatabase::open(path_, h100(), "rmsnorm_bf16");
  ASSERT_TRUE(r.ok()) << r.status().toString();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(g->record(winnerEntry("g" + std::to_string(i), "X=1")).ok());
    ASSERT_TRUE((*r)->record(winnerEntry("r" + std::to_string(i), "Y=2")).ok());
  }
  ASSERT_TRUE(g->record(winnerEntry("g9", "X=9")).ok());  // its cached parse is stale: re-read
  auto text = readFile(path_);
  ASSERT_TRUE(text.ok());
  const auto j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["schema"], 2);
  auto g2 = open();
  auto r2 = TuningDatabase::open(path_, h100(), "rmsnorm_bf16");
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(g2->entries().size(), 4u);
  EXPECT_EQ((*r2)->entries().size(), 3u);
  EXPECT_EQ(g2->lookup("g9")->winner, "X=9");
}

// serialize() lends the sections to the written document: the text is what a copy gives, and the
// file is the same afterwards (one family: schema 1; two: schema 2).
TEST(DatabaseSerialize, LendsTheSectionsAndLeavesTheFileAsItWas) {
  using nlohmann::json;
  const json dev = json::array({json{{"validator", json{{"arch", "sm_90a"}}},
                                     {"entries", json{{"k", json{{"winner", "X=1"}}}}}}});
  json one{{"families", json{{"gemm", json{{"devices", dev}}}, {"empty", json{{"devices", json::array()}}}}}};
  json two = one;
  two["families"]["rms"] = json{{"devices", dev}};
  for (json* f : {&one, &two}) {
    const json before = *f;
    json copy = *f;
    std::string want;
    json fams = json::object();
    for (const auto& [n, sec] : copy["families"].items())
      if (!sec["devices"].empty()) fams[n] = sec;
    if (fams.size() == 1) {
      json doc{{"schema", 1}, {"family", fams.begin().key()}, {"devices", fams.begin()->at("devices")}};
      want = doc.dump(2) + "\n";
    } else {
      want = json{{"schema", 2}, {"families", fams}}.dump(2) + "\n";
    }
    EXPECT_EQ(dbjson::serialize(*f), want);
    EXPECT_EQ(*f, before);
  }
}

}  // namespace
}  // namespace ktune
