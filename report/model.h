// What a tuning report shows, read from a tuning database file (autotune/database.h) and, when the
// code objects are still there, from the code-object store (registers, shared memory, occupancy,
// the winner's ISA report). Reading never writes: the database is opened without recording and
// the store only when its directory already exists. Every string here comes from files a user may
// edit; the renderers (report/render.h) escape all of them.
#pragma once

#include <string>
#include <vector>

#include "autotune/database.h"
#include "base/status.h"

namespace ktune::report {

// One candidate of a key plus what the store knows about its code object.
struct CandidateView {
  CandidateResult result;
  bool is_winner = false;
  bool is_vendor_default = false;
  bool has_resources = false;  // its code object was found in the store
  int registers = 0;           // NVIDIA registers per thread, AMD .vgpr_count (AGPRs included)
  long long shared_bytes = 0;  // static + the launch's dynamic part (occupancySharedBytes)
  bool spills = false;
  bool has_occupancy = false;
  double occupancy = 0;  // fraction of the device's maximum (warps per SM / waves per EU)
};

// The winner's code object explained (compiler/analysis/report.h), when it is in the store.
struct WinnerReport {
  bool available = false;
  std::string note;  // why not ("not in the store", "corrupt: ...")
  std::string text;  // KernelReport::text()
  // Short verdicts from the resources and the ISA: (check, passed).
  std::vector<std::pair<std::string, bool>> checks;
};

struct KeyView {
  DbEntry entry;  // key, winner, stats, date, pinned (entry.candidates moved into `candidates`)
  std::vector<CandidateView> candidates;  // in database order
  int winner_index = -1;                  // index into candidates, -1 when not listed
  int default_index = -1;                 // the vendor default (library heuristic #0), -1 if none
  WinnerReport winner_report;
  // Median of the vendor default over the winner's, when both were measured (> 1: tuning won).
  double speedup() const;
};

struct DeviceView {
  Validator validator;
  std::vector<KeyView> keys;  // sorted by key
};

struct DatabaseView {
  std::string path;
  std::string family;
  std::vector<DeviceView> devices;
  std::vector<std::string> warnings;  // malformed entries skipped, corrupt file, ...
  std::string store_note;             // how registers/occupancy were found, or why not
};

struct LoadOptions {
  std::string store_dir;          // code-object store directory; "" = do not look
  std::vector<std::string> keys;  // only these keys (empty: every key)
};

// Reads `path`. kNotFound when the file does not exist; a corrupt or partly malformed file loads
// what can be read, with the problems in warnings (as TuningDatabase::open does).
Expected<DatabaseView> loadDatabase(const std::string& path, const LoadOptions& opts);

// Index of the vendor default among `cands`: the vendor library's first heuristic choice
// ("<lib>:idx=0:..."), else a candidate whose source is "default"; -1 when there is none.
int vendorDefaultIndex(const std::vector<CandidateView>& cands);

// Number of candidates that measured / failed.
int countOk(const KeyView& k);

}  // namespace ktune::report
