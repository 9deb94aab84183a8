// `ktune db`: list, show, verify, remove, export and import tuning-database entries. Databases are
// the JSON files under <cache>/db/ (one per kernel family) or the one file named by KTUNE_DB (every
// family in it, each in its own part). Everything is read through TuningDatabase, which never
// throws and skips what it cannot parse; `db verify` says what it skipped.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "autotune/database.h"
#include "ops/builtin.h"
#include "base/format.h"
#include "base/fs.h"
#include "base/options.h"
#include "report/csv.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace ktune::cli {
namespace {
const char* kUsage =
    "ktune db ls | show FAMILY [KEY] | verify | rm FAMILY KEY | export FAMILY [--csv] [-o FILE] | import FILE"
    "  [--json]\n"
    "  ls       every database file, its families and device blocks with their entry counts\n"
    "  show     a family's entries (winner, time, date); with KEY also every candidate\n"
    "  verify   parse every database; exit 4 if one is corrupt or has malformed entries\n"
    "  rm       remove KEY from every device block of FAMILY\n"
    "  export   FAMILY's part as JSON, or --csv one row per candidate (stdout, or -o FILE)\n"
    "  import   merge a database file (entries pinned here are kept)\n"
    "  databases: <cache>/db/<family>.json, or the file KTUNE_DB names";

constexpr uint64_t kMaxDbBytes = kDatabaseMaxBytes;  // what the database reader accepts

bool validFamily(const std::string& f) {
  if (!isSafeFileName(f)) return false;
  for (char c : f)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

std::string dbDir(const Options& o) { return joinPath(o.cache_dir, "db"); }

Expected<std::string> familyPath(const Options& o, const std::string& family) {
  if (!validFamily(family))
    return Status::InvalidArgument("bad family name '" + family + "' (letters, digits, _ - . only)");
  if (!o.database_path.empty()) return o.database_path;
  return joinPath(dbDir(o), family + ".json");
}

// The database files: KTUNE_DB, or every <cache>/db/*.json.
Expected<std::vector<std::string>> dbFiles(const Options& o) {
  if (!o.database_path.empty()) {
    if (!pathExists(o.database_path)) return std::vector<std::string>{};
    return std::vector<std::string>{o.database_path};
  }
  KTUNE_ASSIGN_OR_RETURN(auto names, listDir(dbDir(o)));
  std::vector<std::string> files;
  for (const auto& n : names)
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) files.push_back(joinPath(dbDir(o), n));
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

Status noDatabaseFor(const Options& o, const std::string& family, const std::string& path) {
  std::string msg = "no tuning database for '" + family + "' (" + path + ")";
  std::vector<std::string> names, close;
  auto files = dbFiles(o);
  if (files.ok() && o.database_path.empty()) {
    for (const auto& f : *files) {
      const std::string n = f.substr(f.find_last_of('/') + 1);  // dbFiles: <dir>/<family>.json
      names.push_back(n.substr(0, n.size() - 5));
      if (names.back().find(family) != std::string::npos ||
          family.find(names.back()) != std::string::npos)
        close.push_back(names.back());
    }
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (names.empty()) return Status::NotFound(msg + "; no family has a database yet (tune one first)");
  msg += "; families with a database: " + join(names);
  if (!close.empty()) msg += " (did you mean " + join(close) + "?)";
  return Status::NotFound(msg);
}

namespace {

// What a database file holds; kCorrupt / kUnsupported / an I/O or permission error otherwise.
Expected<DbFileSummary> inspectFile(const std::string& path) {
  KTUNE_RETURN_IF_ERROR(checkPrivateFile(path));
  KTUNE_ASSIGN_OR_RETURN(std::string text, readFile(path, kMaxDbBytes));
  auto s = inspectDatabase(text);
  if (!s.ok()) return s.status().withContext("'" + path + "'");
  return s;
}

Expected<std::shared_ptr<TuningDatabase>> openFamily(const std::string& path,
                                                     const std::string& family,
                                                     const Validator& v = {}) {
  auto db = TuningDatabase::open(path, v, family);
  if (!db.ok()) return db.status();
  return db;
}

nlohmann::json statsJson(const BenchStats& s) {
  return {{"median_ms", s.median_ms}, {"p20_ms", s.p20_ms}, {"p80_ms", s.p80_ms}, {"runs", s.runs}};
}

nlohmann::json entryJson(const DbEntry& e, const Validator& v, bool candidates) {
  nlohmann::json j = {{"key", e.key}, {"winner", e.winner}, {"source", e.winner_source},
                      {"stats", statsJson(e.winner_stats)}, {"date", e.date}, {"pinned", e.pinned},
                      {"device", v.device_name}, {"arch", v.arch}, {"unverified", e.unverified},
                      {"origin", e.predicted ? "predicted" : "measured"}};
  if (!candidates) return j;
  j["candidates"] = nlohmann::json::array();
  for (const auto& c : e.candidates)
    j["candidates"].push_back({{"config", c.config}, {"source", c.source},
                               {"status", codeName(c.status)}, {"reason", c.reason},
                               {"stats", statsJson(c.stats)}});
  return j;
}

// Every text field comes from a file anyone may have written: printed through printable(), so an
// ANSI escape sequence in a key reaches the terminal as "\x1b[...", never as a command.
void printEntry(const DbEntry& e, const Validator& v, bool candidates) {
  const std::string src = e.winner_source == "jit" ? "" : printable(e.winner_source) + " ";
  // An entry pulled from the shared cache is data until this process has run and checked it.
  // A predicted entry (autotune/predict.h) was never timed for its key: never read as a winner.
  const char* trust = e.unverified  ? "  UNVERIFIED (pulled; verified before its first use)"
                      : e.predicted ? "  PREDICTED (from tuned neighbours; not measured)"
                                    : "  measured";
  std::printf("%s  [%s %s]\n  winner %s%s  %.2f us%s%s  (%s)\n", printable(e.key).c_str(),
              printable(v.device_name).c_str(), printable(v.arch).c_str(), src.c_str(),
              printable(e.winner).c_str(), e.winner_stats.median_ms * 1e3,
              e.pinned ? "  PINNED" : "", trust, printable(e.date).c_str());
  if (!candidates) return;
  for (const auto& c : e.candidates) {
    std::string cfg = printable((c.source == "jit" ? "" : c.source + " ") + c.config);
    char t[32] = "-";
    if (c.status == Code::kOk) std::snprintf(t, sizeof(t), "%.2fus", c.stats.median_ms * 1e3);
    std::string why = c.status == Code::kOk ? "" : std::string(codeName(c.status)) + ": " + c.reason;
    // Whole configs and reasons: two candidates that differ past a cut would read the same.
    std::printf("    %-10s %-60s %s\n", t, cfg.c_str(), printable(why).c_str());
  }
}

// JSON output: control characters come out escaped by the JSON writer; invalid UTF-8 (which would
// make it throw) is replaced.
std::string dumpJson(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

int dbLs(const Options& o, bool json) {
  auto files = dbFiles(o);
  if (!files.ok()) return failEnv(files.status());
  nlohmann::json out = nlohmann::json::array();
  bool bad = false;
  for (const auto& f : *files) {
    nlohmann::json row = {{"file", f}, {"families", nlohmann::json::array()}};
    auto sum = inspectFile(f);
    if (!sum.ok()) {
      row["error"] = sum.status().message();
      bad = true;
      out.push_back(row);
      continue;
    }
    for (const auto& fam : sum->families) {
      nlohmann::json fj = {{"family", fam}, {"devices", nlohmann::json::array()}};
      auto db = openFamily(f, fam);
      if (db.ok()) {
        for (const auto& [v, n] : (*db)->validators()) {
          int predicted = 0;  // never mistaken for measured winners (autotune/predict.h)
          if (auto dv = openFamily(f, fam, v); dv.ok())
            for (const auto& e : (*dv)->entries()) predicted += e.predicted ? 1 : 0;
          fj["devices"].push_back({{"device_name", v.device_name}, {"arch", v.arch},
                                   {"backend", v.backend}, {"driver_version", v.driver_version},
                                   {"compiler", v.compiler + " " + v.compiler_version},
                                   {"entries", n}, {"measured", n - predicted},
                                   {"predicted", predicted}});
        }
      }
      row["families"].push_back(fj);
    }
    out.push_back(row);
  }
  if (json) {
    std::printf("%s\n", dumpJson(out).c_str());
  } else {
    if (out.empty()) std::printf("no tuning databases in %s\n", dbDir(o).c_str());
    for (const auto& r : out) {
      const std::string file = r["file"];
      if (r.contains("error")) {
        std::printf("%s: CORRUPT: %s\n", file.c_str(),
                    printable(r["error"].get<std::string>()).c_str());
        continue;
      }
      for (const auto& fj : r["families"]) {
        std::printf("%s  (%s)\n", printable(fj["family"].get<std::string>()).c_str(), file.c_str());
        for (const auto& d : fj["devices"])
          std::printf("  %-28s %-8s driver %-8s %-22s %d entries (%d measured, %d predicted)\n",
                      printable(d["device_name"].get<std::string>()).c_str(),
                      printable(d["arch"].get<std::string>()).c_str(),
                      printable(d["driver_version"].get<std::string>()).c_str(),
                      printable(d["compiler"].get<std::string>()).c_str(), d["entries"].get<int>(),
                      d["measured"].get<int>(), d["predicted"].get<int>());
      }
    }
  }
  if (bad) std::fprintf(stderr, "ktune: some databases could not be read; see `ktune db verify`\n");
  return bad ? kExitCorrupt : kExitOk;
}

// Entries of file `f` that are not measured winners of this machine: pulled from the shared cache
// and not yet verified by a run here (`unverified`), or predicted (autotune/predict.h). Neither is
// a problem of the file; `db verify` lists them so an operator sees what runs on trust.
nlohmann::json trustCounts(const std::string& f, const std::vector<std::string>& families) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& fam : families) {
    auto db = openFamily(f, fam);
    if (!db.ok()) continue;
    int unverified = 0, predicted = 0;
    for (const auto& [v, n] : (*db)->validators()) {
      auto dv = openFamily(f, fam, v);
      if (!dv.ok()) continue;
      for (const auto& e : (*dv)->entries()) {
        unverified += e.unverified ? 1 : 0;
        predicted += e.predicted ? 1 : 0;
      }
    }
    if (unverified || predicted)
      out.push_back({{"family", fam}, {"unverified", unverified}, {"predicted", predicted}});
  }
  return out;
}

int dbVerify(const Options& o, bool json) {
  auto files = dbFiles(o);
  if (!files.ok()) return failEnv(files.status());
  nlohmann::json out = nlohmann::json::array();
  int problems = 0;
  for (const auto& f : *files) {
    nlohmann::json row = {{"file", f}, {"problems", nlohmann::json::array()}};
    auto sum = inspectFile(f);
    if (!sum.ok()) {
      row["problems"].push_back(sum.status().toString());
    } else {
      row["families"] = sum->families;
      for (const auto& w : sum->warnings) row["problems"].push_back(w);
      row["trust"] = trustCounts(f, sum->families);
    }
    problems += int(row["problems"].size());
    out.push_back(row);
  }
  if (json) {
    std::printf("%s\n", dumpJson(out).c_str());
  } else {
    for (const auto& r : out) {
      const std::string file = printable(r["file"].get<std::string>());
      for (const auto& p : r["problems"])
        std::printf("CORRUPT %s: %s\n", file.c_str(), printable(p.get<std::string>()).c_str());
      for (const auto& t : r.value("trust", nlohmann::json::array()))
        std::printf("NOTE %s: %s: %d UNVERIFIED (pulled from the shared cache, checked on first "
                    "use), %d predicted (not measured here)\n",
                    file.c_str(), printable(t["family"].get<std::string>()).c_str(),
                    t["unverified"].get<int>(), t["predicted"].get<int>());
    }
    std::printf("%zu database%s checked, %d problem%s\n", out.size(), out.size() == 1 ? "" : "s",
                problems, problems == 1 ? "" : "s");
  }
  return problems ? kExitCorrupt : kExitOk;
}

int dbShow(const Options& o, const std::vector<std::string>& pos, bool json) {
  if (pos.size() < 2 || pos.size() > 3) return usage("show needs FAMILY [KEY]", kUsage);
  auto path = familyPath(o, pos[1]);
  if (!path.ok()) return fail(path.status());
  if (!pathExists(*path)) return fail(noDatabaseFor(o, pos[1], *path));
  auto probe = openFamily(*path, pos[1]);
  if (!probe.ok()) return failEnv(probe.status());
  for (const auto& w : (*probe)->warnings())
    std::fprintf(stderr, "ktune: warning: %s\n", printable(w).c_str());
  const bool one = pos.size() == 3;
  nlohmann::json out = nlohmann::json::array();
  int shown = 0;
  for (const auto& [v, n] : (*probe)->validators()) {
    auto db = openFamily(*path, pos[1], v);
    if (!db.ok()) return failEnv(db.status());
    for (const auto& e : (*db)->entries()) {
      if (one && e.key != pos[2]) continue;
      ++shown;
      if (json) out.push_back(entryJson(e, v, one));
      else printEntry(e, v, one);
    }
  }
  if (shown == 0 && one) return fail(Status::NotFound("no entry '" + pos[2] + "' in " + *path));
  if (json) std::printf("%s\n", dumpJson(out).c_str());
  else std::printf("%d entr%s\n", shown, shown == 1 ? "y" : "ies");
  return kExitOk;
}

int dbRm(const Options& o, const std::vector<std::string>& pos, bool json) {
  if (pos.size() != 3) return usage("rm needs FAMILY KEY", kUsage);
  auto path = familyPath(o, pos[1]);
  if (!path.ok()) return fail(path.status());
  // Remove the key under every device block of the family, each through the locked writer.
  auto probe = openFamily(*path, pos[1]);
  if (!probe.ok()) return failEnv(probe.status());
  int removed = 0;
  for (const auto& [v, n] : (*probe)->validators()) {
    auto db = openFamily(*path, pos[1], v);
    if (!db.ok()) return failEnv(db.status());
    if (!(*db)->lookup(pos[2])) continue;
    Status st = (*db)->remove(pos[2]);
    if (!st.ok()) return fail(st);
    ++removed;
  }
  if (removed == 0) return fail(Status::NotFound("no entry '" + pos[2] + "' in " + *path));
  if (json)
    std::printf("%s\n", nlohmann::json({{"removed", pos[2]}, {"family", pos[1]},
                                        {"device_blocks", removed}, {"file", *path}})
                            .dump(2)
                            .c_str());
  else
    std::printf("removed %s from %d device block(s) of %s\n", pos[2].c_str(), removed, path->c_str());
  return kExitOk;
}

int dbExport(const Options& o, const std::vector<std::string>& pos, const std::string& output,
             bool csv) {
  if (pos.size() != 2) return usage("export needs FAMILY", kUsage);
  auto path = familyPath(o, pos[1]);
  if (!path.ok()) return fail(path.status());
  auto db = openFamily(*path, pos[1]);
  if (!db.ok()) return failEnv(db.status());
  for (const auto& w : (*db)->warnings()) std::fprintf(stderr, "ktune: warning: %s\n", printable(w).c_str());
  Expected<std::string> text = std::string();
  if (csv) {  // one row per candidate, for spreadsheets (report/csv.h)
    auto view = report::loadDatabase(*path, {o.cache_dir, {}});
    text = view.ok() ? Expected<std::string>(report::exportCsv(*view)) : view.status();
  } else {
    text = (*db)->exportJson();
  }
  if (!text.ok()) return fail(text.status());
  if (output.empty()) {
    std::printf("%s", text->c_str());
    return kExitOk;
  }
  Status st = writeFileAtomic(output, *text, 0600);
  if (!st.ok()) return fail(st);
  std::fprintf(stderr, "exported %s to %s\n", pos[1].c_str(), output.c_str());
  return kExitOk;
}

int dbImport(const Options& o, const std::vector<std::string>& pos, bool json) {
  if (pos.size() != 2) return usage("import needs FILE", kUsage);
  auto text = readFile(pos[1], kMaxDbBytes);
  if (!text.ok()) return fail(text.status());
  auto sum = inspectDatabase(*text);
  if (!sum.ok()) return fail(sum.status().withContext("'" + pos[1] + "'"));
  nlohmann::json done = nlohmann::json::array();
  int refused_total = 0;
  for (const auto& family : sum->families) {
    if (family.empty())
      return fail(Status::InvalidArgument("'" + pos[1] + "' has no \"family\" string field"));
    auto path = familyPath(o, family);
    if (!path.ok()) return fail(path.status());
    if (o.database_path.empty()) {
      Status mk = makeDirs(dbDir(o), 0700);
      if (!mk.ok()) return fail(mk);
    }
    auto db = openFamily(*path, family);
    if (!db.ok()) return failEnv(db.status());
    // Imported entries are data: a config outside the family's space is refused with its reason
    // and everything else is merged.
    std::vector<std::string> refused;
    Status st = (*db)->importJson(*text, builtinImportCheck(family), &refused);
    if (!st.ok()) return fail(st);
    refused_total += int(refused.size());
    for (const auto& w : (*db)->warnings())
      std::fprintf(stderr, "ktune: warning: %s\n", printable(w).c_str());
    for (const auto& r : refused)
      std::fprintf(stderr, "ktune db import: refused %s entry %s\n", family.c_str(),
                   printable(r).c_str());
    done.push_back({{"family", family}, {"file", *path}, {"refused", refused}});
    if (!json) std::printf("imported %s (%s) into %s\n", pos[1].c_str(), family.c_str(), path->c_str());
  }
  if (json) {
    std::printf("%s\n", nlohmann::json({{"imported", pos[1]}, {"into", done}})
                             .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                             .c_str());
  }
  return refused_total > 0 ? kExitFailed : kExitOk;
}

}  // namespace

int cmdDb(const std::vector<std::string>& argv) {
  SubcommandCall call;
  if (auto stop = startSubcommand(argv, {{"--json"}, {"--csv"}, {"--output", true, false, "-o"}},
                                  kUsage, "db", &call))
    return *stop;
  const ParsedArgs* args = &call.args;
  const Options* opts = &call.opts;
  const std::string& sub = call.sub;
  const auto& pos = args->positional;
  const bool json = args->has("--json");
  if (sub == "ls") return dbLs(*opts, json);
  if (sub == "verify") return dbVerify(*opts, json);
  if (sub == "show") return dbShow(*opts, pos, json);
  if (sub == "rm") return dbRm(*opts, pos, json);
  if (sub == "export") return dbExport(*opts, pos, args->get("--output"), args->has("--csv"));
  if (sub == "import") return dbImport(*opts, pos, json);
  return usage("unknown db subcommand '" + sub + "'", kUsage);
}

}  // namespace ktune::cli
