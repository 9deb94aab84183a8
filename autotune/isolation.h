// ktune isolated benchmarking — candidates are verified and timed in a supervised worker process
// (`ktune-worker`), so a candidate that faults (illegal address, trap, a crash) or hangs kills only
// the worker, never the tuner.
//
// Who does what: the tuner (parent) enumerates and compiles as usual (the code objects land in the
// shared store), then sends the worker one JSON line per tuning run: the family name, the
// problem's args_json (the worker rebuilds the problem with its own buffers via make_problem),
// the bench options and the candidates (config string or vendor id + code-object key). The worker
// answers with one JSON line per candidate, written BEFORE it starts the next one, so the parent
// always knows which candidate is in flight. When the worker dies (signal, exit, EOF) or goes
// silent past the candidate's deadline (the watchdog SIGKILLs its process group), the in-flight
// candidate becomes a failed result with the reason (kDeviceFault "worker died: SIGSEGV ...",
// kTimeout "hung: ..."), the worker is restarted and the remaining candidates continue. After a
// device fault the worker exits by itself (a faulted CUDA/HIP context is unusable), so the next
// candidate gets a fresh context. The worker is reused across candidates and tuning runs.
//
// Protocol (JSON lines over the worker's stdin/stdout, a socketpair):
//   worker -> {"event":"hello","pid":N,"startup_ms":{...}}                    once, at start
//   parent -> {"op":"bench","family","args","key","best_ms","bench":{...},
//              "candidates":[{"config","source","code_object_key"}]}
//   worker -> {"event":"problem"}                              the problem was built
//          -> {"event":"result","index":i,"result":{CandidateResult}}   one per candidate
//          -> {"event":"done"}                   or {"event":"error","message":...} (whole batch)
// A worker plugin is a shared library that links libktune.so and defines
//   extern "C" ktune::Status ktune_register_kernels(ktune::Autotuner&);     (ktune/plugin.hpp)
// which registers the plugin's families, each a TypedKernelSpec<P> with args_json and make_problem,
// on an Autotuner over the worker's engine (the worker's program is in libktune, api/worker.cc, so
// plugin and worker share one copy of the library). The library's own test plugins
// (tests/unit/isolation_*_plugin.cc) use an internal form instead, not for users:
//   extern "C" ktune::Status ktune_register_families(ktune::Engine&);       (Engine::add)
//   extern "C" ktune::Status ktune_worker_backend(std::shared_ptr<ktune::Backend>*,
//                                                 std::shared_ptr<ktune::Compiler>*);  (optional)
// The second lets a plugin supply the backend/compiler (a simulated one with fault injection);
// without it the worker opens its --backend: "sim" (the simulated backend, whose kernels the
// plugins register with Autotuner::registerSimKernel), or "auto" / a GPU backend with the arch's
// compiler. The built-in ops are registered on the same engine after the plugins.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autotune/benchmarker.h"
#include "autotune/candidate_bench.h"
#include "autotune/database.h"
#include "base/status.h"

namespace ktune {

// Settings of isolated benchmarking (EngineOptions::isolation). Whether it is used at all is
// Options::isolate (KTUNE_ISOLATE; the CLI turns it on, the library default is off).
// The worker executable and its plugins are Options::worker_path / Options::worker_plugins
// (KTUNE_WORKER / KTUNE_WORKER_PLUGINS); see findWorkerExecutable for the default.
struct IsolationOptions {
  // Watchdog: a candidate that sends no result within
  //   max(timeout_floor_ms + 2 x (warmup_ms + rep_ms),
  //       timeout_factor x best median so far x (estimate_runs + check_every + 2))
  // is declared hung (kTimeout) and the worker's process group is SIGKILLed. The first bound
  // covers a candidate's whole do_bench budget plus verification; the second a legitimately slow
  // kernel (early rejection stops a slower one after check_every runs).
  double timeout_floor_ms = 2000;
  double timeout_factor = 10;
  // Worker start (exec, plugin load, device context) and problem construction deadline.
  double startup_timeout_ms = 60000;
  // When the worker cannot be used at all (not found, fails to start, family unknown to it):
  // benchmark in-process with a warning (true), or refuse: the tuning run fails with the reason
  // (false, the default: isolation was asked for). Never honoured when isolation was requested
  // through KTUNE_ISOLATE=1 (Options::isolate_explicit); the CLI, which turns isolation on by
  // itself, sets it. A worker that stops working after it returned results is never replaced by
  // in-process runs (the remaining candidates fail with kUnavailable): they may be what broke it.
  bool fallback_in_process = false;
  // Vendor-library candidates (cuBLASLt / hipBLASLt algorithms) are benchmarked in the tuner's
  // process instead of the worker (true), or through the worker like every JIT candidate (false,
  // the default): the vendor default and the JIT candidates it is compared with are then timed
  // in one process, on the same buffers, after every compile has finished.
  bool vendor_in_process = false;
};

// What the tuner has seen of its worker (tests, CLI summaries).
struct IsolationStats {
  int starts = 0;            // worker processes started
  std::vector<int> pids;     // their pids, in start order
  int crashes = 0;           // worker deaths with a candidate in flight
  int timeouts = 0;          // candidates killed by the watchdog
  int candidates_sent = 0;   // candidates benchmarked through the worker
  int requests = 0;          // bench requests written to a worker (a batch, or part of one)
  int fallbacks = 0;         // tuning runs benchmarked in-process although isolation was on
  // Where the worker's time before its first candidate went, in ms, as it reported them: from its
  // hello (the last start), "backend" (device opened), "engine" and "ops" (the built-in ops, the
  // vendor library with them), each since its main() began; from its last "problem" event,
  // "problem" (inputs and reference built) and "bench_prepare" (flush buffers and kernel). And
  // this process's side, summed over its runs: "wait_start" (waiting for a worker's hello before
  // a bench request) and "wait_problem" (from a bench request to its "problem" event): how much
  // of the worker's start the tuning run waited for.
  std::map<std::string, double> worker_ms;
};

// One tuning run's benchmarking for the worker.
struct WorkerBatch {
  std::string family, key, args_json;
  BenchOptions bench;
  double best_ms = 0;  // best median measured before this batch (early rejection, watchdog)
  std::vector<WorkerCandidate> candidates;
};

// How to start a worker.
struct WorkerLaunch {
  std::string executable;  // resolved path
  std::string cache_dir;
  std::string backend = "auto";
  int device = 0;
  std::vector<std::string> plugins;
};

// Resolves the worker executable: `explicit_path` if non-empty (must be executable), else the
// first executable of workerCandidates(the directory of /proc/self/exe, the directory of the
// library holding this code), else on PATH. kNotFound naming every place looked at.
Expected<std::string> findWorkerExecutable(const std::string& explicit_path);
// Where the worker is looked for, in order: `ktune-worker` next to the executable (or in
// ../tools in the build tree), then relative to the library: an installed libktune.so
// (<prefix>/lib/../bin, a multiarch lib/<triple>/../../bin, ../libexec/ktune) and the Python
// package, whose libktune sits in ktune/ beside ktune/bin/ (without it, the package's isolation
// worker was never found: `ktune.ops` with KTUNE_ISOLATE=1 failed with "not found"). An empty
// directory contributes nothing.
std::vector<std::string> workerCandidates(const std::string& exe_dir, const std::string& lib_dir);

// The parent side: starts, feeds, watches and restarts one worker process.
// Thread safety: one thread at a time (the tuner calls it under its benchmark lock).
class WorkerSupervisor {
 public:
  WorkerSupervisor(WorkerLaunch launch, IsolationOptions opts);
  // Closes the worker's stdin (it exits on EOF), waits briefly, then SIGKILLs its group.
  ~WorkerSupervisor();
  WorkerSupervisor(const WorkerSupervisor&) = delete;
  WorkerSupervisor& operator=(const WorkerSupervisor&) = delete;

  // Benchmarks the batch in the worker, calling on_result(index, result) for every candidate as
  // soon as its result is known (from this thread; crashed and hung ones included, with status
  // kDeviceFault / kTimeout and the reason), restarting the worker as needed. Returns OK when
  // every candidate got a result; otherwise the error that made the worker unusable (cannot start,
  // unknown family, make_problem failed, broken protocol) — candidates without a result then were
  // not benchmarked, and the caller may benchmark them another way.
  Status run(const WorkerBatch& batch,
             const std::function<void(size_t, const CandidateResult&)>& on_result);

  // Starts the worker process without waiting for it to be ready, so its start-up (process,
  // driver context, plugins) overlaps the caller's work (e.g. compiling candidates); run() then
  // waits for it. Errors are reported again by run(). Not thread-safe with run().
  Status prestart();
  // Asks the worker (started now if needed, without waiting for it) to build the problem of
  // `family` from `args_json` ahead of the first run() for it, so that construction (e.g. a GEMM's
  // random matrices and reference) overlaps the caller's compiles. No reply is read; a failure
  // shows up in run(), which builds the problem again. Not thread-safe with run().
  Status prepare(const std::string& family, const std::string& args_json);
  const IsolationStats& stats() const { return stats_; }
  // Last lines the worker wrote to stderr (diagnostics).
  std::string stderrTail() const;

 private:
  struct Proc;
  Status ensureStarted();
  Status spawn();       // fork + exec; proc_ set, not yet ready
  Status awaitHello();  // waits for the worker's hello line
  void killWorker();
  // After EOF from the worker: reaps it (*reaped, its wait status in *st) and says how it went.
  std::string reapGone(int* st, bool* reaped);
  std::unique_ptr<Proc> proc_;
  WorkerLaunch launch_;
  IsolationOptions opts_;
  IsolationStats stats_;
  std::string stderr_tail_;
};

// The worker side: serves bench requests read from in_fd, writing JSON lines to out_fd, with the
// families registered on `bench` (a Engine). Returns OK on EOF of in_fd; kDeviceFault after a candidate
// faulted (the result was sent; the caller should exit so the next candidate gets a fresh device
// context); another error when out_fd cannot be written. Single-threaded.
// startup_ms goes into the hello line (the worker's own start-up split, IsolationStats::worker_ms).
Status serveWorker(CandidateBench& bench, int in_fd, int out_fd,
                   const std::map<std::string, double>& startup_ms = {});

// JSON form of a CandidateResult (the worker protocol and tests).
std::string candidateResultToJson(const CandidateResult& r);
Expected<CandidateResult> candidateResultFromJson(const std::string& text);

}  // namespace ktune
