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
// Every field under its own name.
nlohmann::json occupancyToJson(const AmdOccupancy& o);
nlohmann::json occupancyToJson(const NvOccupancy& o);

}  // namespace ktune
