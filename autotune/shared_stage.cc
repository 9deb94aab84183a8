// The engine's side of shared results (EngineOptions::shared, autotune/shared_tuning.h): a key
// missing from the local database is looked up in the shared cache, tuned by one process at a
// time, and published after tuning. Whatever the shared side does, a call never fails because of
// it: problems are logged (with KTUNE_VERBOSE) and the engine goes on locally.
#include <optional>

#include "autotune/engine.h"
#include "compiler/store/store.h"

namespace ktune::detail {

namespace {
void note(TunerEngine& e, const FamilyState& fs, const std::string& key, const std::string& what) {
  if (!what.empty() && e.opts.options.verbose) {
    e.log() << "ktune: " << fs.f.name << " [" << key << "]: shared cache: " << what << "\n";
  }
}
}  // namespace

Selected* TunerEngine::fromShared(FamilyState& fs, const void* p, const KeyBuilder& kb,
                                  const std::string& key) {
  std::string why;
  std::optional<DbEntry> e = opts.shared->fetch(fs.f.name, validator, key, *store, &why);
  note(*this, fs, key, why);
  if (!e) return nullptr;
  auto sel = selectConfig(fs, p, e->winner, e->winner_source, "remote");
  if (!sel.ok()) {
    note(*this, fs, key, "winner '" + e->winner + "' unusable: " + sel.status().toString());
    return nullptr;
  }
  (*sel)->stats = e->winner_stats;
  Status st = fs.db->record(*e);  // later processes on this machine find it locally
  if (!st.ok()) note(*this, fs, key, "not recorded locally: " + st.toString());
  return publish(fs, kb, std::move(sel).value());
}

std::unique_ptr<TuningLease> TunerEngine::awaitTurn(FamilyState& fs, const void* p,
                                                    const KeyBuilder& kb, const std::string& key,
                                                    Selected** sel) {
  *sel = nullptr;
  // Done elsewhere: in the local database (another process here) or published (elsewhere).
  auto done = [&] {
    (void)fs.db->reload();
    if (auto e = fs.db->lookup(key); e && !e->winner.empty()) return true;
    std::string ignored;
    std::optional<DbEntry> e = opts.shared->fetch(fs.f.name, validator, key, *store, &ignored);
    return e && fs.db->record(*e).ok();
  };
  bool waited = false;
  std::string why;
  auto lease = opts.shared->acquire(fs.f.name, validator, key, done, &waited, &why);
  note(*this, fs, key, why);
  if (lease) return lease;
  std::optional<DbEntry> e = fs.db->lookup(key);
  if (e && !e->winner.empty()) {
    auto s = selectConfig(fs, p, e->winner, e->winner_source, waited ? "waited" : "database");
    if (s.ok()) {
      (*s)->stats = e->winner_stats;
      *sel = publish(fs, kb, std::move(s).value());
      return nullptr;
    }
    note(*this, fs, key, "winner '" + e->winner + "' unusable: " + s.status().toString());
  }
  // Tuned elsewhere but not usable here: tune it here, without a lease (never blocks again).
  return std::make_unique<TuningLease>();
}

void TunerEngine::publishShared(FamilyState& fs, const std::string& key) {
  std::optional<DbEntry> e = fs.db->lookup(key);
  if (!e || e->winner.empty()) return;
  std::string why;
  opts.shared->publish(fs.f.name, validator, *e, *store, &why);
  note(*this, fs, key, why);
}

}  // namespace ktune::detail
