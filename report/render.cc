#include "report/render.h"

#include <cmath>

#include "report/charts.h"
#include "report/html.h"

namespace ktune::report {
namespace {

constexpr size_t kKeyChars = 240;     // a key in headings and tables
constexpr size_t kConfigChars = 160;  // a config in tables
constexpr size_t kReasonChars = 400;  // a failure reason
constexpr size_t kFieldChars = 120;   // validator fields, family names

const char* kStyle = R"CSS(
:root{color-scheme:light}
body{font:14px/1.45 system-ui,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2328;background:#f3f5f7;margin:0;padding:24px}
main{max-width:1000px;margin:0 auto}
h1{font-size:22px;margin:0 0 2px}
h2{font-size:18px;margin:30px 0 8px;overflow-wrap:anywhere}
.card h2:first-child{margin-top:0}
h3{font-size:15px;margin:0 0 6px;overflow-wrap:anywhere}
h4{font-size:12px;margin:18px 0 6px;color:#57606a;text-transform:uppercase;letter-spacing:.05em}
a{color:#0969da;text-decoration:none}
section.key,section.card{background:#fff;border:1px solid #d8dee4;border-radius:8px;padding:14px 18px;margin:14px 0;overflow:hidden}
.sub,.note{color:#57606a}
.note{font-style:italic}
table{border-collapse:collapse;width:100%;table-layout:fixed;font-size:13px}
th,td{border-bottom:1px solid #e5e7eb;padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#eef1f4;font-weight:600}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:12px ui-monospace,"DejaVu Sans Mono",Menlo,monospace}
code{overflow-wrap:anywhere}
pre{background:#f6f8fa;padding:8px 10px;border-radius:6px;white-space:pre-wrap;overflow-wrap:anywhere;margin:6px 0}
svg{display:block;max-width:100%;height:auto;margin:4px 0}
svg text{font:11px ui-monospace,"DejaVu Sans Mono",monospace;fill:#24292f}
.lbl,.hy,.ytick{text-anchor:end}
.lbl{font-size:10px}
.val{fill:#57606a}
.tick,.hx,.hv{text-anchor:middle}
.tick,.ytick{fill:#8c959f;font-size:10px}
.hv{font-size:10px}
.axis{font-weight:bold}
.grid{stroke:#eaeef2}
.b-jit{fill:#7393c9}.b-ven{fill:#a98bc4}.b-win{fill:#2da44e}.b-def{fill:#e36209}
circle{fill-opacity:.85;stroke:#fff;stroke-width:.5}
circle.cut{fill-opacity:.3}
.wh{stroke:#24292f;stroke-width:1;fill:none}
.hbest{stroke:#1a7f37;stroke-width:2.5}
.legend{font-size:12px;color:#57606a;margin:2px 0}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 4px 0 12px;vertical-align:-1px}
.plots{display:flex;flex-wrap:wrap;gap:8px 24px}
.pass{color:#1a7f37}.fail{color:#cf222e}
.warn{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:6px 12px}
.big{font-size:16px;font-weight:600}
)CSS";

std::string td(const std::string& html, const char* cls = nullptr) {
  return cls ? "<td class=\"" + std::string(cls) + "\">" + html + "</td>" : "<td>" + html + "</td>";
}

std::string medianOf(const KeyView& k, int index) {
  if (index < 0) return "\xE2\x80\x93";
  const auto& r = k.candidates[size_t(index)].result;
  return r.status == Code::kOk ? micros(r.stats.median_ms) : "failed";
}

std::string speedupText(const KeyView& k) {
  const double s = k.speedup();
  return s > 0 ? num(s, 2) + "x" : "\xE2\x80\x93";
}

std::string keyId(size_t d, size_t v, size_t k) {
  return std::to_string(d) + "-" + std::to_string(v) + "-" + std::to_string(k);
}

std::string summary(const std::vector<DatabaseView>& dbs) {
  std::string o =
      "<section class=\"card\" id=\"summary\"><h2>Winners</h2>\n<table class=\"winners\">"
      "<colgroup><col style=\"width:33%\"><col style=\"width:15%\"><col style=\"width:25%\">"
      "<col style=\"width:9%\"><col style=\"width:9%\"><col style=\"width:9%\"></colgroup>\n"
      "<tr><th>key</th><th>device</th><th>winner</th><th class=\"n\">median</th>"
      "<th class=\"n\">vendor default</th><th class=\"n\">speed-up</th></tr>\n";
  size_t rows = 0, with_default = 0;
  double log_sum = 0;
  for (size_t d = 0; d < dbs.size(); ++d) {
    if (dbs.size() > 1)
      o += "<tr><th colspan=\"6\">" + escClip(dbs[d].family, kFieldChars) + "</th></tr>\n";
    for (size_t v = 0; v < dbs[d].devices.size(); ++v) {
      const auto& dev = dbs[d].devices[v];
      for (size_t i = 0; i < dev.keys.size(); ++i, ++rows) {
        const KeyView& k = dev.keys[i];
        if (k.speedup() > 0) {
          log_sum += std::log(k.speedup());
          ++with_default;
        }
        o += "<tr>" + td("<a href=\"#key-" + keyId(d, v, i) + "\">" +
                         escWrap(k.entry.key, kKeyChars) + "</a>") +
             td(escClip(dev.validator.device_name, kFieldChars)) +
             td("<code>" + escWrap(k.entry.winner, kConfigChars) + "</code>") +
             td(medianOf(k, k.winner_index), "n") + td(medianOf(k, k.default_index), "n") +
             td(speedupText(k), "n") + "</tr>\n";
      }
    }
  }
  if (with_default > 0)
    o += "<tr><th colspan=\"5\">geometric mean over the " + std::to_string(with_default) +
         " keys with a vendor default</th><th class=\"n\">" +
         num(std::exp(log_sum / double(with_default)), 2) + "x</th></tr>\n";
  o += "</table>\n";
  if (rows == 0) o += "<p class=\"note\">No tuned key in the selection.</p>\n";
  return o + "</section>\n";
}

std::string warnings(const std::vector<DatabaseView>& dbs) {
  std::string items;
  for (const auto& db : dbs)
    for (const auto& w : db.warnings) items += "<li>" + escClip(w, kReasonChars) + "</li>\n";
  if (items.empty()) return "";
  return "<section class=\"warn\" id=\"warnings\"><p>Read with warnings:</p><ul>\n" + items +
         "</ul></section>\n";
}

std::string validatorTable(const Validator& v, const std::string& id) {
  const std::pair<const char*, const std::string*> rows[] = {
      {"device", &v.device_name},   {"arch", &v.arch},         {"backend", &v.backend},
      {"driver", &v.driver_version}, {"compiler", &v.compiler}, {"compiler version", &v.compiler_version},
      {"ktune", &v.ktune_version}};
  std::string o = "<table class=\"validator\" id=\"validator-" + id +
                  "\"><colgroup><col style=\"width:22%\"><col></colgroup>\n";
  for (const auto& [name, value] : rows)
    o += "<tr><th>" + std::string(name) + "</th>" + td(escClip(*value, kFieldChars)) + "</tr>\n";
  return o + "</table>\n";
}

// Candidates stopped early as slower than the best so far: measured, not failed, so they are
// counted apart from the failures.
std::string rejectedEarly(const KeyView& k, const std::string& id) {
  std::string rows;
  int n = 0;
  for (const auto& c : k.candidates) {
    if (!rejectedAsSlower(c.result)) continue;
    ++n;
    rows += "<tr>" + td("<code>" + escWrap(c.result.config, kConfigChars) + "</code>") +
            td(escClip(c.result.reason, kReasonChars)) + "</tr>\n";
  }
  if (n == 0) return "";
  return "<h4>Stopped early: slower than the best (" + std::to_string(n) +
         ")</h4>\n<table class=\"failures\" id=\"rejected-" + id +
         "\"><colgroup><col style=\"width:34%\"><col></colgroup>\n"
         "<tr><th>config</th><th>measured</th></tr>\n" + rows + "</table>\n";
}

std::string failures(const KeyView& k, const std::string& id) {
  std::string rows;
  int n = 0;
  for (const auto& c : k.candidates) {
    if (c.result.status == Code::kOk || rejectedAsSlower(c.result)) continue;
    ++n;
    rows += "<tr>" + td("<code>" + escWrap(c.result.config, kConfigChars) + "</code>") +
            td(codeName(c.result.status)) + td(escClip(c.result.reason, kReasonChars)) + "</tr>\n";
  }
  std::string o = "<h4>Failures (" + std::to_string(n) + ")</h4>\n";
  if (n == 0) return o + "<p class=\"note\" id=\"failures-" + id + "\">No candidate failed.</p>\n";
  return o + "<table class=\"failures\" id=\"failures-" + id +
         "\"><colgroup><col style=\"width:34%\"><col style=\"width:14%\"><col></colgroup>\n"
         "<tr><th>config</th><th>status</th><th>reason</th></tr>\n" +
         rows + "</table>\n";
}

std::string winnerBlock(const KeyView& k, const std::string& id) {
  const WinnerReport& w = k.winner_report;
  std::string o = "<h4>Winner's code object</h4>\n<div id=\"winner-" + id + "\">";
  if (!w.available)
    return o + "<p class=\"note\">Resource report: " + escClip(w.note, kReasonChars) +
           ".</p></div>\n";
  o += "<ul class=\"checks\">";
  for (const auto& [what, ok] : w.checks)
    o += std::string("<li class=\"") + (ok ? "pass\">\xE2\x9C\x93 " : "fail\">\xE2\x9C\x97 ") +
         esc(what) + "</li>";
  return o + "</ul>\n<pre>" + escClip(w.text, 20000) + "</pre></div>\n";
}

std::string keyHeader(const KeyView& k, const std::string& id) {
  const auto& e = k.entry;
  std::string o = "<section class=\"key\" id=\"key-" + id + "\">\n<h3>" +
                  escClip(e.key, kKeyChars) + "</h3>\n<p class=\"sub\">winner <code>" +
                  escClip(e.winner_source == "jit" ? e.winner : e.winner_source + " " + e.winner,
                          kConfigChars) +
                  "</code> <span class=\"big\">" + micros(e.winner_stats.median_ms) + "</span>";
  if (e.winner_stats.p80_ms > 0)
    o += " (p20 " + micros(e.winner_stats.p20_ms) + ", p80 " + micros(e.winner_stats.p80_ms) +
         ", " + std::to_string(e.winner_stats.runs) + " runs)";
  if (k.default_index >= 0)
    o += " &middot; vendor default " + medianOf(k, k.default_index) + ", speed-up " +
         speedupText(k);
  else
    o += " &middot; no vendor default among the candidates";
  const int ok = countOk(k);
  int slower = 0;
  for (const auto& c : k.candidates) slower += rejectedAsSlower(c.result);
  o += " &middot; " + std::to_string(ok) + " measured, " +
       (slower ? std::to_string(slower) + " stopped early (slower than the best), " : "") +
       std::to_string(int(k.candidates.size()) - ok - slower) + " failed &middot; tuned " +
       escClip(e.date, 40) + (e.pinned ? " &middot; <b>pinned</b>" : "") + "</p>\n";
  return o;
}

std::string keySection(const KeyView& k, const std::string& id, const RenderOptions& opts) {
  std::string o = keyHeader(k, id);
  o += "<h4>Candidates by median time</h4>\n<p class=\"legend\">bar: median, whisker: p20"
       "\xE2\x80\x93p80 <i style=\"background:#2da44e\"></i>winner"
       "<i style=\"background:#e36209\"></i>vendor default<i style=\"background:#7393c9\"></i>JIT"
       "<i style=\"background:#a98bc4\"></i>vendor library</p>\n<div id=\"bars-" + id + "\">" +
       barChart(k) + "</div>\n";
  auto [x, y] = pickKnobs(k, opts.x_knob, opts.y_knob);
  o += "<h4>Heatmap: best median over the other knobs</h4>\n<div id=\"heat-" + id + "\">";
  o += x.empty() ? "<p class=\"note\">Fewer than two knobs vary among this key's JIT configs.</p>"
                 : heatmap(k, x, y);
  o += "</div>\n<h4>Time against registers and occupancy</h4>\n<div class=\"plots\" id=\"scatter-" +
       id + "\">";
  const std::string regs = scatter(k, false), occ = scatter(k, true);
  if (regs.empty() && occ.empty())
    o += "<p class=\"note\">Registers and occupancy: not in the store (the code objects of this "
         "key are not in the code-object store that was read).</p>";
  o += regs + occ + "</div>\n";
  o += winnerBlock(k, id) + failures(k, id) + rejectedEarly(k, id) + "</section>\n";
  return o;
}

}  // namespace

std::string pageStart(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
         "style-src 'unsafe-inline'\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
         escClip(title, kFieldChars) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
}

std::string renderReport(const std::vector<DatabaseView>& dbs, const RenderOptions& opts) {
  const std::string title = opts.title.empty() ? "ktune tuning report" : opts.title;
  std::string o = pageStart(title) + "<main>\n<header id=\"top\"><h1>" + escClip(title, kFieldChars) +
                  "</h1><p class=\"sub\">generated " +
                  escClip(opts.generated.empty() ? isoUtcNow() : opts.generated, 40);
  for (const auto& db : dbs)
    o += " &middot; " + escClip(db.family.empty() ? db.path : db.family, kFieldChars) + " (" +
         escClip(db.path, kFieldChars) + ")";
  o += "</p></header>\n" + summary(dbs) + warnings(dbs);
  for (size_t d = 0; d < dbs.size(); ++d) {
    const auto& db = dbs[d];
    o += "<div class=\"db\" id=\"db-" + std::to_string(d) + "\">\n";
    for (size_t v = 0; v < db.devices.size(); ++v) {
      const auto& dev = db.devices[v];
      const std::string vid = std::to_string(d) + "-" + std::to_string(v);
      o += "<h2 id=\"dev-" + vid + "\">" + escClip(db.family, kFieldChars) + " on " +
           escClip(dev.validator.device_name, kFieldChars) + "</h2>\n<section class=\"card\">" +
           validatorTable(dev.validator, vid) + "<p class=\"note\">" +
           escClip(db.store_note, kReasonChars) + "</p></section>\n";
      for (size_t i = 0; i < dev.keys.size(); ++i)
        o += keySection(dev.keys[i], keyId(d, v, i), opts);
    }
    o += "</div>\n";
  }
  return o + "</main>\n" + pageEnd();
}

}  // namespace ktune::report
