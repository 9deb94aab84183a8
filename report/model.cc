#include "report/model.h"

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "autotune/results.h"
#include "ops/gemm_configs.h"
#include "base/fs.h"
#include "base/json_bounded.h"
#include "compiler/analysis/report.h"
#include "compiler/store/store.h"
#include "base/device.h"

namespace ktune::report {

double KeyView::speedup() const {
  if (winner_index < 0 || default_index < 0) return 0;
  const auto& w = candidates[size_t(winner_index)].result;
  const auto& d = candidates[size_t(default_index)].result;
  if (w.status != Code::kOk || d.status != Code::kOk) return 0;
  if (w.stats.median_ms <= 0 || d.stats.median_ms <= 0) return 0;
  return d.stats.median_ms / w.stats.median_ms;
}

int vendorDefaultIndex(const std::vector<CandidateView>& cands) {
  int fallback = -1;
  for (size_t i = 0; i < cands.size(); ++i) {
    const auto& r = cands[i].result;
    if (isVendorSource(r.source) && r.config.rfind(r.source + ":idx=0:", 0) == 0)
      return int(i);
    if (r.source == "default" && fallback < 0) fallback = int(i);
  }
  return fallback;
}

int countOk(const KeyView& k) {
  int n = 0;
  for (const auto& c : k.candidates) n += c.result.status == Code::kOk;
  return n;
}

namespace {

// Per code-object key: what the store says (looked up once; keys repeat across problem keys).
struct StoreInfo {
  bool found = false;
  std::string note;
  KernelReport report;  // without the ISA part unless `with_isa`
  bool with_isa = false;
};

// The launch a candidate ran with, where its family's rule is known here (a GEMM config: the block
// and dynamic shared memory of gemm_ops::configLaunch); else zeros: the kernel's own bound, no
// dynamic part. Occupancy is computed for it (the NVIDIA GEMM tiles are dynamic shared memory).
PruneLaunch launchOf(const std::string& config, const std::string& arch) {
  auto c = Config::parse(config);
  if (!c.ok()) return {};
  DeviceInfo dev;
  dev.arch = arch;
  dev.vendor = Arch(arch).isAmd() ? Vendor::kAmd : Vendor::kNvidia;
  return gemm_ops::configLaunch(*c, dev);
}

class StoreReader {
 public:
  explicit StoreReader(const std::string& dir, std::string* note) {
    if (dir.empty()) {
      *note = "no code-object store given";
      return;
    }
    if (!pathExists(joinPath(dir, "objects"))) {
      *note = "no code-object store at " + dir;
      return;
    }
    auto s = CodeObjectStore::open(dir);
    if (!s.ok()) {
      *note = "code-object store unusable: " + s.status().message();
      return;
    }
    store_ = *s;
    *note = "registers and occupancy from the code-object store at " + dir;
  }

  // `config`: the candidate's, for its launch (launchOf); a code-object key has one config.
  const StoreInfo& get(const std::string& key, bool with_isa, const std::string& config) {
    StoreInfo& info = cache_[key];
    if (info.found && (info.with_isa || !with_isa)) return info;
    if (!info.note.empty()) return info;
    if (!store_ || !isValidCodeObjectKey(key)) {
      info.note = "not in the store";
      return info;
    }
    auto co = store_->get(key);
    if (!co.ok()) {
      info.note = co.status().code() == Code::kNotFound ? "not in the store"
                                                        : "store entry unusable: " +
                                                              co.status().message();
      return info;
    }
    // The ISA analysis reads whole dumps: only the winners need it.
    if (!with_isa) co->dumps.clear();
    const PruneLaunch launch = launchOf(config, co->arch);
    info.report = analyzeCodeObject(*co, launch.threads_per_block, launch.dynamic_shared);
    info.found = true;
    info.with_isa = with_isa;
    return info;
  }

 private:
  std::shared_ptr<CodeObjectStore> store_;
  std::map<std::string, StoreInfo> cache_;
};

void fillResources(const KernelReport& r, CandidateView* c) {
  c->has_resources = true;
  const auto& u = r.resources;
  const bool amd = Arch(r.arch).isAmd();
  c->registers = amd ? u.vgpr : u.registers;  // .vgpr_count already holds the AGPRs
  c->shared_bytes = occupancySharedBytes(u, r.dynamic_shared);
  c->spills = u.spills();
  if (!r.has_occupancy) return;
  c->has_occupancy = true;
  if (!amd) {
    c->occupancy = r.nv.occupancy;
    return;
  }
  auto lim = amdArchLimits(r.arch);
  c->occupancy = lim.ok() && lim->max_waves_per_simd > 0
                     ? r.amd.waves_per_eu / lim->max_waves_per_simd
                     : 0;
  c->has_occupancy = lim.ok();
}

WinnerReport winnerReport(const StoreInfo& info) {
  WinnerReport w;
  if (!info.found) {
    w.note = info.note;
    return w;
  }
  w.available = true;
  const KernelReport& r = info.report;
  w.text = r.text();
  w.checks.push_back({"no register spills or scratch traffic",
                      !r.resources.spills() && (!r.has_isa || r.isa.scratch_ops == 0)});
  if (r.has_occupancy) w.checks.push_back({"occupancy computed from the resource usage", true});
  if (r.has_isa) {
    w.checks.push_back({"16-byte global loads (" + r.isa_source + ")", r.isa.globalLoads(128) > 0});
    w.checks.push_back({"matrix instructions used", !r.isa.matrix.empty()});
    w.checks.push_back({"no waits inside innermost loops", r.isa.waitcnt_in_loop == 0});
  }
  return w;
}

KeyView makeKey(DbEntry e, StoreReader& store) {
  KeyView k;
  k.candidates.reserve(e.candidates.size());
  for (auto& c : e.candidates) {
    CandidateView v;
    v.result = std::move(c);
    v.is_winner = v.result.config == e.winner && v.result.source == e.winner_source &&
                  k.winner_index < 0;
    if (v.is_winner) k.winner_index = int(k.candidates.size());
    if (!v.result.code_object_key.empty()) {
      const StoreInfo& info = store.get(v.result.code_object_key, v.is_winner, v.result.config);
      if (info.found) fillResources(info.report, &v);
    }
    k.candidates.push_back(std::move(v));
  }
  e.candidates.clear();
  k.default_index = vendorDefaultIndex(k.candidates);
  if (k.default_index >= 0) k.candidates[size_t(k.default_index)].is_vendor_default = true;
  if (k.winner_index >= 0) {
    const auto& key = k.candidates[size_t(k.winner_index)].result.code_object_key;
    k.winner_report = key.empty() ? WinnerReport{false, "no code object (a vendor library "
                                                        "algorithm or a failed compile)", "", {}}
                                  : winnerReport(store.get(
                                        key, true, k.candidates[size_t(k.winner_index)].result.config));
  } else {
    k.winner_report.note = "the winner is not among the recorded candidates";
  }
  k.entry = std::move(e);
  return k;
}

// The "family" field of the file (the database API reads it but does not expose it).
std::string familyOf(const TuningDatabase& db) {
  auto text = db.exportJson();
  if (!text.ok()) return "";
  auto j = parseJsonOrDiscarded(*text);
  if (j.is_discarded() || !j.is_object()) return "";
  auto f = j.find("family");
  return f != j.end() && f->is_string() ? f->get<std::string>() : "";
}

}  // namespace

Expected<DatabaseView> loadDatabase(const std::string& path, const LoadOptions& opts) {
  if (!pathExists(path)) return Status::NotFound("no tuning database '" + path + "'");
  KTUNE_ASSIGN_OR_RETURN(auto probe, TuningDatabase::open(path, Validator{}));
  DatabaseView out;
  out.path = path;
  out.family = familyOf(*probe);
  out.warnings = probe->warnings();
  StoreReader store(opts.store_dir, &out.store_note);
  for (const auto& [v, n] : probe->validators()) {
    KTUNE_ASSIGN_OR_RETURN(auto db, TuningDatabase::open(path, v));
    DeviceView d;
    d.validator = v;
    for (auto& e : db->entries()) {
      if (!opts.keys.empty() &&
          std::find(opts.keys.begin(), opts.keys.end(), e.key) == opts.keys.end())
        continue;
      d.keys.push_back(makeKey(std::move(e), store));
    }
    out.devices.push_back(std::move(d));
  }
  return out;
}

}  // namespace ktune::report
