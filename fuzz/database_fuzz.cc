// Fuzzes the tuning-database reader and its read-merge-write path (autotune/database.h): the
// fuzzed bytes are the database file on disk. Properties: open() never fails on content (only on
// I/O); lookup/entries/validators/candidatesFor never crash; exportJson() is valid JSON; record()
// makes the entry visible (unless a user pinned it) and never loses another device's entries;
// importJson() of the same bytes never crashes.
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "autotune/database.h"
#include "base/fs.h"
#include "fuzz_util.h"

namespace {

constexpr const char* kTarget = "database_fuzz";

ktune::Validator ours() {
  ktune::Validator v;
  v.ktune_version = "0.1.0";
  v.backend = "cuda";
  v.driver_version = "13.0";
  v.compiler = "nvrtc";
  v.compiler_version = "13.0";
  v.device_name = "NVIDIA H100 80GB HBM3";
  v.arch = "sm_90a";
  return v;
}

// Entry counts per validator id, except ours (record() may only change ours).
std::map<std::string, int> othersCounts(const ktune::TuningDatabase& db) {
  std::map<std::string, int> out;
  const ktune::Validator me = ours();
  for (const auto& [v, n] : db.validators()) {
    if (!(v == me)) out[v.id()] += n;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ktune::fuzz::die;
  const std::string dir = ktune::fuzz::scratchDir("dbfuzz");
  const std::string db_dir = ktune::joinPath(dir, "db");
  (void)ktune::removeTree(db_dir);  // corrupt-aside files of the last run
  if (!ktune::makeDirs(db_dir).ok()) die(kTarget, "cannot create " + db_dir);
  const std::string path = ktune::joinPath(db_dir, "rmsnorm.json");
  const std::string text(reinterpret_cast<const char*>(data), size);
  ktune::fuzz::writeRaw(path, text);

  auto opened = ktune::TuningDatabase::open(path, ours(), "rmsnorm");
  if (!opened.ok()) die(kTarget, "open() failed on a readable file: " + opened.status().toString());
  auto& db = **opened;
  for (const auto& w : db.warnings()) {
    if (w.empty()) die(kTarget, "empty warning");
  }
  for (const auto& e : db.entries()) {
    auto hit = db.lookup(e.key);
    if (!hit || hit->winner != e.winner) die(kTarget, "entries() lists '" + e.key + "' but lookup() differs");
    (void)db.candidatesFor(e.key);
  }
  (void)db.lookup("");
  (void)db.lookup("rows=4096,cols=4096");
  (void)db.candidatesFor("rows=4096,cols=4096");
  auto exported = db.exportJson();
  if (!exported.ok()) die(kTarget, "exportJson failed: " + exported.status().toString());
  if (nlohmann::json::parse(*exported, nullptr, false).is_discarded())
    die(kTarget, "exportJson is not valid JSON");

  const auto before = othersCounts(db);
  ktune::DbEntry e;
  e.key = "rows=4096,cols=4096";
  e.winner = "BLOCK=1024,VEC=8";
  e.winner_stats.median_ms = 0.5;
  e.winner_stats.runs = 10;
  ktune::CandidateResult failed;
  failed.config = "BLOCK=64,VEC=8";
  failed.status = ktune::Code::kCompileError;
  failed.reason = "fuzz";
  e.candidates.push_back(failed);
  ktune::Status st = db.record(e);
  if (st.ok()) {
    auto hit = db.lookup(e.key);
    if (!hit) die(kTarget, "record() succeeded but lookup() finds nothing");
    if (hit->winner != e.winner && !hit->pinned)
      die(kTarget, "record() succeeded but an unpinned entry kept winner '" + hit->winner + "'");
    if (othersCounts(db) != before) die(kTarget, "record() changed another device's entries");
    auto reopened = ktune::TuningDatabase::open(path, ours(), "rmsnorm");
    if (!reopened.ok() || !(*reopened)->lookup(e.key))
      die(kTarget, "the recorded entry is not on disk");
    if (othersCounts(**reopened) != before) die(kTarget, "another device's entries lost on disk");
    ktune::CandidateResult partial;
    partial.config = "BLOCK=256,VEC=4";
    partial.stats.median_ms = 1.0;
    if (!db.recordCandidate("other-key", partial).ok()) die(kTarget, "recordCandidate failed");
    if (db.candidatesFor("other-key").empty()) die(kTarget, "recordCandidate result not visible");
    if (!db.remove(e.key).ok()) die(kTarget, "remove failed");
  } else if (st.code() != ktune::Code::kUnsupported) {
    die(kTarget, "record() failed with " + st.toString());
  }

  // The same bytes as an import into a fresh database.
  const std::string other = ktune::joinPath(db_dir, "import.json");
  auto target = ktune::TuningDatabase::open(other, ours(), "rmsnorm");
  if (!target.ok()) die(kTarget, "open of a missing file failed: " + target.status().toString());
  ktune::Status imp = (*target)->importJson(text);
  if (!imp.ok() && imp.message().empty()) die(kTarget, "import error without a message");
  return 0;
}
