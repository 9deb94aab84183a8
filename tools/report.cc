#include "tools/report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "compiler/analysis/report.h"

namespace ktune::cli {

Expected<std::string> reportText(const CodeObject& obj, int threads_per_block,
                                 int64_t dynamic_shared) {
  return analyzeCodeObject(obj, threads_per_block, dynamic_shared).text();
}

Expected<std::string> reportJson(const CodeObject& obj, int threads_per_block,
                                 int64_t dynamic_shared) {
  return analyzeCodeObject(obj, threads_per_block, dynamic_shared).toJson();
}

namespace {
std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}
}  // namespace

Expected<std::string> reportDiff(const CodeObject& a, const CodeObject& b) {
  auto ra = lines(analyzeCodeObject(a).text());
  auto rb = lines(analyzeCodeObject(b).text());
  size_t width = 10;
  for (const auto& l : ra) width = std::max(width, l.size());
  width = std::min<size_t>(width, 70);
  std::string out;
  out += padTo((a.entry + " @ " + a.arch).substr(0, width), width) + " | " + b.entry + " @ " +
         b.arch + "\n";
  out += std::string(width, '-') + "-+-" + std::string(width, '-') + "\n";
  for (size_t i = 0; i < std::max(ra.size(), rb.size()); ++i) {
    const std::string l = i < ra.size() ? ra[i] : "", r = i < rb.size() ? rb[i] : "";
    // Compare whole lines; only the display is cut to the column width.
    out += padTo(l.substr(0, width), width) + (l == r ? " | " : " * ") + r + "\n";
  }
  return out + configDiff(a, b) + histogramDiff(a, b);
}

}  // namespace ktune::cli
