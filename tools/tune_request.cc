// `ktune tune`'s command line: the usage text, the LLM suite, --epilogue and --kinds, the
// untuned-keys file's check and the GEMM cases, read into a TuneRequest (tools/tune_request.h)
// before any GPU, compiler or file is touched; shared by cmd_tune.cc and tune_analyse.cc.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "base/fs.h"
#include "ops/gemm.h"
#include "ops/tune_args.h"
#include "tools/commands.h"
#include "tools/tune_request.h"

namespace ktune::cli {

const char* const kTuneUsage =
    "ktune tune rmsnorm|silu_mul --rows R --cols C [--dtype bf16|f16|f32] [--residual] [--no-weight]\n"
    "       ktune tune gemm --m M|LO..HI --n N --k K [--dtype bf16|f16|fp8e4m3|fp8e5m2] [--out-dtype ...]\n"
    "                       [--layout NN|NT|TN|TT]\n"
    "                       [--epilogue none|bias|residual|silu|gelu|silu_mul, '+'-joined]\n"
    "                       [--full-space]\n"
    "                       [--kinds mma,skinny,decode,wgmma,tma,mfma (only these kernels)]\n"
    "       ktune tune gemm --suite llm [--no-lookahead (do not compile the next keys' first\n"
    "                       kernels while a key tunes)]\n"
    "       a key the tuning database holds (this GPU, driver, compiler) is reported from it\n"
    "             without measuring, unless [--retune] or --kinds, --full-space, --search, --budget\n"
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
                               {"--search", true}, {"--budget", true}, {"--no-lookahead"},
                               {"--retune"}});
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
bool measuresAgain(const Options& tuner_opts, const TuneRequest& t) {
  for (const char* f : {"--retune", "--kinds", "--full-space", "--search", "--budget"})
    if (t.args.has(f)) return true;
  return tuner_opts.search_explicit;
}

GemmOp::OpOptions tuneOpOptions(const Options& tuner_opts, const TuneRequest& t) {
  GemmOp::OpOptions gopts;
  gopts.full_space = t.args.has("--full-space");
  gopts.kinds = t.kinds;
  gopts.vendor_later = true;  // opened once the context exists (runGemm)
  // Where the worker times, this process asks the vendor library only for the candidate lists it
  // has not kept (ops/vendor_answers.h): no warm-up query beside them.
  gopts.warm_up_later = tuner_opts.isolate;
  return gopts;
}

}  // namespace ktune::cli
