#include "autotune/journal.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "autotune/candidate_json.h"
#include "autotune/database_json.h"
#include "base/fs.h"
#include "base/json_bounded.h"

namespace ktune {

namespace {
// As the database's lock: a stuck writer must not hang every other process forever.
constexpr int kLockTimeoutMs = 120000;
}  // namespace

TuningJournal::TuningJournal(const std::string& database_path, std::string family,
                             std::string validator_id)
    : path_(database_path + ".journal"),
      family_(std::move(family)),
      validator_(std::move(validator_id)) {}

Status TuningJournal::append(const std::string& key, const CandidateResult& r) {
  if (key.empty()) return Status::InvalidArgument("tuning journal: append() with an empty key");
  CandidateResult c = r;
  if (c.date.empty()) c.date = isoUtcNow();
  nlohmann::json line{{"family", family_},
                      {"validator", validator_},
                      {"key", key},
                      {"candidate", candidatejson::candidateToJson(c)}};
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // The database's directory exists only once the database was first written.
  const size_t slash = path_.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    Status st = makeDirs(path_.substr(0, slash), 0700);
    if (!st.ok()) return st.withContext("cannot create the tuning journal '" + path_ + "'");
  }
  return appendLocked(path_, text, "tuning journal", kLockTimeoutMs);
}

bool TuningJournal::ours(const std::string& line, const std::string& key,
                         CandidateResult* c) const {
  nlohmann::json j = parseJsonOrDiscarded(line);
  if (j.is_discarded() || !j.is_object()) return false;
  auto str = [&](const char* f) {
    auto it = j.find(f);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (str("family") != family_ || str("validator") != validator_ || str("key") != key)
    return false;
  auto it = j.find("candidate");
  if (it == j.end() || !it->is_object()) return false;
  try {
    *c = candidatejson::candidateFromJson(*it);
  } catch (const std::exception&) {
    return false;  // mistyped by hand: skipped
  }
  return true;
}

std::vector<CandidateResult> TuningJournal::candidatesFor(const std::string& key) const {
  std::vector<CandidateResult> out;
  auto text = readFile(path_);
  if (!text.ok()) return out;  // none yet (or unreadable: tuning measures again)
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    CandidateResult c;
    if (!ours(line, key, &c)) continue;
    bool replaced = false;
    for (auto& o : out) {
      if (o.source == c.source && o.config == c.config) {
        o = c;
        replaced = true;
      }
    }
    if (!replaced) out.push_back(std::move(c));
  }
  return out;
}

Status TuningJournal::compact(const std::string& key) {
  if (!pathExists(path_)) return Status::Ok();
  const std::string ctx = "cannot compact tuning journal '" + path_ + "'";
  auto lock = FileLock::acquire(path_ + ".lock", kLockTimeoutMs);
  if (!lock.ok()) return lock.status().withContext(ctx);
  auto text = readFile(path_);
  if (!text.ok()) return text.status().withContext(ctx);
  std::string kept;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    CandidateResult c;
    if (ours(line, key, &c)) continue;
    if (parseJsonOrDiscarded(line).is_discarded()) continue;  // torn (or hostile): dropped
    kept += line + "\n";
  }
  if (kept.size() == text->size()) return Status::Ok();
  if (kept.empty()) return removeFile(path_);
  return writeFileAtomic(path_, kept, 0600, /*durable=*/false);
}

// database.h: one JSON line per key, appended under the lock as the journal's lines are.
Status appendUntunedKey(const std::string& path, const std::string& family,
                        const std::string& key, const std::string& args_json) {
  nlohmann::json line = nlohmann::json::object();
  if (!args_json.empty()) {
    nlohmann::json args = parseJsonOrDiscarded(args_json);
    if (args.is_discarded() || !args.is_object()) {
      return Status::InvalidArgument("appendUntunedKey: args_json must be a JSON object, got '" +
                                     args_json.substr(0, 80) + "'");
    }
    line = std::move(args);
  }
  line["family"] = family;
  line["key"] = key;
  line["date"] = isoUtcNow();
  const std::string text = dbjson::dumpText(line, -1) + "\n";
  Status s = makeDirs(parentDir(path), 0700);
  if (!s.ok()) return s.withContext("cannot append to untuned-keys file '" + path + "'");
  return appendLocked(path, text, "untuned-keys file", kLockTimeoutMs);
}

}  // namespace ktune
