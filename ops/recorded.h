// A key's tuning result as this device's tuning database records it, as a report (internal to the
// ops and the CLI): what `ktune tune` answers for a key it has already tuned.
#pragma once

#include <optional>
#include <string>

#include "autotune/autotuner.h"

namespace ktune {

// The report of `key` in `family`'s database (origin "database", or "pinned" for a pinned entry)
// when the database holds a measured winner for it: not a predicted entry, not one recorded
// unverified. nullopt otherwise (no database, no entry). Reads nothing but the database.
std::optional<TuneReport> recordedReport(Engine& tuner, const std::string& family,
                                         const std::string& key);

}  // namespace ktune
