// Two tuning databases side by side, key by key: the regression check an operator runs before
// shipping a database (two devices, or before/after a change). Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "report/model.h"
#include "report/render.h"

namespace ktune::report {

struct CompareRow {
  std::string key;
  bool in_a = false, in_b = false;
  std::string winner_a, winner_b;
  double median_a = 0, median_b = 0;  // ms, the winner's median (0 when unknown)
  // median_b / median_a: > 1 means B is slower. 0 when either side is missing or unmeasured.
  double ratio() const;
};

struct Comparison {
  const DatabaseView* a = nullptr;
  const DatabaseView* b = nullptr;
  std::vector<CompareRow> rows;    // sorted by key
  std::vector<std::string> notes;  // a key found under several device blocks, ...
  // Largest ratio over the keys present in both (0 when none).
  double worstRatio() const;
  // Keys whose ratio is above `limit`.
  int countAbove(double limit) const;
};

// Keys of every device block of each file; when a key is in several blocks of one file, the
// most recently tuned entry is used (and a note says so).
Comparison compareDatabases(const DatabaseView& a, const DatabaseView& b);

// A plain-text table for the terminal.
std::string compareText(const Comparison& c);

// The same as a self-contained HTML page (see render.h for what that means).
std::string renderCompare(const Comparison& c, const RenderOptions& opts);

}  // namespace ktune::report
