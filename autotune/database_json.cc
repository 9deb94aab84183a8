// The tuning database's JSON schema (database_json.h).
#include "autotune/database_json.h"

#include <array>
#include <exception>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "autotune/candidate_json.h"
#include "base/json_fields.h"

namespace ktune {
namespace dbjson {
namespace {

using jsonfields::checkedNumber;
using jsonfields::readField;
using namespace candidatejson;  // candidate and stats JSON, shared with the worker protocol

// The JSON names of DefaultComparison's and Validator's members, in members()'s order.
constexpr std::array<const char*, 11> kComparisonNames = {
    "baseline", "baseline_source", "rounds", "finalists", "baseline_ms", "winner_ms",
    "ratio",    "ratio_lo",        "ratio_hi", "margin",  "decision"};
constexpr std::array<const char*, 7> kValidatorNames = {
    "ktune_version", "backend", "driver_version", "compiler", "compiler_version", "device_name",
    "arch"};

template <typename C>
auto comparisonMembers(C& c) {
  return std::tie(c.baseline, c.baseline_source, c.rounds, c.finalists, c.baseline_ms,
                  c.winner_ms, c.ratio, c.ratio_lo, c.ratio_hi, c.margin, c.decision);
}

template <typename V>
auto validatorMembers(V& v) {
  return std::tie(v.ktune_version, v.backend, v.driver_version, v.compiler, v.compiler_version,
                  v.device_name, v.arch);
}

}  // namespace

std::string dumpText(const json& j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

json comparisonToJson(const DefaultComparison& c) {
  return jsonfields::writeFields(kComparisonNames, comparisonMembers(c));
}

DefaultComparison comparisonFromJson(const json& j) {
  DefaultComparison c;
  if (!j.is_object()) throw std::runtime_error("vs_default is not a JSON object");
  jsonfields::readFields(j, kComparisonNames, comparisonMembers(c));
  return c;
}

json entryToJson(const DbEntry& e) {
  json cands = json::array();
  for (const auto& c : e.candidates) cands.push_back(candidateToJson(c));
  json j{{"winner", e.winner},
         {"source", e.winner_source},
         {"stats", statsToJson(e.winner_stats)},
         {"candidates", cands},
         {"code_objects", e.code_object_keys},
         {"date", e.date},
         {"pinned", e.pinned}};
  if (e.vs_default.rounds > 0) j["vs_default"] = comparisonToJson(e.vs_default);
  if (e.unverified) j["unverified"] = true;
  if (e.predicted) j["predicted"] = true;
  return j;
}

DbEntry entryFromJson(const std::string& key, const json& j) {
  if (!j.is_object()) throw std::runtime_error("entry is not a JSON object");
  DbEntry e;
  e.key = key;
  e.winner = j.at("winner").get<std::string>();
  readField(j, "source", e.winner_source);
  if (j.contains("stats")) e.winner_stats = statsFromJson(j.at("stats"));
  if (j.contains("candidates")) {
    for (const auto& c : j.at("candidates")) e.candidates.push_back(candidateFromJson(c));
  }
  readField(j, "code_objects", e.code_object_keys);
  readField(j, "date", e.date);
  readField(j, "pinned", e.pinned);
  readField(j, "unverified", e.unverified);
  readField(j, "predicted", e.predicted);
  if (j.contains("vs_default")) e.vs_default = comparisonFromJson(j.at("vs_default"));
  return e;
}

json validatorToJson(const Validator& v) {
  return jsonfields::writeFields(kValidatorNames, validatorMembers(v));
}

Validator validatorFromJson(const json& j) {
  Validator v;
  jsonfields::readFields(j, kValidatorNames, validatorMembers(v));
  return v;
}

json emptyDoc(const std::string& family) {
  return json{{"schema", kSchemaSingle}, {"family", family}, {"devices", json::array()}};
}

// Structural check of a whole document. Fatal problems (not an object, wrong container types)
// return kCorrupt; a malformed single entry or device block only adds a warning — it stays in the
// file untouched and is simply not used.
Status checkDoc(const json& doc, std::vector<std::string>* warnings) {
  if (!doc.is_object()) return Status::Corrupt("top level is not a JSON object");
  if (doc.contains("schema") && !doc.at("schema").is_number_integer()) {
    return Status::Corrupt("\"schema\" is not an integer");
  }
  if (doc.contains("devices") && !doc.at("devices").is_array()) {
    return Status::Corrupt("\"devices\" is not an array");
  }
  if (!doc.contains("devices")) return Status::Ok();
  int index = 0;
  for (const auto& dev : doc.at("devices")) {
    const std::string where = "devices[" + std::to_string(index++) + "]";
    if (!dev.is_object() || !dev.contains("validator") || !dev.at("validator").is_object()) {
      if (warnings) warnings->push_back(where + " has no \"validator\" object; ignored");
      continue;
    }
    try {
      validatorFromJson(dev.at("validator"));
    } catch (const std::exception& e) {
      if (warnings) warnings->push_back(where + ".validator is malformed (" + e.what() + "); ignored");
      continue;
    }
    for (const char* section : {"entries", "partial"}) {
      if (dev.contains(section) && !dev.at(section).is_object()) {
        return Status::Corrupt(where + "." + section + " is not an object");
      }
    }
    if (dev.contains("entries")) {
      for (const auto& [key, ej] : dev.at("entries").items()) {
        try {
          entryFromJson(key, ej);
        } catch (const std::exception& e) {
          if (warnings) {
            warnings->push_back(where + ": entry '" + key + "' is malformed (" + e.what() +
                                "); ignored");
          }
        }
      }
    }
    if (dev.contains("partial")) {
      for (const auto& [key, pj] : dev.at("partial").items()) {
        bool ok = pj.is_array();
        try {
          if (ok) {
            for (const auto& c : pj) candidateFromJson(c);
          }
        } catch (const std::exception&) {
          ok = false;
        }
        if (!ok && warnings) {
          warnings->push_back(where + ": partial results of '" + key + "' are malformed; ignored");
        }
      }
    }
  }
  return Status::Ok();
}

// The device block for `v` in `doc`, or nullptr.
json* findDevice(json& doc, const Validator& v) {
  if (!doc.contains("devices") || !doc["devices"].is_array()) return nullptr;
  for (auto& dev : doc["devices"]) {
    if (!dev.is_object() || !dev.contains("validator") || !dev["validator"].is_object()) continue;
    try {
      if (validatorFromJson(dev["validator"]) == v) return &dev;
    } catch (const std::exception&) {
    }
  }
  return nullptr;
}

json& deviceFor(json& doc, const Validator& v) {
  if (json* d = findDevice(doc, v)) return *d;
  if (!doc.contains("devices") || !doc["devices"].is_array()) doc["devices"] = json::array();
  doc["devices"].push_back(json{{"validator", validatorToJson(v)},
                                {"entries", json::object()},
                                {"partial", json::object()}});
  return doc["devices"].back();
}

// Entry `key` of a device block is pinned (on disk / in memory).
bool isPinned(const json& dev, const std::string& key) {
  auto es = dev.find("entries");
  if (es == dev.end() || !es->is_object()) return false;
  auto e = es->find(key);
  if (e == es->end() || !e->is_object()) return false;
  auto p = e->find("pinned");
  return p != e->end() && p->is_boolean() && p->get<bool>();
}

// Entry `key` of a device block parses as a DbEntry with a winner (what lookup() returns).
bool readableEntry(const json& dev, const std::string& key) {
  try {
    return !entryFromJson(key, dev.at("entries").at(key)).winner.empty();
  } catch (const std::exception&) {
    return false;
  }
}

// Adds or replaces (same source + config) a candidate in a partial-results array.
void upsertCandidate(json& arr, const json& cand) {
  if (!arr.is_array()) arr = json::array();
  for (auto& c : arr) {
    if (c.is_object() && c.value("config", json()) == cand.value("config", json()) &&
        c.value("source", json()) == cand.value("source", json())) {
      c = cand;
      return;
    }
  }
  arr.push_back(cand);
}

// Brings a parsed document of either schema into the normalized multi-family form. A schema-1
// document belongs to its "family" (or, when it names none, to `family`: files of older versions).
Status normalize(const json& doc, const std::string& family, json* file,
                 std::vector<std::string>* warnings) {
  if (!doc.is_object()) return Status::Corrupt("top level is not a JSON object");
  if (doc.contains("schema") && !doc.at("schema").is_number_integer()) {
    return Status::Corrupt("\"schema\" is not an integer");
  }
  *file = json{{"families", json::object()}};
  if (!doc.contains("families")) {
    KTUNE_RETURN_IF_ERROR(checkDoc(doc, warnings));
    auto f = doc.find("family");
    std::string name = f != doc.end() && f->is_string() ? f->get<std::string>() : family;
    (*file)["families"][name] = json{{"devices", doc.value("devices", json::array())}};
    return Status::Ok();
  }
  if (!doc.at("families").is_object()) return Status::Corrupt("\"families\" is not an object");
  for (const auto& [name, sec] : doc.at("families").items()) {
    std::vector<std::string> w;
    Status s = checkDoc(sec, &w);
    if (!s.ok()) return Status::Corrupt("family '" + name + "': " + s.message());
    if (warnings)
      for (auto& x : w) warnings->push_back("family '" + name + "': " + x);
    (*file)["families"][name] = json{{"devices", sec.value("devices", json::array())}};
  }
  return Status::Ok();
}

// `family`'s part of a normalized file as a schema-1 document (what lookups and export work on).
json familyDoc(const json& file, const std::string& family) {
  json doc = emptyDoc(family);
  auto it = file.at("families").find(family);
  if (it != file.at("families").end()) doc["devices"] = it->at("devices");
  return doc;
}

json takeFamilyDoc(json& file, const std::string& family) {
  json doc = emptyDoc(family);
  auto it = file.at("families").find(family);
  if (it != file.at("families").end()) doc["devices"] = std::move(it->at("devices"));
  return doc;
}

namespace {
// Moves `from` into `to` now and back when it goes (also on an exception).
struct Lent {
  json& from;
  json& to;
  Lent(json& f, json& t) : from(f), to(t) { to = std::move(from); }
  ~Lent() { from = std::move(to); }
};
}  // namespace

// The text written for a normalized file: schema 1 while one family holds entries, else schema 2.
// The sections are lent to the written document, not copied: two copies of a suite's few-MB tree
// were most of each key's database write.
std::string serialize(json& file) {
  json& all = file.at("families");
  std::vector<std::string> names;
  for (const auto& [name, sec] : all.items())
    if (!sec.at("devices").empty()) names.push_back(name);
  if (names.size() <= 1) {
    json doc = emptyDoc(names.empty() ? std::string() : names.front());
    if (names.empty()) return dumpText(doc, 2) + "\n";
    Lent lent(all[names.front()]["devices"], doc["devices"]);
    return dumpText(doc, 2) + "\n";
  }
  json doc = json::object();
  doc["schema"] = kSchema;
  json& fams = doc["families"] = json::object();
  std::vector<std::unique_ptr<Lent>> lent;  // object members stay put as others are added
  for (const auto& n : names) lent.push_back(std::make_unique<Lent>(all[n], fams[n]));
  return dumpText(doc, 2) + "\n";
}

}  // namespace dbjson

using namespace dbjson;  // NOLINT: the schema's helpers, internal to autotune/

std::string Validator::id() const {
  return backend + "/" + arch + "/" + device_name + "/" + driver_version + "/" + compiler + "-" +
         compiler_version + "/ktune-" + ktune_version;
}

bool Validator::operator==(const Validator& o) const {
  return ktune_version == o.ktune_version && backend == o.backend &&
         driver_version == o.driver_version && compiler == o.compiler &&
         compiler_version == o.compiler_version && device_name == o.device_name && arch == o.arch;
}

std::string entryToJsonText(const DbEntry& e) { return dumpText(entryToJson(e), -1); }

Expected<DbEntry> entryFromJsonText(const std::string& key, const std::string& text) {
  json j = parseJsonOrDiscarded(text, dbJsonLimits(Code::kCorrupt));
  if (j.is_discarded()) return Status::Corrupt("entry '" + key + "' is not valid JSON");
  try {
    return entryFromJson(key, j);
  } catch (const std::exception& e) {
    return Status::Corrupt("entry '" + key + "' is malformed: " + e.what());
  }
}

std::string validatorToJsonText(const Validator& v) { return dumpText(validatorToJson(v), -1); }

Expected<Validator> validatorFromJsonText(const std::string& text) {
  json j = parseJsonOrDiscarded(text, dbJsonLimits(Code::kCorrupt));
  if (j.is_discarded() || !j.is_object()) return Status::Corrupt("validator is not a JSON object");
  try {
    return validatorFromJson(j);
  } catch (const std::exception& e) {
    return Status::Corrupt(std::string("validator is malformed: ") + e.what());
  }
}

Expected<DbFileSummary> inspectDatabase(const std::string& text) {
  KTUNE_ASSIGN_OR_RETURN(json in, parseJsonBounded(text, dbJsonLimits(Code::kCorrupt)));
  if (in.is_object() && in.contains("schema") && in["schema"].is_number_integer() &&
      in["schema"].get<int64_t>() > kSchema) {
    return Status::Unsupported("written by a newer ktune (schema " + in["schema"].dump() +
                               ", this one reads " + std::to_string(kSchema) + ")");
  }
  DbFileSummary out;
  json file;
  KTUNE_RETURN_IF_ERROR(normalize(in, "", &file, &out.warnings));
  for (const auto& [name, sec] : file["families"].items()) out.families.push_back(name);
  return out;
}

}  // namespace ktune
