// The tuning journal: partial results of tuning runs, one JSON line per finished candidate
// appended to <database>.journal, instead of a rewrite of the whole tuning database per
// candidate. A killed tuner resumes from it (the lines of its key are read back); when a key's
// run ends with a winner the entry in the database holds every candidate and the key's lines are
// compacted away; a key without a winner keeps its lines (its failures stay remembered).
//
// Lines: {"family", "validator" (Validator::id()), "key", "candidate": {CandidateResult}}. Lines
// of other families or validators are kept untouched; torn or malformed lines (a killed writer, a
// hand edit) are skipped when read and dropped at the next compaction.
// Thread safety: every method may be called from several threads and processes (appends and
// compactions take the cross-process lock <journal>.lock; readers need none).
#pragma once

#include <string>
#include <vector>

#include "autotune/database.h"
#include "base/status.h"

namespace ktune {

class TuningJournal {
 public:
  // The journal beside `database_path` (<database_path>.journal) for one family and validator.
  TuningJournal(const std::string& database_path, std::string family, std::string validator_id);

  // Appends one candidate of `key` (not fsync'd: a power loss loses only measurements a tuning
  // run repeats). kInvalidArgument for an empty key; kIoError naming the file otherwise.
  Status append(const std::string& key, const CandidateResult& r);
  // This family's and validator's candidates for `key`, in append order; a later line replaces
  // an earlier one of the same (source, config).
  std::vector<CandidateResult> candidatesFor(const std::string& key) const;
  // Drops the lines of `key` (atomic rewrite; the file is removed when nothing is left).
  Status compact(const std::string& key);

  const std::string& path() const { return path_; }

 private:
  // Whether `line` is one of ours for `key`; fills *c when so.
  bool ours(const std::string& line, const std::string& key, CandidateResult* c) const;
  std::string path_, family_, validator_;
};

}  // namespace ktune
