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
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%-*s | %s\n", int(width), (a.entry + " @ " + a.arch).c_str(),
                (b.entry + " @ " + b.arch).c_str());
  out += buf;
  out += std::string(width, '-') + "-+-" + std::string(width, '-') + "\n";
  for (size_t i = 0; i < std::max(ra.size(), rb.size()); ++i) {
    std::string l = i < ra.size() ? ra[i] : "", r = i < rb.size() ? rb[i] : "";
    if (l.size() > width) l = l.substr(0, width);
    std::snprintf(buf, sizeof(buf), "%-*s %c %s\n", int(width), l.c_str(), l == r ? '|' : '*',
                  r.c_str());
    out += buf;
  }
  return out;
}

}  // namespace ktune::cli
