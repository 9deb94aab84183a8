#include "compiler/store/store.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <exception>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>

#include "base/json_fields.h"
#include "compiler/resources_json.h"
#include "compiler/store/in_flight.h"
#include "base/fs.h"
#include "base/json_bounded.h"
#include "base/sha256.h"
#include "base/version.h"

namespace ktune {
namespace {

using nlohmann::json;

// Bumped when the metadata layout changes; an entry of another format reads as corrupt (and is
// recompiled by getOrCompile), never misinterpreted.
constexpr int kMetadataFormat = 1;

// One compile per object at a time in this process, over every store opened on the same directory
// (CodeObjectStore::getOrCompile): `ktune tune`'s early first wave compiles through an engine of its
// own (tools/tune_early_wave.h), whose store is another instance on the tuner's directory.
InFlightCompiles& processCompiles() {
  static InFlightCompiles* const c = new InFlightCompiles();  // never destroyed: used at exit
  return *c;
}

std::string isoNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool isHex(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Dump names become part of file names, so only short [a-z0-9_] names are accepted.
bool isSafeDumpName(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// The dumps of `wanted` (Dump bits) that `obj` does not hold.
unsigned missingDumps(const CodeObject& obj, unsigned wanted) {
  unsigned missing = 0;
  for (unsigned bit = 1; bit <= kDumpAll; bit <<= 1)
    if ((wanted & bit) && !obj.dumps.count(dumpName(static_cast<Dump>(bit)))) missing |= bit;
  return missing;
}

Status badKey(const std::string& key) {
  std::string shown = key.size() > 80 ? key.substr(0, 80) + "..." : key;
  return Status::InvalidArgument("invalid code-object key '" + shown +
                                 "': expected 64 lowercase hex characters (a sha256)");
}

// Text written to metadata: invalid UTF-8 (a compiler log in a strange locale) is replaced, never
// thrown about.
std::string dumpJson(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace); }

using jsonfields::checkedNumber;
using jsonfields::readField;

// A compiler log longer than this is cut when written, so metadata stays far below the limit.
constexpr size_t kMaxLogBytes = size_t(1) << 20;

// Reads a metadata file, refusing one over kStoreMetadataMaxBytes before reading it: such an
// entry (or a FIFO in its place) reads as corrupt, so getOrCompile replaces it.
Expected<std::string> readMetadataFile(const std::string& path) {
  auto text = readFile(path, kStoreMetadataMaxBytes);
  if (!text.ok() && text.status().code() == Code::kInvalidArgument) {
    return Status::Corrupt("code-object metadata (the limit is " +
                           std::to_string(kStoreMetadataMaxBytes >> 20) +
                           " MiB): " + text.status().message());
  }
  return text;
}

// Parses and sanity-checks metadata text; kCorrupt with the reason on any problem.
Expected<json> parseMetadata(const std::string& key, const std::string& text) {
  JsonLimits limits;
  limits.max_bytes = kStoreMetadataMaxBytes;
  auto parsed = parseJsonBounded(text, limits);
  if (!parsed.ok()) {
    return Status::Corrupt("metadata of " + key + ": " + parsed.status().message() +
                           " (truncated or hand-broken)");
  }
  json j = std::move(*parsed);
  if (!j.is_object()) return Status::Corrupt("metadata of " + key + " is not a JSON object");
  try {
    auto fv = j.find("format_version");
    if (fv == j.end() || !fv->is_number_integer() || fv->get<int64_t>() != kMetadataFormat) {
      return Status::Corrupt("metadata of " + key + " has format_version " +
                             j.value("format_version", json(nullptr)).dump() + ", expected " +
                             std::to_string(kMetadataFormat));
    }
    if (j.value("key", std::string()) != key) {
      return Status::Corrupt("metadata of " + key + " names another key ('" +
                             j.value("key", std::string()) + "')");
    }
    std::string sha = j.at("binary_sha256").get<std::string>();
    if (sha.size() != 64 || !isHex(sha)) {
      return Status::Corrupt("metadata of " + key + " has a malformed binary_sha256");
    }
    if (checkedNumber<int64_t>(j.at("binary_bytes"), "binary_bytes") < 0) {
      return Status::Corrupt("metadata of " + key + " has a negative binary_bytes");
    }
  } catch (const std::exception& e) {
    return Status::Corrupt("metadata of " + key + " is missing a field or has a wrong type: " +
                           e.what());
  }
  return j;
}

}  // namespace

std::string codeObjectKey(const CompileRequest& req, const std::string& compiler_name,
                          const std::string& compiler_version) {
  Sha256 h;
  h.field("ktune-code-object").field(std::to_string(KTUNE_SCHEMA_VERSION));
  h.field(req.source).field(req.entry);
  h.field(std::to_string(req.defines.size()));
  for (const auto& [k, v] : req.defines) h.field(k).field(v);
  h.field(std::to_string(req.options.size()));
  for (const auto& o : req.options) h.field(o);
  // The requested dumps are not part of the key: they do not change the binary, and one entry
  // gains the dumps later requests ask for (getOrCompile) instead of being stored once per set.
  h.field(req.arch).field(compiler_name).field(compiler_version);
  if (req.language != Language::kCpp) h.field("language").field(languageName(req.language));
  return h.hexDigest();
}

bool isValidCodeObjectKey(const std::string& key) { return key.size() == 64 && isHex(key); }

CodeObjectStore::CodeObjectStore(std::string dir) : dir_(std::move(dir)) {}

Expected<std::shared_ptr<CodeObjectStore>> CodeObjectStore::open(const std::string& dir) {
  if (dir.empty()) {
    return Status::InvalidArgument("code-object store: empty directory path (set KTUNE_CACHE_DIR)");
  }
  if (!pathExists(dir)) {
    Status s = makeDirs(dir, 0700);
    if (!s.ok()) return s.withContext("cannot create code-object store directory");
  }
  KTUNE_RETURN_IF_ERROR(checkPrivateDir(dir));
  return std::shared_ptr<CodeObjectStore>(new CodeObjectStore(dir));
}

const std::string& CodeObjectStore::dir() const { return dir_; }

std::string CodeObjectStore::objectsDir() const { return joinPath(dir_, "objects"); }

std::string CodeObjectStore::entryPath(const std::string& key, const std::string& suffix) const {
  // Callers validate `key` first; it is then 64 hex chars and safe to join.
  return joinPath(joinPath(objectsDir(), key.substr(0, 2)), key + suffix);
}

namespace {
// The entry's object from its parsed metadata and binary, dumps left out: kCorrupt on a size or
// sha256 mismatch or a wrongly typed field.
Expected<CodeObject> objectFromParts(const std::string& key, const json& meta, std::string bin) {
  try {
    int64_t want_bytes = checkedNumber<int64_t>(meta.at("binary_bytes"), "binary_bytes");
    if (int64_t(bin.size()) != want_bytes) {
      return Status::Corrupt("entry " + key + ": binary is " + std::to_string(bin.size()) +
                             " bytes, metadata says " + std::to_string(want_bytes) +
                             " (size mismatch, truncated)");
    }
    if (sha256Hex(bin) != meta.at("binary_sha256").get<std::string>()) {
      return Status::Corrupt("entry " + key + ": sha256 mismatch");
    }
    CodeObject obj;
    obj.binary = std::move(bin);
    codeObjectFactsFromJson(meta, &obj);
    readField(meta, "format", obj.format);
    readField(meta, "log", obj.log);
    readField(meta, "shared_mac", obj.shared_mac);
    return obj;
  } catch (const std::exception& e) {
    return Status::Corrupt("entry " + key + ": metadata field has a wrong type: " + e.what());
  }
}

json metadataFor(const std::string& key, const CodeObject& obj, const std::string& sha,
                 const json& dumps) {
  json j = codeObjectFactsToJson(obj);
  j.update(json{{"format_version", kMetadataFormat},
                {"key", key},
                {"binary_sha256", sha},
                {"binary_bytes", obj.binary.size()},
                {"format", obj.format},
                {"log", obj.log.size() > kMaxLogBytes
                            ? obj.log.substr(0, kMaxLogBytes) + "\n[log cut at 1 MiB]"
                            : obj.log},
                {"created", isoNow()},
                {"ktune_version", KTUNE_VERSION},
                {"dumps", dumps}});
  if (!obj.shared_mac.empty()) j["shared_mac"] = obj.shared_mac;
  return j;
}

// One read of an entry whose metadata text has already been read. kCorrupt on any mismatch.
Expected<CodeObject> readEntry(const std::string& key, const std::string& meta_text,
                               const std::function<std::string(const std::string&)>& path) {
  KTUNE_ASSIGN_OR_RETURN(json meta, parseMetadata(key, meta_text));
  auto bin = readFile(path(".bin"));
  if (!bin.ok()) {
    if (bin.status().code() != Code::kNotFound) return bin.status();
    return Status::Corrupt("entry " + key + ": metadata present but binary missing");
  }
  KTUNE_ASSIGN_OR_RETURN(CodeObject obj, objectFromParts(key, meta, std::move(bin).value()));
  try {
    if (meta.contains("dumps")) {
      for (const auto& [name, d] : meta.at("dumps").items()) {
        if (!isSafeDumpName(name)) {
          return Status::Corrupt("entry " + key + ": metadata lists a bad dump name");
        }
        auto text = readFile(path("." + name + ".txt"));
        if (!text.ok()) {
          return Status::Corrupt("entry " + key + ": dump '" + name +
                                 "' unreadable: " + text.status().message());
        }
        if (sha256Hex(*text) != d.at("sha256").get<std::string>()) {
          return Status::Corrupt("entry " + key + ": dump '" + name + "' sha256 mismatch");
        }
        obj.dumps[name] = std::move(*text);
      }
    }
  } catch (const std::exception& e) {
    return Status::Corrupt("entry " + key + ": metadata field has a wrong type: " + e.what());
  }
  return obj;
}
}  // namespace

Expected<CodeObject> CodeObjectStore::get(const std::string& key) const {
  if (!isValidCodeObjectKey(key)) return badKey(key);
  auto path = [&](const std::string& suffix) { return entryPath(key, suffix); };
  // put() of the same key with different bytes (a compiler that is not bit-reproducible) may
  // replace the files between our reads. Such a put uncommits (removes) the metadata first, so
  // a mismatch is only reported as corruption if the metadata is still the one we started from.
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto meta_text = readMetadataFile(path(".json"));
    if (!meta_text.ok()) {
      if (meta_text.status().code() == Code::kNotFound) {
        return Status::NotFound("no code object " + key + " in store '" + dir_ + "'");
      }
      return meta_text.status();
    }
    auto obj = readEntry(key, *meta_text, path);
    if (obj.ok() || obj.status().code() != Code::kCorrupt) return obj;
    auto again = readMetadataFile(path(".json"));
    if (again.ok() && *again == *meta_text) return obj;  // stable: really corrupt
  }
  return Status::Corrupt("entry " + key + " kept changing while being read (concurrent writers)");
}

Status CodeObjectStore::put(const std::string& key, const CodeObject& obj) {
  if (!isValidCodeObjectKey(key)) return badKey(key);
  for (const auto& [name, text] : obj.dumps) {
    if (!isSafeDumpName(name)) {
      return Status::InvalidArgument("code object " + key + " has a dump named '" + name +
                                     "'; dump names must be [a-z0-9_]{1,32}");
    }
  }
  const std::string shard = joinPath(objectsDir(), key.substr(0, 2));
  const std::string ctx = "cannot store code object " + key + " in '" + dir_ + "'";
  Status s = makeDirs(shard, 0700);
  if (!s.ok()) return s.withContext(ctx);

  // One writer per shard at a time. Readers never lock: they rely on the write order below.
  auto lock = FileLock::acquire(joinPath(shard, "lock"));
  if (!lock.ok()) return lock.status().withContext(ctx);

  const std::string sha = sha256Hex(obj.binary);
  // Same content already committed with these dumps (another thread or process got here first):
  // nothing to do.
  // This keeps concurrent writers of one key from uncommitting each other's good entry.
  if (auto meta_text = readMetadataFile(entryPath(key, ".json")); meta_text.ok()) {
    auto meta = parseMetadata(key, *meta_text);
    if (meta.ok() && meta->value("binary_sha256", std::string()) == sha) {
      auto existing = get(key);
      const bool has_dumps =
          existing.ok() && std::all_of(obj.dumps.begin(), obj.dumps.end(), [&](const auto& d) {
            return existing->dumps.count(d.first) > 0;
          });
      if (has_dumps) return Status::Ok();
    }
    // Same binary with more dumps (getOrCompile adding one): rewritten below, dumps first.
    // Different or broken entry: uncommit it first so no reader pairs old metadata with new bytes.
    s = removeFile(entryPath(key, ".json"));
    if (!s.ok()) return s.withContext(ctx);
  }

  json dumps = json::object();
  for (const auto& [name, text] : obj.dumps) {
    s = writeFileAtomic(entryPath(key, "." + name + ".txt"), text, 0600);
    if (!s.ok()) return s.withContext(ctx);
    dumps[name] = json{{"file", key + "." + name + ".txt"},
                       {"sha256", sha256Hex(text)},
                       {"bytes", text.size()}};
  }
  s = writeFileAtomic(entryPath(key, ".bin"), obj.binary, 0600);
  if (!s.ok()) return s.withContext(ctx);

  json meta = metadataFor(key, obj, sha, dumps);
  s = writeFileAtomic(entryPath(key, ".json"), dumpJson(meta) + "\n", 0600);
  if (!s.ok()) return s.withContext(ctx);
  return Status::Ok();
}

Expected<CodeObject> CodeObjectStore::getOrCompile(Compiler& compiler, const CompileRequest& req,
                                                   bool* hit, std::string* note) {
  if (hit) *hit = false;
  if (note) note->clear();
  const std::string key = codeObjectKey(req, compiler.name(), compiler.version());
  std::string why;
  auto cached = get(key);
  CompileRequest with_dumps = req;
  if (cached.ok()) {
    const unsigned missing = missingDumps(*cached, req.dumps);
    if (missing == 0) {
      if (hit) *hit = true;
      return cached;
    }
    // The same binary with more dumps: compile once more with every dump the entry has plus the
    // new ones, and replace the entry (same key, same code).
    with_dumps.dumps = req.dumps | (kDumpAll & ~missingDumps(*cached, kDumpAll));
  }
  // A sound entry without the dumps asked for is no fault of the entry: only a failed read says why.
  if (!cached.ok() && cached.status().code() != Code::kNotFound) {
    std::string reason = cached.status().message();
    const std::string prefix = "entry " + key + ": ";
    if (reason.compare(0, prefix.size(), prefix) == 0) reason.erase(0, prefix.size());
    why = "entry " + key +
          (cached.status().code() == Code::kCorrupt ? " corrupt (" : " unreadable (") + reason +
          "), recompiled";
  }
  bool joined = false;
  auto obj = processCompiles().run(dir_ + "|" + key + "/" + std::to_string(with_dumps.dumps), [&]() {
    auto o = compiler.compile(with_dumps);
    if (!o.ok()) return o;
    Status s = put(key, *o);
    if (!s.ok()) {
      if (!why.empty()) why += "; ";
      why += "not cached: " + s.message();
    }
    return o;
  }, &joined);
  if (note && obj.ok() && !joined) *note = why;
  return obj;
}

Expected<std::vector<StoreEntryInfo>> CodeObjectStore::list() const {
  std::vector<StoreEntryInfo> out;
  KTUNE_ASSIGN_OR_RETURN(auto shards, listDir(objectsDir()));
  for (const auto& shard : shards) {
    if (shard.size() != 2 || !isHex(shard)) continue;
    KTUNE_ASSIGN_OR_RETURN(auto names, listDir(joinPath(objectsDir(), shard)));
    for (const auto& n : names) {
      if (n.size() != 64 + 5 || n.compare(64, 5, ".json") != 0) continue;
      std::string key = n.substr(0, 64);
      if (!isValidCodeObjectKey(key) || key.compare(0, 2, shard) != 0) continue;
      StoreEntryInfo info;
      info.key = key;
      auto text = readMetadataFile(entryPath(key, ".json"));
      if (text.ok()) {
        auto meta = parseMetadata(key, *text);
        if (meta.ok()) {
          try {
            readField(*meta, "entry", info.entry);
            readField(*meta, "arch", info.arch);
            readField(*meta, "compiler", info.compiler);
            readField(*meta, "compiler_version", info.compiler_version);
            readField(*meta, "created", info.created);
            readField(*meta, "binary_bytes", info.binary_bytes);
            readField(*meta, "compile_ms", info.compile_ms);
          } catch (const std::exception&) {
            // Listed with what could be read; verify() reports the problem.
          }
        }
      }
      out.push_back(std::move(info));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const StoreEntryInfo& a, const StoreEntryInfo& b) { return a.key < b.key; });
  return out;
}

Expected<std::string> CodeObjectStore::metadataJson(const std::string& key) const {
  if (!isValidCodeObjectKey(key)) return badKey(key);
  auto text = readMetadataFile(entryPath(key, ".json"));
  if (!text.ok() && text.status().code() == Code::kNotFound) {
    return Status::NotFound("no code object " + key + " in store '" + dir_ + "'");
  }
  return text;
}

Expected<std::string> CodeObjectStore::resolve(const std::string& key_prefix) const {
  std::string p = key_prefix;
  std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return std::tolower(c); });
  if (p.empty() || p.size() > 64 || !isHex(p)) {
    return Status::InvalidArgument("'" + key_prefix +
                                   "' is not a code-object key prefix (1-64 hex characters)");
  }
  std::vector<std::string> matches;
  KTUNE_ASSIGN_OR_RETURN(auto shards, listDir(objectsDir()));
  for (const auto& shard : shards) {
    if (shard.size() != 2 || !isHex(shard)) continue;
    if (shard.compare(0, std::min<size_t>(2, p.size()), p, 0, std::min<size_t>(2, p.size())) != 0)
      continue;
    KTUNE_ASSIGN_OR_RETURN(auto names, listDir(joinPath(objectsDir(), shard)));
    for (const auto& n : names) {
      if (n.size() != 69 || n.compare(64, 5, ".json") != 0) continue;
      std::string key = n.substr(0, 64);
      if (isValidCodeObjectKey(key) && key.compare(0, p.size(), p) == 0) matches.push_back(key);
    }
  }
  if (matches.empty()) {
    return Status::NotFound("no code object with key prefix '" + key_prefix + "' in store '" +
                            dir_ + "'");
  }
  if (matches.size() > 1) {
    std::sort(matches.begin(), matches.end());
    std::string msg = "key prefix '" + key_prefix + "' is ambiguous (" +
                      std::to_string(matches.size()) + " entries: ";
    for (size_t i = 0; i < matches.size() && i < 4; ++i) {
      msg += (i ? ", " : "") + matches[i].substr(0, 16) + "...";
    }
    return Status::InvalidArgument(msg + "); give more characters");
  }
  return matches[0];
}

Status CodeObjectStore::remove(const std::string& key) {
  if (!isValidCodeObjectKey(key)) return badKey(key);
  const std::string shard = joinPath(objectsDir(), key.substr(0, 2));
  if (!pathExists(shard)) return Status::Ok();
  auto lock = FileLock::acquire(joinPath(shard, "lock"));
  if (!lock.ok()) return lock.status().withContext("cannot remove code object " + key);
  // Metadata first: the entry is uncommitted before its other files disappear.
  KTUNE_RETURN_IF_ERROR(removeFile(entryPath(key, ".json")));
  KTUNE_ASSIGN_OR_RETURN(auto names, listDir(shard));
  for (const auto& n : names) {
    if (n.size() > 64 && n.compare(0, 64, key) == 0 && n[64] == '.') {
      KTUNE_RETURN_IF_ERROR(removeFile(joinPath(shard, n)));
    }
  }
  return Status::Ok();
}

Status CodeObjectStore::clear() {
  Status s = removeTree(objectsDir());
  if (!s.ok()) return s.withContext("cannot clear code-object store '" + dir_ + "'");
  return Status::Ok();
}

VerifyReport CodeObjectStore::verify() const {
  VerifyReport report;
  auto entries = list();
  if (!entries.ok()) {
    report.corrupt.emplace_back("", entries.status().message());
    return report;
  }
  for (const auto& e : *entries) {
    ++report.checked;
    auto obj = get(e.key);
    // NotFound here means it was removed concurrently, which is not corruption.
    if (!obj.ok() && obj.status().code() != Code::kNotFound) {
      report.corrupt.emplace_back(e.key, obj.status().message());
    }
  }
  return report;
}

uint64_t CodeObjectStore::sizeBytes() const { return treeSize(objectsDir()); }

std::string portableMetadata(const std::string& key, const CodeObject& obj) {
  return dumpJson(metadataFor(key, obj, sha256Hex(obj.binary), json::object()));
}

Expected<CodeObject> codeObjectFromPortable(const std::string& key, const std::string& metadata,
                                            const std::string& binary) {
  if (!isValidCodeObjectKey(key)) return badKey(key);
  KTUNE_ASSIGN_OR_RETURN(json meta, parseMetadata(key, metadata));
  return objectFromParts(key, meta, binary);
}

}  // namespace ktune
