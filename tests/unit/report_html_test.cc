// The HTML tuning report (report/): a database tuned on the simulated backend, the synthetic LLM
// suite (size and time targets) and a database of hostile strings, each rendered and checked for
// structure and escaping. With KTUNE_REPORT_ARTIFACTS=<dir> the pages and databases are also
// written there for the headless-browser check (tests/report_browser_check.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>

#include "report/charts.h"
#include "report/html.h"
#include "report/render.h"
#include "tests/unit/report_fixtures.h"
#include "tests/unit/tuner_sim_env.h"

namespace ktune {
namespace {

using report::DatabaseView;
using reporttest::checkHtml;
using reporttest::TempDir;

void keepArtifact(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("KTUNE_REPORT_ARTIFACTS");
  if (!dir || !*dir) return;
  ASSERT_TRUE(makeDirs(dir, 0755).ok());
  ASSERT_TRUE(writeFileAtomic(joinPath(dir, name), text, 0644).ok());
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(ReportEscape, EveryMarkupCharacterBecomesAReference) {
  EXPECT_EQ(report::esc("<a href=\"x\" title='y'>&amp;</a>"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;");
  EXPECT_EQ(report::esc("tab\tnl\n"), "tab\tnl\n");
  // Control characters, C1 controls and invalid UTF-8 become U+FFFD; valid UTF-8 stays.
  EXPECT_EQ(report::esc(std::string("a\x01\x7f\r", 4)), "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(report::esc("\xC2\x85"), "\xEF\xBF\xBD");
  EXPECT_EQ(report::esc("\xC0\xBC" "x\xFF\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBDx\xEF\xBF\xBD"
                                                       "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(report::esc("\xC2\xB5s \xE2\x9C\x93 \xF0\x9F\x98\x80"), "\xC2\xB5s \xE2\x9C\x93 \xF0\x9F\x98\x80");
  EXPECT_EQ(report::esc(std::string("a\0b", 3)), "a\xEF\xBF\xBD" "b");
}

TEST(ReportEscape, ClipCountsCodePointsAndNeverSplitsOne) {
  EXPECT_EQ(report::clip("abcdef", 10), "abcdef");
  EXPECT_EQ(report::clip("abcdef", 3), "abc\xE2\x80\xA6");
  EXPECT_EQ(report::clip("\xC2\xB5\xC2\xB5\xC2\xB5", 2), "\xC2\xB5\xC2\xB5\xE2\x80\xA6");
  EXPECT_EQ(report::clip(std::string(10000, 'A'), 5), "AAAAA\xE2\x80\xA6");
  EXPECT_EQ(report::micros(0.0123), "12.3 \xC2\xB5s");
  EXPECT_EQ(report::num(1.0 / 0.0, 2), "\xE2\x80\x93");
}

// Tunes three keys of the simulated "scale" family (with a compile error, a fault, a wrong
// result, an out-of-resources config and registers that vary with the config), then renders.
TEST(ReportHtml, DatabaseTunedOnTheSimulatedBackendRendersEverySection) {
  tunertest::Env env;
  env.compiler = std::make_shared<SimCompiler>([&env](const CompileRequest& r) {
    SimCompileDecision d;
    const std::string cfg = tunertest::Env::cfgOf(r.defines);
    if (env.compile_error.count(cfg)) d.status = Status::CompileError("sim: error: bad tile\n" + cfg);
    auto c = Config::parse(cfg).value();
    d.resources.registers = int(16 + 8 * c.getInt("VEC") + c.getInt("BLOCK") / 64);
    d.resources.max_threads_per_block = int(c.getInt("BLOCK"));
    return d;
  });
  // Every config within 1.15x of the best, so none is stopped early (that would depend on the
  // order in which compiles finish): each one that does not fail is measured.
  double cost = 0.0101;
  for (int b : {64, 128, 256, 512, 1024, 2048})
    for (int v : {1, 2, 4}) env.cost[Config{{"BLOCK", b}, {"VEC", v}}.toString()] = cost += 0.0001;
  env.cost["BLOCK=256,VEC=2"] = 0.01;
  env.compile_error.insert("BLOCK=128,VEC=2");
  env.fault.insert("BLOCK=512,VEC=1");
  env.wrong.insert("BLOCK=128,VEC=1");
  auto t = Engine::create(env.backend, env.options());
  ASSERT_TRUE(t.ok()) << t.status().toString();
  auto fam = addFamily(**t, env.family());
  ASSERT_TRUE(fam.ok());
  for (int64_t n : {int64_t(1000), int64_t(70000), int64_t(1) << 20}) {
    tunertest::Scale p = env.problem(n);
    ASSERT_TRUE(fam->tune(p).ok());
  }
  const std::string db_path = (*t)->database("scale")->path();
  auto db = report::loadDatabase(db_path, {env.dir, {}});
  ASSERT_TRUE(db.ok()) << db.status().toString();
  ASSERT_EQ(db->devices.size(), 1u);
  ASSERT_EQ(db->devices[0].keys.size(), 3u);
  EXPECT_EQ(db->family, "scale");
  const auto& k0 = db->devices[0].keys[0];
  ASSERT_GE(k0.winner_index, 0);
  EXPECT_EQ(k0.candidates[size_t(k0.winner_index)].result.config, "BLOCK=256,VEC=2");
  EXPECT_EQ(k0.default_index, -1);  // no vendor library in the simulated family
  EXPECT_TRUE(k0.winner_report.available) << k0.winner_report.note;
  EXPECT_TRUE(k0.candidates[size_t(k0.winner_index)].has_occupancy);

  const std::string html = report::renderReport({*db}, {});
  auto chk = checkHtml(html);
  ASSERT_EQ(chk.error, "") << chk.error;
  for (const char* id : {"summary", "db-0", "dev-0-0", "validator-0-0", "key-0-0-0", "bars-0-0-0",
                         "heat-0-0-0", "scatter-0-0-0", "winner-0-0-0", "failures-0-0-0",
                         "key-0-0-2"})
    EXPECT_TRUE(chk.ids.count(id)) << id;
  EXPECT_EQ(chk.tags["section"], 3u + 2u);  // 3 keys + summary + validator card
  EXPECT_NE(html.find("BLOCK=256,VEC=2"), std::string::npos);
  EXPECT_NE(chk.text.find("sim: error: bad tile"), std::string::npos);  // the failure's reason
  EXPECT_NE(chk.text.find("compile_error"), std::string::npos);
  EXPECT_NE(chk.text.find("device_fault"), std::string::npos);
  EXPECT_NE(chk.text.find("wrong_result"), std::string::npos);
  EXPECT_NE(chk.text.find("sim H100-like"), std::string::npos);  // the validator block
  EXPECT_NE(chk.text.find("no vendor default"), std::string::npos);
  // 15 configs: 3 out of resources, a compile error, a fault and a wrong result; 9 measured,
  // each a point against registers and one against occupancy, in each of the 3 keys.
  EXPECT_EQ(chk.tags["circle"], 2 * 9 * 3);
  EXPECT_EQ(html.find("not in the store"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"b-win\""), 3u + 6u);  // a bar and two points per key
  keepArtifact("sim.html", html);
}

TEST(ReportHtml, LlmSuiteReportIsUnderOneSecondAndTwoMegabytes) {
  TempDir tmp;
  // The browser check renders this database again through `ktune report`: keep it there.
  const char* keep = std::getenv("KTUNE_REPORT_ARTIFACTS");
  const std::string dir = keep && *keep ? joinPath(keep, "llm") : tmp.path;
  (void)removeTree(dir);
  ASSERT_TRUE(makeDirs(dir, 0700).ok());
  const std::string db_path = joinPath(dir, "gemm.json"), store = joinPath(dir, "store");
  reporttest::writeLlmSuite(db_path, store);
  const auto t0 = std::chrono::steady_clock::now();
  auto db = report::loadDatabase(db_path, {store, {}});
  ASSERT_TRUE(db.ok()) << db.status().toString();
  const std::string html = report::renderReport({*db}, {});
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("LLM suite report: %zu keys x %zu candidates, %.1f KiB, %.1f ms (load + render)\n",
              db->devices[0].keys.size(), db->devices[0].keys[0].candidates.size(),
              double(html.size()) / 1024, ms);
  EXPECT_LT(html.size(), 2u << 20);
  // The time target (< 1 s) is measured in bench/NOTES.md, not asserted: a test must not depend on
  // how loaded the machine is.
  auto chk = checkHtml(html);
  ASSERT_EQ(chk.error, "") << chk.error;
  ASSERT_EQ(db->devices[0].keys.size(), 8u);
  for (const auto& k : db->devices[0].keys) {
    EXPECT_GE(k.candidates.size(), 80u);
    ASSERT_GE(k.default_index, 0);
    EXPECT_EQ(k.candidates[size_t(k.default_index)].result.config.rfind("cublaslt:idx=0:", 0), 0u);
    EXPECT_GT(k.speedup(), 1.0);
  }
  EXPECT_EQ(count(html, "class=\"b-def\""), 8u);  // cuBLASLt #0: a bar, no code object
  EXPECT_EQ(count(html, "not in the store"), 2u);  // its scatter note and its winner report
  EXPECT_NE(chk.text.find("16-byte global loads (ptx)"), std::string::npos);
  EXPECT_NE(chk.text.find("shared 264 KiB &gt; 227 KiB per block"), std::string::npos);
  // The heatmap's default axes are the knobs with the most values: BLOCK_M x BLOCK_N.
  auto knobs = report::pickKnobs(db->devices[0].keys[0], "", "");
  EXPECT_EQ(knobs.first, "BLOCK_M");
  EXPECT_EQ(knobs.second, "BLOCK_N");
  knobs = report::pickKnobs(db->devices[0].keys[0], "NUM_STAGES", "BLOCK_K");
  EXPECT_EQ(knobs.first, "NUM_STAGES");
  knobs = report::pickKnobs(db->devices[0].keys[0], "NOPE", "BLOCK_K");
  EXPECT_EQ(knobs.first, "BLOCK_M");
  report::RenderOptions ro;
  ro.x_knob = "NUM_STAGES";
  ro.y_knob = "BLOCK_K";
  EXPECT_NE(report::renderReport({*db}, ro).find("NUM_STAGES \xE2\x86\x92"), std::string::npos);
  keepArtifact("llm.html", html);
}

// Family, validator, key, config, source, reason and date strings a user could write into the
// file, each trying to leave its context.
nlohmann::json hostileDoc() {
  const std::string script = "<script>alert('x')</script>";
  const std::string attr = "\" onmouseover=\"alert(1)\" x='";
  const std::string longname(10000, 'A');
  nlohmann::json cand = {{"config", "BLOCK=64\"><svg onload=alert(1)>" + script},
                         {"source", "jit"}, {"status", "ok"}, {"reason", "</pre></td>" + script},
                         {"stats", {{"median_ms", 0.01}, {"p20_ms", 0.009}, {"p80_ms", 0.011}}},
                         {"date", "<b>2026</b>"}};
  nlohmann::json vendor = {{"config", "evil:idx=0:" + attr}, {"source", "evil"}, {"status", "ok"},
                           {"stats", {{"median_ms", 0.02}}}};
  nlohmann::json failed = {{"config", longname + attr}, {"source", "jit"},
                           {"status", "compile_error"}, {"reason", longname + "]]><!--" + script}};
  nlohmann::json entry = {{"winner", cand["config"]}, {"source", "jit"},
                          {"stats", cand["stats"]}, {"candidates", {cand, vendor, failed}},
                          {"date", attr}, {"pinned", false}};
  nlohmann::json validator = {{"device_name", "<img src=x onerror=alert(1)>"},
                              {"arch", attr}, {"backend", script}, {"compiler", "&amp;"},
                              {"compiler_version", longname}, {"driver_version", "\x01\x7f"},
                              {"ktune_version", "'"}};
  return {{"schema", 1}, {"family", script + attr},
          {"devices", {{{"validator", validator},
                        {"entries", {{"M=1," + script + attr, entry}, {longname, entry}}}}}}};
}

TEST(ReportHtml, HostileStringsAreEscapedAndLongNamesClipped) {
  TempDir dir;
  const std::string path = joinPath(dir.path, "hostile.json");
  ASSERT_TRUE(writeFileAtomic(path, hostileDoc().dump(1)).ok());
  auto db = report::loadDatabase(path, {"", {}});
  ASSERT_TRUE(db.ok()) << db.status().toString();
  ASSERT_EQ(db->devices.size(), 1u);
  ASSERT_EQ(db->devices[0].keys.size(), 2u);
  const std::string html = report::renderReport({*db}, {});
  // The checker admits only the report's own tags and attributes: an escaped string could add
  // neither a <script>/<svg onload> nor an onmouseover= attribute.
  auto chk = checkHtml(html);
  ASSERT_EQ(chk.error, "") << chk.error;
  std::string lower = html;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  EXPECT_EQ(lower.find("<script"), std::string::npos);
  EXPECT_EQ(lower.find("<img"), std::string::npos);
  EXPECT_EQ(lower.find("onmouseover=\""), std::string::npos);
  EXPECT_EQ(lower.find("<!--"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_NE(html.find("&quot; onmouseover=&quot;alert(1)&quot; x=&#39;"), std::string::npos);
  EXPECT_NE(html.find("&amp;amp;"), std::string::npos);
  // 10,000-character names are clipped everywhere (the longest run is a tooltip's 600).
  EXPECT_EQ(html.find(std::string(601, 'A')), std::string::npos);
  EXPECT_LT(html.size(), 200u * 1024);
  keepArtifact("hostile.html", html);
}

TEST(ReportHtml, BrokenOrMissingFilesAreReportedNotTrusted) {
  TempDir dir;
  const std::string path = joinPath(dir.path, "broken.json");
  ASSERT_TRUE(writeFileAtomic(path, "{\"family\": \"gemm\", \"devices\": [{\"valid").ok());
  auto db = report::loadDatabase(path, {dir.path, {}});
  ASSERT_TRUE(db.ok()) << db.status().toString();
  EXPECT_TRUE(db->devices.empty());
  ASSERT_FALSE(db->warnings.empty());
  const std::string html = report::renderReport({*db}, {});
  auto chk = checkHtml(html);
  ASSERT_EQ(chk.error, "") << chk.error;
  EXPECT_TRUE(chk.ids.count("warnings"));
  EXPECT_NE(chk.text.find("No tuned key"), std::string::npos);
  // Reading never writes: the broken file is left as it was, nothing is created beside it.
  EXPECT_EQ(listDir(dir.path).value().size(), 1u);
  EXPECT_EQ(report::loadDatabase(joinPath(dir.path, "none.json"), {}).status().code(),
            Code::kNotFound);
}

}  // namespace
}  // namespace ktune
