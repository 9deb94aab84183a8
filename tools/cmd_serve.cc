// `ktune serve --queue redis://...`: one tuning server (run one per GPU or machine). It takes keys
// from the queue that `ktune tune --from-file F --queue URL` filled, tunes each through the engine
// (which looks in the shared cache and takes the key's lease first, so a key already published or
// being tuned elsewhere is not tuned again), publishes the result and acknowledges the key.
// Keys of a server that died are requeued by the others (remote/queue.h).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "autotune/autotuner.h"
#include "ops/gemm.h"
#include "ops/rowwise.h"
#include "ops/tune_args.h"
#include "base/fs.h"
#include "base/options.h"
#include "remote/queue.h"
#include "remote/shared.h"
#include "runtime/backend.h"
#include "tools/args.h"
#include "tools/commands.h"
#include "tools/sim_gpu.h"

namespace ktune::cli {
namespace {

const char* kUsage =
    "ktune serve --queue redis://host:port/db [--queue-name N] [--id NAME] [--exit-when-empty] "
    "[--no-isolate]\n"
    "  takes keys from the queue that `ktune tune --from-file F --queue URL` filled, tunes each one\n"
    "  nobody has tuned (shared cache and leases), publishes the result and acknowledges the key\n"
    "  --queue            the Redis URL (also the shared cache)\n"
    "  --queue-name N     which queue (default: default)\n"
    "  --id NAME          this server's name in heartbeats and stats (default: host and pid)\n"
    "  --exit-when-empty  stop when the queue is empty instead of waiting for more keys\n"
    "  --no-isolate       benchmark in this process instead of the ktune-worker";

// Tunes one queued key (an untuned-key JSON line) and says how it was resolved. An item that
// fails validation (ops/tune_args.h: types, ranges, strides, memory) is kInvalidArgument with
// the field and the reason, checked before anything is allocated: serve() parks it.
Expected<std::string> tuneItem(Engine& tuner, const std::string& item, const std::string& tmp) {
  if (item.find('\n') != std::string::npos || item.find('\r') != std::string::npos) {
    return Status::InvalidArgument("queue item holds a line break (one JSON line expected)");
  }
  auto checked = parseBuiltinTuneItem(item);
  if (!checked.ok()) return Status::InvalidArgument(checked.status().message());
  KTUNE_RETURN_IF_ERROR(writeFileAtomic(tmp, item + "\n", 0600, /*durable=*/false));
  KTUNE_ASSIGN_OR_RETURN(OfflineTuneReport r, tuner.tuneFromFile(tmp));
  if (r.tuned == 1) return std::string("tuned");
  if (r.already_tuned == 1) return std::string("local");
  if (r.skipped == 1) {
    return Status::InvalidArgument(r.messages.empty() ? "item skipped" : r.messages.front());
  }
  return Status::Internal(r.messages.empty() ? "not tuned" : r.messages.front());
}

// The GPU, or the simulated one (KTUNE_BACKEND=sim, as every other command accepts), with the
// engine options that go with it.
Expected<std::shared_ptr<Backend>> openServeBackend(const Options& o, EngineOptions* topts) {
  if (o.backend == "sim") {
    SimGpu sim = openSimGpu(o.sim_devices);
    topts->compiler = sim.compiler;
    // The simulated device lives in this process: no worker can serve it. Its costs are exact,
    // so a few runs measure them (as `ktune tune` does on it).
    if (o.isolate_explicit && o.isolate) {
      return Status::InvalidArgument("KTUNE_ISOLATE=1 with KTUNE_BACKEND=sim: the simulated "
                                     "device cannot be served by a ktune-worker");
    }
    topts->options.isolate = false;
    topts->options.warmup_ms = std::min(topts->options.warmup_ms, 0.02);
    topts->options.rep_ms = std::min(topts->options.rep_ms, 0.1);
    return sim.backend;
  }
  if (!o.isolate_explicit) topts->options.isolate = true;
  auto backend = openBackend(o.backend);
  if (!backend.ok()) {
    return Status::Unavailable("ktune serve needs a GPU (or KTUNE_BACKEND=sim): " +
                               backend.status().message());
  }
  return std::shared_ptr<Backend>(std::move(*backend));
}

}  // namespace

int cmdServe(const std::vector<std::string>& argv) {
  auto args = parseArgs(argv, {{"--queue", true}, {"--queue-name", true}, {"--id", true},
                               {"--exit-when-empty"}, {"--no-isolate"}});
  if (!args.ok()) return usage(args.status().message(), kUsage);
  if (args->help) return help(kUsage);
  auto opts = Options::fromEnv();
  if (!opts.ok()) return fail(opts.status());
  Options o = *opts;
  if (args->has("--queue")) o.remote_cache = args->get("--queue");
  if (o.remote_cache.empty()) return usage("missing --queue redis://host:port/db", kUsage);
  auto client = remote::RemoteClient::fromOptions(o);
  if (!client.ok()) return fail(client.status());

  EngineOptions topts;
  topts.options = o;
  auto backend = openServeBackend(o, &topts);
  if (!backend.ok()) return fail(backend.status());
  if (args->has("--no-isolate")) topts.options.isolate = false;
  topts.shared = remote::makeSharedTuning(o);  // the queue's Redis is also the shared cache
  auto tuner_or = Engine::create(*backend, topts);
  if (!tuner_or.ok()) return fail(tuner_or.status());
  std::shared_ptr<Engine> tuner(std::move(*tuner_or));
  auto gop = GemmOp::create(tuner);
  (void)gop;
  Status reg = registerRowwiseOps(*tuner);
  if (!reg.ok()) return fail(reg);

  remote::Queue q(*client, args->get("--queue-name", "default"));
  remote::ServeOptions so;
  so.server_id = args->get("--id");
  so.idle_exit_ms = args->has("--exit-when-empty") ? 0 : -1;
  so.log = &std::cerr;
  const std::string tmp = joinPath(o.cache_dir, "serve-" + std::to_string(::getpid()) + ".jsonl");
  Status s = remote::serve(q, so, [&](const std::string& item) { return tuneItem(*tuner, item, tmp); });
  (void)removeFile(tmp);
  if (!s.ok()) return fail(s);
  return kExitOk;
}

}  // namespace ktune::cli
