// `ktune tune` without a GPU: compile the configs the tuner would try for an arch and analyse
// them (registers, shared memory, spills, occupancy, matrix instructions). Compiles go through
// the code-object store, so a second run is all cache hits.
#include <algorithm>

#include "autotune/compile_pool.h"
#include "autotune/static_rank.h"
#include "base/fs.h"
#include "compiler/store/store.h"
#include "templates/embedded.h"
#include "templates/rowwise.h"
#include "tools/commands.h"
#include "tools/tune_output.h"
#include "tools/tune_request.h"
#include "base/device.h"

namespace ktune::cli {
namespace {

// One config to compile: its string, the request, and its launch's block size and the shared
// memory the launch adds (the NVIDIA GEMM kernels take their tiles as dynamic shared memory, which
// the binary does not show; the MFMA kernel's LDS is static, already in the binary).
struct Job {
  std::string config;
  CompileRequest req;
  int64_t dynamic_shared = 0;
  int threads = 0;  // 0: the kernel's own bound
};
using Requests = std::vector<Job>;

Requests gemmRequests(const std::string& arch, const gemm::GemmShape& s, bool full_space,
                      const std::vector<gemm::KernelKind>& only) {
  Requests reqs;
  bool amd = Arch(arch).isAmd();
  for (auto kind : gemm::kernelsForArch(arch)) {
    if (!only.empty() && std::find(only.begin(), only.end(), kind) == only.end()) continue;
    std::vector<Config> configs;
    if (full_space) configs = gemm::configSpace(kind).enumerate(amd ? "hip" : "cuda").accepted;
    else configs = gemm::curatedConfigs(kind, s);
    for (const auto& c : configs) {
      if (!gemm::applicable(kind, c, s).ok()) continue;
      CompileRequest r;
      r.source = std::string(gemm::kernelSource(kind));
      r.source_name = gemm::sourceFile(kind);
      r.entry = gemm::entryName(kind);
      r.defines = gemm::defines(kind, c, s);
      r.arch = arch;
      r.dumps = amd ? kDumpIsa : kDumpPtx;
      DeviceInfo nominal;  // no limits: what does not fit is reported by the analysis
      nominal.arch = arch;
      auto plan = gemm::launchPlan(kind, c, s, nominal);
      const int threads = plan.ok() ? int(plan->block.x * plan->block.y * plan->block.z) : 0;
      reqs.push_back({c.toString(), std::move(r),
                      plan.ok() ? plan->shared_bytes : gemm::launchSharedBytes(kind, c), threads});
    }
  }
  return reqs;
}

Requests rowwiseRequests(const TuneRequest& t, const std::string& arch,
                         const rowwise::RowwiseLimits& limits) {
  Requests reqs;
  auto rdt = rowwise::parseDType(dtypeName(t.dtype));
  if (!rdt.ok()) return reqs;
  const bool rms = t.op == "rmsnorm";
  auto space = rms ? rowwise::rmsNormSpace(*rdt, limits) : rowwise::siluMulSpace(*rdt, limits);
  for (const auto& c : space.enumerate(limits.backend).accepted) {
    CompileRequest r;
    r.arch = arch;
    r.dumps = limits.backend == "hip" ? kDumpIsa : kDumpPtx;
    if (rms) {
      rowwise::RmsNormProblem p;
      p.dtype = *rdt; p.rows = t.rows; p.cols = t.cols;
      p.has_weight = !t.args.has("--no-weight");
      p.has_residual = t.args.has("--residual");
      r.source = std::string(rowwise::rmsNormSource());
      r.source_name = rowwise::kRmsNormSource;
      r.entry = rowwise::kRmsNormEntry;
      r.defines = rowwise::rmsNormDefines(c, p);
    } else {
      rowwise::SiluMulProblem p;
      p.dtype = *rdt; p.rows = t.rows; p.d = t.cols;
      r.source = std::string(rowwise::siluMulSource());
      r.source_name = rowwise::kSiluMulSource;
      r.entry = rowwise::kSiluMulEntry;
      r.defines = rowwise::siluMulDefines(c, p);
    }
    reqs.push_back({c.toString(), std::move(r), 0, 0});
  }
  return reqs;
}

// Compiles every request on all cores through the store; fills out[i] for reqs[i].
void compileAll(Compiler& comp, CodeObjectStore& store, const Requests& reqs,
                std::vector<Analysed>* out, Progress* progress) {
  out->assign(reqs.size(), Analysed{});
  CompilePool pool(
      reqs.size(), CompilePool::threadsFor(reqs.size(), 0, false),
      [&](size_t i) {
        Analysed& a = (*out)[i];
        a.kernel = reqs[i].req.entry;
        a.config = reqs[i].config;
        std::string note;
        auto r = store.getOrCompile(comp, reqs[i].req, &a.cache_hit, &note);
        if (r.ok()) a.report = analyzeCodeObject(*r, reqs[i].threads, reqs[i].dynamic_shared);
        else a.status = r.status();
      },
      [&](size_t i, size_t done) {
        progress->update("compiling", int(done), int(reqs.size()), (*out)[i].config);
      });
  pool.runAll();
  progress->finish();
}

std::vector<StaticRank> staticRanking(const std::vector<Analysed>& out, const gemm::GemmShape* shape) {
  std::vector<StaticRankInput> in;
  for (const auto& a : out) {
    auto c = Config::parse(a.config);
    in.push_back({c.ok() ? *c : Config{}, a.status, a.report});
  }
  return rankStatically(in, shape);
}

// The ranking goes to <cache>/analysed/<op>-<arch>.json, apart from the tuning databases of
// measured winners (a later GPU run never reads it as a result). Returns the path, "" when it
// could not be written (the printed ranking is still complete).
std::string recordRanking(const std::string& cache_dir, const AnalysisSummary& s,
                          const std::vector<Analysed>& out, const std::vector<StaticRank>& rank) {
  const std::string dir = joinPath(cache_dir, "analysed");
  const std::string name = s.op + "-" + s.arch + ".json";
  if (!isSafeFileName(name) || !makeDirs(dir).ok()) return "";
  AnalysisSummary rec = s;
  rec.recorded = "";
  const std::string path = joinPath(dir, name);
  return writeFileAtomic(path, analysisJson(rec, out, rank).dump(1) + "\n").ok() ? path : "";
}

}  // namespace

int analyseWithoutGpu(const TuneRequest& t, const Options& opts, const std::string& why_no_gpu) {
  const std::string arch = t.args.get("--arch", "sm_90a");
  auto limits = rowwise::limitsForArch(arch);
  if (!limits.ok()) return fail(limits.status());
  if (int rc = checkKindsForArch(t, arch); rc >= 0) return rc;
  Requests reqs;
  AnalysisSummary sum;
  if (t.op == "gemm") {
    reqs = gemmRequests(arch, t.gemm_cases.front().shape, t.args.has("--full-space"), t.kinds);
    if (t.gemm_cases.size() > 1) {
      // Every shape by name and size: the suite is what the run is about, even if one compile
      // of the shared configs serves them all.
      std::string names;
      for (const auto& c : t.gemm_cases)
        names += (names.empty() ? "" : ", ") + c.name + " " + std::to_string(c.shape.m) + "x" +
                 std::to_string(c.shape.n) + "x" + std::to_string(c.shape.k);
      sum.sampled_note = "the suite's " + std::to_string(t.gemm_cases.size()) + " shapes (" +
                         names + ") share these configs: analysed once; the ranking is for '" +
                         t.gemm_cases.front().name + "'";
    }
  } else {
    reqs = rowwiseRequests(t, arch, *limits);
  }
  auto compiler = compilerForArch(arch, opts.clang);
  if (!compiler.ok()) return fail(compiler.status());
  auto store = CodeObjectStore::open(opts.cache_dir);
  if (!store.ok()) return failEnv(store.status(), "set KTUNE_CACHE_DIR to a private directory");
  std::vector<Analysed> out;
  Progress progress(t.quiet, t.json);
  compileAll(**compiler, **store, reqs, &out, &progress);
  sum.op = t.op;
  sum.arch = arch;
  sum.compiler = (*compiler)->name();
  sum.compiler_version = (*compiler)->version();
  sum.why_no_gpu = why_no_gpu;
  for (const auto& a : out) (a.cache_hit ? sum.cache_hits : sum.compiled) += a.status.ok() ? 1 : 0;
  const auto rank = staticRanking(out, t.op == "gemm" ? &t.gemm_cases.front().shape : nullptr);
  sum.recorded = recordRanking(opts.cache_dir, sum, out, rank);
  printAnalysis(sum, out, rank, t.json);
  return kExitOk;
}

}  // namespace ktune::cli
