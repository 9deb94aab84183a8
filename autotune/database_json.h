// The tuning database's JSON schema (database.cc does the file I/O, locking and queries): the
// to/from-JSON of entries, validators and default comparisons, the structural check of a
// document, the device-block helpers, and the normalized multi-family form files are read into.
// Internal to autotune/.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/database.h"
#include "base/json_bounded.h"
#include "base/status.h"

namespace ktune::dbjson {

using nlohmann::json;

// Schema 1: one family per file, {"schema": 1, "family": F, "devices": [...]}. Schema 2: several
// families in one file (a KTUNE_DB shared by all; rmsnorm_bf16 and rmsnorm_f16 build the same key
// strings, so entries must be namespaced by family), {"schema": 2, "families": {F: {"devices":
// [...]}}}. Both are read; a file is written as schema 1 while it holds one family, so files of one
// family stay readable by older ktune versions.
constexpr int kSchemaSingle = 1;
constexpr int kSchema = 2;

// Limits for reading database text (files, imports, entries): kDatabaseMaxBytes, the default depth.
inline JsonLimits dbJsonLimits(Code code) {
  JsonLimits l;
  l.max_bytes = kDatabaseMaxBytes;
  l.code = code;
  return l;
}

std::string dumpText(const json& j, int indent);
json entryToJson(const DbEntry& e);
// Throws nlohmann/std exceptions on a malformed entry (callers catch and report).
DbEntry entryFromJson(const std::string& key, const json& j);
json validatorToJson(const Validator& v);
Validator validatorFromJson(const json& j);
json emptyDoc(const std::string& family);
// Structural check of a whole document: kCorrupt when unusable, a warning per ignored part.
Status checkDoc(const json& doc, std::vector<std::string>* warnings);
// The device block for `v` in `doc`, or nullptr.
json* findDevice(json& doc, const Validator& v);
// The device block for `v`, added (empty) when missing.
json& deviceFor(json& doc, const Validator& v);
// Entry `key` of a device block is pinned.
bool isPinned(const json& dev, const std::string& key);
// Entry `key` of a device block parses as a DbEntry with a winner (what lookup() returns).
bool readableEntry(const json& dev, const std::string& key);
// Adds or replaces (same source + config) a candidate in a partial-results array.
void upsertCandidate(json& arr, const json& cand);
// A parsed document of either schema in the normalized form {"families": {name: {"devices"}}}.
Status normalize(const json& doc, const std::string& family, json* file,
                 std::vector<std::string>* warnings);
// `family`'s part of a normalized file as a schema-1 document.
json familyDoc(const json& file, const std::string& family);
// familyDoc moving the family's devices out of `file` (left null there; set them again before
// the file is used).
json takeFamilyDoc(json& file, const std::string& family);
// The text written for a normalized file: schema 1 while one family holds entries, else schema 2.
// `file` is the same on return (its sections are lent to the written document, not copied).
std::string serialize(json& file);

}  // namespace ktune::dbjson
