// The JSON form of ResourceUsage, one definition for the code-object store's metadata, the
// analysis report and `ktune compile --json`; and of the occupancy results, for the analysis
// report and `ktune occupancy --json`.
#pragma once

#include <nlohmann/json.hpp>

#include "compiler/analysis/occupancy.h"
#include "compiler/compiler.h"

namespace ktune {

nlohmann::json resourcesToJson(const ResourceUsage& r);
// Missing fields read as zero. Throws nlohmann/std exceptions on mistyped or out-of-range fields.
ResourceUsage resourcesFromJson(const nlohmann::json& j);
// A code object's facts under their own names: arch, entry, lowered_entry, compiler,
// compiler_version, options, compile_ms and resources (resourcesToJson), for the code-object
// store's metadata and `ktune compile --json`. The binary, its format, the log and the dumps are
// the caller's to add.
nlohmann::json codeObjectFactsToJson(const CodeObject& o);
// Reads the facts present into *o. Throws as resourcesFromJson.
void codeObjectFactsFromJson(const nlohmann::json& j, CodeObject* o);
// Every field under its own name.
nlohmann::json occupancyToJson(const AmdOccupancy& o);
nlohmann::json occupancyToJson(const NvOccupancy& o);

}  // namespace ktune
