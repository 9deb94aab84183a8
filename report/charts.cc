#include "report/charts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "autotune/results.h"
#include "base/config.h"
#include "report/html.h"

namespace ktune::report {
namespace {

// Bars and points beyond this multiple of the fastest median are drawn at the edge, marked.
constexpr double kScaleCap = 4.0;
constexpr size_t kLabelChars = 400;  // config text beside a bar (10px monospace), whole
constexpr double kLabelCharPx = 6.1;  // width of one character of the label font
constexpr size_t kTitleChars = 600;  // tooltip text
constexpr size_t kAxisValues = 24;   // heatmap values per axis

bool measured(const CandidateView& c) {
  const double m = c.result.stats.median_ms;
  return c.result.status == Code::kOk && std::isfinite(m) && m > 0;
}

std::vector<const CandidateView*> measuredSorted(const KeyView& k) {
  std::vector<const CandidateView*> v;
  for (const auto& c : k.candidates)
    if (measured(c)) v.push_back(&c);
  std::stable_sort(v.begin(), v.end(), [](const CandidateView* a, const CandidateView* b) {
    return a->result.stats.median_ms < b->result.stats.median_ms;
  });
  return v;
}

std::string label(const CandidateResult& r) {
  return r.source == "jit" || r.config.rfind(r.source, 0) == 0 ? r.config
                                                                : r.source + " " + r.config;
}

const char* barClass(const CandidateView& c) {
  if (c.is_winner) return "b-win";
  if (c.is_vendor_default) return "b-def";
  return c.result.source == "jit" ? "b-jit" : "b-ven";
}

std::string tooltip(const CandidateView& c, double best) {
  const auto& s = c.result.stats;
  std::string t = clip(label(c.result), kTitleChars) + "\nmedian " + micros(s.median_ms) +
                  ", p20 " + micros(s.p20_ms) + ", p80 " + micros(s.p80_ms) + ", " +
                  std::to_string(s.runs) + " runs, " + num(s.median_ms / best, 2) + "x the best";
  if (c.is_winner) t += "\nwinner";
  if (c.is_vendor_default) t += "\nvendor default";
  if (!c.result.reason.empty()) t += "\n" + clip(c.result.reason, kTitleChars);
  return esc(t);
}

std::string f1(double v) { return num(v, 1); }

// Round tick positions (steps of 1, 2 or 5 times a power of ten) within [lo, hi]. An integer
// axis (registers) steps by at least 1: a 64-65 range read "64, 64, 65" with half steps.
std::vector<double> niceTicks(double lo, double hi, bool integer) {
  const double raw = (hi - lo) / 4;
  if (!(raw > 0) || !std::isfinite(raw)) return {lo};
  const double p = std::pow(10.0, std::floor(std::log10(raw))), m = raw / p;
  double step = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  if (integer) step = std::max(step, 1.0);
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi * (1 + 1e-9) && t.size() < 12; v += step)
    t.push_back(v);
  return t;
}


// The JIT candidates' configs, parsed (vendor ids and unparsable strings are skipped).
std::vector<std::pair<Config, const CandidateView*>> parsedConfigs(const KeyView& k) {
  std::vector<std::pair<Config, const CandidateView*>> out;
  for (const auto& c : k.candidates) {
    if (isVendorSource(c.result.source)) continue;
    auto cfg = Config::parse(c.result.config);
    if (cfg.ok()) out.emplace_back(std::move(*cfg), &c);
  }
  return out;
}

std::string valueText(const ParamValue& v) { return paramValueToString(v); }


// The JIT configs' parameters that every one of them shares (left out of the bar labels).
std::vector<std::pair<std::string, ParamValue>> sharedKnobs(const KeyView& k) {
  const auto cfgs = parsedConfigs(k);
  if (cfgs.size() < 2) return {};
  std::vector<std::pair<std::string, ParamValue>> shared = cfgs[0].first.params();
  for (const auto& [cfg, c] : cfgs) {
    const auto& ps = cfg.params();
    std::erase_if(shared,
                  [&](const auto& p) { return std::find(ps.begin(), ps.end(), p) == ps.end(); });
  }
  return shared;
}

// A candidate's label: its config without the shared knobs, or source + id for a vendor one.
std::string shortLabel(const CandidateResult& r,
                       const std::vector<std::pair<std::string, ParamValue>>& shared) {
  if (shared.empty() || isVendorSource(r.source)) return label(r);
  auto cfg = Config::parse(r.config);
  if (!cfg.ok()) return label(r);
  std::string out;
  for (const auto& p : cfg->params()) {
    if (std::find(shared.begin(), shared.end(), p) != shared.end()) continue;
    out += (out.empty() ? "" : ",") + p.first + "=" + paramValueToString(p.second);
  }
  return out.empty() ? label(r) : out;
}

}  // namespace

std::string barChart(const KeyView& k) {
  const auto rows = measuredSorted(k);
  if (rows.empty()) return "<p class=\"note\">No candidate of this key was measured.</p>\n";
  const auto shared = sharedKnobs(k);
  const double best = rows.front()->result.stats.median_ms;
  double hi = 0;
  for (const auto* c : rows) {
    const double p80 = c->result.stats.p80_ms;
    hi = std::max({hi, c->result.stats.median_ms, std::isfinite(p80) ? p80 : 0.0});
  }
  hi = std::min(hi, best * kScaleCap) * 1.02;
  // The label column grows with the longest label (configs are shown whole, never cut).
  size_t longest = 0;
  for (const auto* c : rows)
    longest = std::max(longest, std::min(shortLabel(c->result, shared).size(), kLabelChars));
  const double x0 = std::max(392.0, 16 + kLabelCharPx * double(longest));
  const double width = 404, row = 15, top = 22, svg_w = x0 + width + 168;
  auto xOf = [&](double ms) { return x0 + width * std::clamp(ms / hi, 0.0, 1.0); };
  const double h = top + row * double(rows.size()) + 6;
  std::string o;
  if (!shared.empty()) {
    std::string common;
    for (const auto& [name, v] : shared)
      common += (common.empty() ? "" : ",") + name + "=" + paramValueToString(v);
    o += "<p class=\"legend\">Every JIT config here has <code>" + escClip(common, kTitleChars) +
         "</code> (left out of the labels).</p>\n";
  }
  o += "<svg class=\"bars\" viewBox=\"0 0 " + f1(svg_w) + " " + f1(h) + "\" width=\"" + f1(svg_w) +
       "\" height=\"" + f1(h) +
       "\" role=\"img\" aria-label=\"candidates by median time\">\n";
  for (double ms : niceTicks(0, hi, false)) {
    const double x = xOf(ms);
    o += "<line class=\"grid\" x1=\"" + f1(x) + "\" y1=\"16\" x2=\"" + f1(x) + "\" y2=\"" +
         f1(h - 4) + "\"/><text class=\"tick\" x=\"" + f1(x) + "\" y=\"12\">" + micros(ms) +
         "</text>\n";
  }
  double y = top;
  for (const auto* c : rows) {
    const auto& s = c->result.stats;
    o += "<g><title>" + tooltip(*c, best) + "</title><text class=\"lbl\" x=\"" + f1(x0 - 8) +
         "\" y=\"" + f1(y + 9.5) + "\">" + escClip(shortLabel(c->result, shared), kLabelChars) +
         "</text><rect class=\"" + barClass(*c) + "\" x=\"" + f1(x0) + "\" y=\"" + f1(y) +
         "\" width=\"" + f1(std::max(1.0, xOf(s.median_ms) - x0)) + "\" height=\"11\"/>";
    if (s.p80_ms > s.p20_ms && s.p20_ms > 0 && std::isfinite(s.p80_ms)) {
      const double a = xOf(s.p20_ms), b = xOf(s.p80_ms);
      o += "<path class=\"wh\" d=\"M" + f1(a) + " " + f1(y + 5.5) + "H" + f1(b) + "M" + f1(a) +
           " " + f1(y + 2) + "V" + f1(y + 9) + "M" + f1(b) + " " + f1(y + 2) + "V" + f1(y + 9) +
           "\"/>";
    }
    std::string value = micros(s.median_ms) + " " + num(s.median_ms / best, 2) + "x";
    if (s.median_ms > hi) value = "\xE2\x80\xBA " + value;  // › : cut at the edge
    if (c->is_winner) value += " winner";
    if (c->is_vendor_default) value += " default";
    o += "<text class=\"val\" x=\"" + f1(x0 + width + 8) + "\" y=\"" + f1(y + 9.5) + "\">" +
         value + "</text></g>\n";
    y += row;
  }
  return o + "</svg>\n";
}


std::pair<std::string, std::string> pickKnobs(const KeyView& k, const std::string& want_x,
                                              const std::string& want_y) {
  std::map<std::string, std::set<ParamValue>> values;
  for (const auto& [cfg, c] : parsedConfigs(k))
    for (const auto& [name, v] : cfg.params()) values[name].insert(v);
  if (!want_x.empty() && !want_y.empty() && want_x != want_y && values.count(want_x) &&
      values.count(want_y))
    return {want_x, want_y};
  std::vector<std::pair<size_t, std::string>> varying;  // (distinct values, name)
  for (const auto& [name, vs] : values)
    if (vs.size() >= 2) varying.emplace_back(vs.size(), name);
  std::stable_sort(varying.begin(), varying.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  if (varying.size() < 2) return {"", ""};
  return {varying[0].second, varying[1].second};
}

std::string heatmap(const KeyView& k, const std::string& x, const std::string& y) {
  struct Cell {
    double best = 0;
    int failed = 0;
  };
  std::set<ParamValue> xs, ys;
  std::map<std::pair<ParamValue, ParamValue>, Cell> cells;
  double global = 0;
  for (const auto& [cfg, c] : parsedConfigs(k)) {
    if (!cfg.has(x) || !cfg.has(y)) continue;
    ParamValue vx, vy;
    for (const auto& [name, v] : cfg.params()) {
      if (name == x) vx = v;
      if (name == y) vy = v;
    }
    xs.insert(vx);
    ys.insert(vy);
    Cell& cell = cells[{vx, vy}];
    if (!measured(*c)) {
      ++cell.failed;
      continue;
    }
    const double m = c->result.stats.median_ms;
    if (cell.best == 0 || m < cell.best) cell.best = m;
    if (global == 0 || m < global) global = m;
  }
  if (xs.empty()) return "<p class=\"note\">No JIT config of this key has both knobs.</p>\n";
  std::vector<ParamValue> vx(xs.begin(), xs.end()), vy(ys.begin(), ys.end());
  const bool cut = vx.size() > kAxisValues || vy.size() > kAxisValues;
  vx.resize(std::min(vx.size(), kAxisValues));
  vy.resize(std::min(vy.size(), kAxisValues));
  const double cw = 66, ch = 26, left = 110, top = 34;
  const double w = left + cw * double(vx.size()) + 10, h = top + ch * double(vy.size()) + 8;
  std::string o = "<svg class=\"heat\" viewBox=\"0 0 " + f1(w) + " " + f1(h) + "\" width=\"" +
                  f1(w) + "\" height=\"" + f1(h) + "\" role=\"img\" aria-label=\"heatmap\">\n";
  o += "<text class=\"axis\" x=\"" + f1(left) + "\" y=\"11\">" + escClip(x, 40) +
       " \xE2\x86\x92</text><text class=\"axis\" x=\"4\" y=\"" + f1(top - 6) + "\">" +
       escClip(y, 16) + " \xE2\x86\x93</text>\n";
  for (size_t i = 0; i < vx.size(); ++i)
    o += "<text class=\"hx\" x=\"" + f1(left + cw * (double(i) + 0.5)) + "\" y=\"28\">" +
         escClip(valueText(vx[i]), 9) + "</text>";
  for (size_t j = 0; j < vy.size(); ++j) {
    const double cy = top + ch * double(j);
    o += "\n<text class=\"hy\" x=\"" + f1(left - 6) + "\" y=\"" + f1(cy + 17) + "\">" +
         escClip(valueText(vy[j]), 14) + "</text>";
    for (size_t i = 0; i < vx.size(); ++i) {
      auto it = cells.find({vx[i], vy[j]});
      if (it == cells.end()) continue;
      const Cell& cell = it->second;
      const double cx = left + cw * double(i);
      std::string fill = "#e0e0e0", text = cell.failed ? "failed" : "";
      if (cell.best > 0) {
        const double r = global / cell.best;  // 1 = as fast as the best of the key
        const double hue = 120.0 * std::clamp((r - 0.5) / 0.5, 0.0, 1.0);
        fill = "hsl(" + num(hue, 0) + ",62%," + num(r >= 0.999 ? 62.0 : 80.0, 0) + "%)";
        text = micros(cell.best);
      }
      o += "<g><title>" + escClip(x, 60) + "=" + escClip(valueText(vx[i]), 60) + ", " +
           escClip(y, 60) + "=" + escClip(valueText(vy[j]), 60) + ": " +
           (cell.best > 0 ? "best " + micros(cell.best) + ", " + num(global / cell.best * 100, 0) +
                                "% of the key's best"
                          : std::string("no measured config")) +
           (cell.failed ? ", " + std::to_string(cell.failed) + " failed" : "") +
           "</title><rect x=\"" + f1(cx + 1) + "\" y=\"" + f1(cy + 1) + "\" width=\"" + f1(cw - 2) +
           "\" height=\"" + f1(ch - 2) + "\" fill=\"" + fill + "\"" +
           (cell.best == global && global > 0 ? " class=\"hbest\"" : "") + "/><text class=\"hv\" x=\"" +
           f1(cx + cw / 2) + "\" y=\"" + f1(cy + 17) + "\">" + text + "</text></g>";
    }
  }
  o += "\n</svg>\n";
  if (cut) o += "<p class=\"note\">Only the first 24 values of each knob are shown.</p>\n";
  return o;
}

std::string scatter(const KeyView& k, bool occupancy) {
  const auto rows = measuredSorted(k);
  std::vector<const CandidateView*> pts;
  for (const auto* c : rows)
    if (occupancy ? c->has_occupancy : c->has_resources) pts.push_back(c);
  if (pts.empty()) return "";
  auto xval = [&](const CandidateView* c) {
    return occupancy ? c->occupancy * 100 : double(c->registers);
  };
  double xlo = xval(pts[0]), xhi = xlo;
  for (const auto* c : pts) {
    xlo = std::min(xlo, xval(c));
    xhi = std::max(xhi, xval(c));
  }
  if (occupancy) xlo = 0, xhi = std::max(xhi, 1.0);
  if (xhi - xlo < 1) xhi = xlo + 1;
  const double best = rows.front()->result.stats.median_ms;
  double yhi = 0;
  for (const auto* c : pts) yhi = std::max(yhi, c->result.stats.median_ms);
  yhi = std::min(yhi, best * kScaleCap) * 1.05;
  const double L = 64, T = 10, W = 360, H = 200;
  auto px = [&](double v) { return L + W * (v - xlo) / (xhi - xlo); };
  auto py = [&](double ms) { return T + H * (1 - std::clamp(ms / yhi, 0.0, 1.0)); };
  const char* what = occupancy ? "occupancy (% of max)" : "registers per thread";
  std::string o = "<svg class=\"scatter\" viewBox=\"0 0 440 250\" width=\"440\" height=\"250\" "
                  "role=\"img\" aria-label=\"median against " + std::string(what) + "\">\n";
  for (double xv : niceTicks(xlo, xhi, !occupancy))
    o += "<line class=\"grid\" x1=\"" + f1(px(xv)) + "\" y1=\"" + f1(T) + "\" x2=\"" + f1(px(xv)) +
         "\" y2=\"" + f1(T + H) + "\"/><text class=\"tick\" x=\"" + f1(px(xv)) + "\" y=\"" +
         f1(T + H + 14) + "\">" + num(xv, 0) + "</text>";
  for (double yv : niceTicks(0, yhi, false))
    o += "\n<line class=\"grid\" x1=\"" + f1(L) + "\" y1=\"" + f1(py(yv)) + "\" x2=\"" +
         f1(L + W) + "\" y2=\"" + f1(py(yv)) + "\"/><text class=\"ytick\" x=\"" + f1(L - 4) +
         "\" y=\"" + f1(py(yv) + 4) + "\">" + micros(yv) + "</text>";
  o += "\n";
  o += "<text class=\"axis\" x=\"" + f1(L + W / 2) + "\" y=\"246\" text-anchor=\"middle\">" +
       std::string(what) + "</text>\n";
  for (const auto* c : pts) {
    const double ms = c->result.stats.median_ms;
    o += "<circle class=\"" + std::string(barClass(*c)) + (ms > yhi ? " cut" : "") + "\" cx=\"" +
         f1(px(xval(c))) + "\" cy=\"" + f1(py(ms)) + "\" r=\"" +
         (c->is_winner || c->is_vendor_default ? "5" : "3") + "\"><title>" + tooltip(*c, best) +
         "\n" + (occupancy ? num(c->occupancy * 100, 0) + "% occupancy"
                           : std::to_string(c->registers) + " registers") +
         "</title></circle>\n";
  }
  return o + "</svg>\n";
}

}  // namespace ktune::report
