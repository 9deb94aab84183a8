// `ktune tune`: tune a built-in op for a shape on the GPU (or the simulated one, KTUNE_BACKEND=sim)
// and print every candidate; without a GPU, compile and analyse the config space for an arch
// (tune_analyse.cc). `ktune tune --from-file untuned.jsonl`: offline tuning of keys recorded with
// tuning off.
// The command line is read into a TuneRequest by tune_request.cc.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include <unistd.h>

#include "autotune/autotuner.h"
#include "autotune/device_compare.h"
#include "autotune/device_pool.h"
#include "ops/recorded.h"
#include "autotune/worker_prestart.h"
#include "base/clock.h"
#include "ops/buffers.h"
#include "ops/device_fill.h"
#include "ops/gemm.h"
#include "ops/vendor/cublaslt.h"
#include "bench/fair/peers.h"
#include "ops/tune_args.h"
#include "remote/shared.h"
#include "ops/rowwise.h"
#include "base/format.h"
#include "base/fs.h"
#include "base/timeline.h"
#include "runtime/backend.h"
#include "templates/rowwise.h"
#include "tools/commands.h"
#include "tools/sim_gpu.h"
#include "tools/tune_early_wave.h"
#include "tools/tune_lookahead.h"
#include "tools/tune_detach.h"
#include "tools/tune_operands.h"
#include "tools/tune_output.h"
#include "tools/tune_request.h"
#include "tools/tune_worker_start.h"

namespace ktune::cli {

namespace {

// `bytes` of zeroed device memory, owned by `bufs`.
Expected<DevicePtr> zeroed(DeviceBuffers& bufs, int64_t bytes) {
  KTUNE_ASSIGN_OR_RETURN(DevicePtr p, bufs.alloc(size_t(bytes)));
  KTUNE_RETURN_IF_ERROR(bufs.backend().memset8(p, 0, size_t(bytes)));
  return p;
}

// Same-run copy bandwidth (bytes read + written per second) for `bytes` moved in total: the
// benches' copy peer (bench/fair/peers.h: best ktune_copy config or the driver copy, L2 flushed
// by reads before every run, median of 25 runs).
Expected<double> copyBandwidth(Engine& tuner, Backend& b, int64_t bytes_moved) {
  KTUNE_ASSIGN_OR_RETURN(auto peers, StreamPeers::create(b, tuner.compiler(), tuner.device()));
  KTUNE_ASSIGN_OR_RETURN(StreamPeers::Peer peer, peers->copyPeer(bytes_moved));
  KTUNE_ASSIGN_OR_RETURN(fair::Interval bw, peers->bandwidth(peer));
  return bw.median;
}

}  // namespace

namespace {


struct Gpu {
  std::shared_ptr<Backend> backend;
  std::shared_ptr<Compiler> compiler;  // set for the simulated device
  bool sim = false;
  std::string why_none;
};

// A real GPU (KTUNE_BACKEND=auto|cuda|hip), the simulated one (KTUNE_BACKEND=sim), or none.
Gpu openGpu(const Options& opts, bool no_gpu) {
  Gpu g;
  if (no_gpu) {
    g.why_none = "--no-gpu given";
    return g;
  }
  if (opts.backend == "sim") {
    SimGpu s = openSimGpu(opts.sim_devices);
    g.backend = s.backend;
    g.compiler = s.compiler;
    g.sim = true;
    return g;
  }
  auto b = openBackend(opts.backend);
  if (b.ok()) g.backend = std::move(*b);
  else g.why_none = b.status().message();
  return g;
}

// Whether this command tunes GEMM keys from the command line (runGemm): its tuner returns before
// the device's context exists, so the first key's compiles start beside it (EngineOptions::
// context_later, GemmLookahead::startFirst).
bool gemmKeys(const TuneRequest& t) { return t.op == "gemm" && t.from_file.empty(); }

Expected<std::shared_ptr<Engine>> makeTuner(const Gpu& gpu, const Options& opts, const TuneRequest& t,
                                           Progress* progress) {
  EngineOptions topts;
  topts.options = opts;
  topts.context_later = gemmKeys(t) && !t.args.has("--devices");  // not over a pool of devices
  // Tuning through the CLI benchmarks in a supervised worker unless told otherwise; the
  // simulated device lives in this process only, so it is benchmarked here.
  if (!opts.isolate_explicit) topts.options.isolate = topts.isolation.fallback_in_process = !gpu.sim;
  if (t.args.has("--no-isolate")) topts.options.isolate = false;
  // On a GPU the CLI compiles in worker processes unless KTUNE_COMPILE_PROCESSES says otherwise:
  // 15 NVRTC compiles at once ran 15-25% faster there than as threads of one process
  // (bench/NOTES.md, issue 34). The simulated compiler stays in this process.
  if (!gpu.sim && !opts.compile_processes_explicit) topts.options.compile_processes = true;
  if (t.args.has("--search")) topts.options.search = t.args.get("--search");
  if (t.args.has("--budget")) topts.options.budget_s = t.budget_s;
  if (gpu.sim && topts.options.isolate)
    return Status::InvalidArgument("KTUNE_ISOLATE=1 with KTUNE_BACKEND=sim: the simulated device "
                                   "cannot be served by a ktune-worker; unset KTUNE_ISOLATE");
  if (t.args.has("--devices")) {
    KTUNE_ASSIGN_OR_RETURN(auto devs, gpu.backend->devices());
    KTUNE_ASSIGN_OR_RETURN(topts.options.devices,
                           parseDeviceList(t.args.get("--devices"), devs, topts.options.device));
  }
  topts.compiler = gpu.compiler;
  topts.shared = remote::makeSharedTuning(topts.options);  // KTUNE_REMOTE_CACHE (remote/shared.h)
  topts.tune_reads_shared = true;  // a key another machine published is taken, not tuned again
  if (gpu.sim) {
    // Simulated costs are exact: a few runs measure them, and every run executes the kernel's
    // host implementation, so the GPU's default budgets would take minutes of CPU.
    topts.options.warmup_ms = std::min(topts.options.warmup_ms, 0.02);
    topts.options.rep_ms = std::min(topts.options.rep_ms, 0.1);
  }
  if (progress->mode() != Progress::Mode::kOff) {
    topts.progress = [progress](const TuneProgress& p) {
      progress->update(p.phase, p.index, p.total, p.config);
      if (p.phase == "done") progress->finish();
    };
  }
  KTUNE_ASSIGN_OR_RETURN(auto tuner, Engine::create(gpu.backend, topts));
  return std::shared_ptr<Engine>(std::move(tuner));
}

int runFromFile(Engine& tuner, const std::shared_ptr<Engine>& shared, const TuneRequest& t) {
  // Built-in families must exist before the file's lines can be matched to them.
  auto gop = GemmOp::create(shared);
  (void)gop;
  Status reg = registerRowwiseOps(tuner);
  if (!reg.ok()) return fail(reg);
  auto r = tuner.tuneFromFile(t.from_file);
  if (!r.ok()) return fail(r.status());
  if (t.json) {  // per key: where its result came from and what it compiled
    nlohmann::json keys = nlohmann::json::array();
    for (const auto& k : r->keys)
      keys.push_back({{"family", k.family}, {"key", k.key}, {"from", k.from}, {"compiled", k.compiled}});
    std::printf("%s\n", nlohmann::json({{"lines", r->lines}, {"tuned", r->tuned},
                                        {"already_tuned", r->already_tuned},
                                        {"skipped", r->skipped}, {"messages", r->messages},
                                        {"keys", keys}})
                            .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
  } else {
    std::printf("%d lines: %d tuned, %d already tuned, %d skipped\n", r->lines, r->tuned,
                r->already_tuned, r->skipped);
    for (const auto& m : r->messages) std::printf("  %s\n", printable(m).c_str());
  }
  return r->skipped > 0 ? kExitFailed : kExitOk;
}

// The request's args on distinct placeholder addresses (16-byte aligned and non-null, as device
// allocations are): enough for the key (recordedRowwise); tuneRmsnormOp / tuneSiluMulOp put a
// buffer at each.
constexpr DevicePtr kPlaceholder = 256;
RmsNormArgs rmsnormArgs(const TuneRequest& t) {
  RmsNormArgs a;
  a.dtype = t.dtype; a.rows = t.rows; a.cols = t.cols; a.x = kPlaceholder; a.y = 2 * kPlaceholder;
  if (!t.args.has("--no-weight")) { a.weight = 3 * kPlaceholder; a.weight_dtype = t.dtype; }
  if (t.args.has("--residual")) { a.residual = 4 * kPlaceholder; a.residual_out = 5 * kPlaceholder; }
  return a;
}
SiluMulArgs siluMulArgs(const TuneRequest& t) {
  SiluMulArgs a;
  a.dtype = t.dtype; a.rows = t.rows; a.d = t.cols; a.x = kPlaceholder; a.out = 2 * kPlaceholder;
  return a;
}

Expected<TuneReport> tuneRmsnormOp(Engine& tuner, DeviceBuffers& bufs, const TuneRequest& t,
                                   int64_t* bytes) {
  RmsNormArgs a = rmsnormArgs(t);
  const int64_t elem_bytes = int64_t(sizeOf(t.dtype));
  KTUNE_ASSIGN_OR_RETURN(a.x, bufs.random(t.dtype, t.rows * t.cols, 1));
  KTUNE_ASSIGN_OR_RETURN(a.y, zeroed(bufs, t.rows * t.cols * elem_bytes));
  if (a.weight) {
    KTUNE_ASSIGN_OR_RETURN(a.weight, bufs.random(t.dtype, t.cols, 2));
  }
  if (a.residual) {
    KTUNE_ASSIGN_OR_RETURN(a.residual, bufs.random(t.dtype, t.rows * t.cols, 3));
    KTUNE_ASSIGN_OR_RETURN(a.residual_out, zeroed(bufs, t.rows * t.cols * elem_bytes));
  }
  *bytes = rowwise::rmsNormBytes(toProblem(a));
  return tuneRmsnorm(tuner, a);
}

Expected<TuneReport> tuneSiluMulOp(Engine& tuner, DeviceBuffers& bufs, const TuneRequest& t,
                                   int64_t* bytes) {
  SiluMulArgs a = siluMulArgs(t);
  KTUNE_ASSIGN_OR_RETURN(a.x, bufs.random(t.dtype, t.rows * 2 * t.cols, 1));
  KTUNE_ASSIGN_OR_RETURN(a.out, zeroed(bufs, t.rows * t.cols * int64_t(sizeOf(t.dtype))));
  *bytes = rowwise::siluMulBytes(toProblem(a));
  return tuneSiluMul(tuner, a);
}

// The isolation worker's own start-up and problem set-up (IsolationStats::worker_ms) beside this
// process's: its start is on the critical path of a tuning run's first candidate.
void noteWorkerTimes(Engine& tuner) {
  for (const auto& [what, ms] : tuner.isolationStats().worker_ms)
    noteProcessMs("worker_" + what + "_ms", ms);
}

// The row-wise key's report from the database (recordedReport), or nullopt to tune it: the key
// of the request's args on placeholder addresses (rmsnormArgs), nothing allocated or touched.
std::optional<TuneReport> recordedRowwise(Engine& tuner, const TuneRequest& t, int64_t* bytes) {
  if (measuresAgain(tuner.options().options, t)) return std::nullopt;
  Expected<KeyReport> k = Status::Internal("no key");
  if (t.op == "rmsnorm") {
    const RmsNormArgs a = rmsnormArgs(t);
    if (!validate(a).ok()) return std::nullopt;
    *bytes = rowwise::rmsNormBytes(toProblem(a));
    k = lookupRmsnorm(tuner, a);
  } else {
    const SiluMulArgs a = siluMulArgs(t);
    if (!validate(a).ok()) return std::nullopt;
    *bytes = rowwise::siluMulBytes(toProblem(a));
    k = lookupSiluMul(tuner, a);
  }
  if (!k.ok()) return std::nullopt;
  return recordedReport(tuner, k->family, k->key);
}

int runRowwise(Engine& tuner, Backend& backend, const TuneRequest& t) {
  int64_t bytes = 0;
  if (std::optional<TuneReport> held = recordedRowwise(tuner, t, &bytes)) {
    printTuneReport(*held, Metric{"GB/s", double(bytes) / 1e9 * 1e3}, t.json, 0);
    return kExitOk;  // as the GEMM keys the database holds: nothing measured, no copy peer
  }
  DeviceBuffers bufs(backend);
  auto rep = t.op == "rmsnorm" ? tuneRmsnormOp(tuner, bufs, t, &bytes)
                               : tuneSiluMulOp(tuner, bufs, t, &bytes);
  if (!rep.ok()) return fail(rep.status());
  noteWorkerTimes(tuner);
  auto bw = copyBandwidth(tuner, backend, bytes);
  Metric m{"GB/s", double(bytes) / 1e9 * 1e3, bw.ok() ? *bw / 1e9 : 0, "copy"};
  printTuneReport(*rep, m, t.json, 0);
  return rep->winner.empty() ? kExitFailed : kExitOk;
}

// Each key's report from the tuning database (GemmOp::fetchRecorded), where it holds one and the
// run does not measure again (measuresAgain); nullopt for the keys to tune.
std::vector<std::optional<TuneReport>> recordedReports(GemmOp& op, const Engine& tuner,
                                                       const TuneRequest& t) {
  std::vector<std::optional<TuneReport>> r(t.gemm_cases.size());
  if (measuresAgain(tuner.options().options, t)) return r;
  for (size_t i = 0; i < r.size(); ++i) r[i] = op.fetchRecorded(t.gemm_cases[i].shape);
  return r;
}

int runGemm(const std::shared_ptr<Engine>& tuner, Backend& backend, const TuneRequest& t,
            EarlyWave& early_wave) {
  if (int rc = checkKindsForArch(t, tuner->device().arch); rc >= 0) return rc;
  const auto t0 = std::chrono::steady_clock::now();
  auto gop = GemmOp::create(tuner, tuneOpOptions(tuner->options().options, t));
  if (!gop.ok()) return fail(gop.status());
  timelineMark("gemm_op");
  early_wave.check(tuner->device());
  // A key this device's database holds is reported from it (--retune measures it again); with
  // every key so, no context, vendor library, inputs or compile are waited for.
  std::vector<std::optional<TuneReport>> recorded = recordedReports(**gop, *tuner, t);
  // The first key to tune has its first wave compiled from here, while the device's context (made
  // since the tuner's creation), the vendor library, the worker and the inputs are made; the next
  // keys' first kernels compile while a key tunes (neither with a shared cache, whose keys may need
  // nothing compiled here). The look-ahead's keys are those to tune.
  std::vector<gemm::GemmShape> shapes;
  for (size_t i = 0; i < recorded.size(); ++i) {
    if (!recorded[i]) shapes.push_back(t.gemm_cases[i].shape);
  }
  GemmLookahead lookahead(**gop, shapes);
  const bool look = !t.args.has("--no-lookahead") && tuner->options().options.remote_cache.empty() &&
                    !shapes.empty();
  if (look) lookahead.startFirst();
  timelineMark("first_wave_started", look ? "" : "off");
  const double create_ms = msSince(t0);
  if (!shapes.empty() || t.m_hi > 0) {  // a range's report predicts with the vendor's tiles
    const auto tc = std::chrono::steady_clock::now();
    if (Status st = tuner->awaitDevice(); !st.ok()) return fail(st);
    noteProcessMs("context_wait_ms", msSince(tc));
    timelineMark("context");
    const auto tv = std::chrono::steady_clock::now();
    (*gop)->openVendor();
    noteProcessMs("op_ms", create_ms + msSince(tv));  // the op and its vendor library, no wait
    timelineMark("vendor_open");
  }
  int rc = kExitOk;
  // The keys' random inputs are generated on the device (ops/device_fill.h), the same values; on
  // from the first key that needs inputs (a run the shared cache answers compiles no fill kernel).
  struct FillOff {
    bool on = false;
    ~FillOff() {
      if (on) disableDeviceFill();  // after the operands' last fill; waits for its compile
      if (on) disableDeviceCompare();
    }
  } fill;
  SharedOperands operands(backend);  // filled as the keys need them
  for (size_t i = 0, next = 0; i < t.gemm_cases.size(); ++i) {
    const size_t j = next;  // this key's index among those to tune (the look-ahead's)
    const bool held = recorded[i].has_value();  // answered from the database
    next += held ? 0 : 1;
    const auto& gc = t.gemm_cases[i];
    const auto& s = gc.shape;
    if (!t.json && !t.quiet)
      std::fprintf(stderr, "%s: M=%lld N=%lld K=%lld %s\n", gc.name.c_str(), (long long)s.m,
                   (long long)s.n, (long long)s.k, gemm::layoutName(s.layout));
    // A key the shared cache holds needs no buffers at all (their random fill alone takes seconds
    // for the LLM suite): nothing is allocated, compiled or benchmarked for it.
    std::optional<TuneReport> hit = held ? std::move(recorded[i]) : (*gop)->fetchShared(s);
    Expected<TuneReport> rep = Status::Internal("no report");
    if (hit) {
      rep = std::move(*hit);
    } else {
      (*gop)->prepareWorker(s);  // the worker builds its inputs while this process fills its own
      if (!fill.on) {
        enableDeviceFill(backend, tuner->compiler(), &tuner->store(), tuner->device());
        // ...and where the candidates run here (no worker), their checks compare on the device
        // (with a worker, the worker's do: a cold run compiles that kernel there only).
        if (!tuner->options().options.isolate)
          enableDeviceCompare(backend, tuner->compiler(), &tuner->store(), tuner->device());
      }
      fill.on = true;
      const auto b0 = std::chrono::steady_clock::now();
      auto call = operands.call(s);
      if (!call.ok()) return fail(call.status());
      noteProcessMs("buffers_ms", msSince(b0));  // this key's random inputs
      timelineMark("buffers", gc.name);
      lookahead.tuning(j);
      rep = (*gop)->tune(*call);
      timelineMark("tuned", gc.name);
    }
    // After the first key tuned: its compiles took every core.
    if (look && !held) lookahead.start(j + 1);
    if (!rep.ok()) { rc = fail(rep.status()); continue; }
    noteWorkerTimes(*tuner);
    if (look && shapes.size() > 1) noteProcessMs("lookahead_compiled", double(lookahead.compiled()));
    if (look && !held && j == 0) {
      // The run took the early wave's compiles as store hits: the report counts them as compiled.
      // With the early wave (tune_early_wave.h) the look-ahead's wave joined or hit its compiles:
      // the two overlap, so the larger count.
      const size_t early = std::max(lookahead.awaitFirstCompiled(), early_wave.awaitCompiled());
      noteProcessMs("first_wave_precompiled", double(early));
      // Those it found done were store hits to it (one it joined running is its own compile
      // already); the cap by its hits can only over-count where an earlier run's entries and a
      // joined compile meet.
      int taken = 0;
      if (!hit) {
        taken = static_cast<int>(std::min<size_t>(early, size_t(rep->store_hits)));
        rep->compiled += taken;
        rep->store_hits -= taken;
      }
      noteProcessMs("first_wave_taken", double(taken));
    }
    double vendor_ms = 0;
    for (const auto& cand : rep->candidates)
      if (isVendorSource(cand.source) && cand.config.rfind(cand.source + ":idx=0:", 0) == 0 &&
          cand.status == Code::kOk)
        vendor_ms = cand.stats.median_ms;
    Metric m{"TFLOP/s", 2.0 * double(s.m) * double(s.n) * double(s.k) / 1e12 * 1e3};
    printTuneReport(*rep, m, t.json, vendor_ms);
    timelineMark("printed", gc.name);
    if (rep->winner.empty()) rc = kExitFailed;
  }
  if (t.m_hi > 0 && rc == kExitOk) rc = reportRange(**gop, t);
  return rc;
}

}  // namespace

namespace {

// Ends the command once its report is out, without tearing the GPU side down by hand. On a real
// GPU the teardown is the isolation worker's polite exit (waited for: its buffers, modules,
// cuBLASLt handle and context), then this process's module unloads, frees, cuBLASLt handle and
// context: all of it after the last line was printed, on the caller's wall time, for nothing the
// kernel does not do at exit (the worker is SIGKILLed with this process: PR_SET_PDEATHSIG). What
// must outlive the command is already on disk: database entries and code objects are written
// (temp file, then rename) before the tuner returns, and the journal is closed. Not with a remote
// cache, whose lease renewer is stopped and lease released by destructors, nor on the simulated
// device (nothing to gain, and the sanitizer builds check its teardown).
[[noreturn]] void leaveWithoutTeardown(int rc) {
  std::fflush(nullptr);
  timelineMark("exit");
  reportExitStatus(rc);  // the caller's wall ends here, not after the teardown (tune_detach.h)
  std::_Exit(rc);
}

}  // namespace

int cmdTune(const std::vector<std::string>& argv) {
  const double age_ms = processAgeMs();
  noteProcessMs("start_ms", age_ms);
  TuneRequest t;
  if (int rc = parseTuneRequest(argv, &t); rc >= 0) return rc;
  auto opts = Options::fromEnv();
  if (!opts.ok()) return fail(opts.status());
  // Where the run will end in leaveWithoutTeardown: the GPU's teardown off the caller's wall.
  if (opts->backend != "sim" && !t.args.has("--no-gpu") && opts->remote_cache.empty() &&
      (pathExists("/dev/nvidiactl") || pathExists("/dev/kfd")))
    detachTeardown();
  timelineMark("main", strprintf("age %.1f ms", age_ms));  // the tuning process from here
  limitVisibleDevices(*opts, t);
  // The early wave (KTUNE_EARLY_WAVE): the first key's first wave from NVML's device, before the
  // driver starts.
  EarlyWave early;
  startEarlyWave(early, *opts, t);
  prestartWorkerIfIsolating(*opts, t);
  limitTunerConnections(*opts, t);
  early.go();  // the environment is final: the wave's thread may read it
  // A GEMM run opens cuBLASLt after the GPU: its loading starts on a thread of its own, before the
  // driver starts (KTUNE_LT_PRELOAD=early) or once the tuner exists (the default).
  const bool lt_after = opts->lt_preload != "early";
  const bool lt = t.op == "gemm" && opts->backend != "sim" && !t.args.has("--no-gpu") &&
                  opts->vendor_algos > 0;
  if (lt && !lt_after) cublaslt::preloadLibrary();
  auto t0 = std::chrono::steady_clock::now();
  Gpu gpu = openGpu(*opts, t.args.has("--no-gpu"));
  // An exclusive-process GPU admits one context, which the early worker may have taken.
  if (!gpu.backend && stopEarlyWorker()) gpu = openGpu(*opts, t.args.has("--no-gpu"));
  noteProcessMs("open_gpu_ms", msSince(t0));
  timelineMark("open_gpu");
  if (!gpu.backend) {
    if (!t.from_file.empty())
      return fail(Status::Unavailable("offline tuning needs a GPU: " + gpu.why_none),
                  "KTUNE_BACKEND=sim tunes on a simulated device");
    return analyseWithoutGpu(t, *opts, gpu.why_none);
  }
  Progress progress(t.quiet, t.json);
  t0 = std::chrono::steady_clock::now();
  auto tuner = makeTuner(gpu, *opts, t, &progress);
  if (!tuner.ok() && stopEarlyWorker()) tuner = makeTuner(gpu, *opts, t, &progress);  // as above
  if (!tuner.ok()) return fail(tuner.status());
  noteProcessMs("tuner_ms", msSince(t0));
  timelineMark("tuner");
  // Once the tuner exists (its NVRTC load, a dlopen, does not queue behind the library's), beside
  // its context's creation.
  if (lt && lt_after) cublaslt::preloadLibrary();
  t0 = std::chrono::steady_clock::now();
  (*tuner)->prestartWorker();  // its start-up overlaps the problem set-up below
  noteProcessMs("worker_prestart_ms", msSince(t0));
  const DeviceInfo& dev = (*tuner)->device();
  if (!t.json && !t.quiet)
    std::fprintf(stderr, "device: %s (%s), cache %s\n", dev.name.c_str(), dev.arch.c_str(),
                 opts->cache_dir.c_str());
  int rc = !t.from_file.empty() ? runFromFile(**tuner, *tuner, t)
           : t.op == "gemm"      ? runGemm(*tuner, *gpu.backend, t, early)
                                 : runRowwise(**tuner, *gpu.backend, t);
  if (!gpu.sim && opts->remote_cache.empty()) leaveWithoutTeardown(rc);
  return rc;
}

}  // namespace ktune::cli
