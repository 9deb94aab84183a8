// The JSON form of ResourceUsage, one definition for the code-object store's metadata, the
// analysis report and `ktune compile --json`.
#pragma once

#include <nlohmann/json.hpp>

#include "compiler/compiler.h"

namespace ktune {

nlohmann::json resourcesToJson(const ResourceUsage& r);
// Missing fields read as zero. Throws nlohmann/std exceptions on mistyped or out-of-range fields.
ResourceUsage resourcesFromJson(const nlohmann::json& j);

}  // namespace ktune
