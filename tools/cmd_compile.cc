// `ktune compile` / `ktune explain`: JIT-compile one config of a template (or a user's source file)
// for an arch, through the code-object cache, and show resources, dumps and the analysis report.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "base/fs.h"
#include "base/options.h"
#include "compiler/compiler.h"
#include "compiler/resources_json.h"
#include "compiler/store/store.h"
#include "templates/catalog.h"
#include "templates/gemm.h"
#include "tools/args.h"
#include "tools/commands.h"
#include "tools/report.h"
#include "base/device.h"

namespace ktune::cli {
namespace {

const char* kUsage =
    "ktune compile <template|file.cu|.ptx|.ll|.s|.mlir|.cubin|.hsaco> --arch ARCH [-D KEY=VAL ...] "
    "[--entry NAME] [--lang cpp|ptx|llvm|amdgcn|mlir|cubin|hsaco] "
    "[--dump isa|ptx|sass|llvm|mlir|source ...] [--resources] [--report] [--no-cache] [--json] "
    "[--compiler hiprtc|clang]\n"
    "       ktune explain <template|file.cu> --arch ARCH [-D KEY=VAL ...]\n"
    "       ktune explain <gemm template> --arch ARCH --list-configs [-D KEY=VAL ...]\n"
    "  templates: rmsnorm silu_mul copy gemm_mma gemm_skinny gemm_decode gemm_wgmma gemm_tma\n"
    "             gemm_mfma\n"
    "  --arch      sm_80, sm_90a, ... (NVRTC); gfx90a (hiprtc), gfx942 (clang-19, or KTUNE_CLANG)\n"
    "  --compiler  AMD: hiprtc or clang (the LLVM path, whose isa dump has LLVM's '; Occupancy:')\n"
    "  --list-configs  the valid configs of a GEMM template's space (-D KEY=VAL filters them)\n"
    "  --lang      the module's language when the file's extension does not say it\n"
    "  --dump      keep a dump in the cache entry and print it (repeatable)\n"
    "  --resources registers, shared/LDS, spills;  --report: resources + occupancy + ISA checks\n"
    "  --no-cache  compile without reading or writing the code-object cache";

const char* kExplainUsage =
    "ktune explain <template|file.cu> --arch ARCH [-D KEY=VAL ...] [--entry NAME] [--json]\n"
    "  compiles one config (through the code-object cache) and prints its report: registers,\n"
    "  shared/LDS, spills, occupancy and the ISA checks with PASS/WARN verdicts\n"
    "  (the same as `ktune compile ... --report`)\n"
    "  templates: rmsnorm silu_mul copy gemm_mma gemm_skinny gemm_decode gemm_wgmma gemm_tma\n"
    "             gemm_mfma\n"
    "  --arch  sm_80, sm_90a, ... (NVRTC); gfx90a (hiprtc), gfx942 (clang-19, or KTUNE_CLANG)";

// Kernel sources are small; the cap keeps a wrong path (a huge file) from filling memory.
constexpr uint64_t kMaxSourceBytes = 16ull << 20;

bool looksLikePath(const std::string& s) {
  auto ends = [&](const std::string& suffix) {
    return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return s.find('/') != std::string::npos || ends(".cu") || ends(".cuh") || ends(".hip") ||
         languageFromPath(s).ok();
}

// The launch a GEMM template's config gets on its example problem (templates::exampleLaunch): its
// block size, and the dynamic shared memory it requests (the NVIDIA kernels' tiles, which the
// binary does not show; 0 for the MFMA kernel, whose LDS is static and already in the binary).
// {0, 0} for the other templates and for user sources: the kernel's own bound, no dynamic part.
struct ReportLaunch {
  int threads = 0;
  int64_t dynamic_shared = 0;
};
ReportLaunch reportLaunch(const std::string& what, const std::string& arch,
                          const templates::DefineList& defines) {
  auto t = templates::findTemplate(what);
  if (!t.ok()) return {};
  auto plan = templates::exampleLaunch(*t, arch, defines);
  if (!plan.ok()) return {};
  return {int(plan->block.x * plan->block.y * plan->block.z), plan->shared_bytes};
}

// An MLIR view that was asked for and could not be made fails the command (the dump says why).
int mlirViewExit(const CompileRequest& req, const CodeObject& obj) {
  auto it = obj.dumps.find("mlir");
  if (!(req.dumps & kDumpMlir) || it == obj.dumps.end() ||
      it->second.rfind(kMlirViewUnavailable, 0) != 0)
    return kExitOk;
  return fail(Status::Unavailable(it->second.substr(0, it->second.find('\n'))));
}

// The request for `what` (an IR file, a C++ source file or a template name), its -D defines,
// --option and --dump flags applied. kExitOk, or the exit code of the usage error / failure.
int makeRequest(const ParsedArgs& args, const std::string& what, const std::string& arch,
                CompileRequest* out) {
  CompileRequest req;
  Expected<templates::TemplateInfo> t = Status::NotFound("not a template");
  req.arch = arch;
  const std::string lang = args.get("--lang");
  const bool ir_file = lang.empty() ? looksLikePath(what) && languageFromPath(what).ok() &&
                                           *languageFromPath(what) != Language::kCpp
                                     : lang != "cpp";
  if (ir_file) {
    auto r = requestFromFile(what, arch, args.get("--entry"), lang);  // the IR front door
    if (!r.ok()) return fail(r.status());
    req = std::move(*r);
  } else if (looksLikePath(what)) {
    auto src = readFile(what, kMaxSourceBytes);
    if (!src.ok()) return fail(src.status());
    req.source = *src;
    req.source_name = what;
    req.entry = args.get("--entry");
    if (req.entry.empty())
      return usage("a source file needs --entry NAME (its extern \"C\" kernel or a template "
                   "name expression)", kUsage);
  } else {
    t = templates::findTemplate(what);
    if (!t.ok()) return fail(t.status());
    req.source = std::string(templates::sourceOf(*t));
    req.source_name = t->source_file;
    req.entry = args.get("--entry", t->entry);
    auto defs = templates::defaultDefines(*t, arch);
    if (!defs.ok()) return fail(defs.status());
    req.defines = std::move(*defs);
  }
  for (const auto& d : args.all("--define")) {
    size_t eq = d.find('=');
    std::string k = d.substr(0, eq), v = eq == std::string::npos ? "1" : d.substr(eq + 1);
    if (k.empty()) return usage("bad define '" + d + "' (expected KEY=VAL)", kUsage);
    bool replaced = false;
    for (auto& [dk, dv] : req.defines) {
      if (dk == k) { dv = v; replaced = true; }
    }
    if (!replaced) req.defines.emplace_back(k, v);
  }
  for (const auto& o : args.all("--option")) req.options.push_back(o);
  for (const auto& d : args.all("--dump")) {
    auto bit = parseDumpName(d);
    if (!bit.ok()) return usage(bit.status().message(), kUsage);
    req.dumps |= *bit;
  }
  // A config the template's space (or its example problem) refuses is named before compiling.
  if (t.ok())
    if (Status st = templates::checkDefines(*t, arch, req.defines); !st.ok()) return fail(st);
  *out = std::move(req);
  return kExitOk;
}

// `ktune compile --json`: the code object's facts, dumps and (with a report) the analysis.
int printJson(const std::string& what, const CompileRequest& req, const CodeObject& obj,
              const std::string& key, bool hit, bool report) {
  nlohmann::json j = codeObjectFactsToJson(obj);
  j.update(nlohmann::json{{"template", what},
                          {"language", languageName(req.language)},
                          {"key", key},
                          {"cache_hit", hit},
                          {"binary_bytes", obj.binary.size()}});
  for (const auto& [name, text] : obj.dumps) j["dumps"][name] = text;
  if (report) {
    const ReportLaunch l = reportLaunch(what, req.arch, req.defines);
    auto rep = reportJson(obj, l.threads, l.dynamic_shared);
    if (rep.ok()) j["report"] = nlohmann::json::parse(*rep);
  }
  std::printf("%s\n", j.dump(2).c_str());
  return mlirViewExit(req, obj);
}

// `--list-configs`: the valid configs of a GEMM template's space for its example problem, one
// per line as -D flags (or a JSON list); the user's -D KEY=VAL keep only the configs with those
// values.
int listConfigs(const ParsedArgs& args, const std::string& what, const std::string& arch) {
  auto t = templates::findTemplate(what);
  if (!t.ok()) return fail(t.status());
  templates::DefineList filter;
  for (const auto& d : args.all("--define")) {
    const size_t eq = d.find('=');
    filter.emplace_back(d.substr(0, eq), eq == std::string::npos ? "1" : d.substr(eq + 1));
  }
  auto all = templates::validConfigs(*t, arch, filter);
  if (!all.ok()) return fail(all.status());
  std::vector<std::string> lines;
  for (const Config& c : *all) {
    std::string line;
    bool keep = true;
    for (const auto& [k, v] : c.params()) {
      for (const auto& [fk, fv] : filter)
        if (fk == k && fv != paramValueToString(v)) keep = false;
      line += (line.empty() ? "-D " : " -D ") + k + "=" + paramValueToString(v);
    }
    if (keep) lines.push_back(std::move(line));
  }
  if (args.has("--json")) {
    std::printf("%s\n", nlohmann::json{{"template", what}, {"arch", arch}, {"configs", lines}}
                             .dump(1).c_str());
    return kExitOk;
  }
  std::printf("%s for %s: %zu valid configs (the space's constraints; example problem: %s)\n",
              what.c_str(), arch.c_str(), lines.size(), t->example_problem.c_str());
  for (const auto& l : lines) std::printf("%s\n", l.c_str());
  return kExitOk;
}

// The compiler for the request: the arch's own (compilerFor), or with --compiler the one named
// (AMD: "hiprtc", or "clang" for the LLVM path on any AMD arch it knows).
Expected<std::unique_ptr<Compiler>> chooseCompiler(const ParsedArgs& args, const CompileRequest& req,
                                                   const std::string& clang) {
  const std::string name = args.get("--compiler");
  if (name.empty()) return compilerFor(req, clang);
  if (req.language != Language::kCpp || !Arch(req.arch).isAmd() ||
      (name != "clang" && name != "hiprtc"))
    return Status::InvalidArgument("--compiler takes hiprtc or clang, for C++ sources on AMD archs");
  auto c = name == "clang" ? openLlvmAmdgpuCompiler(clang) : openHiprtcCompiler();
  if (c.ok() && !(*c)->supportsArch(req.arch))
    return Status::Unsupported(name + " " + (*c)->version() + " cannot target " + req.arch);
  return c;
}

}  // namespace

void printResources(const CodeObject& obj) {
  const auto& r = obj.resources;
  if (Arch(obj.arch).isAmd()) {
    std::printf("resources: VGPR %d  AGPR %d  SGPR %d  LDS %lld B  scratch %lld B  wave%d%s\n", r.vgpr,
                r.agpr, r.sgpr, (long long)r.shared_bytes, (long long)r.scratch_bytes, r.wave_size,
                r.spills() ? "  SPILLS" : "");
  } else {
    std::printf("resources: registers %d  shared %lld B  stack %lld B  spill stores %lld B  "
                "spill loads %lld B\n",
                r.registers, (long long)r.shared_bytes, (long long)r.stack_bytes,
                (long long)r.spill_store_bytes, (long long)r.spill_load_bytes);
  }
}

int cmdCompile(const std::vector<std::string>& argv, bool explain) {
  auto args = parseArgs(argv, {{"--arch", true},
                               {"--define", true, true, "-D"},
                               {"--entry", true},
                               {"--lang", true},
                               {"--dump", true, true},
                               {"--option", true, true},
                               {"--resources"},
                               {"--report"},
                               {"--no-cache"},
                               {"--compiler", true},
                               {"--list-configs"},
                               {"--json"}});
  if (!args.ok()) return usage(args.status().message(), kUsage);
  if (args->help) return help(explain ? kExplainUsage : kUsage);
  if (args->positional.size() != 1)
    return usage("expected exactly one template name or source file", kUsage);
  std::string arch = args->get("--arch");
  if (arch.empty()) return usage("--arch is required (e.g. sm_90a, sm_80, gfx90a, gfx942)", kUsage);
  auto opts = Options::fromEnv();
  if (!opts.ok()) return fail(opts.status());
  const std::string& what = args->positional[0];
  if (args->has("--list-configs")) return listConfigs(*args, what, arch);

  CompileRequest req;
  const bool amd = Arch(arch).isAmd();
  if (int rc = makeRequest(*args, what, arch, &req); rc != kExitOk) return rc;
  bool report = explain || args->has("--report");
  if (report) req.dumps |= amd ? kDumpIsa : (kDumpPtx | kDumpSass);

  auto compiler = chooseCompiler(*args, req, opts->clang);
  if (!compiler.ok()) return fail(compiler.status());
  CodeObject obj;
  bool hit = false;
  std::string note, key;
  if (args->has("--no-cache")) {
    auto r = (*compiler)->compile(req);
    if (!r.ok()) return fail(r.status());
    obj = std::move(*r);
  } else {
    auto store = CodeObjectStore::open(opts->cache_dir);
    if (!store.ok()) return failEnv(store.status(), "set KTUNE_CACHE_DIR or pass --no-cache");
    key = codeObjectKey(req, (*compiler)->name(), (*compiler)->version());
    auto r = (*store)->getOrCompile(**compiler, req, &hit, &note);
    if (!r.ok()) return fail(r.status());
    obj = std::move(*r);
  }
  if (!note.empty()) std::fprintf(stderr, "ktune: note: %s\n", note.c_str());

  if (args->has("--json")) return printJson(what, req, obj, key, hit, report);
  std::printf("%s for %s with %s %s: %zu bytes, %s%s\n", what.c_str(), obj.arch.c_str(),
              obj.compiler.c_str(), obj.compiler_version.c_str(), obj.binary.size(),
              hit ? "cache hit" : (std::to_string(int(obj.compile_ms)) + " ms").c_str(),
              key.empty() ? "" : ("  key " + key.substr(0, 16)).c_str());
  if (args->has("--resources") || !report) printResources(obj);
  for (const auto& [name, text] : obj.dumps) {
    if (report && !args->has("--dump")) continue;
    std::printf("\n===== %s =====\n%s\n", name.c_str(), text.c_str());
  }
  if (report) {
    const ReportLaunch l = reportLaunch(what, arch, req.defines);
    auto rep = reportText(obj, l.threads, l.dynamic_shared);
    if (!rep.ok()) return fail(rep.status());
    std::printf("%s", rep->c_str());
  }
  return mlirViewExit(req, obj);
}

}  // namespace ktune::cli
