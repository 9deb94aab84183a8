// ktune — the one set of tuning options (public API).
//
// Every knob of the library is a field here with its default; TunerOptions::fromEnv() overlays
// the KTUNE_* environment variables on the defaults, and is the only place ktune reads the
// environment. The C++ API (Autotuner::create), the C API (ktune_tuner_create reads fromEnv) and
// the CLI all start from this struct.
#pragma once

#include <string>
#include <vector>

#include "ktune/export.h"
#include "ktune/status.hpp"

namespace ktune {

struct KTUNE_API TunerOptions {
  // Device ordinal on the backend (see `backend`). Default 0.
  int device = 0;
  // Devices a tuning run spreads its candidates over (the CLI's --devices all|0,1,...): one
  // isolated worker per device (in this process on the simulated backend), each taking the next
  // candidate when it is free; the winner is the one a one-device run picks. Every device must be
  // the same model as `device`, which must be among them. Empty or one entry: `device` alone.
  std::vector<int> devices;

  // Root of the code-object store and tuning databases.
  // KTUNE_CACHE_DIR, else $XDG_CACHE_HOME/ktune, else $HOME/.cache/ktune.
  std::string cache_dir;
  // KTUNE_TUNING=0 turns tuning off: a key with no database entry runs the default config and is
  // recorded as untuned. Default on.
  bool tuning = true;
  // KTUNE_TUNING=background (with tuning on): an untuned key runs its predicted config (from the
  // family's tuned neighbours; the default when none is near) at once and is tuned on a thread of
  // the tuner, on its own stream, pausing between candidates so the caller's GPU work keeps most
  // of the device; the winner replaces the prediction for the next call. A call never waits for
  // tuning. The family must be able to rebuild its problem (make_problem; the built-in ops can).
  // On a GPU it implies isolate (unless KTUNE_ISOLATE is set): candidates run in the worker.
  bool background = false;
  // KTUNE_BACKGROUND_DUTY=<0..1]: the share of wall time background tuning may keep the device
  // busy: before each candidate it pauses (1 - duty) / duty times the previous candidate's time,
  // in the worker's case too (one candidate per request then). 1 = no pauses.
  double background_duty = 0.25;
  // KTUNE_RECORD_UNTUNED=<file>: append keys that ran untuned (JSON lines) for offline tuning.
  std::string record_untuned_path;
  // KTUNE_DB=<file>: use this tuning database file instead of one per family under cache_dir.
  std::string database_path;
  // KTUNE_CURATED=<file>: curated GEMM configs laid over the built-in table
  // (templates/gemm/curated.json, same format): the default config when tuning is off and the
  // tuned op's candidates. Empty: the built-in table alone.
  std::string curated_path;
  // KTUNE_VERBOSE=0|1|2: 1 prints a tree of what was tried per key, 2 adds compile logs.
  int verbose = 0;
  // KTUNE_ISOLATE=0|1: benchmark candidates in a supervised worker process. Default on for
  // tuning through the CLI; the library default is off (see autotune options).
  bool isolate = false;
  // True when KTUNE_ISOLATE was set (the CLI then follows it instead of its own default).
  bool isolate_explicit = false;
  // KTUNE_WORKER=<path>: the isolation worker executable (default: ktune-worker next to the
  // running program, then on PATH).
  std::string worker_path;
  // KTUNE_WORKER_PLUGINS=<a.so>:<b.so>: shared libraries the worker loads to register user
  // families (each defines ktune_register_kernels; see ktune/plugin.hpp).
  std::vector<std::string> worker_plugins;
  // KTUNE_COMPILE_THREADS=N: parallel JIT compiles. 0 = all hardware threads (one fewer while
  // candidates are benchmarked during the compiles, see pipeline).
  int compile_threads = 0;
  // KTUNE_COMPILE_PROCESSES=1: the parallel JIT compiles run in helper processes (ktune-worker
  // --compile, one compile each at a time) instead of threads of this process; the code objects
  // are the same. Library default off; `ktune tune` on a GPU turns it on (docs/search.md). Not
  // for a compiler the caller supplies (EngineOptions::compiler): a worker opens the arch's own.
  bool compile_processes = false;
  // True when KTUNE_COMPILE_PROCESSES was set (the CLI then follows it instead of its own default).
  bool compile_processes_explicit = false;
  // KTUNE_PIPELINE=0: compile every candidate before benchmarking any. Default on: candidates are
  // benchmarked as soon as they are compiled (vendor-library candidates first, while the first
  // compiles run), so cold tuning takes about max(compile, bench) instead of their sum.
  bool pipeline = true;
  // KTUNE_WARMUP_MS / KTUNE_REP_MS: do_bench budgets per candidate (device time). 5 / 20 ms: on
  // the H100 the 4096^3 GEMM tuning picked the same top three (within 1%) as with 10 / 40 and the
  // warm run took 2.0 s instead of 3.0 s (bench/NOTES.md); at least min_runs runs are always taken.
  double warmup_ms = 5.0;
  double rep_ms = 20.0;
  // KTUNE_SEARCH=guided|exhaustive: how a tuning run picks what to compile and time (docs/search.md).
  // "guided" (default): candidates ordered by a prior (the family's tuned neighbours in the
  // database, then static features: waves on the device's SMs, tile intensity), compiled lazily
  // in that order and raced (a short first round, then more rounds only for those whose interval
  // can still beat the leader); exploration stops when the estimated regret of the unmeasured rest
  // is small. Spaces of fewer than 16 candidates are measured exhaustively. "exhaustive": every
  // candidate compiled and timed in full, as before.
  std::string search = "guided";
  // KTUNE_BUDGET=SECONDS: a guided run stops taking new candidates into the race once this much
  // host wall time has passed (the first round's candidates, the default and the finalists are
  // always measured). 0 (default) = no time limit; exhaustive runs ignore it.
  double budget_s = 0;
  // True when KTUNE_SEARCH or KTUNE_BUDGET was set: `ktune tune` then measures a key its database
  // already holds instead of answering from it (as --search / --budget do).
  bool search_explicit = false;
  // KTUNE_LT_PRELOAD=after|early: when a tuning process and its isolation worker start loading
  // cuBLASLt on a thread of its own. "after" (default): once the driver has started (cuInit),
  // beside the context's creation; "early": before the driver starts, where the load held cuInit
  // back by 50-60 ms in both processes of a warm run (bench/NOTES.md, issue 34).
  std::string lt_preload = "after";
  // KTUNE_TUNER_CONNECTIONS=N (0..32): `ktune tune`'s own CUDA_DEVICE_MAX_CONNECTIONS (its
  // context's hardware work queues) where its isolation worker does the timing. -1 (unset): 1,
  // unless the environment sets CUDA_DEVICE_MAX_CONNECTIONS; 0: the environment's.
  int tuner_connections = -1;
  // KTUNE_WORKER_CONNECTIONS=N (0..32): the CUDA_DEVICE_MAX_CONNECTIONS of the isolation worker
  // `ktune tune` starts before its own driver (the worker times on one stream). -1 (unset): 1,
  // unless the environment sets CUDA_DEVICE_MAX_CONNECTIONS; 0: the environment's.
  int worker_connections = -1;
  // KTUNE_VENDOR_ANSWERS=0: the GEMM op asks its vendor library (cuBLASLt, hipBLASLt) for every
  // problem's candidate list in every process, instead of keeping the answers in the cache
  // directory (<cache_dir>/vendor, ops/vendor_answers.h) for the next process.
  bool vendor_answers = true;
  // KTUNE_WORKER_CONTEXT=beside|first: the isolation worker makes its device context on a thread
  // beside its compiler's load and its ops' registration ("beside", the default; not with worker
  // plugins, which may use the device when they register), or before them ("first").
  std::string worker_context = "beside";
  // KTUNE_EARLY_JIT=0|1: an isolated guided race whose first wave the code-object store holds
  // times that wave before the vendor library's candidates, unchecked, while the worker's vendor
  // library sets up (its first use costs ~0.1 s before any of its GEMMs runs); the ones that set a
  // new bar in the wave are checked before the vendor round (autotune/tuning_run_early.cc).
  // On by default; 0 times the vendor candidates first.
  bool early_jit = true;
  // KTUNE_EARLY_WAVE=0|1: `ktune tune gemm` into an empty store compiles its first key's first
  // wave from a device NVML predicts, before the driver has started (tools/tune_early_wave.h);
  // the tuning itself uses the driver's device. On by default; 0 waits for the driver's device.
  bool early_wave = true;
  // KTUNE_STATIC_PRUNE=0 turns off pruning by resource reports: the one switch for every rule
  // (spills, occupancy, a missing matrix instruction), in the engine and in the built-in ops.
  bool static_prune = true;
  // KTUNE_VENDOR_ALGOS=N: vendor-library algorithms (cuBLASLt/hipBLASLt) tried per GEMM key.
  int vendor_algos = 8;
  // KTUNE_FINALISTS=N: after compiling, the N fastest candidates and the default (vendor default
  // or default config) are re-timed interleaved, and a candidate replaces the default only when
  // it is faster beyond the measured noise (autotune/finalists.h). 0 = plain fastest median.
  int finalists = 3;
  // KTUNE_FINALIST_MARGIN=F: the minimum gain over the default a finalist must show to replace
  // it: its paired time ratio to the default must be below 1 - F *and* its 95% interval must lie
  // below 1. Sub-margin "wins" keep the default, so a key does not flip between near-equal
  // candidates from one run to the next. 0.01 (1%) by default; 0 = the interval alone decides.
  double finalist_margin = 0.01;
  // KTUNE_FINALIST_PAIRING=rotated|adjacent|drift: how a finalists' round orders its blocks.
  // rotated: each finalist once, the order rotated from round to round. adjacent: the default's
  // block before the first challenger and after each one (b c1 b c2 ... b), each challenger's time
  // taken at the round's default clock from the two default blocks beside it
  // (autotune/finalists.h), for a GPU whose clock moves between blocks; about twice a round's
  // blocks. drift (the default): rotated, but on a key whose race found drift (a heavy key,
  // guided.h) the extra rounds an undecided gain gets are adjacent ones.
  std::string finalist_pairing = "drift";
  // KTUNE_BACKEND=auto|cuda|hip|sim: the backend a tuner opens. "auto" (default) = the first GPU
  // backend with a device; "sim" = the simulated CPU backend (deterministic costs, for tests).
  std::string backend = "auto";
  // KTUNE_SIM_DEVICES=N: identical devices of the simulated backend (1..64; default 1), for tests
  // of multi-device tuning without GPUs.
  int sim_devices = 1;
  // KTUNE_CLANG: clang for the LLVM AMDGPU path (default: clang-19 on PATH, then clang).
  std::string clang;
  // KTUNE_RETRY_FAILED=1: retry candidates recorded as failed instead of skipping them.
  bool retry_failed = false;
  // KTUNE_PDL=0|1: a tuned call launches a kernel whose family declares that it waits for the
  // previous kernel (KTUNE_PDL_WAIT, TypedKernelSpec::programmatic_wait) as a programmatic
  // dependent launch, so its start overlaps the previous kernel's end (CUDA, compute capability
  // 9.0+; elsewhere an ordinary launch). Candidates are always timed with ordinary launches.
  // Default on.
  bool pdl = true;
  // KTUNE_REMOTE_CACHE=redis://[user:password@]host:port/db: a shared tuning cache, lease and
  // queue server (remote/). Empty = none. Validated by fromEnv (parseRemoteUrl).
  std::string remote_cache;
  // KTUNE_REMOTE_TIMEOUT_MS: connect and per-command timeout of the remote; a call never waits
  // longer than this for it (then the remote is skipped for a while). Default 250.
  int remote_timeout_ms = 250;
  // The fleet's shared secret for code objects on the remote: KTUNE_REMOTE_KEY_FILE=<file> (owned
  // by the user, not readable by group/others, at least 16 bytes; a trailing newline is dropped)
  // or KTUNE_REMOTE_KEY_VAR=<NAME> (the variable NAME holds it). Without it the remote carries
  // winners only (configs and their stats): every process compiles a shared winner itself and
  // verifies it before first use. With it, code objects are shared too, each authenticated by an
  // HMAC-SHA256 over its key, metadata and binary; one that does not authenticate is never stored
  // or loaded. Never printed.
  std::string remote_key;
  // KTUNE_LEASE_MS: lifetime of a tuning lease; its holder renews it every third of it, so a
  // holder that died frees the key after at most this long. Default 15000.
  int lease_ms = 15000;
  // KTUNE_LEASE_WAIT_MS: how long a process waits for another one tuning the same key before it
  // tunes the key itself. Default 300000.
  int lease_wait_ms = 300000;

  // Defaults overlaid with the environment. Fails with kInvalidArgument naming the variable
  // when a value does not parse (e.g. KTUNE_REP_MS=abc).
  static Expected<TunerOptions> fromEnv();
  // Default cache directory from the environment (no KTUNE_CACHE_DIR handling errors).
  static std::string defaultCacheDir();
};

}  // namespace ktune
