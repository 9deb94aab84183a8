// KeyReport::toJson: the public report (ktune/report.hpp; the engine's own type) as JSON, for the
// C API and Python.
#include <nlohmann/json.hpp>

#include "ktune/report.hpp"

namespace ktune {

std::string KeyReport::toJson() const {
  nlohmann::json j = {{"family", family},
                      {"key", key},
                      {"winner", winner},
                      {"winner_source", winner_source},
                      {"origin", origin},
                      {"median_ms", winner_stats.median_ms},
                      {"p20_ms", winner_stats.p20_ms},
                      {"p80_ms", winner_stats.p80_ms}};
  nlohmann::json cands = nlohmann::json::array();
  for (const auto& c : candidates) {
    cands.push_back({{"config", c.config}, {"source", c.source}, {"status", codeName(c.status)},
                     {"reason", c.reason}, {"median_ms", c.stats.median_ms},
                     {"p20_ms", c.stats.p20_ms}, {"p80_ms", c.stats.p80_ms}});
  }
  j["candidates"] = std::move(cands);
  // Replace invalid UTF-8 (compiler logs in reasons) instead of throwing.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ktune
