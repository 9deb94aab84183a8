// The JSON form of a candidate's result and timing statistics, one definition for the tuning
// database, its journal and the isolation worker's protocol.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "autotune/results.h"
#include "base/status.h"

namespace ktune::candidatejson {

// The Code named `s` (codeName's inverse); kInternal for an unknown name.
Code codeFromName(const std::string& s);
nlohmann::json statsToJson(const BenchStats& s);
// Missing fields read as zero. Throws nlohmann/std exceptions on mistyped or out-of-range fields
// (callers catch and report).
BenchStats statsFromJson(const nlohmann::json& j);
nlohmann::json candidateToJson(const CandidateResult& c);
// As statsFromJson; a missing "status" reads as `missing_status`.
CandidateResult candidateFromJson(const nlohmann::json& j, Code missing_status = Code::kOk);

}  // namespace ktune::candidatejson
