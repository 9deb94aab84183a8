// `ktune cache`: inspect, dump, verify and prune the code-object cache.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "base/fs.h"
#include "base/options.h"
#include "base/sha256.h"
#include "compiler/store/store.h"
#include "remote/cache.h"
#include "tools/args.h"
#include "tools/commands.h"
#include "tools/report.h"

namespace ktune::cli {
namespace {
const char* kUsage =
    "ktune cache ls | show KEY | dump KEY --what isa|ptx|sass|llvm|mlir|source|meta|report | "
    "diff KEY1 KEY2 | rm KEY | clear [--yes] | verify | path   [--json]\n"
    "  KEY: a code-object key or a unique prefix of one (see `ktune cache ls`)\n"
    "  ls       every stored code object: key, arch, compiler, size, compile time, entry\n"
    "  show     one entry's metadata (JSON)\n"
    "  dump     one stored dump, or the resource/occupancy/ISA report\n"
    "  diff     the reports of two entries side by side ('*' marks lines that differ)\n"
    "  rm       remove one entry;  clear: remove every entry (asks on a terminal unless --yes)\n"
    "  verify   check every entry's sha256; exit 4 if one is corrupt\n"
    "  path     the cache directory (KTUNE_CACHE_DIR)";

void printJson(const nlohmann::json& j) { std::printf("%s\n", j.dump(2).c_str()); }

// On a terminal, `cache clear` asks first; scripts (stdin not a terminal) and --yes do not.
bool confirmClear(const std::string& dir, size_t entries) {
  if (!::isatty(0)) return true;
  std::fprintf(stderr, "remove all %zu entries from %s? [y/N] ", entries, dir.c_str());
  char line[16] = "";
  if (!std::fgets(line, sizeof(line), stdin)) return false;
  return line[0] == 'y' || line[0] == 'Y';
}
// `cache diff`: the two entries' reports side by side, or both as JSON.
int cacheDiff(CodeObjectStore& s, const std::string& key1, const std::string& key2, bool json) {
  auto k1 = s.resolve(key1);
  if (!k1.ok()) return fail(k1.status());
  auto k2 = s.resolve(key2);
  if (!k2.ok()) return fail(k2.status());
  auto a = s.get(*k1);
  if (!a.ok()) return fail(a.status());
  auto b = s.get(*k2);
  if (!b.ok()) return fail(b.status());
  if (json) {
    auto ra = reportJson(*a);
    auto rb = reportJson(*b);
    if (!ra.ok() || !rb.ok()) return fail(!ra.ok() ? ra.status() : rb.status());
    printJson({{"a", {{"key", *k1}, {"report", nlohmann::json::parse(*ra, nullptr, false)}}},
               {"b", {{"key", *k2}, {"report", nlohmann::json::parse(*rb, nullptr, false)}}}});
    return kExitOk;
  }
  auto r = reportDiff(*a, *b);
  if (!r.ok()) return fail(r.status());
  std::printf("%s", r->c_str());
  return kExitOk;
}

// Objects taken from a shared cache carry the fleet's MAC (CodeObject::shared_mac): with the key
// it is checked again, and an object whose MAC fails is an unauthenticated foreign object
// (counted as corrupt); without the key such objects are listed as not re-authenticated.
void checkForeign(CodeObjectStore& s, const std::string& secret, VerifyReport* r,
                  std::vector<std::string>* unchecked) {
  auto entries = s.list();
  if (!entries.ok()) return;
  for (const auto& e : *entries) {
    auto obj = s.get(e.key);
    if (!obj.ok() || obj->shared_mac.empty()) continue;
    if (secret.empty()) {
      unchecked->push_back(e.key);
    } else if (!constantTimeEqual(obj->shared_mac,
                                  remote::storedObjectMac(secret, e.key, obj->binary))) {
      r->corrupt.emplace_back(e.key, "unauthenticated foreign object: from a shared cache, its "
                                     "MAC does not verify under the fleet key");
    }
  }
}

// `cache verify`: every entry's sha256, and the MAC of objects from a shared cache; exit 4 when
// one is corrupt or unauthenticated.
int cacheVerify(CodeObjectStore& s, const std::string& secret, bool json) {
  VerifyReport r = s.verify();
  std::vector<std::string> unchecked;
  checkForeign(s, secret, &r, &unchecked);
  for (const auto& k : unchecked) {
    std::fprintf(stderr, "ktune: %s came from a shared cache; set KTUNE_REMOTE_KEY_FILE to "
                 "re-authenticate it\n", k.c_str());
  }
  if (json) {
    nlohmann::json j = {{"checked", r.checked}, {"corrupt", nlohmann::json::array()}};
    for (const auto& [k, why] : r.corrupt) j["corrupt"].push_back({{"key", k}, {"reason", why}});
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    for (const auto& [k, why] : r.corrupt) std::printf("CORRUPT %s: %s\n", k.c_str(), why.c_str());
    std::printf("%d entries checked, %zu corrupt\n", r.checked, r.corrupt.size());
    if (!r.corrupt.empty())
      std::printf("corrupt entries are never loaded; they are recompiled on next use, or remove "
                  "them with `ktune cache rm KEY`\n");
  }
  return r.corrupt.empty() ? kExitOk : kExitCorrupt;
}

}  // namespace

void printResources(const CodeObject& obj);

int cmdCache(const std::vector<std::string>& argv) {
  SubcommandCall call;
  if (auto stop = startSubcommand(argv, {{"--json"}, {"--what", true}, {"--yes"}}, kUsage, "cache",
                                  &call))
    return *stop;
  const ParsedArgs* args = &call.args;
  const Options* opts = &call.opts;
  const std::string& sub = call.sub;
  const bool json = args->has("--json");
  std::string dir = opts->cache_dir;
  if (sub == "path") {
    if (json) printJson({{"dir", dir}});
    else std::printf("%s\n", dir.c_str());
    return kExitOk;
  }
  auto store = CodeObjectStore::open(dir);
  if (!store.ok()) return failEnv(store.status(), "set KTUNE_CACHE_DIR to a private directory");
  auto& s = **store;
  auto needKeys = [&](size_t n) -> bool { return args->positional.size() == n + 1; };
  auto resolve = [&](const std::string& prefix) { return s.resolve(prefix); };

  if (sub == "ls") {
    auto l = s.list();
    if (!l.ok()) return fail(l.status());
    if (json) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& e : *l)
        j.push_back({{"key", e.key}, {"entry", e.entry}, {"arch", e.arch}, {"compiler", e.compiler},
                     {"compiler_version", e.compiler_version}, {"binary_bytes", e.binary_bytes},
                     {"compile_ms", e.compile_ms}, {"created", e.created}});
      std::printf("%s\n", j.dump(2).c_str());
      return kExitOk;
    }
    std::printf("%-16s  %-8s  %-10s  %9s  %9s  %-20s  %s\n", "KEY", "ARCH", "COMPILER", "BYTES",
                "COMPILE", "CREATED", "ENTRY");
    for (const auto& e : *l)
      std::printf("%-16s  %-8s  %-10s  %9lld  %7.0fms  %-20s  %s\n", e.key.substr(0, 16).c_str(),
                  e.arch.c_str(), e.compiler.c_str(), (long long)e.binary_bytes, e.compile_ms,
                  e.created.c_str(), e.entry.c_str());
    std::printf("%zu entries, %.1f KiB in %s\n", l->size(), s.sizeBytes() / 1024.0, dir.c_str());
    return kExitOk;
  }
  if (sub == "show" || sub == "dump") {
    if (!needKeys(1)) return usage(sub + " needs one KEY (a unique prefix is enough)", kUsage);
    auto key = resolve(args->positional[1]);
    if (!key.ok()) return fail(key.status());
    std::string what = sub == "show" ? "meta" : args->get("--what");
    if (what.empty()) return usage("dump needs --what", kUsage);
    if (what == "meta") {
      auto m = s.metadataJson(*key);
      if (!m.ok()) return fail(m.status());
      std::printf("%s\n", m->c_str());
      return kExitOk;
    }
    auto obj = s.get(*key);
    if (!obj.ok()) return fail(obj.status(), "run `ktune cache verify`; a corrupt entry is "
                                             "recompiled on next use");
    if (what == "report") {
      auto r = json ? reportJson(*obj) : reportText(*obj);
      if (!r.ok()) return fail(r.status());
      std::printf("%s\n", r->c_str());
      return kExitOk;
    }
    auto it = obj->dumps.find(what);
    if (it == obj->dumps.end()) {
      std::string have;
      for (const auto& [n, t] : obj->dumps) have += (have.empty() ? "" : ", ") + n;
      return fail(Status::NotFound("entry " + key->substr(0, 16) + " has no '" + what +
                                   "' dump (stored: " + (have.empty() ? "none" : have) + ")"),
                  "recompile with `ktune compile ... --dump " + what + "`");
    }
    std::printf("%s\n", it->second.c_str());
    return kExitOk;
  }
  if (sub == "diff") {
    if (!needKeys(2)) return usage("diff needs two KEYs", kUsage);
    return cacheDiff(s, args->positional[1], args->positional[2], json);
  }
  if (sub == "rm") {
    if (!needKeys(1)) return usage("rm needs one KEY", kUsage);
    auto key = resolve(args->positional[1]);
    if (!key.ok()) return fail(key.status());
    Status st = s.remove(*key);
    if (!st.ok()) return fail(st);
    if (json) printJson({{"removed", *key}});
    else std::printf("removed %s\n", key->c_str());
    return kExitOk;
  }
  if (sub == "clear") {
    if (args->positional.size() != 1) return usage("clear takes no KEY (see `cache rm`)", kUsage);
    auto l = s.list();
    size_t n = l.ok() ? l->size() : 0;
    if (!args->has("--yes") && !confirmClear(dir, n)) {
      std::fprintf(stderr, "ktune: nothing removed\n");
      return kExitFailed;
    }
    Status st = s.clear();
    if (!st.ok()) return fail(st);
    if (json) printJson({{"cleared", dir}, {"entries", n}});
    else std::printf("cleared %s (%zu entries)\n", dir.c_str(), n);
    return kExitOk;
  }
  if (sub == "verify") return cacheVerify(s, opts->remote_key, json);
  return usage("unknown cache subcommand '" + sub + "'", kUsage);
}

}  // namespace ktune::cli
