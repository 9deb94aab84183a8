// `ktune tune`: tune a built-in op for a shape on the GPU (or the simulated one, KTUNE_BACKEND=sim)
// and print every candidate; without a GPU, compile and analyse the config space for an arch
// (tune_analyse.cc). `ktune tune --from-file untuned.jsonl`: offline tuning of keys recorded with
// tuning off.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include <unistd.h>

#include "autotune/autotuner.h"
#include "autotune/device_pool.h"
#include "autotune/worker_prestart.h"
#include "ops/buffers.h"
#include "ops/gemm.h"
#include "bench/fair/peers.h"
#include "ops/tune_args.h"
#include "remote/shared.h"
#include "ops/rowwise.h"
#include "base/format.h"
#include "base/fs.h"
#include "runtime/backend.h"
#include "templates/rowwise.h"
#include "tools/commands.h"
#include "tools/sim_gpu.h"
#include "tools/tune_output.h"
#include "tools/tune_request.h"

namespace ktune::cli {

const char* const kTuneUsage =
    "ktune tune rmsnorm|silu_mul --rows R --cols C [--dtype bf16|f16|f32] [--residual] [--no-weight]\n"
    "       ktune tune gemm --m M|LO..HI --n N --k K [--dtype bf16|f16|fp8e4m3|fp8e5m2] [--out-dtype ...]\n"
    "                       [--layout NN|NT|TN|TT]\n"
    "                       [--epilogue none|bias|residual|silu|gelu|silu_mul, '+'-joined]\n"
    "                       [--full-space]\n"
    "                       [--kinds mma,skinny,decode,wgmma,tma,mfma (only these kernels)]\n"
    "       ktune tune gemm --suite llm\n"
    "       ktune tune --from-file untuned.jsonl [--queue redis://host:port/db [--queue-name N]]\n"
    "  common: [--json] [--arch A (no-GPU analysis; default sm_90a)] [--no-gpu] [--quiet]\n"
    "          [--no-isolate (benchmark in this process, not in a ktune-worker; KTUNE_ISOLATE=0)]\n"
    "          [--search guided|exhaustive (KTUNE_SEARCH; default guided, docs/search.md)]\n"
    "          [--budget SECONDS (KTUNE_BUDGET: a guided run stops exploring after this long)]\n"
    "          [--devices all|0,1,... (spread the candidates over these GPUs of one model, one\n"
    "           worker each; KTUNE_BACKEND=sim with KTUNE_SIM_DEVICES=N simulates N devices)]\n"
    "  On a GPU: tune, verify, record the winner in the tuning database and print every candidate.\n"
    "  KTUNE_BACKEND=sim: the same on a simulated H100-like device (deterministic simulated costs).\n"
    "  Without either: compile and analyse the configs for --arch; timing needs a GPU.\n"
    "  Progress goes to stderr on a terminal (JSON lines with --json; none with --quiet).";

namespace {

// Untuned-keys files are small; the cap keeps a wrong path from filling memory.
constexpr uint64_t kMaxUntunedBytes = 64ull << 20;


std::vector<GemmCase> llmSuite(gemm::ElemType dt) {
  // An LLM layer (Llama-3-8B-like: hidden 4096, 32 heads + 8 KV heads -> QKV 6144, MLP 14336),
  // nn.Linear weights [N][K] (layout NT), for a prefill of 4096 tokens and a decode step of 16.
  std::vector<GemmCase> out;
  struct S { const char* n; int64_t m, n_, k; };
  const S shapes[] = {{"prefill qkv", 4096, 6144, 4096},   {"prefill o", 4096, 4096, 4096},
                      {"prefill gate_up", 4096, 28672, 4096}, {"prefill down", 4096, 4096, 14336},
                      {"decode qkv", 16, 6144, 4096},        {"decode o", 16, 4096, 4096},
                      {"decode gate_up", 16, 28672, 4096},   {"decode down", 16, 4096, 14336}};
  for (const auto& s : shapes)
    out.push_back({s.n, gemm::denseShape(gemm::Layout::kNT, dt, isFp8(dt) ? gemm::ElemType::kBF16 : dt,
                                         s.m, s.n_, s.k)});
  return out;
}

// "+"-joined parts: bias, residual (beta = 1: C += ...), and at most one activation (silu, gelu,
// silu_mul: the gate/up pair, C gets N/2 columns); "bias_silu" / "bias_gelu" as before.
Status parseEpilogue(const std::string& e, gemm::GemmShape* s) {
  if (e.empty() || e == "none") return Status::Ok();
  size_t at = 0;
  while (at <= e.size()) {
    const size_t end = std::min(e.find('+', at), e.size());
    std::string part = e.substr(at, end - at);
    at = end + 1;
    if (part.rfind("bias", 0) == 0) {
      s->has_bias = true;
      part = part.size() > 5 ? part.substr(5) : "";
    }
    if (part.empty()) continue;
    if (part == "residual") {
      s->beta = 1.0f;
      continue;
    }
    auto a = gemm::parseActivation(part);
    if (!a.ok())
      return Status::InvalidArgument("--epilogue '" + e + "': '" + part +
                                     "' (expected '+'-joined bias, residual and one of silu, "
                                     "gelu, silu_mul; e.g. bias+silu_mul)");
    s->act = *a;
  }
  return Status::Ok();
}

// Random device buffer of `count` elements of `t`, values in [-1, 1).
Expected<DevicePtr> randomBuffer(Backend& b, DType t, int64_t count, uint64_t seed) {
  KTUNE_ASSIGN_OR_RETURN(DevicePtr p, b.alloc(size_t(count) * sizeOf(t)));
  Status s = fillRandom(b, p, t, count, seed);
  if (!s.ok()) {
    (void)b.free(p);
    return s;
  }
  return p;
}

// Owns device buffers for the lifetime of a command.
struct Buffers {
  Backend* b = nullptr;
  std::vector<DevicePtr> ptrs;
  ~Buffers() {
    for (auto p : ptrs) (void)b->free(p);
  }
  Expected<DevicePtr> random(DType t, int64_t count, uint64_t seed) {
    auto p = randomBuffer(*b, t, count, seed);
    if (p.ok()) ptrs.push_back(*p);
    return p;
  }
  Expected<DevicePtr> zeros(int64_t bytes) {
    KTUNE_ASSIGN_OR_RETURN(DevicePtr p, b->alloc(size_t(bytes)));
    ptrs.push_back(p);
    KTUNE_RETURN_IF_ERROR(b->memset8(p, 0, size_t(bytes)));
    return p;
  }
};

// Same-run copy bandwidth (bytes read + written per second) for `bytes` moved in total: the
// benches' copy peer (bench/fair/peers.h: best ktune_copy config or the driver copy, L2 flushed
// by reads before every run, median of 25 runs).
Expected<double> copyBandwidth(Engine& tuner, Backend& b, int64_t bytes_moved) {
  KTUNE_ASSIGN_OR_RETURN(auto peers, StreamPeers::create(b, tuner.compiler(), tuner.device()));
  KTUNE_ASSIGN_OR_RETURN(StreamPeers::Peer peer, peers->copyPeer(bytes_moved));
  KTUNE_ASSIGN_OR_RETURN(fair::Interval bw, peers->bandwidth(peer));
  return bw.median;
}

// "--kinds a,b" -> kinds (empty when absent); kInvalidArgument naming an unknown kind.
Expected<std::vector<gemm::KernelKind>> parseKinds(const std::string& list) {
  std::vector<gemm::KernelKind> out;
  std::string item;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i == list.size() || list[i] == ',') {
      if (!item.empty()) {
        KTUNE_ASSIGN_OR_RETURN(gemm::KernelKind k, gemm::parseKernelKind(item));
        out.push_back(k);
      }
      item.clear();
    } else {
      item += list[i];
    }
  }
  return out;
}

// The untuned-keys file must be a regular file of JSON lines (what KTUNE_RECORD_UNTUNED writes)
// with at least one valid item: checked before any GPU is opened. A bad line does not stop the
// file: tuneFromFile reports it with its number and reason, and the exit code says it failed.
Status checkUntunedFile(const std::string& path) {
  KTUNE_ASSIGN_OR_RETURN(std::string text, readFile(path, kMaxUntunedBytes));
  std::istringstream in(text);
  std::string line;
  int n = 0, entries = 0;
  Status first_bad;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto item = parseBuiltinTuneItem(line);
    if (item.ok()) ++entries;
    else if (first_bad.ok()) first_bad = item.status().withContext("line " + std::to_string(n));
  }
  if (entries == 0) {
    return Status::InvalidArgument("'" + path + "' holds no untuned keys" +
                                   (first_bad.ok() ? "" : " (" + first_bad.message() + ")") +
                                   "; expected the JSON lines KTUNE_RECORD_UNTUNED writes");
  }
  return Status::Ok();
}

int parseGemmCases(TuneRequest* t) {
  const ParsedArgs& a = t->args;
  if (t->dtype == DType::kF32)
    return usage("gemm --dtype must be bf16, f16, fp8e4m3 or fp8e5m2", kTuneUsage);
  gemm::ElemType ab = t->dtype == DType::kF16 || isFp8(t->dtype) ? t->dtype : gemm::ElemType::kBF16;
  // FP8 inputs write bf16 (C and bias) unless --out-dtype says otherwise.
  gemm::ElemType cdt = isFp8(ab) ? gemm::ElemType::kBF16 : ab;
  if (a.has("--out-dtype")) {
    auto o = gemm::parseElemType(a.get("--out-dtype"));
    if (!o.ok()) return usage(o.status().message(), kTuneUsage);
    cdt = *o;
  }
  if (a.has("--suite")) {
    if (a.get("--suite") != "llm") return usage("--suite must be llm", kTuneUsage);
    t->gemm_cases = llmSuite(ab);
    return -1;
  }
  if (!a.has("--m") || !a.has("--n") || !a.has("--k"))
    return usage("gemm needs --m --n --k (or --suite llm)", kTuneUsage);
  long long mnk[3];
  const char* names[3] = {"--m", "--n", "--k"};
  if (const std::string m = a.get("--m"); m.find("..") != std::string::npos) {
    auto lo = parseIntFlag("--m", m.substr(0, m.find("..")), 1, (1LL << 31) - 1);
    auto hi = parseIntFlag("--m", m.substr(m.find("..") + 2), 1, (1LL << 31) - 1);
    if (!lo.ok() || !hi.ok() || *hi < *lo)
      return usage("--m LO..HI needs 1 <= LO <= HI", kTuneUsage);
    t->m_lo = *lo;
    t->m_hi = *hi;
  }
  for (int i = 0; i < 3; ++i) {
    if (i == 0 && t->m_hi > 0) {
      mnk[0] = t->m_lo;
      continue;
    }
    auto v = parseIntFlag(names[i], a.get(names[i]), 1, (1LL << 31) - 1);
    if (!v.ok()) return usage(v.status().message(), kTuneUsage);
    mnk[i] = *v;
  }
  // FP8 runs in layout NT only (both operands K-major): its default.
  auto layout = gemm::parseLayout(a.get("--layout", isFp8(ab) ? "NT" : "NN"));
  if (!layout.ok()) return usage(layout.status().message(), kTuneUsage);
  auto s = gemm::denseShape(*layout, ab, cdt, mnk[0], mnk[1], mnk[2]);
  Status e = parseEpilogue(a.get("--epilogue"), &s);
  if (!e.ok()) return usage(e.message(), kTuneUsage);
  s.ldc = gemm::outCols(s);  // dense C: N/2 columns for silu_mul
  Status v = gemm::validate(s);
  if (!v.ok()) return fail(v);
  if (t->m_hi > 0) {
    for (long long m : rangeMs(t->m_lo, t->m_hi)) {
      auto r = gemm::denseShape(*layout, ab, cdt, m, mnk[1], mnk[2]);
      (void)parseEpilogue(a.get("--epilogue"), &r);  // parsed above: cannot fail here
      t->gemm_cases.push_back({"gemm", r});
    }
    return -1;
  }
  t->gemm_cases.push_back({"gemm", s});
  return -1;
}

}  // namespace

int parseTuneRequest(const std::vector<std::string>& argv, TuneRequest* t) {
  auto args = parseArgs(argv, {{"--rows", true}, {"--cols", true}, {"--dtype", true},
                               {"--out-dtype", true}, {"--m", true}, {"--n", true}, {"--k", true},
                               {"--layout", true}, {"--epilogue", true}, {"--suite", true},
                               {"--from-file", true}, {"--arch", true}, {"--residual"},
                               {"--no-weight"}, {"--full-space"}, {"--no-gpu"}, {"--json"},
                               {"--quiet"}, {"--no-isolate"}, {"--kinds", true},
                               {"--queue", true}, {"--queue-name", true}, {"--devices", true},
                               {"--search", true}, {"--budget", true}});
  if (!args.ok()) return usage(args.status().message(), kTuneUsage);
  if (args->help) return help(kTuneUsage);
  t->args = std::move(*args);
  const ParsedArgs& a = t->args;
  auto kinds = parseKinds(a.get("--kinds", ""));
  if (!kinds.ok()) return usage(kinds.status().message(), kTuneUsage);
  t->kinds = *kinds;
  t->json = a.has("--json");
  t->quiet = a.has("--quiet");
  if (a.has("--search") && a.get("--search") != "guided" && a.get("--search") != "exhaustive")
    return usage("--search must be guided or exhaustive", kTuneUsage);
  if (a.has("--budget")) {
    char* end = nullptr;
    const std::string b = a.get("--budget");
    const double v = std::strtod(b.c_str(), &end);
    if (b.empty() || *end != '\0' || !(v >= 0)) return usage("--budget must be seconds >= 0", kTuneUsage);
    t->budget_s = v;
  }
  if (a.has("--from-file")) {
    if (!a.positional.empty()) return usage("--from-file takes no op", kTuneUsage);
    t->from_file = a.get("--from-file");
    Status st = checkUntunedFile(t->from_file);
    if (!st.ok()) return fail(st);
    if (a.has("--queue"))  // distributed: the keys go to `ktune serve` servers (cmd_remote.cc)
      return enqueueFile(t->from_file, a.get("--queue"), a.get("--queue-name", "default"), t->json);
    return -1;
  }
  if (a.has("--queue")) return usage("--queue needs --from-file", kTuneUsage);
  if (a.positional.size() != 1) return usage("expected one op: rmsnorm, silu_mul or gemm", kTuneUsage);
  t->op = a.positional[0];
  if (t->op != "rmsnorm" && t->op != "silu_mul" && t->op != "gemm")
    return usage("unknown op '" + t->op + "' (rmsnorm, silu_mul, gemm)", kTuneUsage);
  if (a.has("--dtype")) {
    auto d = parseDType(a.get("--dtype"));
    if (!d.ok() || (*d != DType::kBF16 && *d != DType::kF16 && *d != DType::kF32 &&
                    !(isFp8(*d) && t->op == "gemm")))
      return usage("--dtype must be bf16, f16 or f32 (gemm: also fp8e4m3, fp8e5m2)", kTuneUsage);
    t->dtype = *d;
  }
  if (t->op == "gemm") return parseGemmCases(t);
  if (!a.has("--rows") || !a.has("--cols")) return usage(t->op + " needs --rows and --cols", kTuneUsage);
  auto r = parseIntFlag("--rows", a.get("--rows"), 1, 1LL << 31);
  if (!r.ok()) return usage(r.status().message(), kTuneUsage);
  auto c = parseIntFlag("--cols", a.get("--cols"), 1, 1LL << 31);
  if (!c.ok()) return usage(c.status().message(), kTuneUsage);
  t->rows = *r;
  t->cols = *c;
  return -1;
}

int checkKindsForArch(const TuneRequest& t, const std::string& arch) {
  if (t.op != "gemm" || t.kinds.empty()) return -1;
  std::string have;
  bool any = false;
  for (auto k : gemm::kernelsForArch(arch)) {
    have += std::string(have.empty() ? "" : ",") + gemm::kernelKindName(k);
    any = any || std::find(t.kinds.begin(), t.kinds.end(), k) != t.kinds.end();
  }
  if (any) return -1;
  std::fprintf(stderr, "ktune: none of the --kinds runs on %s: nothing to tune\nhint: kinds for %s: %s\n",
               arch.c_str(), arch.c_str(), have.c_str());
  return kExitUsage;
}

namespace {

double msSinceT(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

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

Expected<std::shared_ptr<Engine>> makeTuner(const Gpu& gpu, const Options& opts, const TuneRequest& t,
                                           Progress* progress) {
  EngineOptions topts;
  topts.options = opts;
  // Tuning through the CLI benchmarks in a supervised worker unless told otherwise; the
  // simulated device lives in this process only, so it is benchmarked here.
  if (!opts.isolate_explicit) topts.options.isolate = topts.isolation.fallback_in_process = !gpu.sim;
  if (t.args.has("--no-isolate")) topts.options.isolate = false;
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

Expected<TuneReport> tuneRmsnormOp(Engine& tuner, Buffers& bufs, const TuneRequest& t, int64_t* bytes) {
  RmsNormArgs a;
  a.dtype = t.dtype; a.rows = t.rows; a.cols = t.cols;
  const int64_t elem_bytes = int64_t(sizeOf(t.dtype));
  KTUNE_ASSIGN_OR_RETURN(a.x, bufs.random(t.dtype, t.rows * t.cols, 1));
  KTUNE_ASSIGN_OR_RETURN(a.y, bufs.zeros(t.rows * t.cols * elem_bytes));
  if (!t.args.has("--no-weight")) {
    KTUNE_ASSIGN_OR_RETURN(a.weight, bufs.random(t.dtype, t.cols, 2));
    a.weight_dtype = t.dtype;
  }
  if (t.args.has("--residual")) {
    KTUNE_ASSIGN_OR_RETURN(a.residual, bufs.random(t.dtype, t.rows * t.cols, 3));
    KTUNE_ASSIGN_OR_RETURN(a.residual_out, bufs.zeros(t.rows * t.cols * elem_bytes));
  }
  *bytes = rowwise::rmsNormBytes(toProblem(a));
  return tuneRmsnorm(tuner, a);
}

Expected<TuneReport> tuneSiluMulOp(Engine& tuner, Buffers& bufs, const TuneRequest& t, int64_t* bytes) {
  SiluMulArgs a;
  a.dtype = t.dtype; a.rows = t.rows; a.d = t.cols;
  KTUNE_ASSIGN_OR_RETURN(a.x, bufs.random(t.dtype, t.rows * 2 * t.cols, 1));
  KTUNE_ASSIGN_OR_RETURN(a.out, bufs.zeros(t.rows * t.cols * int64_t(sizeOf(t.dtype))));
  *bytes = rowwise::siluMulBytes(toProblem(a));
  return tuneSiluMul(tuner, a);
}

// The isolation worker's own start-up and problem set-up (IsolationStats::worker_ms) beside this
// process's: its start is on the critical path of a tuning run's first candidate.
void noteWorkerTimes(Engine& tuner) {
  for (const auto& [what, ms] : tuner.isolationStats().worker_ms)
    noteProcessMs("worker_" + what + "_ms", ms);
}

int runRowwise(Engine& tuner, Backend& backend, const TuneRequest& t) {
  Buffers bufs;
  bufs.b = &backend;
  int64_t bytes = 0;
  auto rep = t.op == "rmsnorm" ? tuneRmsnormOp(tuner, bufs, t, &bytes)
                               : tuneSiluMulOp(tuner, bufs, t, &bytes);
  if (!rep.ok()) return fail(rep.status());
  noteWorkerTimes(tuner);
  auto bw = copyBandwidth(tuner, backend, bytes);
  Metric m{"GB/s", double(bytes) / 1e9 * 1e3, bw.ok() ? *bw / 1e9 : 0, "copy"};
  printTuneReport(*rep, m, t.json, 0);
  return rep->winner.empty() ? kExitFailed : kExitOk;
}

Expected<GemmCall> gemmBuffers(Buffers& bufs, const gemm::GemmShape& s) {
  GemmCall call;
  call.shape = s;
  DType ab = s.ab == gemm::ElemType::kF16 ? DType::kF16 : DType::kBF16;
  DType cd = s.c == gemm::ElemType::kF32 ? DType::kF32
             : s.c == gemm::ElemType::kF16 ? DType::kF16 : DType::kBF16;
  KTUNE_ASSIGN_OR_RETURN(call.buf.a, bufs.random(ab, gemm::storedRowsA(s) * s.lda, 11));
  KTUNE_ASSIGN_OR_RETURN(call.buf.b, bufs.random(ab, gemm::storedRowsB(s) * s.ldb, 12));
  KTUNE_ASSIGN_OR_RETURN(call.buf.c, bufs.random(cd, s.m * s.ldc, 13));
  if (s.has_bias) {
    KTUNE_ASSIGN_OR_RETURN(call.buf.bias, bufs.random(cd, s.n, 14));
  }
  return call;
}

int runGemm(const std::shared_ptr<Engine>& tuner, Backend& backend, const TuneRequest& t) {
  if (int rc = checkKindsForArch(t, tuner->device().arch); rc >= 0) return rc;
  GemmOp::OpOptions gopts;
  gopts.full_space = t.args.has("--full-space");
  gopts.kinds = t.kinds;
  const auto t0 = std::chrono::steady_clock::now();
  auto gop = GemmOp::create(tuner, gopts);  // opens the vendor library
  if (!gop.ok()) return fail(gop.status());
  noteProcessMs("op_ms", msSinceT(t0));
  int rc = kExitOk;
  for (const auto& gc : t.gemm_cases) {
    const auto& s = gc.shape;
    if (!t.json && !t.quiet)
      std::fprintf(stderr, "%s: M=%lld N=%lld K=%lld %s\n", gc.name.c_str(), (long long)s.m,
                   (long long)s.n, (long long)s.k, gemm::layoutName(s.layout));
    Buffers bufs;  // this shape's buffers, freed before the next one
    bufs.b = &backend;
    // A key the shared cache holds needs no buffers at all (their random fill alone takes seconds
    // for the LLM suite): nothing is allocated, compiled or benchmarked for it.
    std::optional<TuneReport> hit = (*gop)->fetchShared(s);
    Expected<TuneReport> rep = Status::Internal("no report");
    if (hit) {
      rep = std::move(*hit);
    } else {
      (*gop)->prepareWorker(s);  // the worker builds its inputs while this process fills its own
      const auto b0 = std::chrono::steady_clock::now();
      auto call = gemmBuffers(bufs, s);
      if (!call.ok()) return fail(call.status());
      noteProcessMs("buffers_ms", msSinceT(b0));  // this key's random inputs
      rep = (*gop)->tune(*call);
    }
    if (!rep.ok()) { rc = fail(rep.status()); continue; }
    noteWorkerTimes(*tuner);
    double vendor_ms = 0;
    for (const auto& cand : rep->candidates)
      if (cand.source != "jit" && cand.config.rfind(cand.source + ":idx=0:", 0) == 0 &&
          cand.status == Code::kOk)
        vendor_ms = cand.stats.median_ms;
    Metric m{"TFLOP/s", 2.0 * double(s.m) * double(s.n) * double(s.k) / 1e12 * 1e3};
    printTuneReport(*rep, m, t.json, vendor_ms);
    if (rep->winner.empty()) rc = kExitFailed;
  }
  if (t.m_hi > 0 && rc == kExitOk) rc = reportRange(**gop, t);
  return rc;
}

}  // namespace

namespace {

// Milliseconds since this process started (exec, dynamic loading and static set-up included),
// from the kernel's start time; 0 where /proc cannot say.
double processAgeMs() {
  std::string stat, up;
  if (auto s = readFile("/proc/self/stat"); s.ok()) stat = *s;
  if (auto u = readFile("/proc/uptime"); u.ok()) up = *u;
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || up.empty()) return 0;
  std::istringstream in(stat.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && (in >> field); ++i) {}  // field 22: start time in clock ticks
  const double ticks = std::atof(field.c_str()), hz = double(::sysconf(_SC_CLK_TCK));
  if (ticks <= 0 || hz <= 0) return 0;
  return std::max(0.0, 1e3 * (std::atof(up.c_str()) - ticks / hz));
}

// Starts the isolation worker before this process opens its GPU, so the two start-ups (driver
// context, vendor library, tuner) overlap (worker_prestart.h); the tuner made below takes it.
// Only where the tuner will isolate on one real GPU and a GPU device node exists (a CPU-only
// machine analyses without a GPU: no worker to start).
void prestartWorkerIfIsolating(const Options& opts, const TuneRequest& t) {
  const bool isolate = opts.isolate_explicit ? opts.isolate : !t.args.has("--no-isolate");
  if (!isolate || opts.backend == "sim" || t.args.has("--no-gpu") || t.args.has("--devices")) return;
  if (!pathExists("/dev/nvidiactl") && !pathExists("/dev/kfd")) return;
  const auto t0 = std::chrono::steady_clock::now();
  auto wl = earlyWorkerLaunch(opts);
  if (wl.ok()) (void)prestartWorkerEarly(std::move(*wl), IsolationOptions{});
  noteProcessMs("worker_spawn_ms", msSinceT(t0));
}

}  // namespace

int cmdTune(const std::vector<std::string>& argv) {
  noteProcessMs("start_ms", processAgeMs());
  TuneRequest t;
  if (int rc = parseTuneRequest(argv, &t); rc >= 0) return rc;
  auto opts = Options::fromEnv();
  if (!opts.ok()) return fail(opts.status());
  prestartWorkerIfIsolating(*opts, t);
  auto t0 = std::chrono::steady_clock::now();
  Gpu gpu = openGpu(*opts, t.args.has("--no-gpu"));
  // An exclusive-process GPU admits one context, which the early worker may have taken.
  if (!gpu.backend && stopEarlyWorker()) gpu = openGpu(*opts, t.args.has("--no-gpu"));
  noteProcessMs("open_gpu_ms", msSinceT(t0));
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
  noteProcessMs("tuner_ms", msSinceT(t0));
  t0 = std::chrono::steady_clock::now();
  (*tuner)->prestartWorker();  // its start-up overlaps the problem set-up below
  noteProcessMs("worker_prestart_ms", msSinceT(t0));
  const DeviceInfo& dev = (*tuner)->device();
  if (!t.json && !t.quiet)
    std::fprintf(stderr, "device: %s (%s), cache %s\n", dev.name.c_str(), dev.arch.c_str(),
                 opts->cache_dir.c_str());
  if (!t.from_file.empty()) return runFromFile(**tuner, *tuner, t);
  if (t.op == "gemm") return runGemm(*tuner, *gpu.backend, t);
  return runRowwise(**tuner, *gpu.backend, t);
}

}  // namespace ktune::cli
