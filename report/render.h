// The tuning report as one self-contained HTML page: inline CSS and SVG, no script, nothing
// fetched (a Content-Security-Policy of default-src 'none' says so to the browser), every string
// from the databases escaped. Pure functions of their inputs; thread-safe.
//
// Page structure (ids are made from indices, never from names in the file):
//   #summary            a table of winners over every key, with the speed-up over the vendor default
//   #warnings           problems met while reading the files (when any)
//   #db-D               one database (family); #dev-D-V one device block with its validator
//   #key-D-V-K          one key: #bars-…, #heat-…, #scatter-…, #winner-…, #failures-…
#pragma once

#include <string>
#include <vector>

#include "report/model.h"

namespace ktune::report {

struct RenderOptions {
  std::string x_knob, y_knob;  // heatmap axes; per key, "" or a knob the key lacks = picked
  std::string title;           // "" = "ktune tuning report"
  std::string generated;       // shown at the top; "" = now (UTC)
};

std::string renderReport(const std::vector<DatabaseView>& dbs, const RenderOptions& opts);

// The page's <head> (title escaped) and opening <body>, shared with the comparison page.
std::string pageStart(const std::string& title);
inline std::string pageEnd() { return "</body>\n</html>\n"; }

}  // namespace ktune::report
