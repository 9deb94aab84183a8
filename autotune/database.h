// ktune tuning database — the winners of past tuning runs, one JSON file per kernel family.
//
// File format (schema 1; indented, keys in a stable sorted order, meant to be hand-editable):
//
// {
//   "devices": [
//     {
//       "entries": {
//         "<problem key>": {
//           "candidates": [ {"code_object_key": "...", "config": "BLOCK_M=128,...", "date": "...",
//                            "max_error": 0.0, "reason": "", "source": "jit", "stats": {...},
//                            "status": "ok" | "compile_error" | ...}, ... ],
//           "code_objects": ["<sha256 key>", ...],
//           "date": "2025-01-01T00:00:00Z",
//           "pinned": false,
//           "source": "jit",
//           "stats": {"max_ms", "mean_ms", "median_ms", "min_ms", "p20_ms", "p80_ms", "runs",
//                     "std_ms"},
//           "winner": "BLOCK_M=128,BLOCK_N=64,num_warps=4"
//         }
//       },
//       "partial": { "<problem key>": [ candidates ... ] },   // in-progress tuning + blacklist
//       "validator": {"arch", "backend", "compiler", "compiler_version", "device_name",
//                     "driver_version", "ktune_version"}
//     }
//   ],
//   "family": "rmsnorm",
//   "schema": 1
// }
//
// Several families in one file (KTUNE_DB names one file for every family) are kept apart: the file
// then has schema 2, {"schema": 2, "families": {"<family>": {"devices": [...]}, ...}}, each family
// seeing only its own part. A file is written as schema 1 while it holds a single family; files of
// either schema are read (a schema-1 file naming no family belongs to whichever family opens it).
//
// A user may edit "winner" and set "pinned": true; record() never overwrites a pinned entry.
// Entries are only used by the process whose Validator matches exactly (same device, driver,
// compiler, ktune version); other devices' blocks are carried along untouched.
//
// Concurrency: every mutation takes the cross-process lock <path>.lock, re-reads the file,
// merges, and writes it atomically (temp + fsync + rename), so concurrent tuners in several
// processes never lose each other's entries and readers never see a torn file. Methods of one
// TuningDatabase object are thread-safe (an internal mutex guards the in-memory copy).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autotune/results.h"
#include "base/status.h"

namespace ktune {

// Identifies where entries are valid. Entries recorded under one validator are never used under
// another (a different GPU, driver or compiler may pick a different winner).
struct Validator {
  std::string ktune_version, backend, driver_version, compiler, compiler_version, device_name,
      arch;
  // Stable one-line form "backend/arch/device_name/driver/compiler-version/ktune" for logs/CLI.
  std::string id() const;
  bool operator==(const Validator&) const;
};

// How the winner compares with the family's default (autotune/finalists.h): the finalists and the
// default re-timed interleaved in one process after compiling, paired per round. The winner is
// not the default only when `ratio_hi` (the upper end of the 95% interval of winner/default
// time) is below 1 and `ratio` is below 1 - margin.
struct DefaultComparison {
  std::string baseline;                  // the default's config or vendor id ("" = none measured)
  std::string baseline_source = "jit";  // "jit" or the vendor source ("cublaslt")
  int rounds = 0;     // interleaved rounds (0: no comparison was made)
  int finalists = 0;  // candidates re-timed, the default included
  double baseline_ms = 0, winner_ms = 0;  // medians of the per-round medians
  double ratio = 1, ratio_lo = 1, ratio_hi = 1;  // winner / default time: estimate, 95% interval
  double margin = 0;  // the minimum gain the ratio had to show (options.finalist_margin)
  // "faster than the default", "default kept: within noise", "default kept: gain below the
  // margin", "default is fastest",
  // "no default measured".
  std::string decision;
};

// The tuned result of one problem key.
struct DbEntry {
  std::string key;
  std::string winner;
  std::string winner_source = "jit";
  BenchStats winner_stats;
  std::vector<CandidateResult> candidates;
  std::vector<std::string> code_object_keys;
  DefaultComparison vs_default;  // written as "vs_default" when vs_default.rounds > 0
  std::string date;  // ISO 8601 UTC; record() fills it with now when empty
  bool pinned = false;
  // Mirrored from a shared cache (`ktune remote pull`) and not yet run here: the engine compiles
  // and verifies its winner on first use before it trusts it (written as "unverified": true).
  bool unverified = false;
  // Predicted from tuned neighbours (autotune/predict.h), never measured for this key (written as
  // "predicted": true): a call runs it like a default, tuning replaces it, prediction never learns
  // from it and it is never shared as a winner.
  bool predicted = false;
};

// The public report of an entry of `family` (its winner, the winner's stats and every candidate),
// with `origin` ("database", "remote", ...): what Autotuner::report and a shared-cache fetch hand
// out. The one place an entry becomes a report.
KeyReport reportOf(const std::string& family, DbEntry e, const std::string& origin);

// One entry as the JSON text of its object in the database file (without the key), and back;
// used to share entries between machines (remote/). entryFromJsonText: kCorrupt with the reason
// for text that is not such an object or has a wrong type; never throws.
std::string entryToJsonText(const DbEntry& e);
Expected<DbEntry> entryFromJsonText(const std::string& key, const std::string& text);
// A validator as the JSON text of its block in the database file, and back (kCorrupt).
std::string validatorToJsonText(const Validator& v);
Expected<Validator> validatorFromJsonText(const std::string& text);

// The largest tuning-database file (or import text) ktune reads; a larger one is refused with an
// error naming the limit, before it is read. Tuning writes a few KB per key: the limit is far
// above any real database, and keeps a huge or hostile file from costing every process that opens
// the database seconds and hundreds of MB.
constexpr uint64_t kDatabaseMaxBytes = uint64_t(64) << 20;

// Current time as ISO 8601 UTC ("2025-01-31T12:00:00Z").
std::string isoUtcNow();

class TuningDatabase {
 public:
  // path: the JSON file (one per kernel family, e.g. <cache>/db/rmsnorm.json, or a user's file).
  // Missing file: empty. Corrupt/truncated/hand-broken file: opens EMPTY with a warning in
  // warnings() (never crashes, never throws); the broken file is kept aside as
  // <path>.corrupt-<UTC time> before the first write replaces it, so nothing a user could recover
  // is lost. Fails only when the file exists but cannot be read (kIoError) or path is empty.
  static Expected<std::shared_ptr<TuningDatabase>> open(const std::string& path, Validator v,
                                                        std::string family = "");

  // The entry for `key` under this validator, if any. Reads the in-memory copy (see reload()).
  std::optional<DbEntry> lookup(const std::string& key) const;

  // Under the cross-process lock (<path>.lock): reload from disk, merge, atomic write. Entries of
  // other validators (other devices/drivers) are preserved untouched. A pinned entry on disk is
  // never overwritten by record() (returns OK, keeps the pin). Recording a key also drops its
  // "partial" candidates (tuning finished). kIoError when the file cannot be written.
  Status record(const DbEntry& e);

  // Removes `key` (entry and partial results) under this validator; OK if absent.
  Status remove(const std::string& key);

  // Blacklist (reliability): failed candidates persisted with reason and date, so a later run
  // skips them; and resumable tuning: partial results of a key that is still being tuned. A
  // candidate with the same (source, config) as an existing one replaces it. Locked like record().
  // A write failure is returned once per key: later failures for the same key (one per candidate
  // of a tuning run, against a read-only or full disk) return OK, since the caller has already
  // told the user; the next successful write for the key re-arms it. record() always reports.
  Status recordCandidate(const std::string& key, const CandidateResult& r);

  // Partial results recorded by recordCandidate() for `key` (this validator), in record order,
  // followed by the failed candidates (status != kOk) listed in a finished entry for `key` that
  // are not already among them — so the blacklist survives record() and a forced re-tune.
  std::vector<CandidateResult> candidatesFor(const std::string& key) const;

  // This validator's entries, sorted by key.
  std::vector<DbEntry> entries() const;

  // Every validator in the file, with its entry counts.
  std::vector<std::pair<Validator, int>> validators() const;

  // Problems found while loading (corrupt file, skipped malformed entries, ...). Not thread-safe
  // against a concurrent reload(): read it from the thread that opens/reloads.
  const std::vector<std::string>& warnings() const;

  const std::string& path() const;

  // Re-reads the file (no lock needed: writers replace it by rename). A corrupt file behaves as in
  // open(); warnings() is reset.
  Status reload();

  // Export/import: JSON text of the whole file (all validators) / merge another file's entries
  // (all validators; entries pinned on this side are kept; partial results are merged).
  // importJson: kInvalidArgument (with the parse error) on bad text, nothing changed. Imported
  // entries are data from elsewhere: `check` (when set) sees every config of each entry (the
  // winner and its candidates) and of each partial candidate. An entry whose winner it refuses is
  // left out and listed in *refused ("<key>: <reason>"); a refused candidate is dropped from its
  // entry (or the partial results) with a warning in warnings(); the rest is merged.
  using ImportCheck = std::function<Status(const Validator&, const std::string& source,
                                           const std::string& config)>;
  Expected<std::string> exportJson() const;
  Status importJson(const std::string& text, const ImportCheck& check = {},
                    std::vector<std::string>* refused = nullptr);

  ~TuningDatabase();
  TuningDatabase(const TuningDatabase&) = delete;
  TuningDatabase& operator=(const TuningDatabase&) = delete;

 private:
  struct Impl;
  TuningDatabase(std::string path, Validator v, std::string family);
  std::unique_ptr<Impl> impl_;
  std::string path_;
  Validator validator_;
  std::string family_;
  mutable std::mutex mu_;
  std::vector<std::string> warnings_;
  std::vector<std::string> write_failed_keys_;  // recordCandidate() failures already returned
};

// What a tuning-database text holds, for tools that check or route files before opening them.
struct DbFileSummary {
  std::vector<std::string> families;  // sorted; "" for an old file that names none
  std::vector<std::string> warnings;  // malformed entries or device blocks (skipped when loaded)
};
// kCorrupt (with the reason) when the text is not a tuning database; kUnsupported when a newer
// ktune wrote it. Never throws.
Expected<DbFileSummary> inspectDatabase(const std::string& text);

// Appends one JSON line {family, key, args..., date} to an untuned-keys file (locked append, so
// lines from concurrent processes never interleave). args_json: a JSON object whose members are
// merged in (kInvalidArgument if it is not an object; "" means none). Creates the file 0600.
Status appendUntunedKey(const std::string& path, const std::string& family,
                        const std::string& key, const std::string& args_json);

}  // namespace ktune
