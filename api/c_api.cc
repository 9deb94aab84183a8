// The C API (include/ktune/ktune.h) over the public C++ API: handles own C++ objects, every
// Status becomes its code plus the thread's last-error message, and no exception leaves here.
#include "ktune/ktune.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "api/c_api_util.h"
#include "api/data_family.h"
#include "base/options.h"
#include "ktune/ktune.hpp"

namespace {

static_assert(sizeof(ktune_value) == sizeof(ktune::Value), "ktune_value and ktune::Value differ");
static_assert(static_cast<int>(ktune::Code::kInternal) == KTUNE_ERR_INTERNAL, "status numbering");

using ktune::capi::check;
using ktune::capi::fail;
using ktune::capi::invalid;
using ktune::capi::ok;

thread_local std::string t_last_error;


// A malloc'ed copy of `s` for the caller to ktune_free.
int give(const std::string& s, char** out) {
  if (!out) return ok();
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) return fail(ktune::Status::OutOfResources("out of host memory"));
  std::memcpy(p, s.data(), s.size() + 1);
  *out = p;
  return ok();
}

std::string str(const char* s) { return s ? std::string(s) : std::string(); }

// The C values as C++ values (same layout; copied so no object is read through another type).
constexpr size_t kMaxArgs = ktune::api::DataFamily::kMaxArgs;
using Values = ktune::ValueArray<kMaxArgs>;
bool toValues(const ktune_value* in, size_t n, Values& out) {
  if (n > kMaxArgs || (n > 0 && !in)) return false;
  for (size_t i = 0; i < n; ++i) {
    ktune::Value x;
    x.type = static_cast<ktune::ArgType>(in[i].type);
    static_assert(sizeof(x.v) == sizeof(in[i].v), "value unions differ");
    std::memcpy(&x.v, &in[i].v, sizeof(in[i].v));
    out.set(i, x);
  }
  return true;
}

// What one call of the caller's source_fn returned, copied out of its buffers.
ktune::Expected<ktune::ConfigSource> copySource(int rc, const ktune_config_source& out) {
  if (rc != KTUNE_OK) {
    const int code = rc > 0 && rc <= KTUNE_ERR_INTERNAL ? rc : KTUNE_ERR_INTERNAL;
    return ktune::Status(static_cast<ktune::Code>(code),
                         "source_fn returned " + std::to_string(rc) +
                             (out.error ? std::string(": ") + out.error : std::string()));
  }
  if (!out.text || !out.language)
    return ktune::Status::InvalidArgument("source_fn returned KTUNE_OK without text or language");
  ktune::ConfigSource src;
  src.language = out.language;
  src.text.assign(out.text, out.size ? out.size : std::strlen(out.text));
  src.entry = str(out.entry);
  return src;
}

// The C callback as the C++ API's source_fn: calls serialised per family (ktune.h), buffers
// copied, then handed back through `release`.
std::function<ktune::Expected<ktune::ConfigSource>(const std::string&)> sourceFnOf(
    ktune_source_fn fn, void* user) {
  auto mu = std::make_shared<std::mutex>();
  return [fn, user, mu](const std::string& config) {
    std::lock_guard<std::mutex> l(*mu);
    ktune_config_source out;
    std::memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    const int rc = fn(user, config.c_str(), &out);
    auto src = copySource(rc, out);
    if (out.release) out.release(user, &out);
    return src;
  };
}

// The C hook as KernelSpec::before_run (the arguments in the C API's value type).
std::function<ktune::Status(const ktune::Value*, size_t, ktune::StreamHandle)> beforeRunOf(
    ktune_before_run_fn fn, void* user) {
  return [fn, user](const ktune::Value* args, size_t n, ktune::StreamHandle s) -> ktune::Status {
    ktune_value v[kMaxArgs];
    for (size_t i = 0; i < n && i < kMaxArgs; ++i) {
      v[i].type = static_cast<int32_t>(args[i].type);
      std::memcpy(&v[i].v, &args[i].v, sizeof(v[i].v));
    }
    const int rc = fn(user, v, n, s.p);
    if (rc == KTUNE_OK) return ktune::Status::Ok();
    const int code = rc > 0 && rc <= KTUNE_ERR_INTERNAL ? rc : KTUNE_ERR_INTERNAL;
    return ktune::Status(static_cast<ktune::Code>(code),
                         "before_run returned " + std::to_string(rc));
  };
}

ktune::KernelSpec specOf(const ktune_family_desc& d) {
  ktune::KernelSpec s;
  s.name = str(d.name);
  s.source = str(d.source);
  s.entry = str(d.entry);
  s.space_json = str(d.space_json);
  for (size_t i = 0; i < d.num_args; ++i)
    s.args.push_back({str(d.args[i].name), static_cast<ktune::ArgType>(d.args[i].type)});
  for (size_t i = 0; i < d.num_key; ++i) s.key.push_back(str(d.key[i]));
  for (int i = 0; i < 3; ++i) {
    if (d.grid[i]) s.grid.push_back(d.grid[i]);
    if (d.block[i]) s.block.push_back(d.block[i]);
  }
  s.shared_bytes = str(d.shared_bytes);
  for (size_t i = 0; i < d.num_compile_options; ++i) s.compile_options.push_back(str(d.compile_options[i]));
  if (d.source_fn) s.source_fn = sourceFnOf(d.source_fn, d.source_user);
  if (d.before_run) s.before_run = beforeRunOf(d.before_run, d.before_run_user);
  s.no_verify = d.no_verify != 0;  // zero when an older desc lacks it (copied into a zeroed one)
  s.programmatic_wait = d.programmatic_wait != 0;  // likewise
  return s;
}

int checkDesc(const ktune_family_desc* d) {
  if (!d) return invalid("ktune_family_register: null desc");
  if (d->struct_size < offsetof(ktune_family_desc, before_run))
    return invalid("ktune_family_register: desc->struct_size is " + std::to_string(d->struct_size) +
                   ", this library needs " + std::to_string(sizeof(ktune_family_desc)) +
                   " (initialise with KTUNE_FAMILY_DESC_INIT)");
  if ((d->num_args && !d->args) || (d->num_key && !d->key) ||
      (d->num_compile_options && !d->compile_options))
    return invalid("ktune_family_register: a count is set but its array is NULL");
  if (d->num_args > kMaxArgs) return invalid("ktune_family_register: more than 64 arguments");
  for (size_t i = 0; i < d->num_args; ++i) {
    if (d->args[i].type < KTUNE_ARG_PTR || d->args[i].type > KTUNE_ARG_F64)
      return invalid("ktune_family_register: argument " + std::to_string(i) + " has type " +
                     std::to_string(d->args[i].type) + " (expected a KTUNE_ARG_* value)");
  }
  if (d->source_fn && d->source)
    return invalid("ktune_family_register: source_fn replaces source: set one of them");
  return KTUNE_OK;
}

}  // namespace

namespace ktune::capi {
int fail(const Status& s) {
  t_last_error = s.toString();
  return static_cast<int>(s.code());
}
int ok() {
  t_last_error.clear();
  return KTUNE_OK;
}
}  // namespace ktune::capi

extern "C" {

const char* ktune_version(void) { return ktune::version(); }
const char* ktune_last_error(void) { return t_last_error.c_str(); }
const char* ktune_status_name(int status) {
  if (status < 0 || status > KTUNE_ERR_INTERNAL) return "unknown";
  return ktune::codeName(static_cast<ktune::Code>(status));
}
void ktune_free(void* p) { std::free(p); }

int ktune_tuner_create(const char* backend, ktune_tuner** out) {
  ktune_tuner_options o = KTUNE_TUNER_OPTIONS_INIT;
  o.backend = backend;
  return ktune_tuner_create_ex(&o, out);
}

int ktune_tuner_create_ex(const ktune_tuner_options* o, ktune_tuner** out) {
  if (!o || !out) return invalid("ktune_tuner_create: null options or out");
  // remote_cache came last: a struct that ends before it is an older caller's, without it.
  const bool has_remote = o->struct_size >= offsetof(ktune_tuner_options, search);
  const bool has_search = o->struct_size >= sizeof(ktune_tuner_options);
  if (o->struct_size < offsetof(ktune_tuner_options, remote_cache))
    return invalid("ktune_tuner_create: options->struct_size too small (use KTUNE_TUNER_OPTIONS_INIT)");
  auto env = ktune::TunerOptions::fromEnv();
  if (!env.ok()) return fail(env.status());
  ktune::TunerOptions opts = *env;
  if (o->backend && *o->backend) opts.backend = o->backend;
  if (o->device >= 0) opts.device = o->device;
  if (o->cache_dir) opts.cache_dir = o->cache_dir;
  if (o->database_path) opts.database_path = o->database_path;
  if (o->tuning >= 0) {
    opts.tuning = o->tuning != 0;
    opts.background = o->tuning == KTUNE_TUNING_BACKGROUND;
  }
  if (o->verbose >= 0) opts.verbose = o->verbose;
  if (o->isolate >= 0) opts.isolate = o->isolate != 0;
  if (has_remote && o->remote_cache) {
    if (*o->remote_cache) {
      auto u = ktune::parseRemoteUrl(o->remote_cache);
      if (!u.ok()) return fail(u.status().withContext("ktune_tuner_create: remote_cache"));
    }
    opts.remote_cache = o->remote_cache;
  }
  if (has_search && o->search) {
    const std::string s = o->search;
    if (s != "guided" && s != "exhaustive")
      return invalid("ktune_tuner_create: search must be \"guided\" or \"exhaustive\", got \"" + s + "\"");
    opts.search = s;
  }
  if (has_search && o->budget_s >= 0) opts.budget_s = o->budget_s;
  auto t = ktune::Autotuner::create(opts);
  if (!t.ok()) return fail(t.status());
  auto h = std::unique_ptr<ktune_tuner>(new (std::nothrow) ktune_tuner);
  if (!h) return fail(ktune::Status::OutOfResources("out of host memory"));
  h->t = std::move(t).value();
  h->backend = h->t->backendName();
  h->arch = h->t->arch();
  *out = h.release();
  return ok();
}

void ktune_tuner_destroy(ktune_tuner* t) { delete t; }
const char* ktune_tuner_backend(const ktune_tuner* t) { return t ? t->backend.c_str() : ""; }
const char* ktune_tuner_arch(const ktune_tuner* t) { return t ? t->arch.c_str() : ""; }
uint64_t ktune_tuner_wait_background(ktune_tuner* t) {
  if (!t || !t->t) return 0;
  t->t->waitBackground();
  return t->t->backgroundTuned();
}

int ktune_family_register(ktune_tuner* t, const ktune_family_desc* d, ktune_family** out) {
  if (!t || !out) return invalid("ktune_family_register: null tuner or out");
  if (int rc = checkDesc(d); rc != KTUNE_OK) return rc;
  // A desc of an older, smaller layout: the fields it lacks are zero (no hook).
  ktune_family_desc full;
  std::memset(&full, 0, sizeof full);
  std::memcpy(&full, d, std::min(d->struct_size, sizeof full));
  auto k = t->t->addKernel(specOf(full));
  if (!k.ok()) return fail(k.status());
  auto f = std::make_unique<ktune_family>();
  f->kernel = std::move(k).value();
  std::lock_guard<std::mutex> l(t->mu);
  t->families.push_back(std::move(f));
  *out = t->families.back().get();
  return ok();
}

int ktune_family_call(ktune_family* f, const ktune_value* args, size_t n, ktune_stream s) {
  Values v;
  if (!f || !toValues(args, n, v)) return invalid("ktune_family_call: null family or bad args");
  ktune::Status st = f->kernel(v.data(), n, ktune::StreamHandle{s});
  return st.ok() ? KTUNE_OK : fail(st);  // the hot path leaves the last error alone on success
}

int ktune_family_tune(ktune_family* f, const ktune_value* args, size_t n, ktune_stream s,
                      char** report_json) {
  Values v;
  if (!f || !toValues(args, n, v)) return invalid("ktune_family_tune: null family or bad args");
  auto r = f->kernel.tune(v.data(), n, ktune::StreamHandle{s});
  if (!r.ok()) return fail(r.status());
  return give(r->toJson(), report_json);
}

int ktune_family_key(ktune_family* f, const ktune_value* args, size_t n, char** key) {
  Values v;
  if (!f || !key || !toValues(args, n, v)) return invalid("ktune_family_key: null argument");
  auto k = f->kernel.key(v.data(), n);
  if (!k.ok()) return fail(k.status());
  return give(*k, key);
}

int ktune_report_json(ktune_tuner* t, const char* family, const char* key, char** json) {
  if (!t || !family || !key || !json) return invalid("ktune_report_json: null argument");
  auto r = t->t->report(family, key);
  if (!r.ok()) return fail(r.status());
  return give(r->toJson(), json);
}

int ktune_db_export(ktune_tuner* t, const char* family, char** json) {
  if (!t || !family || !json) return invalid("ktune_db_export: null argument");
  auto r = t->t->exportDatabase(family);
  if (!r.ok()) return fail(r.status());
  return give(*r, json);
}

int ktune_db_import(ktune_tuner* t, const char* family, const char* json) {
  if (!t || !family || !json) return invalid("ktune_db_import: null argument");
  return check(t->t->importDatabase(family, json));
}

int ktune_db_remove(ktune_tuner* t, const char* family, const char* key) {
  if (!t || !family || !key) return invalid("ktune_db_remove: null argument");
  return check(t->t->removeKey(family, key));
}

int ktune_cache_dir(ktune_tuner* t, char** dir) {
  if (!t || !dir) return invalid("ktune_cache_dir: null argument");
  return give(t->t->cacheDir(), dir);
}

int ktune_worker_path(ktune_tuner* t, char** path) {
  if (!t || !path) return invalid("ktune_worker_path: null argument");
  auto w = t->t->workerPath();
  if (!w.ok()) return fail(w.status());
  return give(*w, path);
}

int ktune_cache_clear(ktune_tuner* t) {
  if (!t) return invalid("ktune_cache_clear: null tuner");
  return check(t->t->clearCache());
}

int ktune_malloc(ktune_tuner* t, size_t bytes, uint64_t* out) {
  if (!t || !out) return invalid("ktune_malloc: null argument");
  auto p = t->t->alloc(bytes);
  if (!p.ok()) return fail(p.status());
  *out = *p;
  return ok();
}
int ktune_mfree(ktune_tuner* t, uint64_t p) {
  if (!t) return invalid("ktune_mfree: null tuner");
  return check(t->t->free(p));
}
int ktune_memcpy_htod(ktune_tuner* t, uint64_t dst, const void* src, size_t bytes) {
  if (!t || !src) return invalid("ktune_memcpy_htod: null argument");
  return check(t->t->copyToDevice(dst, src, bytes));
}
int ktune_memcpy_dtoh(ktune_tuner* t, void* dst, uint64_t src, size_t bytes) {
  if (!t || !dst) return invalid("ktune_memcpy_dtoh: null argument");
  return check(t->t->copyToHost(dst, src, bytes));
}
int ktune_synchronize(ktune_tuner* t, ktune_stream s) {
  if (!t) return invalid("ktune_synchronize: null tuner");
  return check(t->t->synchronize(ktune::StreamHandle{s}));
}

}  // extern "C"
