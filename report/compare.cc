#include "report/compare.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "report/html.h"

namespace ktune::report {

double CompareRow::ratio() const {
  if (!in_a || !in_b || !(median_a > 0) || !(median_b > 0)) return 0;
  const double r = median_b / median_a;
  return std::isfinite(r) ? r : 0;
}

double Comparison::worstRatio() const {
  double w = 0;
  for (const auto& r : rows) w = std::max(w, r.ratio());
  return w;
}

int Comparison::countAbove(double limit) const {
  int n = 0;
  for (const auto& r : rows) n += r.ratio() > limit;
  return n;
}

namespace {

double winnerMedian(const KeyView& k) {
  if (k.entry.winner_stats.median_ms > 0) return k.entry.winner_stats.median_ms;
  return k.winner_index >= 0 ? k.candidates[size_t(k.winner_index)].result.stats.median_ms : 0;
}

// key -> the most recently tuned entry of that key over the file's device blocks.
std::map<std::string, const KeyView*> latestByKey(const DatabaseView& db,
                                                  std::vector<std::string>* notes) {
  std::map<std::string, const KeyView*> out;
  for (const auto& dev : db.devices) {
    for (const auto& k : dev.keys) {
      auto [it, fresh] = out.emplace(k.entry.key, &k);
      if (fresh) continue;
      notes->push_back(clip(db.path, 200) + ": key '" + clip(k.entry.key, 200) +
                       "' is tuned for several devices; the latest entry is compared");
      if (k.entry.date > it->second->entry.date) it->second = &k;
    }
  }
  return out;
}

}  // namespace

Comparison compareDatabases(const DatabaseView& a, const DatabaseView& b) {
  Comparison c;
  c.a = &a;
  c.b = &b;
  auto ka = latestByKey(a, &c.notes), kb = latestByKey(b, &c.notes);
  std::map<std::string, CompareRow> rows;
  for (const bool side_a : {true, false}) {
    for (const auto& [key, k] : side_a ? ka : kb) {
      CompareRow& r = rows[key];
      r.key = key;
      (side_a ? r.in_a : r.in_b) = true;
      (side_a ? r.winner_a : r.winner_b) = k->entry.winner;
      (side_a ? r.median_a : r.median_b) = winnerMedian(*k);
    }
  }
  for (auto& [key, r] : rows) c.rows.push_back(std::move(r));
  return c;
}

namespace {

// `s` padded with spaces to `width` code points (UTF-8 continuation bytes do not count).
std::string pad(const std::string& s, size_t width, bool left) {
  size_t n = 0;
  for (char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  const std::string fill(n < width ? width - n : 0, ' ');
  return left ? fill + s : s + fill;
}

}  // namespace

std::string compareText(const Comparison& c) {
  std::string o = "A: " + c.a->path + "\nB: " + c.b->path + "\n" + pad("key", 60, false) +
                  pad("A", 12, true) + pad("B", 12, true) + pad("B/A", 8, true) + "\n";
  for (const auto& r : c.rows) {
    const double q = r.ratio();
    o += pad(clip(r.key, 59), 60, false) + pad(r.in_a ? micros(r.median_a) : "missing", 12, true) +
         pad(r.in_b ? micros(r.median_b) : "missing", 12, true) +
         pad(q > 0 ? num(q, 3) : "-", 8, true) + "\n";
  }
  for (const auto& n : c.notes) o += "note: " + n + "\n";
  return o;
}

namespace {

// A small bar centred on ratio 1 (log scale, 1.5x at the edges): right and red when B is slower.
std::string ratioBar(double q) {
  if (!(q > 0)) return "";
  const double v = std::clamp(std::log(q) / std::log(1.5), -1.0, 1.0) * 60;
  const double x = v >= 0 ? 60 : 60 + v;
  return "<svg class=\"ratio\" viewBox=\"0 0 120 12\" width=\"120\" height=\"12\">"
         "<rect x=\"" + num(x, 1) + "\" y=\"1\" width=\"" + num(std::max(std::fabs(v), 1.0), 1) +
         "\" height=\"10\" fill=\"" + (q > 1 ? "#cf222e" : "#2da44e") +
         "\"/><path d=\"M60 0V12\" stroke=\"#57606a\"/></svg>";
}

}  // namespace

std::string renderCompare(const Comparison& c, const RenderOptions& opts) {
  const std::string title = opts.title.empty() ? "ktune database comparison" : opts.title;
  std::string o = pageStart(title) + "<main>\n<header id=\"top\"><h1>" + escClip(title, 120) +
                  "</h1><p class=\"sub\">generated " +
                  escClip(opts.generated.empty() ? isoUtcNow() : opts.generated, 40) + "</p>" +
                  "<p>A: <code>" + escClip(c.a->path, 200) + "</code> (" +
                  escClip(c.a->family, 120) + ")<br>B: <code>" + escClip(c.b->path, 200) +
                  "</code> (" + escClip(c.b->family, 120) + ")</p></header>\n";
  o += "<section class=\"card\" id=\"compare\"><h2>Winner median per key, B over A</h2>\n"
       "<p class=\"legend\">ratio &gt; 1: B is slower (red); the bar is log-scaled, cut at 1.5x.</p>\n"
       "<table class=\"compare\"><colgroup><col style=\"width:30%\"><col style=\"width:17%\">"
       "<col style=\"width:9%\"><col style=\"width:17%\"><col style=\"width:9%\">"
       "<col style=\"width:7%\"><col style=\"width:11%\"></colgroup>\n<tr><th>key</th>"
       "<th>winner A</th><th class=\"n\">A</th><th>winner B</th><th class=\"n\">B</th>"
       "<th class=\"n\">B/A</th><th></th></tr>\n";
  for (const auto& r : c.rows) {
    const double q = r.ratio();
    o += "<tr><td>" + escWrap(r.key, 240) + "</td><td><code>" + escWrap(r.winner_a, 160) +
         "</code></td><td class=\"n\">" + (r.in_a ? micros(r.median_a) : "missing") +
         "</td><td>" +
         (r.in_a && r.in_b && r.winner_a == r.winner_b ? std::string("<i>same as A</i>")
                                                       : "<code>" + escWrap(r.winner_b, 160) + "</code>") +
         "</td><td class=\"n\">" +
         (r.in_b ? micros(r.median_b) : "missing") + "</td><td class=\"n\">" +
         (q > 0 ? num(q, 3) : "\xE2\x80\x93") + "</td><td>" + ratioBar(q) + "</td></tr>\n";
  }
  o += "</table>\n";
  if (c.rows.empty()) o += "<p class=\"note\">Neither database has a tuned key.</p>\n";
  for (const auto& n : c.notes) o += "<p class=\"note\">" + escClip(n, 500) + "</p>\n";
  return o + "</section>\n</main>\n" + pageEnd();
}

}  // namespace ktune::report
