#include "base/options.h"

#include <cstdlib>
#include <string>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"

namespace ktune {
namespace {
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}
Status parseBool(const char* name, const char* v, bool* out) {
  std::string s = v;
  if (s == "1" || s == "on" || s == "true" || s == "yes") { *out = true; return Status::Ok(); }
  if (s == "0" || s == "off" || s == "false" || s == "no") { *out = false; return Status::Ok(); }
  return Status::InvalidArgument(std::string(name) + "='" + s + "' is not a boolean (use 0 or 1)");
}
Status parseInt(const char* name, const char* v, int* out) {
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || x < 0 || x > 1'000'000)
    return Status::InvalidArgument(std::string(name) + "='" + v + "' is not a non-negative integer");
  *out = int(x);
  return Status::Ok();
}
Status parseDouble(const char* name, const char* v, double* out) {
  char* end = nullptr;
  double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(x > 0) || x > 1e6)
    return Status::InvalidArgument(std::string(name) + "='" + v + "' is not a positive number");
  *out = x;
  return Status::Ok();
}
// The remote's HMAC key from KTUNE_REMOTE_KEY_FILE or the variable KTUNE_REMOTE_KEY_VAR names.
Status readRemoteKey(std::string* out) {
  const char* file = env("KTUNE_REMOTE_KEY_FILE");
  const char* var = env("KTUNE_REMOTE_KEY_VAR");
  if (file && var) return Status::InvalidArgument("set KTUNE_REMOTE_KEY_FILE or KTUNE_REMOTE_KEY_VAR, not both");
  std::string key, from;
  if (file) {
    from = std::string("KTUNE_REMOTE_KEY_FILE='") + file + "'";
    struct stat st {};
    if (::stat(file, &st) != 0) return Status::InvalidArgument(from + ": cannot be read");
    KTUNE_RETURN_IF_ERROR(checkPrivateFile(file).withContext(from));
    if (st.st_mode & 0044) {
      return Status::InvalidArgument(from + " is readable by group or others; chmod 600 it");
    }
    auto text = readFile(file, 4096);
    if (!text.ok()) return text.status().withContext(from);
    key = *text;
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
  } else if (var) {
    from = std::string("KTUNE_REMOTE_KEY_VAR='") + var + "'";
    const char* v = env(var);
    if (!v) return Status::InvalidArgument(from + ": that variable is not set");
    key = v;
  } else {
    return Status::Ok();
  }
  if (key.size() < 16) return Status::InvalidArgument(from + ": the key must have at least 16 bytes");
  *out = std::move(key);
  return Status::Ok();
}

// KTUNE_FINALISTS, KTUNE_FINALIST_MARGIN, KTUNE_FINALIST_PAIRING (TunerOptions::fromEnv's part).
Status finalistsFromEnv(Options& o) {
  if (const char* v = env("KTUNE_FINALISTS")) {
    KTUNE_RETURN_IF_ERROR(parseInt("KTUNE_FINALISTS", v, &o.finalists));
    if (o.finalists < 0) return Status::InvalidArgument("KTUNE_FINALISTS must be >= 0");
  }
  if (const char* v = env("KTUNE_FINALIST_MARGIN")) {
    KTUNE_RETURN_IF_ERROR(parseDouble("KTUNE_FINALIST_MARGIN", v, &o.finalist_margin));
    if (!(o.finalist_margin >= 0 && o.finalist_margin < 0.5))
      return Status::InvalidArgument(std::string("KTUNE_FINALIST_MARGIN='") + v +
                                     "' must be in [0, 0.5)");
  }
  if (const char* v = env("KTUNE_FINALIST_PAIRING")) {
    o.finalist_pairing = v;
    if (o.finalist_pairing != "rotated" && o.finalist_pairing != "adjacent" &&
        o.finalist_pairing != "drift")
      return Status::InvalidArgument(std::string("KTUNE_FINALIST_PAIRING='") + v +
                                     "': expected rotated, adjacent or drift");
  }
  return Status::Ok();
}

}  // namespace

std::string RemoteUrl::display() const {
  std::string who = user.empty() ? "" : user + "@";
  return "redis://" + who + host + ":" + std::to_string(port) + "/" + std::to_string(db);
}

Expected<RemoteUrl> parseRemoteUrl(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("remote '" + text + "': " + why +
                                   " (expected redis://[user:password@]host:port/db)");
  };
  const std::string scheme = "redis://";
  if (text.compare(0, scheme.size(), scheme) != 0) return bad("not a redis:// URL");
  std::string rest = text.substr(scheme.size());
  RemoteUrl u;
  size_t at = rest.rfind('@');
  if (at != std::string::npos) {
    std::string cred = rest.substr(0, at);
    rest = rest.substr(at + 1);
    size_t colon = cred.find(':');
    u.user = colon == std::string::npos ? cred : cred.substr(0, colon);
    if (colon != std::string::npos) u.password = cred.substr(colon + 1);
    if (colon == std::string::npos) std::swap(u.user, u.password);  // redis://password@host
  }
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  if (slash != std::string::npos && slash + 1 < rest.size()) {
    KTUNE_RETURN_IF_ERROR(parseInt("db", rest.c_str() + slash + 1, &u.db));
  }
  size_t colon = hostport.rfind(':');
  u.host = hostport.substr(0, colon);
  if (colon != std::string::npos) {
    Status s = parseInt("port", hostport.c_str() + colon + 1, &u.port);
    if (!s.ok() || u.port == 0 || u.port > 65535) return bad("bad port");
  }
  if (u.host.empty()) return bad("no host");
  if (u.db > 15) return bad("db must be 0..15");
  return u;
}

std::string TunerOptions::defaultCacheDir() {
  if (const char* d = env("KTUNE_CACHE_DIR")) return d;
  if (const char* x = env("XDG_CACHE_HOME")) return std::string(x) + "/ktune";
  if (const char* h = env("HOME")) return std::string(h) + "/.cache/ktune";
  return "/tmp/ktune-cache-" + std::to_string(::getuid());
}

Expected<TunerOptions> TunerOptions::fromEnv() {
  Options o;
  o.cache_dir = defaultCacheDir();
  if (const char* v = env("KTUNE_TUNING")) {
    o.background = std::string(v) == "background";
    if (!o.background) KTUNE_RETURN_IF_ERROR(parseBool("KTUNE_TUNING", v, &o.tuning));
  }
  if (const char* v = env("KTUNE_BACKGROUND_DUTY")) {
    KTUNE_RETURN_IF_ERROR(parseDouble("KTUNE_BACKGROUND_DUTY", v, &o.background_duty));
    if (!(o.background_duty > 0 && o.background_duty <= 1))
      return Status::InvalidArgument(std::string("KTUNE_BACKGROUND_DUTY='") + v + "' must be in (0, 1]");
  }
  if (const char* v = env("KTUNE_RECORD_UNTUNED")) o.record_untuned_path = v;
  if (const char* v = env("KTUNE_DB")) o.database_path = v;
  if (const char* v = env("KTUNE_CURATED")) o.curated_path = v;
  if (const char* v = env("KTUNE_VERBOSE")) KTUNE_RETURN_IF_ERROR(parseInt("KTUNE_VERBOSE", v, &o.verbose));
  if (const char* v = env("KTUNE_ISOLATE")) {
    KTUNE_RETURN_IF_ERROR(parseBool("KTUNE_ISOLATE", v, &o.isolate));
    o.isolate_explicit = true;
  }
  if (const char* v = env("KTUNE_WORKER")) o.worker_path = v;
  if (const char* v = env("KTUNE_WORKER_PLUGINS")) {
    std::string all = v;
    size_t pos = 0;
    while (pos <= all.size()) {
      size_t c = all.find(':', pos);
      if (c == std::string::npos) c = all.size();
      if (c > pos) o.worker_plugins.push_back(all.substr(pos, c - pos));
      pos = c + 1;
    }
  }
  if (const char* v = env("KTUNE_COMPILE_THREADS"))
    KTUNE_RETURN_IF_ERROR(parseInt("KTUNE_COMPILE_THREADS", v, &o.compile_threads));
  if (const char* v = env("KTUNE_COMPILE_PROCESSES")) {
    KTUNE_RETURN_IF_ERROR(parseBool("KTUNE_COMPILE_PROCESSES", v, &o.compile_processes));
    o.compile_processes_explicit = true;
  }
  if (const char* v = env("KTUNE_PIPELINE")) KTUNE_RETURN_IF_ERROR(parseBool("KTUNE_PIPELINE", v, &o.pipeline));
  if (const char* v = env("KTUNE_WARMUP_MS")) KTUNE_RETURN_IF_ERROR(parseDouble("KTUNE_WARMUP_MS", v, &o.warmup_ms));
  if (const char* v = env("KTUNE_REP_MS")) KTUNE_RETURN_IF_ERROR(parseDouble("KTUNE_REP_MS", v, &o.rep_ms));
  o.search_explicit = env("KTUNE_SEARCH") != nullptr || env("KTUNE_BUDGET") != nullptr;
  if (const char* v = env("KTUNE_LT_PRELOAD")) {
    o.lt_preload = v;
    if (o.lt_preload != "after" && o.lt_preload != "early")
      return Status::InvalidArgument(std::string("KTUNE_LT_PRELOAD='") + v + "': expected after or early");
  }
  if (const char* v = env("KTUNE_EARLY_WAVE"))
    KTUNE_RETURN_IF_ERROR(parseBool("KTUNE_EARLY_WAVE", v, &o.early_wave));
  for (auto [name, field] : {std::pair{"KTUNE_TUNER_CONNECTIONS", &o.tuner_connections},
                              std::pair{"KTUNE_WORKER_CONNECTIONS", &o.worker_connections}}) {
    const char* v = env(name);
    if (!v) continue;
    const std::string s = v;
    char* end = nullptr;
    const long n = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || n < 0 || n > 32)
      return Status::InvalidArgument(std::string(name) + "='" + s + "': expected 0 to 32");
    *field = static_cast<int>(n);
  }
  if (const char* v = env("KTUNE_SEARCH")) {
    o.search = v;
    if (o.search != "guided" && o.search != "exhaustive")
      return Status::InvalidArgument(std::string("KTUNE_SEARCH='") + v + "' must be guided or exhaustive");
  }
  if (const char* v = env("KTUNE_BUDGET")) {
    KTUNE_RETURN_IF_ERROR(parseDouble("KTUNE_BUDGET", v, &o.budget_s));
    if (!(o.budget_s >= 0)) return Status::InvalidArgument(std::string("KTUNE_BUDGET='") + v + "' must be >= 0 seconds");
  }
  if (const char* v = env("KTUNE_STATIC_PRUNE"))
    KTUNE_RETURN_IF_ERROR(parseBool("KTUNE_STATIC_PRUNE", v, &o.static_prune));
  if (const char* v = env("KTUNE_WORKER_CONTEXT")) {
    o.worker_context = v;
    if (o.worker_context != "beside" && o.worker_context != "first")
      return Status::InvalidArgument(std::string("KTUNE_WORKER_CONTEXT='") + v + "': expected beside or first");
  }
  for (auto [name, field] : {std::pair{"KTUNE_EARLY_JIT", &o.early_jit},
                              std::pair{"KTUNE_VENDOR_ANSWERS", &o.vendor_answers}})
    if (const char* v = env(name)) KTUNE_RETURN_IF_ERROR(parseBool(name, v, field));
  if (const char* v = env("KTUNE_VENDOR_ALGOS"))
    KTUNE_RETURN_IF_ERROR(parseInt("KTUNE_VENDOR_ALGOS", v, &o.vendor_algos));
  KTUNE_RETURN_IF_ERROR(finalistsFromEnv(o));
  if (const char* v = env("KTUNE_BACKEND")) {
    std::string b = v;
    if (b != "auto" && b != "cuda" && b != "hip" && b != "sim")
      return Status::InvalidArgument("KTUNE_BACKEND='" + b + "' must be auto, cuda, hip or sim");
    o.backend = b;
  }
  if (const char* v = env("KTUNE_SIM_DEVICES")) {
    KTUNE_RETURN_IF_ERROR(parseInt("KTUNE_SIM_DEVICES", v, &o.sim_devices));
    if (o.sim_devices < 1 || o.sim_devices > 64)
      return Status::InvalidArgument(std::string("KTUNE_SIM_DEVICES='") + v + "' must be 1..64");
  }
  if (const char* v = env("KTUNE_CLANG")) o.clang = v;
  if (const char* v = env("KTUNE_RETRY_FAILED"))
    KTUNE_RETURN_IF_ERROR(parseBool("KTUNE_RETRY_FAILED", v, &o.retry_failed));
  if (const char* v = env("KTUNE_PDL")) KTUNE_RETURN_IF_ERROR(parseBool("KTUNE_PDL", v, &o.pdl));
  if (const char* v = env("KTUNE_REMOTE_CACHE")) {
    auto u = parseRemoteUrl(v);
    if (!u.ok()) return u.status().withContext("KTUNE_REMOTE_CACHE");
    o.remote_cache = v;
  }
  if (const char* v = env("KTUNE_REMOTE_TIMEOUT_MS"))
    KTUNE_RETURN_IF_ERROR(parseInt("KTUNE_REMOTE_TIMEOUT_MS", v, &o.remote_timeout_ms));
  KTUNE_RETURN_IF_ERROR(readRemoteKey(&o.remote_key));
  if (const char* v = env("KTUNE_LEASE_MS")) KTUNE_RETURN_IF_ERROR(parseInt("KTUNE_LEASE_MS", v, &o.lease_ms));
  if (const char* v = env("KTUNE_LEASE_WAIT_MS"))
    KTUNE_RETURN_IF_ERROR(parseInt("KTUNE_LEASE_WAIT_MS", v, &o.lease_wait_ms));
  return o;
}

std::string timelinePathFromEnv() {
  const char* v = env("KTUNE_TIMELINE");
  return v ? v : "";
}

Expected<TestSettings> testSettingsFromEnv() {
  TestSettings t;
  if (const char* v = env("KTUNE_REQUIRE_TOOLS"))
    KTUNE_RETURN_IF_ERROR(parseBool("KTUNE_REQUIRE_TOOLS", v, &t.require_tools));
  if (const char* v = env("KTUNE_TEST_QUICK"))
    KTUNE_RETURN_IF_ERROR(parseBool("KTUNE_TEST_QUICK", v, &t.test_quick));
  return t;
}

}  // namespace ktune
