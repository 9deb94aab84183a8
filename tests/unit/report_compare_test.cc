// `ktune report --compare` (per-key ratios, --fail-above), `ktune db export --csv` and the
// `ktune report` command line, on synthetic databases (tests/unit/report_fixtures.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "report/compare.h"
#include "report/csv.h"
#include "tests/unit/report_fixtures.h"
#include "tools/commands.h"

namespace ktune {
namespace {

using reporttest::checkHtml;
using reporttest::TempDir;

// Two databases of the LLM suite's first three keys; in B the second key's winner is 1.25x slower
// and the third key is missing.
struct TwoDbs {
  TempDir dir;
  std::string a = joinPath(dir.path, "a.json"), b = joinPath(dir.path, "b.json");
  TwoDbs() {
    auto keys = reporttest::llmKeys();
    auto da = TuningDatabase::open(a, reporttest::h100Validator(), "gemm").value();
    auto db = TuningDatabase::open(b, reporttest::h100Validator(), "gemm").value();
    for (int i = 0; i < 3; ++i) {
      DbEntry e = reporttest::llmEntry(keys[size_t(i)], i, 2, nullptr);
      EXPECT_TRUE(da->record(e).ok());
      if (i == 1) e.winner_stats.median_ms *= 1.25;
      if (i < 2) {
        EXPECT_TRUE(db->record(e).ok());
      }
    }
  }
};

TEST(ReportCompare, RatioPerKeyAndMissingKeys) {
  TwoDbs t;
  auto a = report::loadDatabase(t.a, {});
  auto b = report::loadDatabase(t.b, {});
  ASSERT_TRUE(a.ok() && b.ok());
  report::Comparison c = report::compareDatabases(*a, *b);
  ASSERT_EQ(c.rows.size(), 3u);
  int slower = 0, missing = 0;
  for (const auto& r : c.rows) {
    if (!r.in_b) {
      ++missing;
      EXPECT_EQ(r.ratio(), 0);
      continue;
    }
    if (r.ratio() > 1.01) {
      ++slower;
      EXPECT_NEAR(r.ratio(), 1.25, 1e-9);
    } else {
      EXPECT_NEAR(r.ratio(), 1.0, 1e-12);
    }
  }
  EXPECT_EQ(slower, 1);
  EXPECT_EQ(missing, 1);
  EXPECT_NEAR(c.worstRatio(), 1.25, 1e-9);
  EXPECT_EQ(c.countAbove(1.2), 1);
  EXPECT_EQ(c.countAbove(1.3), 0);
  const std::string text = report::compareText(c);
  EXPECT_NE(text.find("1.250"), std::string::npos) << text;
  EXPECT_NE(text.find("missing"), std::string::npos) << text;
  auto chk = checkHtml(report::renderCompare(c, {}));
  EXPECT_EQ(chk.error, "") << chk.error;
  EXPECT_TRUE(chk.ids.count("compare"));
}

TEST(ReportCompare, CommandLineExitCodeFollowsFailAbove) {
  TwoDbs t;
  const std::string out = joinPath(t.dir.path, "cmp.html");
  EXPECT_EQ(cli::dispatch({"report", "--compare", t.a, t.b, "--fail-above", "1.2"}), cli::kExitFailed);
  EXPECT_EQ(cli::dispatch({"report", "--compare", t.a, t.b, "--fail-above", "1.3", "-o", out}),
            cli::kExitOk);
  EXPECT_EQ(checkHtml(readFile(out).value()).error, "");
  EXPECT_EQ(cli::dispatch({"report", "--compare", t.a, t.b, "--json"}), cli::kExitOk);
  EXPECT_EQ(cli::dispatch({"report", "--compare", t.a, t.b, "--fail-above", "x"}), cli::kExitUsage);
  EXPECT_EQ(cli::dispatch({"report", "--compare", t.a}), cli::kExitUsage);
  EXPECT_EQ(cli::dispatch({"report", "--compare", t.a, joinPath(t.dir.path, "none.json")}),
            cli::kExitFailed);
}

TEST(ReportCli, WritesTheReportOfAFileOrOfSomeKeys) {
  TwoDbs t;
  const std::string out = joinPath(t.dir.path, "r.html");
  const auto keys = reporttest::llmKeys();
  ASSERT_EQ(cli::dispatch({"report", t.a, "-o", out, "--no-store"}), cli::kExitOk);
  auto all = checkHtml(readFile(out).value());
  ASSERT_EQ(all.error, "");
  EXPECT_TRUE(all.ids.count("key-0-0-2"));
  ASSERT_EQ(cli::dispatch({"report", t.a, keys[1], "-o", out, "--x", "BLOCK_K", "--y",
                           "NUM_STAGES"}),
            cli::kExitOk);
  const std::string one = readFile(out).value();
  auto chk = checkHtml(one);
  ASSERT_EQ(chk.error, "");
  EXPECT_TRUE(chk.ids.count("key-0-0-0"));
  EXPECT_FALSE(chk.ids.count("key-0-0-1"));
  EXPECT_NE(one.find("BLOCK_K \xE2\x86\x92"), std::string::npos);
  EXPECT_EQ(cli::dispatch({"report", t.a, "no-such-key", "-o", out}), cli::kExitFailed);
  EXPECT_EQ(cli::dispatch({"report", joinPath(t.dir.path, "none.json"), "-o", out}),
            cli::kExitFailed);
  EXPECT_EQ(cli::dispatch({"report"}), cli::kExitUsage);
  EXPECT_EQ(cli::dispatch({"report", "--all", "gemm"}), cli::kExitUsage);
  EXPECT_EQ(cli::dispatch({"report", "../x"}), cli::kExitFailed);  // a path: not found
}

// Splits RFC 4180 CSV into rows of fields.
std::vector<std::vector<std::string>> parseCsv(const std::string& s) {
  std::vector<std::vector<std::string>> rows(1);
  std::string f;
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '"' && i + 1 < s.size() && s[i + 1] == '"') {
        f += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        f += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(f);
      f.clear();
    } else if (c == '\n') {
      rows.back().push_back(f);
      f.clear();
      rows.emplace_back();
    } else {
      f += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

TEST(ReportCsv, OneRowPerCandidateQuotedAndFormulaSafe) {
  TempDir dir;
  const std::string path = joinPath(dir.path, "gemm.json");
  auto db = TuningDatabase::open(path, reporttest::h100Validator(), "gemm").value();
  DbEntry e = reporttest::llmEntry(reporttest::llmKeys()[0], 0, 2, nullptr);
  e.candidates[0].reason = "=HYPERLINK(\"http://x\",\"y\"),\nsecond line";
  e.candidates[1].reason = "@SUM(A1)";
  ASSERT_TRUE(db->record(e).ok());
  auto view = report::loadDatabase(path, {});
  ASSERT_TRUE(view.ok());
  const auto rows = parseCsv(report::exportCsv(*view));
  ASSERT_EQ(rows.size(), e.candidates.size() + 1);
  const size_t width = rows[0].size();
  for (const auto& r : rows) EXPECT_EQ(r.size(), width);
  EXPECT_EQ(rows[0][7], "key");
  EXPECT_EQ(rows[0][12], "reason");
  EXPECT_EQ(rows[1][12], "'=HYPERLINK(\"http://x\",\"y\"),\nsecond line");
  EXPECT_EQ(rows[2][12], "'@SUM(A1)");
  EXPECT_EQ(rows[1][7], e.key);
  int winners = 0;
  for (size_t i = 1; i < rows.size(); ++i) winners += rows[i][8] == "1";
  EXPECT_EQ(winners, 1);

  // Through the command line, with KTUNE_DB naming the file.
  const std::string out = joinPath(dir.path, "gemm.csv");
  setenv("KTUNE_DB", path.c_str(), 1);
  const int rc = cli::dispatch({"db", "export", "gemm", "--csv", "-o", out});
  unsetenv("KTUNE_DB");
  ASSERT_EQ(rc, cli::kExitOk);
  EXPECT_EQ(parseCsv(readFile(out).value()).size(), rows.size());
}

}  // namespace
}  // namespace ktune
