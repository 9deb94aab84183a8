#include <nlohmann/json.hpp>

#include "api/internal.h"

namespace ktune {
namespace api {
namespace {
CandidateView viewOf(const CandidateResult& c) {
  CandidateView v;
  v.config = c.config;
  v.source = c.source;
  v.status = codeName(c.status);
  v.reason = c.reason;
  v.median_ms = c.stats.median_ms;
  v.p20_ms = c.stats.p20_ms;
  v.p80_ms = c.stats.p80_ms;
  return v;
}
void setStats(KeyReport* r, const BenchStats& s) {
  r->median_ms = s.median_ms;
  r->p20_ms = s.p20_ms;
  r->p80_ms = s.p80_ms;
}
}  // namespace

KeyReport reportOf(const TuneReport& t) {
  KeyReport r;
  r.family = t.family;
  r.key = t.key;
  r.winner = t.winner;
  r.winner_source = t.winner_source;
  r.origin = t.from_database ? "database" : "tuned";
  setStats(&r, t.winner_stats);
  for (const auto& c : t.candidates) r.candidates.push_back(viewOf(c));
  return r;
}

KeyReport reportOf(const std::string& family, const DbEntry& e, const std::string& origin) {
  KeyReport r;
  r.family = family;
  r.key = e.key;
  r.winner = e.winner;
  r.winner_source = e.winner_source;
  r.origin = origin;
  setStats(&r, e.winner_stats);
  for (const auto& c : e.candidates) r.candidates.push_back(viewOf(c));
  return r;
}

KeyReport reportOf(const std::string& family, const Selection& s) {
  KeyReport r;
  r.family = family;
  r.key = s.key;
  r.winner = s.config;
  r.winner_source = s.source;
  r.origin = s.origin;
  setStats(&r, s.stats);
  return r;
}
}  // namespace api

std::string KeyReport::toJson() const {
  nlohmann::json j = {{"family", family}, {"key", key}, {"winner", winner},
                      {"winner_source", winner_source}, {"origin", origin},
                      {"median_ms", median_ms}, {"p20_ms", p20_ms}, {"p80_ms", p80_ms}};
  nlohmann::json cands = nlohmann::json::array();
  for (const auto& c : candidates) {
    cands.push_back({{"config", c.config}, {"source", c.source}, {"status", c.status},
                     {"reason", c.reason}, {"median_ms", c.median_ms}, {"p20_ms", c.p20_ms},
                     {"p80_ms", c.p80_ms}});
  }
  j["candidates"] = std::move(cands);
  // Replace invalid UTF-8 (compiler logs in reasons) instead of throwing.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ktune
