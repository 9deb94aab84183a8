// What a call may run inside a stream capture (autotune/engine_shapes.h): a known config only
// from the memo of loaded functions (selectKnown), and vendor kernels only once loaded. Under lazy
// loading (Backend::lazyLoading, CUDA's default) a vendor library's kernel loads on its first run in
// the process; a first run inside a capture would load a module there. So inside a capture a vendor
// config runs only if it has run in this engine outside one (any thread: the caller's launches,
// the race, prepare(), the background thread's warm-up of its winner); otherwise the family's
// loaded JIT default runs in its place, and with nothing loaded the call is refused naming prepare().
#include <string>
#include <utility>

#include "autotune/engine.h"
#include "autotune/engine_shapes.h"

namespace ktune::detail {

namespace {

std::string keyOf(const FamilyState& fs, const void* p) {
  KeyBuilder kb;
  fs.f.key(p, kb);
  return kb.toString();
}

std::string loadedKey(const FamilyState& fs, const std::string& key, const std::string& config) {
  return fs.f.name + '\n' + key + '\n' + config;
}

}  // namespace

bool DynamicShapes::vendorLoaded(const FamilyState& fs, const std::string& key,
                                 const std::string& config) const {
  if (!e_.runtime().lazyLoading()) return true;  // eager: loaded with its library
  std::lock_guard<std::mutex> l(loaded_mu_);
  return vendor_loaded_.count(loadedKey(fs, key, config)) > 0;
}

void DynamicShapes::markVendorLoaded(const FamilyState& fs, const std::string& key,
                                     const std::string& config) {
  std::lock_guard<std::mutex> l(loaded_mu_);
  vendor_loaded_.insert(loadedKey(fs, key, config));
}

Status DynamicShapes::refuseUnloaded(const FamilyState& fs, const std::string& key,
                                     const std::string& config) {
  return Status::Unsupported(
      "family " + fs.f.name + " [" + key + "]: vendor config " + config +
      " has not run in this process outside a capture and the driver loads kernels lazily, so it "
      "would load inside the capture, and no JIT default is loaded; call prepare() for the key (or "
      "run it once) before capturing");
}

Status DynamicShapes::launchVendorFirst(FamilyState& fs, const Selected& sel, const void* p,
                                        StreamHandle s) {
  bool capturing = false;
  if (auto c = e_.runtime().isCapturing(s); c.ok()) capturing = *c;
  const std::string key = keyOf(fs, p);
  if (!capturing || vendorLoaded(fs, key, sel.config_str)) {
    Status st = fs.f.vendor_launch(sel.config_str, p, s);
    if (st.ok()) {
      markVendorLoaded(fs, key, sel.config_str);
      sel.loaded.store(true, std::memory_order_release);
    }
    return st;
  }
  // Inside a capture with the kernel not loaded: the loaded JIT default in its place (this call
  // only; the selection stays, and runs itself once it has run outside a capture).
  auto jit = selectLoadedDefault(fs, p);
  if (!jit.ok()) return refuseUnloaded(fs, key, sel.config_str);
  return e_.launchSelected(fs, **jit, p, s, nullptr);
}

Status DynamicShapes::warmVendor(FamilyState& fs, const Selected& sel, const void* own,
                                 StreamHandle s) {
  if (!sel.vendor || sel.loaded.load(std::memory_order_acquire)) return Status::Ok();
  const std::string key = keyOf(fs, own);
  if (!vendorLoaded(fs, key, sel.config_str)) {
    KTUNE_RETURN_IF_ERROR(fs.f.vendor_launch(sel.config_str, own, s));
    KTUNE_RETURN_IF_ERROR(e_.runtime().synchronize(s));  // the problem may be freed next
    markVendorLoaded(fs, key, sel.config_str);
  }
  sel.loaded.store(true, std::memory_order_release);
  return Status::Ok();
}

Status DynamicShapes::prepareVendor(FamilyState& fs, const Selected& sel, const void* p,
                                    StreamHandle s) {
  if (!sel.vendor || sel.loaded.load(std::memory_order_acquire)) return Status::Ok();
  if (vendorLoaded(fs, keyOf(fs, p), sel.config_str)) {
    sel.loaded.store(true, std::memory_order_release);
    return Status::Ok();
  }
  if (!fs.f.make_problem || !fs.f.args_json) {
    return Status::Unsupported("family " + fs.f.name + " cannot rebuild a problem (no make_problem"
                               "), so prepare() cannot load its vendor config " + sel.config_str +
                               " without writing the call's outputs; run the key once before "
                               "capturing");
  }
  // A problem of its own: the call's outputs (C += included) are not touched.
  auto own = fs.f.make_problem(fs.f.args_json(p));
  if (!own.ok()) return own.status();
  return warmVendor(fs, sel, own->get(), s);
}

Expected<std::unique_ptr<Selected>> DynamicShapes::selectKnown(
    FamilyState& fs, const void* p, const std::string& config, const std::string& source,
    const std::string& origin, bool capturing) {
  // A vendor candidate is selected without loading anything (its kernels load on its first run:
  // inside a capture only one that has run here qualifies). A JIT config whose function is loaded
  // already comes from the memo (no source hash, no store read: most of an unseen key's first call
  // otherwise); outside a capture anything else is compiled or loaded by the engine.
  if (isVendorSource(source)) {
    const std::string key = keyOf(fs, p);
    const bool loaded = vendorLoaded(fs, key, config);
    if (capturing && !loaded) return refuseUnloaded(fs, key, config);
    auto sel = e_.selectConfig(fs, p, config, source, origin);
    if (sel.ok() && loaded) (*sel)->loaded.store(true, std::memory_order_relaxed);
    return sel;
  }
  auto sel = std::make_unique<Selected>();
  KTUNE_ASSIGN_OR_RETURN(sel->config, Config::parse(config));
  if (!recall(memoKey(fs.f, sel->config, p), &sel->code_object_key, &sel->fn)) {
    if (!capturing) return e_.selectConfig(fs, p, config, source, origin);
    return Status::Unsupported("family " + fs.f.name + ": config " + config +
                               " is not loaded and a call inside a stream capture loads no "
                               "module; call the family's prepare() (or run the key once) "
                               "before capturing");
  }
  if (origin != "default") KTUNE_RETURN_IF_ERROR(checkOwnConfig(fs.f, sel->config, origin));
  sel->config_str = config;
  sel->source = "jit";
  sel->origin = origin;
  sel->launch_flags = e_.launchFlags(fs.f, sel->config);
  if (fs.f.launch_per_key) {
    sel->dims = fs.f.launch(sel->config, p, e_.deviceInfo());
    sel->dims_cached = true;
  }
  return sel;
}

Expected<std::unique_ptr<Selected>> DynamicShapes::selectLoadedDefault(FamilyState& fs,
                                                                      const void* p) {
  Config c;
  std::string memo;
  if (defaultMemo(fs, p, &c, &memo) && !fs.f.launch(c, p, e_.deviceInfo()).refused) {
    auto sel = selectKnown(fs, p, c.toString(), "jit", "default", true);
    if (sel.ok()) return sel;
  }
  if (auto ready = selectReady(fs, p)) {  // a loaded default of its kind that compiles the same
    ready->origin = "default";
    return std::unique_ptr<Selected>(std::move(ready));
  }
  return Status::Unsupported("family " + fs.f.name + ": no JIT default is loaded");
}

Expected<std::unique_ptr<Selected>> DynamicShapes::selectCaptured(FamilyState& fs, const void* p,
                                                                 const std::string& config,
                                                                 const std::string& source,
                                                                 const std::string& origin) {
  auto sel = selectKnown(fs, p, config, source, origin, true);
  if (sel.ok()) return sel;
  auto jit = selectLoadedDefault(fs, p);
  if (jit.ok()) return jit;
  return sel.status();  // the first reason: it names prepare()
}

}  // namespace ktune::detail
