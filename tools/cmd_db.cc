// `ktune db`: list, show, remove, export and import tuning-database entries. Databases are the
// JSON files under <cache>/db/ (one per kernel family) or the file named by KTUNE_DB.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "autotune/database.h"
#include "base/fs.h"
#include "base/options.h"
#include "report/csv.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace ktune::cli {
namespace {
const char* kUsage =
    "ktune db ls | show FAMILY [KEY] | rm FAMILY KEY | export FAMILY [--csv] [-o FILE] | import FILE  [--json]";

bool validFamily(const std::string& f) {
  if (!isSafeFileName(f)) return false;
  for (char c : f)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

std::string dbDir(const Options& o) { return joinPath(o.cache_dir, "db"); }

Expected<std::string> familyPath(const Options& o, const std::string& family) {
  if (!o.database_path.empty()) return o.database_path;
  if (!validFamily(family))
    return Status::InvalidArgument("bad family name '" + family + "' (letters, digits, _ - . only)");
  return joinPath(dbDir(o), family + ".json");
}

Expected<nlohmann::json> loadJson(const std::string& path) {
  KTUNE_ASSIGN_OR_RETURN(std::string text, readFile(path));
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Status::Corrupt("'" + path + "' is not valid JSON; ktune keeps it aside as " + path +
                           ".corrupt-<time> on its next write");
  return j;
}

}  // namespace

int cmdDb(const std::vector<std::string>& argv) {
  auto args = parseArgs(argv, {{"--json"}, {"--csv"}, {"--output", true, false, "-o"}});
  if (!args.ok()) return usage(args.status().message(), kUsage);
  if (args->positional.empty()) return usage("missing db subcommand", kUsage);
  auto opts = Options::fromEnv();
  if (!opts.ok()) return fail(opts.status());
  const std::string sub = args->positional[0];
  const auto& pos = args->positional;
  const bool json = args->has("--json");

  if (sub == "ls") {
    std::vector<std::string> files;
    if (!opts->database_path.empty()) {
      files.push_back(opts->database_path);
    } else {
      auto names = listDir(dbDir(*opts));
      if (!names.ok()) return fail(names.status());
      for (const auto& n : *names)
        if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) files.push_back(joinPath(dbDir(*opts), n));
    }
    nlohmann::json out = nlohmann::json::array();
    for (const auto& f : files) {
      auto j = loadJson(f);
      nlohmann::json row = {{"file", f}};
      if (!j.ok()) {
        row["error"] = j.status().message();
      } else {
        row["family"] = j->value("family", "");
        row["devices"] = nlohmann::json::array();
        for (const auto& d : j->value("devices", nlohmann::json::array())) {
          const auto& v = d.value("validator", nlohmann::json::object());
          row["devices"].push_back({{"device_name", v.value("device_name", "")},
                                    {"arch", v.value("arch", "")},
                                    {"driver_version", v.value("driver_version", "")},
                                    {"compiler", v.value("compiler", "") + " " + v.value("compiler_version", "")},
                                    {"entries", d.value("entries", nlohmann::json::object()).size()}});
        }
      }
      out.push_back(row);
    }
    if (json) {
      std::printf("%s\n", out.dump(2).c_str());
      return kExitOk;
    }
    if (out.empty()) std::printf("no tuning databases in %s\n", dbDir(*opts).c_str());
    for (const auto& r : out) {
      if (r.contains("error")) {
        std::printf("%s: %s\n", r["file"].get<std::string>().c_str(), r["error"].get<std::string>().c_str());
        continue;
      }
      std::printf("%s  (%s)\n", r["family"].get<std::string>().c_str(), r["file"].get<std::string>().c_str());
      for (const auto& d : r["devices"])
        std::printf("  %-28s %-8s driver %-8s %-22s %zu entries\n",
                    d["device_name"].get<std::string>().c_str(), d["arch"].get<std::string>().c_str(),
                    d["driver_version"].get<std::string>().c_str(),
                    d["compiler"].get<std::string>().c_str(), d["entries"].get<size_t>());
    }
    return kExitOk;
  }

  if (sub == "show") {
    if (pos.size() < 2 || pos.size() > 3) return usage("show needs FAMILY [KEY]", kUsage);
    auto path = familyPath(*opts, pos[1]);
    if (!path.ok()) return fail(path.status());
    auto j = loadJson(*path);
    if (!j.ok()) return fail(j.status());
    if (json && pos.size() == 2) {
      std::printf("%s\n", j->dump(2).c_str());
      return kExitOk;
    }
    int shown = 0;
    for (const auto& d : j->value("devices", nlohmann::json::array())) {
      const auto& v = d.value("validator", nlohmann::json::object());
      for (auto it = d.value("entries", nlohmann::json::object()).begin();
           it != d.value("entries", nlohmann::json::object()).end(); ++it) {
        if (pos.size() == 3 && it.key() != pos[2]) continue;
        ++shown;
        const auto& e = it.value();
        if (json) {
          std::printf("%s\n", e.dump(2).c_str());
          continue;
        }
        double med = e.value("stats", nlohmann::json::object()).value("median_ms", 0.0);
        std::printf("%s  [%s %s]\n  winner %s%s  %.2f us%s  (%s)\n", it.key().c_str(),
                    v.value("device_name", "").c_str(), v.value("arch", "").c_str(),
                    e.value("source", "jit") == "jit" ? "" : (e.value("source", "") + " ").c_str(),
                    e.value("winner", "").c_str(), med * 1e3, e.value("pinned", false) ? "  PINNED" : "",
                    e.value("date", "").c_str());
        if (pos.size() == 3) {
          for (const auto& c : e.value("candidates", nlohmann::json::array())) {
            double cm = c.value("stats", nlohmann::json::object()).value("median_ms", 0.0);
            std::string st = c.value("status", "ok");
            std::printf("    %-8s %-60.60s %s\n", st == "ok" ? (std::to_string(cm * 1e3).substr(0, 7) + "us").c_str() : "-",
                        (c.value("source", "jit") == "jit" ? "" : c.value("source", "") + " ").append(c.value("config", "")).c_str(),
                        st == "ok" ? "" : (st + ": " + c.value("reason", "")).substr(0, 80).c_str());
          }
        }
      }
    }
    if (shown == 0 && pos.size() == 3)
      return fail(Status::NotFound("no entry '" + pos[2] + "' in " + *path));
    if (!json) std::printf("%d entr%s\n", shown, shown == 1 ? "y" : "ies");
    return kExitOk;
  }

  if (sub == "rm") {
    if (pos.size() != 3) return usage("rm needs FAMILY KEY", kUsage);
    auto path = familyPath(*opts, pos[1]);
    if (!path.ok()) return fail(path.status());
    // Remove the key under every device block of the file, each through the locked writer.
    auto probe = TuningDatabase::open(*path, Validator{}, pos[1]);
    if (!probe.ok()) return fail(probe.status());
    int removed = 0;
    for (const auto& [v, n] : (*probe)->validators()) {
      auto db = TuningDatabase::open(*path, v, pos[1]);
      if (!db.ok()) return fail(db.status());
      if (!(*db)->lookup(pos[2])) continue;
      Status st = (*db)->remove(pos[2]);
      if (!st.ok()) return fail(st);
      ++removed;
    }
    if (removed == 0) return fail(Status::NotFound("no entry '" + pos[2] + "' in " + *path));
    std::printf("removed %s from %d device block(s) of %s\n", pos[2].c_str(), removed, path->c_str());
    return kExitOk;
  }

  if (sub == "export") {
    if (pos.size() != 2) return usage("export needs FAMILY", kUsage);
    auto path = familyPath(*opts, pos[1]);
    if (!path.ok()) return fail(path.status());
    auto db = TuningDatabase::open(*path, Validator{}, pos[1]);
    if (!db.ok()) return fail(db.status());
    for (const auto& w : (*db)->warnings()) std::fprintf(stderr, "ktune: warning: %s\n", w.c_str());
    Expected<std::string> text = std::string();
    if (args->has("--csv")) {  // one row per candidate, for spreadsheets (report/csv.h)
      auto view = report::loadDatabase(*path, {opts->cache_dir, {}});
      text = view.ok() ? Expected<std::string>(report::exportCsv(*view)) : view.status();
    } else {
      text = (*db)->exportJson();
    }
    if (!text.ok()) return fail(text.status());
    if (args->has("--output")) {
      Status st = writeFileAtomic(args->get("--output"), *text, 0644);
      if (!st.ok()) return fail(st);
      std::fprintf(stderr, "exported %s to %s\n", pos[1].c_str(), args->get("--output").c_str());
    } else {
      std::printf("%s\n", text->c_str());
    }
    return kExitOk;
  }

  if (sub == "import") {
    if (pos.size() != 2) return usage("import needs FILE", kUsage);
    auto j = loadJson(pos[1]);
    if (!j.ok()) return fail(j.status());
    std::string family;  // value() would throw on a non-string "family" (a hand-edited file)
    if (auto f = j->find("family"); f != j->end() && f->is_string()) family = f->get<std::string>();
    if (family.empty())
      return fail(Status::InvalidArgument("'" + pos[1] + "' has no \"family\" string field"));
    auto path = familyPath(*opts, family);
    if (!path.ok()) return fail(path.status());
    Status mk = makeDirs(dbDir(*opts), 0700);
    if (!mk.ok()) return fail(mk);
    auto db = TuningDatabase::open(*path, Validator{}, family);
    if (!db.ok()) return fail(db.status());
    auto text = readFile(pos[1]);
    if (!text.ok()) return fail(text.status());
    Status st = (*db)->importJson(*text);
    if (!st.ok()) return fail(st);
    std::printf("imported %s into %s\n", pos[1].c_str(), path->c_str());
    return kExitOk;
  }
  return usage("unknown db subcommand '" + sub + "'", kUsage);
}

}  // namespace ktune::cli
