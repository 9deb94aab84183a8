// The inline SVG charts of one key of the report. Each returns a complete <svg> element (or a
// <p class="note"> saying why there is none); every string drawn is escaped and clipped.
#pragma once

#include <string>
#include <utility>

#include "report/model.h"

namespace ktune::report {

// Every measured candidate as a bar (median) with a p20–p80 whisker, fastest first; the winner
// and the vendor default coloured. Bars longer than 4x the fastest are cut and marked.
std::string barChart(const KeyView& k);

// The two knobs of the heatmap: `want_x`/`want_y` when the key's JIT configs have them, else the
// two that take the most distinct values. Empty strings when fewer than two knobs vary.
std::pair<std::string, std::string> pickKnobs(const KeyView& k, const std::string& want_x,
                                              const std::string& want_y);

// Best median over the other knobs for each (x, y) pair of values.
std::string heatmap(const KeyView& k, const std::string& x, const std::string& y);

// Median against registers per thread (occupancy = false) or occupancy; "" when no candidate of
// the key has that number (its code object is not in the store).
std::string scatter(const KeyView& k, bool occupancy);

}  // namespace ktune::report
