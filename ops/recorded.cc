#include "ops/recorded.h"

#include <utility>

#include "autotune/database.h"

namespace ktune {

std::optional<TuneReport> recordedReport(Engine& tuner, const std::string& family,
                                         const std::string& key) {
  TuningDatabase* db = tuner.database(family);
  if (!db || key.empty()) return std::nullopt;
  std::optional<DbEntry> e = db->lookup(key);
  if (!e || e->winner.empty() || e->predicted || e->unverified) return std::nullopt;
  TuneReport r;
  r.vs_default = e->vs_default;
  const std::string origin = e->pinned ? "pinned" : "database";
  static_cast<KeyReport&>(r) = reportOf(family, std::move(*e), origin);
  return r;
}

}  // namespace ktune
