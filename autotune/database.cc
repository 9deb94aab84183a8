#include "autotune/database.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <nlohmann/json.hpp>

#include "autotune/candidate_json.h"
#include "autotune/database_json.h"
#include "base/fs.h"
#include "base/json_bounded.h"

namespace ktune {
namespace {

// A stuck tuner must not hang every other process forever; flock is released when a holder dies,
// so this only triggers on a live process that holds the lock for a very long time.
constexpr int kLockTimeoutMs = 120000;

std::string utcStamp(const char* fmt) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), fmt, &tm);
  return buf;
}

using namespace candidatejson;  // candidate JSON, shared with the journal and the worker
using namespace dbjson;  // NOLINT: the schema (database_json.h)

struct Loaded {
  json doc;     // this family's part, as a schema-1 document
  json file;    // every family: {"families": {name: {"devices": [...]}}}
  std::string family;  // the family opened (the file's, when the caller named none)
  Status problem;  // kCorrupt: file unusable (doc is empty); kUnsupported: newer schema
  bool existed = false;
  std::vector<std::string> warnings;
};

// What this process last wrote to the file, and how the file looked right after (device, inode,
// size, modification and change times): a write finding the file so knows it holds exactly that,
// and skips reading and parsing it again (a suite's database grew to 1.5 MB; each key's record
// read it whole, then wrote it whole: 5 -> 67 ms per key on the GPU machine, bench/NOTES.md).
// Another writer replaces the file by rename, which the signature sees.
struct FileCache {
  bool valid = false;
  struct stat st {};
  json file;  // Loaded::file as written
};

bool sameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

Expected<Loaded> loadFile(const std::string& path, const std::string& family) {
  Loaded l;
  l.family = family;
  l.doc = emptyDoc(family);
  l.file = json{{"families", json::object()}};
  // Entries pick the code that runs: a file others could edit or swap is refused, like a shared
  // cache directory.
  KTUNE_RETURN_IF_ERROR(checkPrivateFile(path));
  auto text = readFile(path, kDatabaseMaxBytes);
  if (!text.ok()) {
    if (text.status().code() == Code::kNotFound) return l;
    return text.status().withContext("cannot read tuning database (the limit is " +
                                     std::to_string(kDatabaseMaxBytes >> 20) + " MiB)");
  }
  l.existed = true;
  auto parsed = parseJsonBounded(*text, dbJsonLimits(Code::kCorrupt));
  if (!parsed.ok()) {
    l.problem = Status::Corrupt(parsed.status().message() + " (truncated or hand-broken?)");
    return l;
  }
  json doc = std::move(*parsed);
  int64_t schema = doc.is_object() && doc.contains("schema") && doc["schema"].is_number_integer()
                       ? doc["schema"].get<int64_t>()
                       : int64_t{kSchemaSingle};
  if (schema > kSchema) {
    l.problem = Status::Unsupported("written by a newer ktune (schema " + std::to_string(schema) +
                                    ", this one reads " + std::to_string(kSchema) + ")");
    return l;
  }
  json file;
  Status s = normalize(doc, family, &file, &l.warnings);
  if (!s.ok()) {
    l.problem = s;
    l.warnings.clear();
    return l;
  }
  // Opened without a family name (the CLI's probe): the file's only family.
  if (l.family.empty() && file["families"].size() == 1) l.family = file["families"].begin().key();
  l.file = std::move(file);
  l.doc = familyDoc(l.file, l.family);
  return l;
}

}  // namespace

std::string isoUtcNow() { return utcStamp("%Y-%m-%dT%H:%M:%SZ"); }

struct TuningDatabase::Impl {
  json doc;
  bool read_only_schema = false;
  FileCache cache;  // guarded by the database's mutex
};

TuningDatabase::TuningDatabase(std::string path, Validator v, std::string family)
    : impl_(std::make_unique<Impl>()),
      path_(std::move(path)),
      validator_(std::move(v)),
      family_(std::move(family)) {}

TuningDatabase::~TuningDatabase() = default;

Expected<std::shared_ptr<TuningDatabase>> TuningDatabase::open(const std::string& path,
                                                               Validator v, std::string family) {
  if (path.empty()) return Status::InvalidArgument("tuning database: empty file path");
  std::shared_ptr<TuningDatabase> db(new TuningDatabase(path, std::move(v), std::move(family)));
  KTUNE_RETURN_IF_ERROR(db->reload());
  return db;
}

Status TuningDatabase::reload() {
  // Readers need no lock: writers replace the file by rename, so a read sees one whole version.
  KTUNE_ASSIGN_OR_RETURN(Loaded l, loadFile(path_, family_));
  std::lock_guard<std::mutex> g(mu_);
  warnings_ = std::move(l.warnings);
  impl_->read_only_schema = l.problem.code() == Code::kUnsupported;
  if (!l.problem.ok()) {
    warnings_.insert(warnings_.begin(),
                     "tuning database '" + path_ + "' " + l.problem.message() +
                         (impl_->read_only_schema
                              ? "; using no entries from it and never modifying it"
                              : "; starting empty. The broken file will be kept as '" + path_ +
                                    ".corrupt-<time>' when this database is next written"));
  }
  family_ = l.family;
  impl_->doc = std::move(l.doc);
  return Status::Ok();
}

// Runs `fn` on the freshly re-read on-disk document under the cross-process lock, then writes
// the result atomically and adopts it as the in-memory copy.
template <typename Fn>
static Status mutateLocked(const std::string& path, const std::string& family, json& mem,
                           FileCache& cache, std::vector<std::string>& warnings, Fn&& fn,
                           bool durable = true) {
  const std::string ctx = "cannot update tuning database '" + path + "'";
  Status s = makeDirs(parentDir(path), 0700);
  if (!s.ok()) return s.withContext(ctx);
  auto lock = FileLock::acquire(path + ".lock", kLockTimeoutMs);
  if (!lock.ok()) return lock.status().withContext(ctx);
  struct stat now {};
  Expected<Loaded> loaded = Status::Internal("not loaded");
  if (cache.valid && ::stat(path.c_str(), &now) == 0 && sameFile(now, cache.st)) {
    Loaded l;  // the file is what this process wrote last: its parse is at hand
    l.family = family;
    l.existed = true;
    l.file = std::move(cache.file);
    l.doc = takeFamilyDoc(l.file, family);  // set again below before the file is written or kept
    loaded = std::move(l);
  } else {
    loaded = loadFile(path, family);
  }
  cache.valid = false;
  if (!loaded.ok()) return loaded.status().withContext(ctx);
  if (loaded->problem.code() == Code::kUnsupported) {
    return Status::Unsupported(ctx + ": " + loaded->problem.message() +
                               "; upgrade ktune or use another file");
  }
  if (!loaded->problem.ok()) {
    // Keep what a user could still recover; never overwrite a broken file in place.
    std::string aside = path + ".corrupt-" + utcStamp("%Y%m%dT%H%M%SZ");
    for (int n = 1; pathExists(aside); ++n) {
      aside = path + ".corrupt-" + utcStamp("%Y%m%dT%H%M%SZ") + "-" + std::to_string(n);
    }
    if (::rename(path.c_str(), aside.c_str()) != 0) {
      return Status::IoError(ctx + ": cannot move the broken file aside to '" + aside +
                             "': " + std::strerror(errno));
    }
    warnings.push_back("broken tuning database moved to '" + aside + "' (" +
                       loaded->problem.message() + ")");
  }
  json doc = std::move(loaded->doc);
  bool changed = true;
  try {
    changed = fn(doc);
  } catch (const std::exception& e) {
    return Status::Internal(ctx + ": " + e.what());
  }
  // Only this family's part changes; every other family's is written back as it was read.
  json section = json::object();
  section["devices"] = doc["devices"];  // one copy (an initializer list made two)
  loaded->file["families"][family] = std::move(section);
  if (changed || !loaded->problem.ok() || !loaded->existed) {
    s = writeFileAtomic(path, serialize(loaded->file), 0600, durable);
    if (!s.ok()) return s.withContext(ctx);
  }
  if (loaded->problem.ok() && ::stat(path.c_str(), &cache.st) == 0) {
    cache.file = std::move(loaded->file);
    cache.valid = true;
  }
  mem = std::move(doc);
  return Status::Ok();
}

std::optional<DbEntry> TuningDatabase::lookup(const std::string& key) const {
  std::lock_guard<std::mutex> g(mu_);
  const json* dev = findDevice(impl_->doc, validator_);
  if (!dev || !dev->contains("entries")) return std::nullopt;
  const json& es = dev->at("entries");
  auto it = es.find(key);
  if (it == es.end()) return std::nullopt;
  try {
    return entryFromJson(key, *it);
  } catch (const std::exception&) {
    return std::nullopt;  // reported in warnings() at load time
  }
}

Status TuningDatabase::record(const DbEntry& e) {
  if (e.key.empty()) return Status::InvalidArgument("tuning database: record() with an empty key");
  DbEntry entry = e;
  if (entry.date.empty()) entry.date = isoUtcNow();
  json ej = entryToJson(entry);
  std::lock_guard<std::mutex> g(mu_);
  return mutateLocked(path_, family_, impl_->doc, impl_->cache, warnings_, [&](json& doc) {
    json& dev = deviceFor(doc, validator_);
    // A user's pin wins over any tuning run — if it can be used: a pinned entry that lookup()
    // cannot read (no winner, wrong types; warned about at load) is replaced, or the key would
    // stay untuned for good.
    if (isPinned(dev, entry.key) && readableEntry(dev, entry.key)) return false;
    dev["entries"][entry.key] = ej;
    if (dev.contains("partial") && dev["partial"].is_object()) dev["partial"].erase(entry.key);
    return true;
  });
}

Status TuningDatabase::remove(const std::string& key) {
  std::lock_guard<std::mutex> g(mu_);
  return mutateLocked(path_, family_, impl_->doc, impl_->cache, warnings_, [&](json& doc) {
    json* dev = findDevice(doc, validator_);
    if (!dev) return false;
    size_t n = 0;
    for (const char* section : {"entries", "partial"}) {
      if (dev->contains(section) && (*dev)[section].is_object()) n += (*dev)[section].erase(key);
    }
    return n > 0;
  });
}

Status TuningDatabase::recordCandidate(const std::string& key, const CandidateResult& r) {
  if (key.empty()) {
    return Status::InvalidArgument("tuning database: recordCandidate() with an empty key");
  }
  CandidateResult c = r;
  if (c.date.empty()) c.date = isoUtcNow();
  json cj = candidateToJson(c);
  std::lock_guard<std::mutex> g(mu_);
  // Partial results are written after every candidate: atomic (never torn, survive a killed
  // tuner) but not fsync'd — a sync per candidate cost more than the measurement itself, and a
  // power loss only loses measurements that tuning repeats. The final entry is durable.
  Status st = mutateLocked(
      path_, family_, impl_->doc, impl_->cache, warnings_,
      [&](json& doc) {
        json& dev = deviceFor(doc, validator_);
        if (!dev.contains("partial") || !dev["partial"].is_object()) dev["partial"] = json::object();
        upsertCandidate(dev["partial"][key], cj);
        return true;
      },
      /*durable=*/false);
  auto seen = std::find(write_failed_keys_.begin(), write_failed_keys_.end(), key);
  if (st.ok()) {
    if (seen != write_failed_keys_.end()) write_failed_keys_.erase(seen);
    return st;
  }
  if (seen != write_failed_keys_.end()) return Status::Ok();  // already reported for this key
  write_failed_keys_.push_back(key);
  return st;
}

std::vector<CandidateResult> TuningDatabase::candidatesFor(const std::string& key) const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<CandidateResult> out;
  const json* dev = findDevice(impl_->doc, validator_);
  if (!dev) return out;
  auto pit = dev->find("partial");
  if (pit != dev->end() && pit->is_object()) {
    auto it = pit->find(key);
    if (it != pit->end() && it->is_array()) {
      for (const auto& c : *it) {
        try {
          out.push_back(candidateFromJson(c));
        } catch (const std::exception&) {
          // Malformed hand edit: skipped (reported at load).
        }
      }
    }
  }
  // The blacklist must outlive the tuning run: failures listed in a finished entry count too,
  // so a forced re-tune still skips them.
  auto eit = dev->find("entries");
  if (eit != dev->end() && eit->is_object() && eit->contains(key)) {
    try {
      for (auto& c : entryFromJson(key, eit->at(key)).candidates) {
        if (c.status == Code::kOk) continue;
        // Cut short by that run's best: a measurement, not a failure of the kernel. A forced
        // re-tune measures it again (conditions may have changed), as it does the passed ones.
        if (rejectedAsSlower(c)) continue;
        bool seen = std::any_of(out.begin(), out.end(), [&](const CandidateResult& o) {
          return o.source == c.source && o.config == c.config;
        });
        if (!seen) out.push_back(std::move(c));
      }
    } catch (const std::exception&) {
    }
  }
  return out;
}

std::vector<DbEntry> TuningDatabase::entries() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<DbEntry> out;
  const json* dev = findDevice(impl_->doc, validator_);
  if (!dev || !dev->contains("entries") || !dev->at("entries").is_object()) return out;
  for (const auto& [key, ej] : dev->at("entries").items()) {
    try {
      out.push_back(entryFromJson(key, ej));
    } catch (const std::exception&) {
    }
  }
  return out;  // json objects iterate in sorted key order
}

std::vector<std::pair<Validator, int>> TuningDatabase::validators() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::pair<Validator, int>> out;
  if (!impl_->doc.contains("devices")) return out;
  for (const auto& dev : impl_->doc.at("devices")) {
    if (!dev.is_object() || !dev.contains("validator") || !dev.at("validator").is_object()) continue;
    try {
      int n = dev.contains("entries") && dev.at("entries").is_object()
                  ? int(dev.at("entries").size())
                  : 0;
      out.emplace_back(validatorFromJson(dev.at("validator")), n);
    } catch (const std::exception&) {
    }
  }
  return out;
}

const std::vector<std::string>& TuningDatabase::warnings() const { return warnings_; }

const std::string& TuningDatabase::path() const { return path_; }

Expected<std::string> TuningDatabase::exportJson() const {
  std::lock_guard<std::mutex> g(mu_);
  return dumpText(impl_->doc, 2) + "\n";
}

namespace {
// Every config of an imported entry through `check`: the first refusal, or OK.
// An imported entry through `check`: its winner's refusal (the entry is refused), or OK with the
// candidates `check` refuses removed from *e and named in *dropped (nothing else depends on them).
Status checkImportedEntry(const TuningDatabase::ImportCheck& check, const Validator& v, DbEntry* e,
                          std::vector<std::string>* dropped) {
  if (!e->winner.empty()) {
    Status s = check(v, e->winner_source, e->winner);
    if (!s.ok()) return s.withContext("winner '" + e->winner + "'");
  }
  std::vector<CandidateResult> kept;
  for (auto& c : e->candidates) {
    Status s = check(v, c.source, c.config);
    if (s.ok()) kept.push_back(std::move(c));
    else dropped->push_back(e->key + ": candidate '" + c.config + "' dropped: " + s.message());
  }
  e->candidates = std::move(kept);
  return Status::Ok();
}
}  // namespace

Status TuningDatabase::importJson(const std::string& text, const ImportCheck& check,
                                  std::vector<std::string>* refused) {
  auto parsed = parseJsonBounded(text, dbJsonLimits(Code::kInvalidArgument));
  if (!parsed.ok()) {
    return parsed.status().withContext("import: expected a ktune tuning database");
  }
  json in = std::move(*parsed);
  if (in.is_object() && in.contains("schema") && in["schema"].is_number_integer() &&
      in["schema"].get<int64_t>() > kSchema) {
    return Status::Unsupported("import: file has schema " + in["schema"].dump() +
                               ", newer than this ktune reads (" + std::to_string(kSchema) + ")");
  }
  std::vector<std::string> import_warnings;
  json file;
  Status s = normalize(in, family_, &file, &import_warnings);
  if (!s.ok()) return Status::InvalidArgument("import: not a ktune tuning database: " + s.message());
  // This family's part; a one-family file of an older version counts as this family's whatever
  // it names (the caller picked this database for it).
  const json& fams = file["families"];
  if (fams.contains(family_)) in = fams[family_];
  else if (!in.contains("families") && fams.size() == 1) in = fams.begin().value();
  else return Status::NotFound("import: the file has no entries of family '" + family_ + "'");
  std::lock_guard<std::mutex> g(mu_);
  for (auto& w : import_warnings) warnings_.push_back("import: " + w);
  return mutateLocked(path_, family_, impl_->doc, impl_->cache, warnings_, [&](json& doc) {
    bool changed = false;
    if (!in.contains("devices")) return false;
    for (const auto& src : in.at("devices")) {
      if (!src.is_object() || !src.contains("validator") || !src.at("validator").is_object()) {
        continue;
      }
      Validator v = validatorFromJson(src.at("validator"));
      json& dst = deviceFor(doc, v);
      if (!dst.contains("entries") || !dst["entries"].is_object()) dst["entries"] = json::object();
      if (src.contains("entries")) {
        for (const auto& [key, ej] : src.at("entries").items()) {
          DbEntry e;
          try {
            e = entryFromJson(key, ej);  // only well-formed entries come in
          } catch (const std::exception&) {
            continue;
          }
          std::vector<std::string> dropped;
          if (check) {
            Status s = checkImportedEntry(check, v, &e, &dropped);
            if (!s.ok()) {
              if (refused) refused->push_back(key + ": " + s.message());
              continue;
            }
          }
          if (isPinned(dst, key)) continue;
          for (auto& d : dropped) warnings_.push_back("import: " + d);
          dst["entries"][key] = dropped.empty() ? ej : entryToJson(e);
          changed = true;
        }
      }
      if (src.contains("partial")) {
        if (!dst.contains("partial") || !dst["partial"].is_object()) dst["partial"] = json::object();
        for (const auto& [key, arr] : src.at("partial").items()) {
          if (!arr.is_array()) continue;
          for (const auto& c : arr) {
            if (!c.is_object()) continue;
            if (check) {
              Status s;
              try {
                CandidateResult r = candidateFromJson(c);
                s = check(v, r.source, r.config);
              } catch (const std::exception& ex) {
                s = Status::InvalidArgument(std::string("malformed: ") + ex.what());
              }
              if (!s.ok()) {
                warnings_.push_back("import: " + key + ": partial candidate dropped: " + s.message());
                continue;
              }
            }
            upsertCandidate(dst["partial"][key], c);
            changed = true;
          }
        }
      }
    }
    return changed;
  });
}

KeyReport reportOf(const std::string& family, DbEntry e, const std::string& origin) {
  KeyReport r;
  r.family = family;
  r.key = std::move(e.key);
  r.winner = std::move(e.winner);
  r.winner_source = std::move(e.winner_source);
  r.origin = origin;
  r.winner_stats = std::move(e.winner_stats);
  r.candidates = std::move(e.candidates);
  return r;
}

}  // namespace ktune
