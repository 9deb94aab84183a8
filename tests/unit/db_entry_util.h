// A database entry with one measured winner, for the tests of the database's files (its write
// cache, a full disk): the key, the winner's config, and that one candidate's stats.
#pragma once

#include <string>

#include "autotune/database.h"

namespace ktune {

inline DbEntry winnerEntry(const std::string& key, const std::string& winner) {
  DbEntry e;
  e.key = key;
  e.winner = winner;
  e.winner_stats.median_ms = 0.5;
  e.winner_stats.runs = 10;
  CandidateResult ok;
  ok.config = winner;
  ok.stats = e.winner_stats;
  e.candidates = {ok};
  return e;
}

}  // namespace ktune
