// The parts of `ktune cache diff` beyond the side-by-side report: which config settings differ
// (from the exact compile options stored with each code object) and how the instruction mix
// differs (mnemonic histograms of the ISA dumps).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "compiler/analysis/report.h"
#include "tools/report.h"

namespace ktune::cli {
namespace {

// KEY -> VAL of "-DKEY=VAL" / "-D KEY=VAL" options; other options keyed by themselves.
std::map<std::string, std::string> settings(const CodeObject& co) {
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < co.options.size(); ++i) {
    std::string o = co.options[i];
    if (o == "-D" && i + 1 < co.options.size()) o = "-D" + co.options[++i];
    if (o.rfind("-D", 0) != 0) {
      if (o.find('/') == std::string::npos) out[o] = "set";  // skip temp paths
      continue;
    }
    const auto eq = o.find('=');
    out[o.substr(2, eq == std::string::npos ? std::string::npos : eq - 2)] =
        eq == std::string::npos ? "1" : o.substr(eq + 1);
  }
  return out;
}

}  // namespace

std::string padTo(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string configDiff(const CodeObject& a, const CodeObject& b) {
  const auto sa = settings(a), sb = settings(b);
  std::map<std::string, std::pair<std::string, std::string>> diff;
  for (const auto& [k, v] : sa)
    if (!sb.count(k) || sb.at(k) != v) diff[k] = {v, sb.count(k) ? sb.at(k) : "-"};
  for (const auto& [k, v] : sb)
    if (!sa.count(k)) diff[k] = {"-", v};
  std::string out = "\nconfig diff:";
  if (a.arch != b.arch) out += "\n  arch: " + a.arch + " -> " + b.arch;
  if (a.compiler != b.compiler) out += "\n  compiler: " + a.compiler + " -> " + b.compiler;
  for (const auto& [k, v] : diff) out += "\n  " + k + ": " + v.first + " -> " + v.second;
  if (diff.empty() && a.arch == b.arch && a.compiler == b.compiler) out += " none";
  return out + "\n";
}

std::string histogramDiff(const CodeObject& a, const CodeObject& b) {
  const KernelReport ra = analyzeCodeObject(a), rb = analyzeCodeObject(b);
  if (!ra.has_isa || !rb.has_isa)
    return "\ninstruction histogram: needs the isa/sass/ptx dump of both (compile with --dump)\n";
  std::vector<std::pair<std::string, std::pair<int, int>>> rows;
  const auto& ha = ra.isa.mnemonics;
  const auto& hb = rb.isa.mnemonics;
  for (const auto& [m, n] : ha) {
    const int other = hb.count(m) ? hb.at(m) : 0;
    if (other != n) rows.push_back({m, {n, other}});
  }
  for (const auto& [m, n] : hb)
    if (!ha.count(m)) rows.push_back({m, {0, n}});
  std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) {
    return std::abs(x.second.second - x.second.first) > std::abs(y.second.second - y.second.first);
  });
  std::string out = "\ninstruction histogram diff (" + std::to_string(ra.isa.instructions) +
                    " -> " + std::to_string(rb.isa.instructions) + " instructions):";
  if (rows.empty()) return out + " none\n";
  const size_t shown = std::min<size_t>(rows.size(), 40);
  for (size_t i = 0; i < shown; ++i) {
    const auto& [m, c] = rows[i];
    out += "\n  " + padTo(m, 32) + " " + std::to_string(c.first) + " -> " +
           std::to_string(c.second) + " (" + (c.second > c.first ? "+" : "") +
           std::to_string(c.second - c.first) + ")";
  }
  if (rows.size() > shown) out += "\n  ... " + std::to_string(rows.size() - shown) + " more";
  return out + "\n";
}

}  // namespace ktune::cli
