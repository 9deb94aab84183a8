// Hostile input through the public APIs: broken, mistyped and newer-schema tuning-database files
// (autotune/database.h).
// Every case must give a clear Status (what was wrong, what to do), never a crash, a torn file or
// a lost entry. Runs without a GPU.
// First: it sets the diagnostics every hostile test needs before any other include.
#include "tests/unit/hostile_fixture.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "autotune/database.h"
#include "base/fs.h"

namespace ktune {
namespace {

using hostile::FileSizeLimit;
using hostile::Hostile;
using hostile::tempFilesIn;
namespace fs = std::filesystem;

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

}  // namespace
}  // namespace ktune
