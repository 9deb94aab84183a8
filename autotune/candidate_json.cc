#include "autotune/candidate_json.h"

#include <array>
#include <tuple>

#include "base/json_fields.h"

namespace ktune::candidatejson {

using nlohmann::json;
using jsonfields::readField;

Code codeFromName(const std::string& s) {
  for (int c = int(Code::kOk); c <= int(Code::kInternal); ++c) {
    if (s == codeName(Code(c))) return Code(c);
  }
  return Code::kInternal;
}

// The JSON names of BenchStats' members, in statsMembers()'s order.
constexpr std::array<const char*, 8> kStatsNames = {"median_ms", "p20_ms",  "p80_ms", "min_ms",
                                                    "max_ms",    "mean_ms", "std_ms", "runs"};

template <typename S>
auto statsMembers(S& s) {
  return std::tie(s.median_ms, s.p20_ms, s.p80_ms, s.min_ms, s.max_ms, s.mean_ms, s.std_ms, s.runs);
}

json statsToJson(const BenchStats& s) { return jsonfields::writeFields(kStatsNames, statsMembers(s)); }

BenchStats statsFromJson(const json& j) {
  BenchStats s;
  if (!j.is_object()) return s;
  jsonfields::readFields(j, kStatsNames, statsMembers(s));
  return s;
}

json candidateToJson(const CandidateResult& c) {
  json j{{"config", c.config},
         {"source", c.source},
         {"status", codeName(c.status)},
         {"reason", c.reason},
         {"stats", statsToJson(c.stats)},
         {"code_object_key", c.code_object_key},
         {"max_error", c.max_error},
         {"date", c.date}};
  if (c.device >= 0) j["device"] = c.device;  // only multi-device runs name it
  return j;
}

CandidateResult candidateFromJson(const json& j, Code missing_status) {
  CandidateResult c;
  readField(j, "config", c.config);
  readField(j, "source", c.source);
  std::string status = codeName(missing_status);
  readField(j, "status", status);
  c.status = codeFromName(status);
  readField(j, "reason", c.reason);
  if (j.contains("stats")) c.stats = statsFromJson(j.at("stats"));
  readField(j, "code_object_key", c.code_object_key);
  readField(j, "max_error", c.max_error);
  readField(j, "date", c.date);
  readField(j, "device", c.device);
  return c;
}

}  // namespace ktune::candidatejson
