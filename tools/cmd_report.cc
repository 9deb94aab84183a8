// `ktune report`: a tuning run as one self-contained HTML page (report/render.h), and
// `ktune report --compare A.json B.json`, the per-key regression check between two databases.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "base/fs.h"
#include "base/options.h"
#include "report/compare.h"
#include "report/render.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace ktune::cli {
namespace {

const char* kUsage =
    "ktune report FAMILY|FILE.json [KEY ...] [-o report.html] [--x KNOB --y KNOB] [--title T]\n"
    "       ktune report --all [-o report.html]          (every database under <cache>/db)\n"
    "       ktune report --compare A.json B.json [-o compare.html] [--fail-above RATIO] [--json]\n"
    "       [--store DIR | --no-store]   code-object store for registers/occupancy (default: cache)";

// A family name (a database under <cache>/db, or KTUNE_DB) or a path to a database file.
Expected<std::string> databasePath(const Options& o, const std::string& arg) {
  if (arg.find('/') != std::string::npos || (arg.size() > 5 && arg.ends_with(".json")))
    return arg;
  if (!o.database_path.empty()) return o.database_path;
  if (!isSafeFileName(arg)) return Status::InvalidArgument("bad family name '" + arg + "'");
  return joinPath(joinPath(o.cache_dir, "db"), arg + ".json");
}

Expected<std::vector<std::string>> allDatabases(const Options& o) {
  if (!o.database_path.empty()) return std::vector<std::string>{o.database_path};
  const std::string dir = joinPath(o.cache_dir, "db");
  KTUNE_ASSIGN_OR_RETURN(auto names, listDir(dir));
  std::vector<std::string> out;
  for (const auto& n : names)
    if (n.size() > 5 && n.ends_with(".json")) out.push_back(joinPath(dir, n));
  if (out.empty()) return Status::NotFound("no tuning databases in " + dir);
  return out;
}

Status writeOutput(const ParsedArgs& args, const std::string& text) {
  if (!args.has("--output")) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return Status::Ok();
  }
  return writeFileAtomic(args.get("--output"), text, 0644);
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int compare(const ParsedArgs& args, const Options& opts) {
  const auto& pos = args.positional;
  if (pos.size() != 2) return usage("--compare needs two database files", kUsage);
  double limit = 0;
  if (args.has("--fail-above")) {
    char* end = nullptr;
    const std::string v = args.get("--fail-above");
    limit = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(limit > 0) || limit > 1e9)
      return usage("--fail-above needs a ratio > 0 (e.g. 1.05), got '" + v + "'", kUsage);
  }
  report::LoadOptions lo;  // ratios need no code objects
  auto a = report::loadDatabase(pos[0], lo);
  if (!a.ok()) return fail(a.status());
  auto b = report::loadDatabase(pos[1], lo);
  if (!b.ok()) return fail(b.status());
  for (const auto* db : {&*a, &*b})
    for (const auto& w : db->warnings) std::fprintf(stderr, "ktune: warning: %s\n", w.c_str());
  report::Comparison c = report::compareDatabases(*a, *b);
  if (args.has("--json")) {
    nlohmann::json j = {{"a", pos[0]}, {"b", pos[1]}, {"keys", nlohmann::json::array()}};
    for (const auto& r : c.rows)
      j["keys"].push_back({{"key", r.key}, {"median_ms_a", r.median_a}, {"median_ms_b", r.median_b},
                           {"winner_a", r.winner_a}, {"winner_b", r.winner_b},
                           {"ratio", r.ratio()}, {"in_a", r.in_a}, {"in_b", r.in_b}});
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::fputs(report::compareText(c).c_str(), stdout);
  }
  if (args.has("--output")) {
    report::RenderOptions ro;
    ro.title = args.get("--title");
    Status st = writeOutput(args, report::renderCompare(c, ro));
    if (!st.ok()) return fail(st);
  }
  if (limit > 0 && c.countAbove(limit) > 0) {
    std::fprintf(stderr, "ktune: %d key(s) slower in B by more than %.3fx (worst %.3fx)\n",
                 c.countAbove(limit), limit, c.worstRatio());
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace

int cmdReport(const std::vector<std::string>& argv) {
  auto args = parseArgs(argv, {{"--output", true, false, "-o"}, {"--all"}, {"--compare"},
                               {"--x", true}, {"--y", true}, {"--title", true},
                               {"--fail-above", true}, {"--json"}, {"--store", true},
                               {"--no-store"}});
  if (!args.ok()) return usage(args.status().message(), kUsage);
  if (args->help) return help(kUsage);
  auto opts = Options::fromEnv();
  if (!opts.ok()) return fail(opts.status());
  if (args->has("--compare")) return compare(*args, *opts);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> files;
  report::LoadOptions lo;
  lo.store_dir = args->has("--no-store") ? "" : args->get("--store", opts->cache_dir);
  if (args->has("--all")) {
    if (!args->positional.empty()) return usage("--all takes no FAMILY or KEY", kUsage);
    auto all = allDatabases(*opts);
    if (!all.ok()) return fail(all.status());
    files = *all;
  } else {
    if (args->positional.empty()) return usage("report needs FAMILY (or --all, --compare)", kUsage);
    auto path = databasePath(*opts, args->positional[0]);
    if (!path.ok()) return fail(path.status());
    const std::string& what = args->positional[0];
    if (opts->database_path.empty() && what.find('/') == std::string::npos &&
        !what.ends_with(".json") && !pathExists(*path))
      return fail(noDatabaseFor(*opts, what, *path));
    files.push_back(*path);
    lo.keys.assign(args->positional.begin() + 1, args->positional.end());
  }
  std::vector<report::DatabaseView> dbs;
  size_t keys = 0;
  for (const auto& f : files) {
    auto db = report::loadDatabase(f, lo);
    if (!db.ok()) return fail(db.status());
    for (const auto& w : db->warnings) std::fprintf(stderr, "ktune: warning: %s\n", w.c_str());
    for (const auto& d : db->devices) keys += d.keys.size();
    dbs.push_back(std::move(*db));
  }
  if (!lo.keys.empty() && keys == 0)
    return fail(Status::NotFound("none of the given keys is in " + files[0]));
  report::RenderOptions ro;
  ro.x_knob = args->get("--x");
  ro.y_knob = args->get("--y");
  ro.title = args->get("--title");
  const std::string html = report::renderReport(dbs, ro);
  Status st = writeOutput(*args, html);
  if (!st.ok()) return fail(st);
  if (args->has("--output"))
    std::fprintf(stderr, "wrote %s: %zu key(s), %.1f KiB, in %.1f ms\n",
                 args->get("--output").c_str(), keys, double(html.size()) / 1024, msSince(t0));
  return kExitOk;
}

}  // namespace ktune::cli
