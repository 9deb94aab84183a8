// `ktune tune`: tune a built-in op for a shape on the GPU and print every candidate; without a GPU,
// compile and analyse the config space for an arch and say plainly that timing needs a GPU.
// `ktune tune --from-file untuned.json`: offline tuning of keys recorded with tuning off.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <unistd.h>

#include "autotune/autotuner.h"
#include "autotune/dtype.h"
#include "autotune/ops/gemm.h"
#include "autotune/ops/rowwise.h"
#include "base/options.h"
#include "remote/shared.h"
#include "compiler/analysis/report.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"
#include "templates/embedded.h"
#include "templates/gemm.h"
#include "templates/rowwise.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace ktune::cli {
namespace {

const char* kUsage =
    "ktune tune rmsnorm|silu_mul --rows R --cols C [--dtype bf16|f16|f32] [--residual] [--no-weight]\n"
    "       ktune tune gemm --m M --n N --k K [--dtype bf16|f16] [--out-dtype ...] [--layout NN|NT|TN|TT]\n"
    "                       [--epilogue none|bias|bias_silu|bias_gelu|silu|gelu] [--full-space]\n"
    "                       [--kinds mma,skinny,wgmma,tma,mfma (only these kernels)]\n"
    "       ktune tune gemm --suite llm\n"
    "       ktune tune --from-file untuned.jsonl [--queue redis://host:port/db [--queue-name N]]\n"
    "  common: [--json] [--arch A (no-GPU analysis; default sm_90a)] [--no-gpu] [--quiet]\n"
    "          [--no-isolate (benchmark in this process, not in a ktune-worker; KTUNE_ISOLATE=0)]";

struct GemmCase {
  std::string name;
  gemm::GemmShape shape;
};

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
    out.push_back({s.n, gemm::denseShape(gemm::Layout::kNT, dt, dt, s.m, s.n_, s.k)});
  return out;
}

Status parseEpilogue(const std::string& e, gemm::GemmShape* s) {
  if (e.empty() || e == "none") return Status::Ok();
  std::string act = e;
  if (e.rfind("bias", 0) == 0) {
    s->has_bias = true;
    act = e.size() > 5 ? e.substr(5) : "none";
  }
  auto a = gemm::parseActivation(act);
  if (!a.ok()) return Status::InvalidArgument("--epilogue '" + e +
                                              "' (expected none, bias, bias_silu, bias_gelu, silu, gelu)");
  s->act = *a;
  return Status::Ok();
}

// Random device buffer of `count` elements of `t`, values in [-1, 1).
Expected<DevicePtr> randomBuffer(Backend& b, DType t, int64_t count, uint64_t seed) {
  std::vector<unsigned char> host(size_t(count) * sizeOf(t));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (int64_t i = 0; i < count; ++i) storeFromDouble(host.data(), t, i, dist(rng));
  KTUNE_ASSIGN_OR_RETURN(DevicePtr p, b.alloc(host.size()));
  Status s = b.copyToDevice(p, host.data(), host.size());
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

// Same-run copy bandwidth (bytes read + written per second) for `bytes` moved in total.
Expected<double> copyBandwidth(Backend& b, int64_t bytes_moved) {
  int64_t n = std::max<int64_t>(bytes_moved / 2, 1 << 20);
  KTUNE_ASSIGN_OR_RETURN(DevicePtr src, b.alloc(size_t(n)));
  auto dst = b.alloc(size_t(n));
  if (!dst.ok()) { (void)b.free(src); return dst.status(); }
  auto e0 = b.createEvent();
  auto e1 = b.createEvent();
  std::vector<float> ms;
  Status st;
  if (e0.ok() && e1.ok()) {
    for (int i = 0; i < 25 && st.ok(); ++i) {
      st = b.recordEvent(*e0);
      if (st.ok()) st = b.copyDeviceToDevice(*dst, src, size_t(n));
      if (st.ok()) st = b.recordEvent(*e1);
      if (st.ok()) st = b.synchronizeEvent(*e1);
      auto t = st.ok() ? b.elapsedMs(*e0, *e1) : Expected<float>(st);
      if (t.ok() && i >= 5) ms.push_back(*t);
    }
  }
  if (e0.ok()) (void)b.destroyEvent(*e0);
  if (e1.ok()) (void)b.destroyEvent(*e1);
  (void)b.free(src);
  (void)b.free(*dst);
  if (!st.ok()) return st;
  if (ms.empty()) return Status::Internal("copy timing produced no samples");
  std::sort(ms.begin(), ms.end());
  return 2.0 * double(n) / (ms[ms.size() / 2] * 1e-3);
}

struct Metric {
  const char* unit;   // "GB/s" or "TFLOP/s"
  double per_ms;      // metric = per_ms / median_ms
  double peer = 0;    // same-run peer in the metric's unit (copy bandwidth), 0 = none
  const char* peer_name = "";
};

void printReport(const TuneReport& r, const Metric& m, bool json, double vendor_default_ms) {
  if (json) {
    nlohmann::json j = {{"family", r.family}, {"key", r.key}, {"winner", r.winner},
                        {"winner_source", r.winner_source},
                        {"winner_median_ms", r.winner_stats.median_ms},
                        {"from", "tuned"}, {"compiled", r.compiled}, {"store_hits", r.store_hits},
                        {"duplicates", r.duplicates}, {"pruned", r.pruned},
                        {"compile_wall_ms", r.compile_wall_ms}, {"bench_wall_ms", r.bench_wall_ms},
                        {"bench_overlap_ms", r.bench_overlap_ms},
                        {"bench_load_ms", r.load_ms}, {"bench_verify_ms", r.verify_ms},
                        {"bench_measure_ms", r.measure_ms}, {"bench_record_ms", r.record_ms},
                        {"total_wall_ms", r.total_wall_ms}, {"unit", m.unit}};
    if (m.peer > 0) j["peer"] = {{"name", m.peer_name}, {"value", m.peer}};
    j["candidates"] = nlohmann::json::array();
    for (const auto& c : r.candidates) {
      nlohmann::json cj = {{"config", c.config}, {"source", c.source},
                           {"status", codeName(c.status)}, {"reason", c.reason}};
      if (c.status == Code::kOk && c.stats.median_ms > 0) {
        cj["median_us"] = c.stats.median_ms * 1e3;
        cj["p20_us"] = c.stats.p20_ms * 1e3;
        cj["p80_us"] = c.stats.p80_ms * 1e3;
        cj[m.unit] = m.per_ms / c.stats.median_ms;
      }
      j["candidates"].push_back(cj);
    }
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::vector<const CandidateResult*> rows;
  for (const auto& c : r.candidates) rows.push_back(&c);
  std::stable_sort(rows.begin(), rows.end(), [](const CandidateResult* a, const CandidateResult* b) {
    bool ao = a->status == Code::kOk && a->stats.median_ms > 0;
    bool bo = b->status == Code::kOk && b->stats.median_ms > 0;
    if (ao != bo) return ao;
    return ao && a->stats.median_ms < b->stats.median_ms;
  });
  std::printf("\n%s  key %s\n", r.family.c_str(), r.key.c_str());
  const char* ratio_head = m.peer > 0 ? "% copy bw" : (vendor_default_ms > 0 ? "% vendor" : "");
  std::printf("  %-1s %-58s %10s %9s %9s  %s\n", "", "CONFIG", "MEDIAN_US", m.unit, ratio_head,
              "STATUS");
  for (const auto* c : rows) {
    bool win = c->config == r.winner && c->source == r.winner_source;
    std::string cfg = (c->source != "jit" ? c->source + " " : std::string()) + c->config;
    if (cfg.size() > 58) cfg = cfg.substr(0, 55) + "...";
    if (c->status == Code::kOk && c->stats.median_ms > 0) {
      double v = m.per_ms / c->stats.median_ms;
      char ratio[32] = "";
      if (m.peer > 0) std::snprintf(ratio, sizeof(ratio), "%.1f%%", 100.0 * v / m.peer);
      else if (vendor_default_ms > 0)
        std::snprintf(ratio, sizeof(ratio), "%.1f%%", 100.0 * vendor_default_ms / c->stats.median_ms);
      std::printf("  %-1s %-58s %10.2f %9.1f %9s  ok\n", win ? "*" : "", cfg.c_str(),
                  c->stats.median_ms * 1e3, v, ratio);
    } else {
      std::string why = std::string(codeName(c->status)) + (c->reason.empty() ? "" : ": " + c->reason);
      if (why.size() > 90) why = why.substr(0, 87) + "...";
      std::printf("  %-1s %-58s %10s %9s %9s  %s\n", "", cfg.c_str(), "-", "-", "", why.c_str());
    }
  }
  std::printf("  winner: %s%s  (%.2f us)", r.winner_source == "jit" ? "" : (r.winner_source + " ").c_str(),
              r.winner.c_str(), r.winner_stats.median_ms * 1e3);
  if (m.peer > 0) std::printf("  same-run %s %.1f %s", m.peer_name, m.peer, m.unit);
  std::printf("\n  %d compiled, %d cache hits, %d duplicate binaries, %d pruned; compile %.2f s, "
              "bench %.2f s (%.2f s of it while compiling), total %.2f s%s\n",
              r.compiled, r.store_hits, r.duplicates, r.pruned, r.compile_wall_ms / 1e3,
              r.bench_wall_ms / 1e3, r.bench_overlap_ms / 1e3, r.total_wall_ms / 1e3,
              r.from_database ? " (from database)" : "");
  if (r.load_ms + r.verify_ms + r.measure_ms + r.record_ms > 0)
    std::printf("  bench in this process: load %.2f s, verify %.2f s, measure %.2f s, record %.2f s\n",
                r.load_ms / 1e3, r.verify_ms / 1e3, r.measure_ms / 1e3, r.record_ms / 1e3);
}

// ---- no GPU: compile and analyse the space --------------------------------------------------

struct Analysed {
  std::string kernel, config;
  Status status;
  KernelReport report;
  double compile_ms = 0;
};

int analyseSpace(const std::string& what, const std::string& arch,
                 std::vector<std::pair<std::string, CompileRequest>> reqs, bool json,
                 const std::string& why_no_gpu) {
  auto compiler = compilerForArch(arch);
  if (!compiler.ok()) return fail(compiler.status());
  std::shared_ptr<Compiler> comp(std::move(*compiler));
  std::vector<Analysed> out(reqs.size());
  std::atomic<size_t> next{0};
  std::mutex print_mu;
  std::atomic<int> done{0};
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < reqs.size(); i = next++) {
        auto r = comp->compile(reqs[i].second);
        out[i].kernel = reqs[i].second.entry;
        out[i].config = reqs[i].first;
        if (r.ok()) {
          out[i].report = analyzeCodeObject(*r);
          out[i].compile_ms = r->compile_ms;
        } else {
          out[i].status = r.status();
        }
        int d = ++done;
        if (!json) {
          std::lock_guard<std::mutex> l(print_mu);
          std::fprintf(stderr, "\r  compiling %d/%zu ", d, reqs.size());
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  if (json) {
    nlohmann::json j = {{"op", what}, {"arch", arch}, {"compiler", comp->name()},
                        {"timing", "needs a GPU: " + why_no_gpu}, {"configs", nlohmann::json::array()}};
    for (const auto& a : out) {
      nlohmann::json c = {{"kernel", a.kernel}, {"config", a.config}, {"status", codeName(a.status.code())}};
      if (a.status.ok()) c["report"] = nlohmann::json::parse(a.report.toJson());
      else c["reason"] = a.status.message().substr(0, 400);
      j["configs"].push_back(c);
    }
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::fprintf(stderr, "\n");
  std::printf("%s on %s (%s %s): %zu configs compiled and analysed\n", what.c_str(), arch.c_str(),
              comp->name().c_str(), comp->version().c_str(), reqs.size());
  bool amd = arch.rfind("gfx", 0) == 0;
  std::printf("  %-16s %5s %6s %6s %8s %6s  %-8s %s\n", "KERNEL", amd ? "VGPR" : "REGS",
              amd ? "AGPR" : "SMEM_K", "SPILLS", "OCC", "MATRIX", "STATUS", "CONFIG");
  for (const auto& a : out) {
    const std::string& cfg = a.config;
    if (!a.status.ok()) {
      std::string why = a.status.toString();
      std::printf("  %-16s %s\n    %s\n", a.kernel.c_str(), cfg.c_str(), why.substr(0, 200).c_str());
      continue;
    }
    const auto& r = a.report;
    int matrix = 0;
    for (const auto& [k, n] : r.isa.matrix) matrix += n;
    std::string occ = "-";
    if (r.has_occupancy) {
      char b[32];
      if (amd) std::snprintf(b, sizeof(b), "%.4gw/EU", r.amd.waves_per_eu);
      else std::snprintf(b, sizeof(b), "%db/SM", r.nv.blocks_per_sm);
      occ = b;
    }
    bool spills = r.resources.spills();
    std::printf("  %-16s %5d %6lld %6s %8s %6d  %-8s %s\n", a.kernel.c_str(),
                amd ? r.resources.vgpr : r.resources.registers,
                amd ? (long long)r.resources.agpr : (long long)(r.resources.shared_bytes / 1024),
                spills ? "yes" : "no", occ.c_str(), matrix, spills ? "pruned" : "ok", cfg.c_str());
  }
  std::printf("timing needs a GPU: %s\n", why_no_gpu.c_str());
  return kExitOk;
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

std::vector<std::pair<std::string, CompileRequest>> gemmRequests(
    const std::string& arch, const gemm::GemmShape& s, bool full_space,
    const std::vector<gemm::KernelKind>& only) {
  std::vector<std::pair<std::string, CompileRequest>> reqs;
  bool amd = arch.rfind("gfx", 0) == 0;
  for (auto kind : gemm::kernelsForArch(arch)) {
    if (!only.empty() && std::find(only.begin(), only.end(), kind) == only.end()) continue;
    std::vector<Config> configs;
    if (full_space) configs = gemm::configSpace(kind).enumerate(amd ? "hip" : "cuda").accepted;
    else configs = gemm::curatedConfigs(kind, s);
    for (const auto& c : configs) {
      if (!gemm::applicable(kind, c, s).ok()) continue;
      CompileRequest r;
      r.source = std::string(templates::embeddedSource(gemm::sourceFile(kind)));
      r.source_name = gemm::sourceFile(kind);
      r.entry = gemm::entryName(kind);
      r.defines = gemm::defines(kind, c, s);
      r.arch = arch;
      r.dumps = amd ? kDumpIsa : kDumpPtx;
      reqs.emplace_back(c.toString(), std::move(r));
    }
  }
  return reqs;
}

}  // namespace

int cmdTune(const std::vector<std::string>& argv) {
  auto args = parseArgs(argv, {{"--rows", true}, {"--cols", true}, {"--dtype", true},
                               {"--out-dtype", true}, {"--m", true}, {"--n", true}, {"--k", true},
                               {"--layout", true}, {"--epilogue", true}, {"--suite", true},
                               {"--from-file", true}, {"--arch", true}, {"--residual"},
                               {"--no-weight"}, {"--full-space"}, {"--no-gpu"}, {"--json"},
                               {"--queue", true}, {"--queue-name", true},
                               {"--quiet"}, {"--no-isolate"}, {"--kinds", true}});
  if (!args.ok()) return usage(args.status().message(), kUsage);
  auto kinds = parseKinds(args->get("--kinds", ""));
  if (!kinds.ok()) return usage(kinds.status().message(), kUsage);
  auto opts = Options::fromEnv();
  if (!opts.ok()) return fail(opts.status());
  const bool json = args->has("--json");
  const bool from_file = args->has("--from-file");
  if (args->has("--queue")) {  // distributed: the keys go to `ktune serve` servers (cmd_remote.cc)
    if (!from_file) return usage("--queue needs --from-file", kUsage);
    return enqueueFile(args->get("--from-file"), args->get("--queue"),
                       args->get("--queue-name", "default"), json);
  }
  if (!from_file && args->positional.size() != 1)
    return usage("expected one op: rmsnorm, silu_mul or gemm", kUsage);
  const std::string op = from_file ? "" : args->positional[0];
  if (!from_file && op != "rmsnorm" && op != "silu_mul" && op != "gemm")
    return usage("unknown op '" + op + "' (rmsnorm, silu_mul, gemm)", kUsage);

  // Parse the problem before touching the GPU, so bad input fails fast and the same way everywhere.
  DType dtype = DType::kBF16;
  if (args->has("--dtype")) {
    auto d = parseDType(args->get("--dtype"));
    if (!d.ok() || (*d != DType::kBF16 && *d != DType::kF16 && *d != DType::kF32))
      return usage("--dtype must be bf16, f16 or f32", kUsage);
    dtype = *d;
  }
  long long rows = 0, cols = 0;
  std::vector<GemmCase> gemm_cases;
  if (op == "rmsnorm" || op == "silu_mul") {
    if (!args->has("--rows") || !args->has("--cols")) return usage(op + " needs --rows and --cols", kUsage);
    auto r = parseIntFlag("--rows", args->get("--rows"), 1, 1LL << 31);
    if (!r.ok()) return usage(r.status().message(), kUsage);
    auto c = parseIntFlag("--cols", args->get("--cols"), 1, 1LL << 31);
    if (!c.ok()) return usage(c.status().message(), kUsage);
    rows = *r;
    cols = *c;
  } else if (op == "gemm") {
    if (dtype == DType::kF32) return usage("gemm --dtype must be bf16 or f16", kUsage);
    gemm::ElemType ab = dtype == DType::kF16 ? gemm::ElemType::kF16 : gemm::ElemType::kBF16;
    gemm::ElemType cdt = ab;
    if (args->has("--out-dtype")) {
      auto o = gemm::parseElemType(args->get("--out-dtype"));
      if (!o.ok()) return usage(o.status().message(), kUsage);
      cdt = *o;
    }
    if (args->has("--suite")) {
      if (args->get("--suite") != "llm") return usage("--suite must be llm", kUsage);
      gemm_cases = llmSuite(ab);
    } else {
      if (!args->has("--m") || !args->has("--n") || !args->has("--k"))
        return usage("gemm needs --m --n --k (or --suite llm)", kUsage);
      long long mnk[3];
      const char* names[3] = {"--m", "--n", "--k"};
      for (int i = 0; i < 3; ++i) {
        auto v = parseIntFlag(names[i], args->get(names[i]), 1, (1LL << 31) - 1);
        if (!v.ok()) return usage(v.status().message(), kUsage);
        mnk[i] = *v;
      }
      auto layout = gemm::parseLayout(args->get("--layout", "NN"));
      if (!layout.ok()) return usage(layout.status().message(), kUsage);
      auto s = gemm::denseShape(*layout, ab, cdt, mnk[0], mnk[1], mnk[2]);
      Status e = parseEpilogue(args->get("--epilogue"), &s);
      if (!e.ok()) return usage(e.message(), kUsage);
      Status v = gemm::validate(s);
      if (!v.ok()) return fail(v);
      gemm_cases.push_back({"gemm", s});
    }
  }

  // The GPU, unless told not to use one.
  std::shared_ptr<Backend> backend;
  std::string why_no_gpu = "--no-gpu given";
  if (!args->has("--no-gpu")) {
    auto b = openBackend(opts->backend == "sim" ? "auto" : opts->backend);
    if (b.ok()) backend = std::move(*b);
    else why_no_gpu = b.status().message();
  }
  if (!backend) {
    if (from_file) return fail(Status::Unavailable("offline tuning needs a GPU: " + why_no_gpu));
    std::string arch = args->get("--arch", "sm_90a");
    auto limits = rowwise::limitsForArch(arch);
    if (!limits.ok()) return fail(limits.status());
    std::vector<std::pair<std::string, CompileRequest>> reqs;
    auto rdt = rowwise::parseDType(dtypeName(dtype));
    if (op == "gemm") {
      for (const auto& gc : gemm_cases) {
        auto r = gemmRequests(arch, gc.shape, args->has("--full-space"), *kinds);
        for (auto& x : r) reqs.push_back(std::move(x));
        if (gemm_cases.size() > 1) break;  // the suite's shapes share configs; analyse once
      }
    } else {
      std::vector<Config> configs;
      if (op == "rmsnorm") configs = rowwise::rmsNormSpace(*rdt, *limits).enumerate(limits->backend).accepted;
      else configs = rowwise::siluMulSpace(*rdt, *limits).enumerate(limits->backend).accepted;
      for (const auto& c : configs) {
        CompileRequest r;
        r.arch = arch;
        r.dumps = limits->backend == "hip" ? kDumpIsa : kDumpPtx;
        if (op == "rmsnorm") {
          rowwise::RmsNormProblem p;
          p.dtype = *rdt; p.rows = rows; p.cols = cols;
          p.has_weight = !args->has("--no-weight");
          p.has_residual = args->has("--residual");
          r.source = std::string(rowwise::rmsNormSource());
          r.source_name = rowwise::kRmsNormSource;
          r.entry = rowwise::kRmsNormEntry;
          r.defines = rowwise::rmsNormDefines(c, p);
        } else {
          rowwise::SiluMulProblem p;
          p.dtype = *rdt; p.rows = rows; p.d = cols;
          r.source = std::string(rowwise::siluMulSource());
          r.source_name = rowwise::kSiluMulSource;
          r.entry = rowwise::kSiluMulEntry;
          r.defines = rowwise::siluMulDefines(c, p);
        }
        reqs.emplace_back(c.toString(), std::move(r));
      }
    }
    return analyseSpace(op, arch, std::move(reqs), json, why_no_gpu);
  }

  TunerOptions topts;
  topts.options = *opts;
  // Tuning through the CLI benchmarks in a supervised worker unless told otherwise.
  if (!opts->isolate_explicit) topts.options.isolate = topts.isolation.fallback_in_process = true;
  if (args->has("--no-isolate")) topts.options.isolate = false;
  topts.shared = remote::makeSharedTuning(topts.options);  // KTUNE_REMOTE_CACHE (remote/shared.h)
  // Live progress only on a terminal; logs and pipes get the final table alone.
  if (!json && !args->has("--quiet") && ::isatty(2)) {
    topts.progress = [](const TuneProgress& p) {
      std::fprintf(stderr, "\r  %-8s %3d/%-3d %-60.60s", p.phase.c_str(), p.index, p.total,
                   p.config.c_str());
      if (p.index == p.total) std::fprintf(stderr, "\n");
    };
  }
  auto tuner_or = Tuner::create(backend, topts);
  if (!tuner_or.ok()) return fail(tuner_or.status());
  std::shared_ptr<Tuner> tuner(std::move(*tuner_or));
  tuner->prestartWorker();  // its start-up overlaps the problem set-up below
  const DeviceInfo& dev = tuner->device();
  if (!json) std::fprintf(stderr, "device: %s (%s), cache %s\n", dev.name.c_str(), dev.arch.c_str(),
                          opts->cache_dir.c_str());
  Buffers bufs;
  bufs.b = backend.get();

  if (from_file) {
    // Built-in families must exist before the file's lines can be matched to them.
    auto gop = GemmOp::create(tuner);
    (void)gop;
    Status reg = registerRowwiseOps(*tuner);
    if (!reg.ok()) return fail(reg);
    auto r = tuner->tuneFromFile(args->get("--from-file"));
    if (!r.ok()) return fail(r.status());
    if (json) {  // per key: where its result came from and what it compiled
      nlohmann::json keys = nlohmann::json::array();
      for (const auto& k : r->keys)
        keys.push_back({{"family", k.family}, {"key", k.key}, {"from", k.from}, {"compiled", k.compiled}});
      nlohmann::json j{{"lines", r->lines}, {"tuned", r->tuned}, {"already_tuned", r->already_tuned},
                       {"skipped", r->skipped}, {"messages", r->messages}, {"keys", keys}};
      std::printf("%s\n", j.dump().c_str());
      return r->skipped > 0 ? kExitFailed : kExitOk;
    }
    std::printf("%d lines: %d tuned, %d already tuned, %d skipped\n", r->lines, r->tuned,
                r->already_tuned, r->skipped);
    for (const auto& m : r->messages) std::printf("  %s\n", m.c_str());
    return r->skipped > 0 ? kExitFailed : kExitOk;
  }

  if (op == "rmsnorm" || op == "silu_mul") {
    Expected<TuneReport> rep = Status::Internal("unreachable");
    int64_t bytes = 0;
    if (op == "rmsnorm") {
      RmsNormArgs a;
      a.dtype = dtype; a.rows = rows; a.cols = cols;
      auto x = bufs.random(dtype, rows * cols, 1);
      if (!x.ok()) return fail(x.status());
      auto y = bufs.zeros(rows * cols * int64_t(sizeOf(dtype)));
      if (!y.ok()) return fail(y.status());
      a.x = *x; a.y = *y;
      if (!args->has("--no-weight")) {
        auto w = bufs.random(dtype, cols, 2);
        if (!w.ok()) return fail(w.status());
        a.weight = *w;
        a.weight_dtype = dtype;
      }
      if (args->has("--residual")) {
        auto r = bufs.random(dtype, rows * cols, 3);
        if (!r.ok()) return fail(r.status());
        auto ro = bufs.zeros(rows * cols * int64_t(sizeOf(dtype)));
        if (!ro.ok()) return fail(ro.status());
        a.residual = *r; a.residual_out = *ro;
      }
      bytes = rowwise::rmsNormBytes(toProblem(a));
      rep = tuneRmsnorm(*tuner, a);
    } else {
      SiluMulArgs a;
      a.dtype = dtype; a.rows = rows; a.d = cols;
      auto x = bufs.random(dtype, rows * 2 * cols, 1);
      if (!x.ok()) return fail(x.status());
      auto o = bufs.zeros(rows * cols * int64_t(sizeOf(dtype)));
      if (!o.ok()) return fail(o.status());
      a.x = *x; a.out = *o;
      bytes = rowwise::siluMulBytes(toProblem(a));
      rep = tuneSiluMul(*tuner, a);
    }
    if (!rep.ok()) return fail(rep.status());
    auto bw = copyBandwidth(*backend, bytes);
    Metric m{"GB/s", double(bytes) / 1e9 * 1e3, bw.ok() ? *bw / 1e9 : 0, "copy"};
    printReport(*rep, m, json, 0);
    return rep->winner.empty() ? kExitFailed : kExitOk;
  }

  // gemm
  GemmOp::OpOptions gopts;
  gopts.full_space = args->has("--full-space");
  gopts.kinds = *kinds;
  auto gop = GemmOp::create(tuner, gopts);
  if (!gop.ok()) return fail(gop.status());
  int rc = kExitOk;
  for (const auto& gc : gemm_cases) {
    const auto& s = gc.shape;
    GemmCall call;
    call.shape = s;
    DType ab = s.ab == gemm::ElemType::kF16 ? DType::kF16 : DType::kBF16;
    DType cd = s.c == gemm::ElemType::kF32 ? DType::kF32 : (s.c == gemm::ElemType::kF16 ? DType::kF16 : DType::kBF16);
    auto a = bufs.random(ab, gemm::storedRowsA(s) * s.lda, 11);
    auto b = bufs.random(ab, gemm::storedRowsB(s) * s.ldb, 12);
    auto c = bufs.random(cd, s.m * s.ldc, 13);
    if (!a.ok() || !b.ok() || !c.ok())
      return fail((!a.ok() ? a.status() : !b.ok() ? b.status() : c.status()));
    call.buf.a = *a; call.buf.b = *b; call.buf.c = *c;
    if (s.has_bias) {
      auto bias = bufs.random(cd, s.n, 14);
      if (!bias.ok()) return fail(bias.status());
      call.buf.bias = *bias;
    }
    if (!json) std::fprintf(stderr, "%s: M=%lld N=%lld K=%lld %s\n", gc.name.c_str(), (long long)s.m,
                            (long long)s.n, (long long)s.k, gemm::layoutName(s.layout));
    auto rep = (*gop)->tune(call);
    if (!rep.ok()) { rc = fail(rep.status()); continue; }
    double vendor_ms = 0;
    for (const auto& cand : rep->candidates)
      if (cand.source == "cublaslt" && cand.config.rfind("cublaslt:idx=0:", 0) == 0 &&
          cand.status == Code::kOk)
        vendor_ms = cand.stats.median_ms;
    Metric m{"TFLOP/s", 2.0 * double(s.m) * double(s.n) * double(s.k) / 1e12 * 1e3};
    printReport(*rep, m, json, vendor_ms);
    // Free this shape's buffers before the next one.
    for (auto p : bufs.ptrs) (void)backend->free(p);
    bufs.ptrs.clear();
  }
  return rc;
}

}  // namespace ktune::cli
