#include "autotune/engine.h"

#include <algorithm>
#include <utility>

#include "base/fs.h"
#include "compiler/store/store.h"

namespace ktune {
namespace detail {

FamilyState* TunerEngine::findFamily(const std::string& name) {
  std::lock_guard<std::mutex> l(families_mu);
  for (auto& f : families) {
    if (f->f.name == name) return f.get();
  }
  return nullptr;
}

Expected<FunctionHandle> TunerEngine::loadFunction(const std::string& co_key, const CodeObject& co) {
  std::lock_guard<std::mutex> l(modules_mu);
  auto it = functions.find(co_key);
  if (it != functions.end()) return it->second;
  KTUNE_ASSIGN_OR_RETURN(ModuleHandle m, backend->loadModule(co.binary));
  modules.push_back(m);
  KTUNE_ASSIGN_OR_RETURN(FunctionHandle fn,
                         backend->getFunction(m, co.lowered_entry.empty() ? co.entry
                                                                          : co.lowered_entry));
  // Allow dynamic shared memory up to the opt-in limit once, so no launch has to raise it.
  if (device.shared_per_block_optin > device.shared_per_block) {
    int64_t room = device.shared_per_block_optin - co.resources.shared_bytes;
    if (room > 0) KTUNE_RETURN_IF_ERROR(backend->setMaxDynamicShared(fn, room));
  }
  functions.emplace(co_key, fn);
  return fn;
}

bool TunerEngine::functionLoaded(const std::string& co_key) {
  std::lock_guard<std::mutex> l(modules_mu);
  return functions.count(co_key) != 0;
}

Dim3 TunerEngine::launchGrid(FunctionHandle fn, const LaunchDims& d) {
  if (d.persistent_cluster <= 1) return d.grid;
  const unsigned threads = d.block.x * d.block.y * d.block.z;
  const auto key = std::make_tuple(fn.p, threads, d.shared, d.persistent_cluster);
  std::lock_guard<std::mutex> l(modules_mu);
  auto it = resident_blocks.find(key);
  if (it == resident_blocks.end()) {
    const Dim3 most{~0u, 1, 1};  // no bound but the resident clusters'
    const Dim3 g = residentClusterGrid(*backend, fn, most, d.block, d.shared, d.persistent_cluster);
    it = resident_blocks.emplace(key, g.x).first;
  }
  Dim3 g = d.grid;
  g.x = std::min(g.x, it->second);
  return g;
}

Defines definesFor(const ErasedFamily& f, const Config& c, const void* p) {
  if (f.defines) return f.defines(c, p);
  Defines d;
  for (const auto& [k, v] : c.params()) d.emplace_back(k, paramValueToString(v));
  return d;
}

Expected<CompileRequest> TunerEngine::requestFor(const ErasedFamily& f, const Config& c,
                                                 const void* p) {
  CompileRequest req;
  req.source_name = f.source_name;
  req.entry = f.entry_fn ? f.entry_fn(c, p) : f.entry;
  req.arch = device.arch;
  req.options = f.compile_options;
  if (!f.source_fn) {
    req.source = f.source;
    req.defines = definesFor(f, c, p);
    return req;
  }
  Expected<ConfigModule> m = f.source_fn(c, p);
  if (!m.ok()) return m.status().withContext("source_fn for config " + c.toString());
  if (m->text.empty())
    return Status::InvalidArgument("source_fn for config " + c.toString() + ": empty module");
  req.language = m->language;
  req.source = std::move(m->text);
  if (!m->entry.empty()) req.entry = std::move(m->entry);
  if (req.language == Language::kCpp) req.defines = definesFor(f, c, p);
  return req;
}

Expected<Compiler*> TunerEngine::compilerOf(Language l) {
  if (l == Language::kCpp) return compiler_.get();
  std::lock_guard<std::mutex> g(ir_mu);
  if (!ir_compiler) {
    KTUNE_ASSIGN_OR_RETURN(auto c, openIrCompiler());
    ir_compiler = std::shared_ptr<Compiler>(std::move(c));
  }
  return ir_compiler.get();
}

Expected<KeyedRequest> TunerEngine::keyedRequest(FamilyState& fs, const Config& c, const void* p) {
  KeyedRequest kr;
  KTUNE_ASSIGN_OR_RETURN(kr.req, requestFor(fs.f, c, p));
  KTUNE_ASSIGN_OR_RETURN(kr.compiler, compilerOf(kr.req.language));
  // The simulated compiler stands in for every language: it gets the knobs as defines too, so a
  // simulated kernel reads them as it does for C++ (real modules carry them in their text).
  if (kr.req.language != Language::kCpp && kr.compiler->name() == "sim")
    kr.req.defines = definesFor(fs.f, c, p);
  kr.key = codeObjectKey(kr.req, kr.compiler->name(), kr.compiler->version());
  return kr;
}

bool TunerEngine::inStore(FamilyState& fs, const Config& c, const void* p) {
  auto kr = keyedRequest(fs, c, p);
  return kr.ok() && store_->metadataJson(kr->key).ok();
}

Expected<CodeObject> TunerEngine::compileConfig(FamilyState& fs, const Config& c, const void* p,
                                                std::string* co_key, bool* hit, std::string* note,
                                                bool from_shared) {
  KTUNE_ASSIGN_OR_RETURN(KeyedRequest kr, keyedRequest(fs, c, p));
  CompileRequest& req = kr.req;
  Compiler* comp = kr.compiler;
  *co_key = kr.key;
  // The object is asked for by the key computed here from the family's own source and config:
  // whatever else a shared entry lists is never fetched.
  if (from_shared && opts.shared && !store_->get(*co_key).ok()) {
    std::string why;
    (void)opts.shared->fetchObject(*co_key, *store_, &why);
    warnShared(fs.f.name, "", why);  // a rejected object: compiled here instead
  }
  return store_->getOrCompile(*comp, req, hit, note);
}

// A recorded or pinned winner must be one of this family's own configs (a database shared with
// another family, a hand edit): anything else is refused, and the caller retunes. A user's pin may
// use values outside the lists (ConfigSpace::validate), never parameters the space does not have.
Status checkOwnConfig(const detail::ErasedFamily& f, const Config& c, const std::string& origin) {
  if (f.space.params().empty()) return Status::Ok();
  Status in_space = f.space.validate(c);
  if (in_space.ok() && origin != "pinned") {
    for (const auto& [name, value] : c.params()) {
      for (const auto& spec : f.space.params()) {
        if (spec.name == name &&
            std::find(spec.values.begin(), spec.values.end(), value) == spec.values.end()) {
          in_space = Status::InvalidArgument(name + "=" + paramValueToString(value) +
                                             " is not one of its listed values");
        }
      }
    }
  }
  return in_space.ok() ? in_space : in_space.withContext("not in family " + f.name + "'s config space");
}

Expected<std::unique_ptr<Selected>> TunerEngine::selectConfig(FamilyState& fs, const void* p,
                                                              const std::string& config_str,
                                                              const std::string& source,
                                                              const std::string& origin,
                                                              const WinnerBinary* bin) {
  auto sel = std::make_unique<Selected>();
  sel->config_str = config_str;
  sel->source = source;
  sel->origin = origin;
  if (isVendorSource(source)) {
    if (!fs.f.vendor_launch) {
      return Status::Unsupported("family " + fs.f.name + " has no vendor_launch for " + source);
    }
    sel->vendor = true;
    return sel;
  }
  sel->source = "jit";
  KTUNE_ASSIGN_OR_RETURN(sel->config, Config::parse(config_str));
  if (origin != "default") KTUNE_RETURN_IF_ERROR(checkOwnConfig(fs.f, sel->config, origin));
  sel->launch_flags = launchFlags(fs.f, sel->config);
  if (fs.f.launch_per_key) {
    sel->dims = fs.f.launch(sel->config, p, device);
    sel->dims_cached = true;
  }
  if (bin && !bin->co.binary.empty()) {
    // The tuning run's own binary: loaded already when it was benchmarked here, never read back
    // from the store.
    KTUNE_ASSIGN_OR_RETURN(sel->fn, loadFunction(bin->code_object_key, bin->co));
    sel->code_object_key = bin->code_object_key;
    shapes->remember(DynamicShapes::memoKey(fs.f, sel->config, p), sel->code_object_key, sel->fn);
    return sel;
  }
  std::string key, note;
  bool hit = false;
  const bool from_shared = origin == "remote" || origin == "waited";
  KTUNE_ASSIGN_OR_RETURN(CodeObject co,
                         compileConfig(fs, sel->config, p, &key, &hit, &note, from_shared));
  if (!note.empty() && opts.options.verbose) log() << "ktune: " << note << "\n";
  KTUNE_ASSIGN_OR_RETURN(sel->fn, loadFunction(key, co));
  sel->code_object_key = key;
  shapes->remember(DynamicShapes::memoKey(fs.f, sel->config, p), key, sel->fn);
  return sel;
}

std::pair<std::string, std::string> defaultOf(const ErasedFamily& f, const void* p,
                                              std::pair<std::string, std::string>* vendor_pick) {
  std::pair<std::string, std::string> def;
  if (f.vendor_candidates && f.vendor_launch) {
    for (const auto& v : f.vendor_candidates(p)) {  // one heuristic query for both
      if (v.is_default && def.second.empty()) def = {v.id, v.source};
      if (v.predicted && vendor_pick && vendor_pick->second.empty()) *vendor_pick = {v.id, v.source};
    }
  }
  if (!def.second.empty()) return def;
  if (vendor_pick) *vendor_pick = {};  // a pick replaces a vendor default only
  if (!f.jit()) return {"", ""};
  return {(f.default_for ? f.default_for(p) : f.default_config).toString(), "jit"};
}

Expected<std::unique_ptr<Selected>> TunerEngine::selectDefault(FamilyState& fs, const void* p,
                                                               const std::string& key) {
  auto [config, source] = defaultOf(fs.f, p);
  if (source.empty()) {
    return Status::Unsupported("family " + fs.f.name + ": tuning is off and there is neither a "
                               "vendor default nor a JIT default config; tune key " + key +
                               " offline");
  }
  return selectConfig(fs, p, config, source, "default");
}

Selected* TunerEngine::publish(FamilyState& fs, const KeyBuilder& kb, std::unique_ptr<Selected> s) {
  Selected* raw = s.get();
  std::unique_lock<std::shared_mutex> l(fs.mu);
  fs.owned.push_back(std::move(s));
  fs.map[kb] = raw;
  fs.epoch.fetch_add(1, std::memory_order_release);  // threads' cached hits look again
  return raw;
}

Status TunerEngine::launchSelected(FamilyState& fs, const Selected& sel, const void* p,
                                   StreamHandle s, LaunchPlan* plan) {
  if (sel.vendor) {
    if (sel.loaded.load(std::memory_order_acquire)) return fs.f.vendor_launch(sel.config_str, p, s);
    return shapes->launchVendorFirst(fs, sel, p, s);
  }
  LaunchDims d = sel.dims_cached ? sel.dims : fs.f.launch(sel.config, p, device);
  if (__builtin_expect(d.persistent_cluster > 1, 0)) d.grid = launchGrid(sel.fn, d);
  if (fs.f.before_launch) {
    KTUNE_RETURN_IF_ERROR(fs.f.before_launch(sel.config, p, s));
  } else if (plan) {
    plan->family = fs.id;
    plan->fn = sel.fn;
    plan->dims = d;
    plan->flags = sel.launch_flags;
  }
  thread_local KernelArgs args;  // reused: no allocation once warm
  args.clear();
  fs.f.launchArgs(sel.config, p, args);
  return backend->launchWith(sel.fn, d.grid, d.block, d.shared, args.data(), s, sel.launch_flags);
}

Expected<Selected*> TunerEngine::resolve(FamilyState& fs, const void* p, const KeyBuilder& kb,
                                         StreamHandle s, bool* tuned, TuneReport* report) {
  if (kb.overflowed()) {
    return Status::InvalidArgument("family " + fs.f.name + ": key has more than " +
                                   std::to_string(KeyBuilder::kMaxFields) + " fields or " +
                                   std::to_string(KeyBuilder::kMaxChars) + " string bytes");
  }
  std::lock_guard<std::mutex> slow(fs.slow_mu);
  {
    std::shared_lock<std::shared_mutex> l(fs.mu);  // another caller may have resolved it
    auto it = fs.map.find(kb);
    if (it != fs.map.end()) return it->second;
  }
  const std::string key = kb.toString();
  // Inside a stream capture nothing may tune, synchronise, allocate or load (autotune/engine_shapes.h).
  bool capturing = false;
  if (auto c = backend->isCapturing(s); c.ok()) capturing = *c;
  // 1. Database (a predicted entry is not a winner: it is predicted again below, or tuned).
  if (auto e = fs.db->lookup(key); e && e->predicted) {
    // A recorded prediction (`ktune predict --record`) runs where an untuned key would run a
    // prediction or the default; synchronous tuning measures the key instead.
    if (!opts.options.tuning || opts.options.background || capturing) {
      auto sel = shapes->selectKnown(fs, p, e->winner, e->winner_source, "predicted", capturing);
      if (sel.ok()) {
        if (opts.options.tuning) shapes->enqueue(fs, p, key);
        return publish(fs, kb, std::move(sel).value());
      }
    }
  } else if (capturing && e && !e->winner.empty()) {
    auto sel = shapes->selectKnown(fs, p, e->winner, e->winner_source,
                                   e->pinned ? "pinned" : "database", true);
    if (sel.ok()) {
      (*sel)->stats = e->winner_stats;
      return publish(fs, kb, std::move(sel).value());
    }
  } else if (e && e->unverified && !e->winner.empty() && !e->pinned) {
    // Mirrored from the fleet (`ktune remote pull`): data until it has run correctly here.
    if (Selected* sel = adoptShared(fs, p, kb, key, *e, "pulled", s)) return sel;
  } else if (e && !e->winner.empty()) {
    auto sel = selectConfig(fs, p, e->winner, e->winner_source, e->pinned ? "pinned" : "database");
    if (sel.ok()) {
      (*sel)->stats = e->winner_stats;
      if (opts.options.background) shapes->preloadLater(fs, p);  // for unseen keys of its kind
      return publish(fs, kb, std::move(sel).value());
    }
    log() << "ktune: " << fs.f.name << " [" << key << "]: database winner '" << e->winner
          << "' unusable (" << sel.status().toString() << "); "
          << (opts.options.tuning ? "retuning" : "using the default config") << "\n";
  }
  // 2. Shared results: another process or machine tuned it.
  if (opts.shared && !capturing) {
    if (Selected* shared = fromShared(fs, p, kb, key, s)) return shared;
  }
  // 3. Tuning off: the vendor default or the default config, key recorded for offline tuning.
  if (!opts.options.tuning) {
    auto [config, source] = defaultOf(fs.f, p);
    KTUNE_ASSIGN_OR_RETURN(auto sel, capturing ? shapes->selectCaptured(fs, p, config, source,
                                                                        "default")
                                               : selectDefault(fs, p, key));
    std::string path = opts.options.record_untuned_path.empty()
                           ? joinPath(opts.options.cache_dir, "untuned.jsonl")
                           : opts.options.record_untuned_path;
    std::string args = fs.f.args_json ? fs.f.args_json(p) : "{}";
    Status st = appendUntunedKey(path, fs.f.name, key, args);
    if (!st.ok()) log() << "ktune: could not record untuned key: " << st.toString() << "\n";
    return publish(fs, kb, std::move(sel));
  }
  // 3b. Background tuning, or a capture: the predicted config now, the key tuned off this thread.
  // Outside a capture, a loaded default runs at once and the prediction is resolved off this
  // thread too (autotune/engine_shapes.h): no vendor query, no module load on the caller.
  if (opts.options.background && !capturing) {
    if (auto ready = shapes->selectReady(fs, p)) {
      Selected* raw = publish(fs, kb, std::move(ready));
      shapes->resolveLater(fs, p, key, kb, raw);
      return raw;
    }
  }
  if (opts.options.background || capturing) {
    KTUNE_ASSIGN_OR_RETURN(auto sel, shapes->selectPredicted(fs, p, key, capturing));
    shapes->enqueue(fs, p, key);
    if (opts.options.background && !capturing) shapes->preloadLater(fs, p);
    return publish(fs, kb, std::move(sel));
  }
  // 4. Tune, one process at a time per key when results are shared.
  std::unique_ptr<TuningLease> lease;
  if (opts.shared) {
    Selected* other = nullptr;
    lease = awaitTurn(fs, p, kb, key, s, &other);
    if (other) return other;
  }
  std::unique_lock<std::mutex> bl(bench_mu);
  WinnerBinary bin;
  KTUNE_ASSIGN_OR_RETURN(TuneReport rep, tuneKey(fs, p, key, s, &bin));
  bl.unlock();
  *tuned = true;
  if (report) *report = rep;
  shapes->invalidate(fs);  // a new measured neighbour for predictions
  // An unseen key of this kind inside a later capture may need the JIT default (its own vendor
  // config never run here, under lazy loading): load it now, outside any capture
  // (engine_shapes_capture.cc). A load when the tuning run compiled it; else one compile per kind.
  if (fs.f.jit() && fs.f.vendor_candidates && backend->lazyLoading()) shapes->preloadNow(fs, p);
  if (opts.shared) publishShared(fs, key);  // before the lease goes: waiters look for it
  if (rep.winner.empty()) {
    std::string why;
    for (const auto& c : rep.candidates) {
      if (why.size() > 1500) break;
      why += "\n  " + c.config + ": " + codeName(c.status) + ": " + c.reason;
    }
    return Status(Code::kUnsupported, "family " + fs.f.name + " [" + key +
                                          "]: no candidate passed" + why);
  }
  KTUNE_ASSIGN_OR_RETURN(auto sel, selectConfig(fs, p, rep.winner, rep.winner_source, "memory", &bin));
  sel->stats = rep.winner_stats;
  return publish(fs, kb, std::move(sel));
}

}  // namespace detail
}  // namespace ktune
