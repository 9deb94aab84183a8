// The engine's side of shared results (EngineOptions::shared, autotune/shared_tuning.h): a key
// missing from the local database is looked up in the shared cache, tuned by one process at a
// time, and published after tuning. Whatever the shared side does, a call never fails because of
// it: the first problem is printed once as a warning (every one with KTUNE_VERBOSE) and the engine
// goes on locally.
//
// A shared entry is data from an untrusted place: its winner must be one of the family's own
// configs, is compiled here (or loaded from an object the fleet's key authenticated), and is run
// and verified once on this problem before it is used or recorded; a winner that fails is
// rejected and the key tuned here.
#include <optional>

#include "autotune/engine.h"
#include "compiler/store/store.h"

namespace ktune::detail {

void TunerEngine::warnShared(const std::string& family, const std::string& key,
                             const std::string& what) {
  if (what.empty()) return;
  const std::string where = family + (key.empty() ? "" : " [" + key + "]");
  if (opts.options.verbose) {
    log() << "ktune: " << where << ": shared cache: " << what << "\n";
  } else if (!shared_warned.exchange(true)) {
    log() << "ktune: warning: " << where << ": shared cache: " << what
          << " (tuning goes on locally; later remote messages only with KTUNE_VERBOSE=1)\n";
  }
}

namespace {
void note(TunerEngine& e, const FamilyState& fs, const std::string& key, const std::string& what) {
  e.warnShared(fs.f.name, key, what);
}
}  // namespace

Status TunerEngine::verifyBeforeUse(FamilyState& fs, const void* p, const Selected& sel,
                                    StreamHandle s) {
  std::lock_guard<std::mutex> bl(bench_mu);  // no timing of another key runs meanwhile
  Status st = fs.f.pre_run ? fs.f.pre_run(p, s) : Status::Ok();
  if (st.ok()) st = launchSelected(fs, sel, p, s);
  if (st.ok()) st = backend->synchronize(s);
  if (st.ok()) st = backend->checkError();
  if (!st.ok()) {
    (void)backend->checkError();  // clear a sticky error before the key is tuned here
    return st;
  }
  if (fs.f.verify) {
    auto v = fs.f.verify(p, s);
    if (!v.ok()) return v.status();
    if (!v->ok) return v->toStatus();
  }
  // The check ran on the caller's buffers: reset outputs and in-place inputs, as after tuning,
  // so the call that follows computes from the caller's values (an in-place kernel would
  // otherwise be applied twice).
  return fs.f.pre_run ? fs.f.pre_run(p, s) : Status::Ok();
}

Selected* TunerEngine::adoptShared(FamilyState& fs, const void* p, const KeyBuilder& kb,
                                   const std::string& key, DbEntry e, const std::string& origin,
                                   StreamHandle s) {
  auto sel = selectConfig(fs, p, e.winner, e.winner_source, origin);
  Status st = sel.ok() ? verifyBeforeUse(fs, p, **sel, s) : sel.status();
  if (!st.ok()) {
    note(*this, fs, key, "shared winner '" + e.winner + "' rejected: " + st.toString());
    return nullptr;
  }
  (*sel)->stats = e.winner_stats;
  // The local entry names only the object this process compiled (or authenticated) for the
  // winner, never what the remote listed.
  e.code_object_keys.clear();
  if (!(*sel)->code_object_key.empty()) e.code_object_keys.push_back((*sel)->code_object_key);
  e.unverified = false;
  Status rec = fs.db->record(e);  // later processes on this machine find it locally
  if (!rec.ok()) note(*this, fs, key, "not recorded locally: " + rec.toString());
  return publish(fs, kb, std::move(sel).value());
}

std::optional<DbEntry> TunerEngine::peekShared(FamilyState& fs, const std::string& key) {
  std::string why;
  std::optional<DbEntry> e = opts.shared->fetch(fs.f.name, validator, key, &why);
  note(*this, fs, key, why);
  if (!e) return std::nullopt;
  Status st;
  if (!isVendorSource(e->winner_source)) {
    auto c = Config::parse(e->winner);
    st = c.ok() ? checkOwnConfig(fs.f, *c, "remote") : c.status();
  } else if (!fs.f.vendor_launch) {
    st = Status::Unsupported("family " + fs.f.name + " has no vendor_launch for " + e->winner_source);
  }
  if (!st.ok()) {
    note(*this, fs, key, "shared winner '" + e->winner + "' rejected: " + st.toString());
    return std::nullopt;
  }
  return e;
}

Selected* TunerEngine::fromShared(FamilyState& fs, const void* p, const KeyBuilder& kb,
                                  const std::string& key, StreamHandle s) {
  std::string why;
  std::optional<DbEntry> e = opts.shared->fetch(fs.f.name, validator, key, &why);
  note(*this, fs, key, why);
  if (!e) return nullptr;
  return adoptShared(fs, p, kb, key, std::move(*e), "remote", s);
}

std::unique_ptr<TuningLease> TunerEngine::awaitTurn(FamilyState& fs, const void* p,
                                                    const KeyBuilder& kb, const std::string& key,
                                                    StreamHandle s, Selected** sel) {
  *sel = nullptr;
  // Done elsewhere: in the local database (another process here) or published (elsewhere; kept
  // aside, not recorded, until it has been verified here).
  std::optional<DbEntry> shared;
  auto done = [&] {
    (void)fs.db->reload();
    if (auto e = fs.db->lookup(key); e && !e->winner.empty()) return true;
    std::string ignored;
    if (!shared) shared = opts.shared->fetch(fs.f.name, validator, key, &ignored);
    return shared.has_value();
  };
  bool waited = false;
  std::string why;
  auto lease = opts.shared->acquire(fs.f.name, validator, key, done, &waited, &why);
  note(*this, fs, key, why);
  if (lease) return lease;
  std::optional<DbEntry> e = fs.db->lookup(key);
  if (e && !e->winner.empty()) {
    auto got = selectConfig(fs, p, e->winner, e->winner_source, waited ? "waited" : "database");
    if (got.ok()) {
      (*got)->stats = e->winner_stats;
      *sel = publish(fs, kb, std::move(got).value());
      return nullptr;
    }
    note(*this, fs, key, "winner '" + e->winner + "' unusable: " + got.status().toString());
  } else if (shared) {
    *sel = adoptShared(fs, p, kb, key, std::move(*shared), "waited", s);
    if (*sel) return nullptr;
  }
  // Tuned elsewhere but not usable here: tune it here, without a lease (never blocks again).
  return std::make_unique<TuningLease>();
}

void TunerEngine::publishShared(FamilyState& fs, const std::string& key) {
  std::optional<DbEntry> e = fs.db->lookup(key);
  if (!e || e->winner.empty()) return;
  std::string why;
  opts.shared->publish(fs.f.name, validator, *e, *store_, &why);
  note(*this, fs, key, why);
}

}  // namespace ktune::detail
