#include "remote/cache.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/fs.h"
#include "base/json_bounded.h"
#include "base/sha256.h"
#include "base/version.h"
#include "compiler/store/store.h"

namespace ktune::remote {
namespace {

using nlohmann::json;

constexpr const char* kEntryFormat = "ktune-remote-entry";

std::string entryKey(const std::string& family, const Validator& v, const std::string& key) {
  return keyPrefix() + "e:" + family + ":" + validatorHash(v) + ":" + key;
}
std::string objectKey(const std::string& co_key) { return keyPrefix() + "o:" + co_key; }

Status rejected(RemoteCache& c, const std::string& what) {
  c.count("rejected");
  return Status::Corrupt("remote data rejected: " + what);
}

}  // namespace

bool validFamilyName(const std::string& f) {
  return !f.empty() && isSafeFileName(f) &&
         f.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
             std::string::npos;
}

std::string keyPrefix() { return "ktune:" + std::to_string(KTUNE_SCHEMA_VERSION) + ":"; }

std::string validatorHash(const Validator& v) { return sha256Hex(v.id()).substr(0, 16); }

Expected<Reply> runChecked(RemoteClient& c, const std::vector<std::string>& argv) {
  KTUNE_ASSIGN_OR_RETURN(Reply r, c.run(argv));
  if (r.kind == Reply::Kind::kError) {
    return Status::Internal("remote refused " + argv[0] + ": " + r.str);
  }
  return r;
}

std::string objectMac(const std::string& secret, const std::string& co_key,
                      const std::string& metadata, const std::string& binary) {
  return HmacSha256(secret).field("ktune-remote-object-v1").field(co_key).field(metadata).field(binary).hexDigest();
}

std::string storedObjectMac(const std::string& secret, const std::string& co_key,
                            const std::string& binary) {
  return HmacSha256(secret).field("ktune-store-object-v1").field(co_key).field(binary).hexDigest();
}

std::string winnerObjectKey(const DbEntry& e) {
  for (const auto& c : e.candidates) {
    if (c.config == e.winner && isValidCodeObjectKey(c.code_object_key)) return c.code_object_key;
  }
  return "";
}

RemoteCache::RemoteCache(std::shared_ptr<RemoteClient> client, CacheLimits limits,
                         std::string secret)
    : client_(std::move(client)), limits_(limits), secret_(std::move(secret)) {}

Expected<DbEntry> RemoteCache::getEntry(const std::string& family, const Validator& v,
                                        const std::string& key) {
  KTUNE_ASSIGN_OR_RETURN(auto got, readEntry(entryKey(family, v, key), family, key));
  if (got.first.id() != v.id()) {
    return rejected(*this, entryKey(family, v, key) + " was tuned under another validator ('" +
                               got.first.id() + "')");
  }
  return std::move(got.second);
}

Expected<std::pair<Validator, DbEntry>> RemoteCache::getListed(const RemoteEntryInfo& info) {
  const std::string rkey = keyPrefix() + "e:" + info.family + ":" + info.validator_hash + ":" + info.key;
  KTUNE_ASSIGN_OR_RETURN(auto got, readEntry(rkey, info.family, info.key));
  if (validatorHash(got.first) != info.validator_hash) {
    return rejected(*this, rkey + " holds an entry of another validator");
  }
  return got;
}

Expected<std::pair<Validator, DbEntry>> RemoteCache::readEntry(const std::string& rkey,
                                                               const std::string& family,
                                                               const std::string& key) {
  // Size first (0 = absent), so an oversized value is never transferred.
  KTUNE_ASSIGN_OR_RETURN(Reply len, runChecked(*client_, {"STRLEN", rkey}));
  if (len.kind != Reply::Kind::kInteger) return rejected(*this, rkey + ": STRLEN not an integer");
  if (len.integer == 0) return Status::NotFound("no remote entry " + family + " [" + key + "]");
  if (size_t(len.integer) > limits_.max_entry_bytes) return rejected(*this, rkey + " is oversized");
  KTUNE_ASSIGN_OR_RETURN(Reply r, runChecked(*client_, {"GET", rkey}));
  if (r.nil()) return Status::NotFound("no remote entry " + family + " [" + key + "]");
  if (r.kind != Reply::Kind::kString) return rejected(*this, rkey + " is not a string");
  if (r.str.size() > limits_.max_entry_bytes) return rejected(*this, rkey + " is oversized");
  json j = parseJsonOrDiscarded(r.str);  // bounded depth: a deep entry cannot crash us
  if (j.is_discarded() || !j.is_object()) return rejected(*this, rkey + " is not a JSON object");
  auto text = [&](const char* f) {
    auto it = j.find(f);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (text("format") != kEntryFormat) return rejected(*this, rkey + " has an unknown format");
  auto schema = j.find("schema");
  if (schema == j.end() || !schema->is_number_integer() ||
      schema->get<int64_t>() != KTUNE_SCHEMA_VERSION) {
    return rejected(*this, rkey + " has a foreign schema (" +
                               (schema == j.end() ? std::string("none") : schema->dump()) + ")");
  }
  if (text("family") != family || text("key") != key) {
    return rejected(*this, rkey + " names another family or key");
  }
  if (!j.contains("validator") || !j.contains("entry")) {
    return rejected(*this, rkey + " has no validator or entry");
  }
  auto v = validatorFromJsonText(j.at("validator").dump());
  if (!v.ok()) return rejected(*this, rkey + ": " + v.status().message());
  auto e = entryFromJsonText(key, j.at("entry").dump());
  if (!e.ok()) return rejected(*this, e.status().message());
  if (e->winner.empty()) return rejected(*this, rkey + " has no winner");
  if (e->predicted) return rejected(*this, rkey + " is a prediction, not a measured winner");
  if (e->code_object_keys.size() > limits_.max_objects_per_entry) {
    return rejected(*this, rkey + " names too many code objects");
  }
  e->pinned = false;      // a pin is a local decision
  e->unverified = false;  // so is what was verified (the reader decides)
  return std::make_pair(std::move(v).value(), std::move(e).value());
}

Status RemoteCache::putEntry(const std::string& family, const Validator& v, const DbEntry& e) {
  // A predicted config was never measured for its key: sharing it would make it a winner elsewhere.
  if (e.predicted) return Status::InvalidArgument("entry " + e.key + " is predicted, not measured");
  json entry = json::parse(entryToJsonText(e), nullptr, false);
  json j{{"format", kEntryFormat},
         {"schema", KTUNE_SCHEMA_VERSION},
         {"family", family},
         {"validator", json::parse(validatorToJsonText(v), nullptr, false)},
         {"key", e.key},
         {"entry", entry}};
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > limits_.max_entry_bytes) {
    return Status::InvalidArgument("entry " + e.key + " is too large to publish");
  }
  KTUNE_ASSIGN_OR_RETURN(Reply r, runChecked(*client_, {"SET", entryKey(family, v, e.key), text}));
  (void)r;
  count("published");
  return Status::Ok();
}

Expected<CodeObject> RemoteCache::getObject(const std::string& co_key) {
  if (secret_.empty()) {
    return Status::Unsupported("no fleet key (KTUNE_REMOTE_KEY_FILE): code objects are not "
                                      "taken from the remote");
  }
  if (!isValidCodeObjectKey(co_key)) return rejected(*this, "malformed code-object key");
  const std::string rkey = objectKey(co_key);
  // Size first, so an oversized (or hostile) value is never transferred.
  KTUNE_ASSIGN_OR_RETURN(Reply len, runChecked(*client_, {"HSTRLEN", rkey, "bin"}));
  if (len.kind != Reply::Kind::kInteger) return rejected(*this, rkey + ": HSTRLEN not an integer");
  if (len.integer == 0) return Status::NotFound("no remote code object " + co_key);
  if (size_t(len.integer) > limits_.max_object_bytes) {
    return rejected(*this, rkey + " is over the size cap (" + std::to_string(len.integer) + " bytes)");
  }
  KTUNE_ASSIGN_OR_RETURN(Reply r, runChecked(*client_, {"HMGET", rkey, "meta", "bin", "mac"}));
  if (r.kind != Reply::Kind::kArray || r.elements.size() != 3 ||
      r.elements[0].kind != Reply::Kind::kString || r.elements[1].kind != Reply::Kind::kString) {
    return rejected(*this, rkey + " is incomplete");
  }
  const std::string& meta = r.elements[0].str;
  const std::string& bin = r.elements[1].str;
  // Authenticated before anything else is believed: the sha256 in the metadata could have been
  // recomputed by whoever replaced the binary.
  if (r.elements[2].kind != Reply::Kind::kString ||
      !constantTimeEqual(r.elements[2].str, objectMac(secret_, co_key, meta, bin))) {
    return rejected(*this, rkey + " is not authenticated by the fleet key (missing or wrong MAC)");
  }
  auto obj = codeObjectFromPortable(co_key, meta, bin);
  if (!obj.ok()) return rejected(*this, obj.status().message());
  return obj;
}

Status RemoteCache::putObject(const std::string& co_key, const CodeObject& obj) {
  if (secret_.empty()) return Status::Unsupported("no fleet key: code objects are not shared");
  if (!isValidCodeObjectKey(co_key)) return Status::InvalidArgument("malformed code-object key");
  if (obj.binary.size() > limits_.max_object_bytes) {
    return Status::InvalidArgument("code object " + co_key + " is over the remote size cap");
  }
  const std::string meta = portableMetadata(co_key, obj);
  KTUNE_ASSIGN_OR_RETURN(Reply r, runChecked(*client_, {"HSET", objectKey(co_key), "meta", meta,
                                                         "bin", obj.binary, "mac",
                                                         objectMac(secret_, co_key, meta, obj.binary)}));
  (void)r;
  return Status::Ok();
}

Status RemoteCache::fetchObjectInto(const std::string& co_key, CodeObjectStore& store) {
  if (store.get(co_key).ok()) return Status::Ok();
  KTUNE_ASSIGN_OR_RETURN(CodeObject obj, getObject(co_key));
  obj.shared_mac = storedObjectMac(secret_, co_key, obj.binary);
  return store.put(co_key, obj);
}

Expected<DbEntry> RemoteCache::fetchInto(const std::string& family, const Validator& v,
                                         const std::string& key, CodeObjectStore& store,
                                         std::string* note) {
  KTUNE_ASSIGN_OR_RETURN(DbEntry e, getEntry(family, v, key));
  const std::string own = winnerObjectKey(e);
  // Only the winner's own object is what the entry can vouch for; the local entry names nothing
  // else, so objects an entry lists besides it are never fetched nor kept referenced.
  e.code_object_keys.clear();
  if (!own.empty() && hasSecret()) {
    Status s = fetchObjectInto(own, store);
    if (s.ok()) e.code_object_keys.push_back(own);
    else if (note) *note = s.withContext("entry " + family + " [" + key + "]").message();
  }
  count("fetched");
  return e;
}

Status RemoteCache::publishFrom(const std::string& family, const Validator& v, const DbEntry& e,
                                CodeObjectStore& store) {
  for (const auto& k : e.code_object_keys) {
    if (!hasSecret()) break;  // winners only
    KTUNE_ASSIGN_OR_RETURN(Reply there, runChecked(*client_, {"HEXISTS", objectKey(k), "bin"}));
    if (there.integer == 1) continue;
    KTUNE_ASSIGN_OR_RETURN(CodeObject obj, store.get(k));
    KTUNE_RETURN_IF_ERROR(putObject(k, obj));
  }
  return putEntry(family, v, e);
}

Expected<std::vector<RemoteEntryInfo>> RemoteCache::list(const std::string& family) {
  std::vector<RemoteEntryInfo> out;
  const std::string prefix = keyPrefix() + "e:";
  std::string cursor = "0";
  do {
    KTUNE_ASSIGN_OR_RETURN(Reply r, runChecked(*client_, {"SCAN", cursor, "MATCH",
                                                           prefix + (family.empty() ? "" : family + ":") + "*",
                                                           "COUNT", "500"}));
    if (r.kind != Reply::Kind::kArray || r.elements.size() != 2) {
      return Status::Corrupt("remote SCAN reply is malformed");
    }
    cursor = r.elements[0].str;
    for (const auto& k : r.elements[1].elements) {
      // e:<family>:<vhash>:<key>; the family and hash hold no ':'.
      std::string rest = k.str.substr(prefix.size());
      size_t a = rest.find(':'), b = a == std::string::npos ? a : rest.find(':', a + 1);
      if (b == std::string::npos) continue;
      RemoteEntryInfo info{rest.substr(0, a), rest.substr(a + 1, b - a - 1), rest.substr(b + 1)};
      // Names from the remote become file names (`ktune remote pull`): only ktune's own forms.
      if (!validFamilyName(info.family) || info.validator_hash.size() != 16 ||
          info.validator_hash.find_first_not_of("0123456789abcdef") != std::string::npos) {
        count("rejected");
        continue;
      }
      out.push_back(std::move(info));
    }
  } while (cursor != "0");
  std::sort(out.begin(), out.end(), [](const RemoteEntryInfo& x, const RemoteEntryInfo& y) {
    return std::tie(x.family, x.key, x.validator_hash) < std::tie(y.family, y.key, y.validator_hash);
  });
  return out;
}

Expected<std::map<std::string, int64_t>> RemoteCache::counters() {
  KTUNE_ASSIGN_OR_RETURN(Reply r, runChecked(*client_, {"HGETALL", keyPrefix() + "stats"}));
  std::map<std::string, int64_t> out;
  for (size_t i = 0; i + 1 < r.elements.size(); i += 2) {
    out[r.elements[i].str] = std::strtoll(r.elements[i + 1].str.c_str(), nullptr, 10);
  }
  return out;
}

void RemoteCache::count(const std::string& field, int64_t n) {
  (void)client_->run({"HINCRBY", keyPrefix() + "stats", field, std::to_string(n)});
}

}  // namespace ktune::remote
