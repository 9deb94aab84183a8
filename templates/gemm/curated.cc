// Curated GEMM configs as data: the table shipped in templates/gemm/curated.json (built into the
// library) and a user overlay in the same format, looked up per kernel with a CLBlast-style
// fallback (device -> arch -> vendor -> default).
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "base/fs.h"
#include "base/json_bounded.h"
#include "templates/embedded.h"
#include "templates/gemm/kernel.h"

namespace ktune::gemm {
namespace {

using json = nlohmann::json;

// One entry: a config and the problem bounds under which it is offered (-1: no bound).
struct Entry {
  Config config;
  // SK_MT "auto": ceil(M / 8) clamped to 1..8 (one A tile covers M); DC_MT "auto": the smallest
  // power of two >= ceil(M / 8), at most 16 (the decode kernel's tiers; its FMA body, DC_WG = 3:
  // the smallest power of two >= M).
  const char* auto_mt = nullptr;
  int64_t max_m = -1, min_m = -1, max_n = -1, min_n = -1, max_mn = -1;
};
// kernel name -> level ("default", "vendor:cuda", "arch:sm_90a", "device:<name>") -> entries.
using Table = std::map<std::string, std::map<std::string, std::vector<Entry>>>;

constexpr const char* kBounds[] = {"max_m", "min_m", "max_n", "min_n", "max_mn"};

Expected<Entry> parseEntry(const json& e, const std::string& where) {
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument("curated GEMM table: " + where + ": " + what);
  };
  if (!e.is_object() || !e.contains("config") || !e["config"].is_object())
    return bad("an entry is an object with a \"config\" object");
  Entry out;
  for (const auto& [name, v] : e["config"].items()) {
    if ((name == "SK_MT" || name == "DC_MT") && v.is_string() && v.get<std::string>() == "auto") {
      out.auto_mt = name == "SK_MT" ? "SK_MT" : "DC_MT";
      out.config.set(name, int64_t{1});
    } else if (v.is_number_integer()) {
      out.config.set(name, v.get<int64_t>());
    } else {
      return bad("config value " + name + " must be an integer");
    }
  }
  if (e.contains("when")) {
    const json& w = e["when"];
    if (!w.is_object()) return bad("\"when\" must be an object");
    for (const auto& [name, v] : w.items()) {
      int64_t* slot[] = {&out.max_m, &out.min_m, &out.max_n, &out.min_n, &out.max_mn};
      const auto it = std::find_if(std::begin(kBounds), std::end(kBounds),
                                   [&](const char* b) { return name == b; });
      if (it == std::end(kBounds)) return bad("unknown bound \"" + name + "\" in \"when\"");
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        return bad("bound " + name + " must be a non-negative integer");
      *slot[it - std::begin(kBounds)] = v.get<int64_t>();
    }
  }
  return out;
}

// Parses a whole table; every kernel must be a known kind and every level a list of entries.
Expected<Table> parseTable(std::string_view text, const std::string& origin) {
  JsonLimits limits;
  limits.code = Code::kInvalidArgument;
  auto parsed = parseJsonBounded(text, limits);
  if (!parsed.ok()) return parsed.status().withContext("curated GEMM table " + origin);
  json doc = std::move(*parsed);
  if (!doc.is_object() || !doc.contains("kernels") || !doc["kernels"].is_object())
    return Status::InvalidArgument("curated GEMM table " + origin + ": no \"kernels\" object");
  if (doc.contains("schema") && doc["schema"] != 1)
    return Status::InvalidArgument("curated GEMM table " + origin + ": unknown schema (want 1)");
  Table t;
  for (const auto& [kernel, levels] : doc["kernels"].items()) {
    KTUNE_RETURN_IF_ERROR(parseKernelKind(kernel).status().withContext(origin));
    if (!levels.is_object())
      return Status::InvalidArgument(origin + ": kernels." + kernel + " must be an object of levels");
    for (const auto& [level, list] : levels.items()) {
      const std::string where = origin + ": kernels." + kernel + "." + level;
      if (!list.is_array()) return Status::InvalidArgument(where + " must be a list");
      auto& out = t[kernel][level];
      for (const json& e : list) {
        KTUNE_ASSIGN_OR_RETURN(Entry en, parseEntry(e, where));
        out.push_back(std::move(en));
      }
    }
  }
  return t;
}

const Expected<Table>& shippedTable() {
  static const Expected<Table> t =
      parseTable(templates::embeddedSource("gemm/curated.json"), "templates/gemm/curated.json");
  return t;
}

// The first of device, arch, vendor, default that `t` has for this kernel, or null.
const std::vector<Entry>* findLevel(const Table& t, const std::string& kernel,
                                    const std::vector<std::string>& levels) {
  const auto k = t.find(kernel);
  if (k == t.end()) return nullptr;
  for (const std::string& l : levels) {
    const auto it = k->second.find(l);
    if (it != k->second.end()) return &it->second;
  }
  return nullptr;
}

bool inBounds(const Entry& e, const GemmShape& s) {
  return (e.max_m < 0 || s.m <= e.max_m) && (e.min_m < 0 || s.m >= e.min_m) &&
         (e.max_n < 0 || s.n <= e.max_n) && (e.min_n < 0 || s.n >= e.min_n) &&
         (e.max_mn < 0 || s.m * s.n <= e.max_mn);
}

std::vector<Config> select(KernelKind k, const std::vector<Entry>& entries, const GemmShape& s) {
  std::vector<Config> out;
  for (const Entry& e : entries) {
    if (!inBounds(e, s)) continue;
    Config c = e.config;
    if (e.auto_mt && std::string(e.auto_mt) == "SK_MT")
      c.set("SK_MT", std::clamp<int64_t>(detail::ceilDiv(s.m, 8), 1, 8));
    if (e.auto_mt && std::string(e.auto_mt) == "DC_MT") {
      // The decode kind's FMA body (DC_WG = 3) counts rows of A, its other bodies 8-row tiles;
      // DC_GRID = 7 splits the rows over a pair of blocks.
      const int64_t unit = c.getInt("DC_WG", 0) == 3 ? 1 : 8;
      const int64_t rows = c.getInt("DC_GRID", 0) == 7 ? (s.m + 1) / 2 : s.m;
      int64_t mt = 1;
      while (mt < 16 && unit * mt < rows) mt *= 2;
      c.set("DC_MT", mt);
    }
    if (!configSpace(k).validate(c).ok() || !applicable(k, c, s).ok()) continue;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(std::move(c));
  }
  return out;
}

// Levels from the most specific down; the vendor is the backend the kind's kernel is written for.
std::vector<std::string> levelsFor(KernelKind k, const DeviceInfo* dev) {
  std::vector<std::string> l;
  if (dev && !dev->name.empty()) l.push_back("device:" + dev->name);
  if (dev && !dev->arch.empty()) l.push_back("arch:" + dev->arch);
  l.push_back(std::string("vendor:") + (k == KernelKind::kMfma ? "hip" : "cuda"));
  l.push_back("default");
  return l;
}

}  // namespace

Status checkCuratedTable(std::string_view json_text) {
  return parseTable(json_text, "<table>").status();
}

std::vector<Config> curatedConfigs(KernelKind k, const GemmShape& s) {
  const auto& t = shippedTable();
  if (!t.ok()) return {};  // gemm_sources_test checks that the shipped table parses
  const auto* entries = findLevel(*t, kernelKindName(k), levelsFor(k, nullptr));
  return entries ? select(k, *entries, s) : std::vector<Config>{};
}

Expected<std::vector<Config>> curatedConfigs(KernelKind k, const GemmShape& s,
                                             const DeviceInfo& dev,
                                             const std::string& overlay_path) {
  const auto& shipped = shippedTable();
  if (!shipped.ok()) return shipped.status();
  Table overlay;
  if (!overlay_path.empty()) {
    KTUNE_ASSIGN_OR_RETURN(std::string text, readFile(overlay_path));
    KTUNE_ASSIGN_OR_RETURN(overlay, parseTable(text, overlay_path));
  }
  // At each level the overlay comes first; the most specific level either has wins.
  for (const std::string& level : levelsFor(k, &dev)) {
    for (const Table* t : {static_cast<const Table*>(&overlay), &*shipped}) {
      if (const auto* entries = findLevel(*t, kernelKindName(k), {level}))
        return select(k, *entries, s);
    }
  }
  return std::vector<Config>{};
}

}  // namespace ktune::gemm
