// A tuning process for the remote tests (remote_tuning_test): the simulated tuner environment of
// the engine tests (tuner_sim_env.h) with the shared cache and single flight of remote/shared.h.
//   remote_sim_proc --redis URL --cache DIR --keys 1024,2048 [--lease-ms N] [--lease-wait-ms N]
//                   [--compile-delay-ms N] [--gate NAME] [--serve QUEUE] [--stall]
//                   [--key-file F] [--wrong CONFIG]
// Tunes (calls) each key and prints one JSON line per key: {"key","from","compiled","launches",
// "correct","ran"} — compiled: compile() calls made, launches: simulated kernel launches (1 = the
// call's own launch, nothing benchmarked), correct: the call's output is 2x (the family's
// reference), ran: the config of the last kernel launched (what the binary's defines say).
// --key-file: the fleet's HMAC key (Options::remote_key). --wrong CONFIG: that config computes 3x
// (an attacker's kernel, or a config wrong for this problem). With --serve it serves the queue until drained, each item through
// Engine::tuneFromFile as `ktune serve` does, and prints {"key","from","compiled"} per item.
// --gate NAME: RPUSH the key to the Redis list NAME when its tuning starts (the tests' gate).
// --stall: stop forever at that point (a server killed in the middle of a key).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "remote/queue.h"
#include "remote/shared.h"
#include "tests/unit/tuner_sim_env.h"

namespace ktune {
namespace {

struct Args {
  std::map<std::string, std::string> v;
  std::string get(const std::string& k, const std::string& d = "") const {
    auto it = v.find(k);
    return it == v.end() ? d : it->second;
  }
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--stall") a.v[k] = "1";
    else if (i + 1 < argc) a.v[k] = argv[++i];
  }
  return a;
}

int run(const Args& a) {
  tunertest::Env env;
  Options o;
  o.cache_dir = a.get("--cache");
  o.remote_cache = a.get("--redis");
  o.remote_timeout_ms = std::atoi(a.get("--timeout-ms", "500").c_str());
  o.lease_ms = std::atoi(a.get("--lease-ms", "2000").c_str());
  o.lease_wait_ms = std::atoi(a.get("--lease-wait-ms", "20000").c_str());
  if (a.v.count("--key-file")) o.remote_key = readFile(a.get("--key-file")).value();
  if (a.v.count("--wrong")) env.wrong.insert(a.get("--wrong"));
  EngineOptions t = env.options();
  t.options.cache_dir = o.cache_dir;
  t.options.lease_ms = o.lease_ms;
  t.shared = remote::makeSharedTuning(o);
  env.compile_delay_ms = std::atof(a.get("--compile-delay-ms", "0").c_str());
  auto client = remote::RemoteClient::fromOptions(o);
  if (!client.ok()) return 2;
  const std::string gate = a.get("--gate");
  const bool stall = a.v.count("--stall") > 0;
  std::string current;
  bool gated = false;
  t.progress = [&](const TuneProgress& p) {
    if (p.phase != "enumerate" || gated || gate.empty()) return;
    gated = true;
    (void)(*client)->run({"RPUSH", gate, current});
    if (stall) {
      for (;;) ::pause();
    }
  };
  auto tuner = Engine::create(env.backend, t);
  if (!tuner.ok()) {
    std::fprintf(stderr, "%s\n", tuner.status().toString().c_str());
    return 2;
  }
  auto fam = addFamily(**tuner, env.family());
  if (!fam.ok()) return 2;
  auto one = [&](int64_t n) -> Expected<std::string> {
    auto p = env.problem(n);
    current = "n=" + std::to_string(n);
    gated = false;
    int c0 = env.compiler->compileCount();
    int64_t l0 = env.backend->totalLaunches();
    KTUNE_RETURN_IF_ERROR((*fam)(p));
    auto sel = fam->lookup(p);
    if (!sel.ok()) return sel.status();
    std::vector<float> xs(size_t(p.n)), ys(size_t(p.n));
    KTUNE_RETURN_IF_ERROR(env.backend->copyToHost(xs.data(), p.x, p.n * 4));
    KTUNE_RETURN_IF_ERROR(env.backend->copyToHost(ys.data(), p.y, p.n * 4));
    bool correct = true;
    for (int64_t i = 0; i < p.n; ++i) correct = correct && ys[size_t(i)] == 2.f * xs[size_t(i)];
    nlohmann::json j{{"key", current}, {"from", sel->origin},
                     {"compiled", env.compiler->compileCount() - c0},
                     {"launches", env.backend->totalLaunches() - l0},
                     {"correct", correct}, {"ran", env.last_launched}, {"winner", sel->winner}};
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
    return sel->origin;
  };
  if (a.v.count("--serve")) {
    remote::Queue q(*client, a.get("--serve"));
    remote::ServeOptions so;
    so.server_id = a.get("--id", "server-" + std::to_string(::getpid()));
    so.heartbeat_ms = 50;
    so.poll_ms = 10;
    so.idle_exit_ms = 100;
    // As `ktune serve` does: each item through Engine::tuneFromFile (its per-key report).
    const std::string tmp = o.cache_dir + "/item.jsonl";
    Status s = remote::serve(q, so, [&](const std::string& item) -> Expected<std::string> {
      KTUNE_RETURN_IF_ERROR(makeDirs(o.cache_dir));
      KTUNE_RETURN_IF_ERROR(writeFileAtomic(tmp, item + "\n", 0600, false));
      auto j = nlohmann::json::parse(item, nullptr, false);
      current = "n=" + std::to_string(j.value("n", 0));
      gated = false;
      KTUNE_ASSIGN_OR_RETURN(OfflineTuneReport r, (*tuner)->tuneFromFile(tmp));
      if (r.keys.size() != 1) return Status::Internal("item not resolved: " + item);
      nlohmann::json out{{"key", current}, {"from", r.keys[0].from},
                         {"compiled", r.keys[0].compiled}};
      std::printf("%s\n", out.dump().c_str());
      std::fflush(stdout);
      return r.keys[0].from;
    });
    return s.ok() ? 0 : 1;
  }
  std::stringstream keys(a.get("--keys"));
  for (std::string k; std::getline(keys, k, ',');) {
    auto r = one(std::atoll(k.c_str()));
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().toString().c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace ktune

int main(int argc, char** argv) { return ktune::run(ktune::parse(argc, argv)); }
