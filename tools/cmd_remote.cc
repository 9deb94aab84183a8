// `ktune remote ping|ls|stats|push|pull`: the shared tuning cache on Redis (remote/), and
// `ktune tune --from-file F --queue URL` (enqueueFile): keys for `ktune serve` to tune.
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autotune/database.h"
#include "base/format.h"
#include "base/fs.h"
#include "base/json_bounded.h"
#include "base/options.h"
#include "compiler/store/store.h"
#include "ops/tune_args.h"
#include "remote/cache.h"
#include "remote/queue.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace ktune::cli {
namespace {

const char* kUsage =
    "ktune remote ping | ls [FAMILY] | stats [--queue-name N] | push [FAMILY...] | pull [FAMILY...]"
    "  [--remote redis://host:port/db] [--json]\n"
    "  ping     is the remote reachable? round-trip time and the client\n"
    "  ls       the shared entries (family, validator hash, key), of one FAMILY or all\n"
    "  stats    published / fetched / rejected counts and the queue's progress\n"
    "  push     publish the local databases (or the FAMILYs named) and their code objects\n"
    "  pull     mirror shared entries into the local cache (no GPU needed)\n"
    "  --remote the Redis URL (default: KTUNE_REMOTE_CACHE)";

// The database files under the cache (or KTUNE_DB), with their family names.
std::vector<std::pair<std::string, std::string>> localDatabases(const Options& o) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!o.database_path.empty()) {
    out.emplace_back("", o.database_path);
    return out;
  }
  auto names = listDir(joinPath(o.cache_dir, "db"));
  if (!names.ok()) return out;
  for (const auto& n : *names) {
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) {
      out.emplace_back(n.substr(0, n.size() - 5), joinPath(joinPath(o.cache_dir, "db"), n));
    }
  }
  return out;
}

bool wanted(const std::vector<std::string>& families, const std::string& f) {
  if (families.empty()) return true;
  for (const auto& x : families) {
    if (x == f) return true;
  }
  return false;
}

int ping(remote::RemoteClient& c, bool json) {
  auto t0 = std::chrono::steady_clock::now();
  auto r = c.run({"PING"});
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok()) {
    const bool auth = r.status().message().find("remote unavailable: ") != std::string::npos;
    return fail(r.status(), auth ? "give the password in the URL: redis://[user:]password@host:port/db"
                                 : "is redis-server running there? (KTUNE_REMOTE_CACHE)");
  }
  // Any other error reply is no PONG either: the remote is not usable as it is.
  if (r->kind == remote::Reply::Kind::kError) {
    return fail(Status::Unavailable("remote " + c.options().url.display() + " answered PING with " +
                                    r->str));
  }
  if (json) {
    nlohmann::json j{{"remote", c.options().url.display()}, {"reply", remote::describe(*r)},
                     {"ms", ms}, {"client", remote::clientName()}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%s from %s in %.2f ms (%s)\n", remote::describe(*r).c_str(),
                c.options().url.display().c_str(), ms, remote::clientName().c_str());
  }
  return kExitOk;
}

int list(remote::RemoteCache& cache, const std::vector<std::string>& families, bool json) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : families.empty() ? std::vector<std::string>{""} : families) {
    auto ls = cache.list(f);
    if (!ls.ok()) return fail(ls.status());
    for (const auto& e : *ls) {
      if (json) out.push_back({{"family", e.family}, {"validator", e.validator_hash}, {"key", e.key}});
      else std::printf("%-12s %s  %s\n", e.family.c_str(), e.validator_hash.c_str(), e.key.c_str());
    }
  }
  if (json) std::printf("%s\n", out.dump().c_str());
  return kExitOk;
}

int stats(remote::RemoteCache& cache, const std::string& queue, bool json) {
  auto counters = cache.counters();
  if (!counters.ok()) return fail(counters.status());
  remote::Queue q(cache.sharedClient(), queue);
  auto qs = q.stats();
  if (!qs.ok()) return fail(qs.status());
  if (json) {
    nlohmann::json j{{"remote", cache.client().options().url.display()},
                     {"cache", *counters},
                     {"queue", {{"name", queue}, {"pending", qs->pending},
                                {"in_progress", qs->in_progress},
                                {"servers_alive", qs->servers_alive}, {"dead", qs->dead},
                                {"counters", qs->counters}}}};
    std::printf("%s\n", j.dump().c_str());
    return kExitOk;
  }
  std::printf("remote %s\ncache:", cache.client().options().url.display().c_str());
  for (const auto& [k, v] : *counters) std::printf(" %s=%lld", k.c_str(), (long long)v);
  std::printf("\nqueue '%s': %lld pending, %lld in progress, %lld server(s) alive, %lld parked "
              "(dead-letter list);", queue.c_str(), (long long)qs->pending,
              (long long)qs->in_progress, (long long)qs->servers_alive, (long long)qs->dead);
  for (const auto& [k, v] : qs->counters) std::printf(" %s=%lld", k.c_str(), (long long)v);
  std::printf("\n");
  return kExitOk;
}

int push(remote::RemoteCache& cache, const Options& o, const std::vector<std::string>& families,
         bool json) {
  auto store = CodeObjectStore::open(o.cache_dir);
  if (!store.ok()) return fail(store.status());
  int pushed = 0, failed = 0;
  for (const auto& [family, path] : localDatabases(o)) {
    if (!wanted(families, family)) continue;
    auto any = TuningDatabase::open(path, Validator{}, family);
    if (!any.ok()) return fail(any.status());
    for (const auto& [v, count] : (*any)->validators()) {
      auto db = TuningDatabase::open(path, v, family);
      if (!db.ok() || count == 0) continue;
      for (const auto& e : (*db)->entries()) {
        if (e.predicted) continue;  // never shared as a winner (remote/cache.cc refuses it too)
        Status s = cache.publishFrom(family, v, e, **store);
        if (s.ok()) ++pushed;
        else {
          ++failed;
          std::fprintf(stderr, "ktune: %s [%s]: %s\n", family.c_str(), e.key.c_str(), s.toString().c_str());
        }
      }
    }
  }
  if (json) std::printf("{\"pushed\":%d,\"failed\":%d}\n", pushed, failed);
  else std::printf("pushed %d entries (%d failed)\n", pushed, failed);
  return failed ? kExitFailed : kExitOk;
}

int pull(remote::RemoteCache& cache, const Options& o, const std::vector<std::string>& families,
         bool json) {
  auto store = CodeObjectStore::open(o.cache_dir);
  if (!store.ok()) return fail(store.status());
  auto ls = cache.list();
  if (!ls.ok()) return fail(ls.status());
  int pulled = 0, present = 0, rejected = 0;
  for (const auto& info : *ls) {
    if (!wanted(families, info.family)) continue;
    auto got = cache.getListed(info);
    std::string note;
    auto full = got.ok() ? cache.fetchInto(info.family, got->first, info.key, **store, &note)
                         : got.status();
    if (!note.empty()) std::fprintf(stderr, "ktune: warning: %s\n", note.c_str());
    if (!full.ok()) {
      ++rejected;
      std::fprintf(stderr, "ktune: %s [%s]: %s\n", info.family.c_str(), info.key.c_str(),
                   full.status().toString().c_str());
      continue;
    }
    std::string path = o.database_path.empty()
                           ? joinPath(joinPath(o.cache_dir, "db"), info.family + ".json")
                           : o.database_path;
    auto db = TuningDatabase::open(path, got->first, info.family);
    if (!db.ok()) return fail(db.status());
    if ((*db)->lookup(info.key)) {
      ++present;  // a local result wins over a shared one
      continue;
    }
    // Data from the fleet: the first process that uses it compiles and verifies its winner.
    full->unverified = true;
    Status s = (*db)->record(*full);
    if (!s.ok()) return fail(s);
    ++pulled;
  }
  if (json) std::printf("{\"pulled\":%d,\"present\":%d,\"rejected\":%d}\n", pulled, present, rejected);
  else std::printf("pulled %d entries (%d already here, %d rejected)\n", pulled, present, rejected);
  return rejected ? kExitCorrupt : kExitOk;
}

Expected<std::shared_ptr<remote::RemoteClient>> clientFor(const Options& o, const std::string& url) {
  Options with = o;
  if (!url.empty()) with.remote_cache = url;
  if (with.remote_cache.empty()) {
    return Status::InvalidArgument("no remote: set KTUNE_REMOTE_CACHE=redis://host:port/db or pass --remote");
  }
  return remote::RemoteClient::fromOptions(with);
}

}  // namespace

int cmdRemote(const std::vector<std::string>& argv) {
  SubcommandCall call;
  if (auto stop = startSubcommand(argv, {{"--json"}, {"--remote", true}, {"--queue-name", true}},
                                  kUsage, "remote", &call))
    return *stop;
  const ParsedArgs* args = &call.args;
  const Options* opts = &call.opts;
  const std::string& sub = call.sub;
  auto client = clientFor(*opts, args->get("--remote"));
  if (!client.ok()) return fail(client.status());
  remote::RemoteCache cache(*client, remote::CacheLimits{}, opts->remote_key);
  std::vector<std::string> rest(args->positional.begin() + 1, args->positional.end());
  const bool json = args->has("--json");
  if (sub == "ping") return ping(**client, json);
  if (sub == "ls") return list(cache, rest, json);
  if (sub == "stats") return stats(cache, args->get("--queue-name", "default"), json);
  if (sub == "push") return push(cache, *opts, rest, json);
  if (sub == "pull") return pull(cache, *opts, rest, json);
  return usage("unknown remote subcommand '" + sub + "'", kUsage);
}

std::string remoteInfoJson(const Options& o) {
  nlohmann::json j{{"url", nullptr}};
  j["client"] = remote::clientName();
  if (o.remote_cache.empty()) {
    j["summary"] = "none (set KTUNE_REMOTE_CACHE=redis://host:port/db to share tuning results)";
    return j.dump();
  }
  auto client = remote::RemoteClient::fromOptions(o);
  if (!client.ok()) {
    j["summary"] = j["problem"] = client.status().message();
    return j.dump();
  }
  j["url"] = (*client)->options().url.display();
  auto t0 = std::chrono::steady_clock::now();
  auto r = (*client)->run({"PING"});
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  j["reachable"] = r.ok();
  if (r.ok()) {
    j["ping_ms"] = ms;
    char line[512];
    std::snprintf(line, sizeof(line), "%s reachable (%.2f ms, %s), timeout %d ms",
                  j["url"].get<std::string>().c_str(), ms, remote::clientName().c_str(),
                  (*client)->options().timeout_ms);
    j["summary"] = line;
  } else {
    j["summary"] = j["problem"] = "remote " + j["url"].get<std::string>() +
                                  " unusable (tuning stays local): " + r.status().message();
  }
  return j.dump();
}

int enqueueFile(const std::string& path, const std::string& url, const std::string& queue,
                bool json) {
  auto opts = Options::fromEnv();
  if (!opts.ok()) return fail(opts.status());
  auto client = clientFor(*opts, url);
  if (!client.ok()) return fail(client.status());
  auto text = readFile(path);
  if (!text.ok()) return fail(text.status());
  // Each line is checked as a server would check it (parseBuiltinTuneItem) before it is shared:
  // a bad line is reported by its number and left out, the others are enqueued.
  std::vector<std::string> items;
  std::istringstream in(*text);
  int n = 0, bad = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto checked = parseBuiltinTuneItem(line);
    if (!checked.ok()) {
      ++bad;
      std::fprintf(stderr, "ktune: %s line %d not enqueued: %s\n", printable(path).c_str(), n,
                   printable(checked.status().message()).c_str());
      continue;
    }
    auto j = parseJsonOrDiscarded(line);
    j.erase("date");  // the same key recorded twice is one item
    items.push_back(j.dump());
  }
  if (items.empty())
    return fail(Status::InvalidArgument("'" + path + "' holds no valid untuned keys (" +
                                        std::to_string(bad) + " bad lines)"));
  remote::Queue q(*client, queue);
  Status s = q.enqueue(items);
  if (!s.ok()) return fail(s);
  if (json)
    std::printf("{\"enqueued\":%zu,\"rejected\":%d,\"queue\":\"%s\"}\n", items.size(), bad,
                queue.c_str());
  else std::printf("enqueued %zu keys on queue '%s' of %s\n", items.size(), queue.c_str(),
                   (*client)->options().url.display().c_str());
  return kExitOk;
}

}  // namespace ktune::cli
