// Where one cold GEMM compile's time goes: NVRTC's front end and NVVM (source -> PTX) against
// the PTX -> cubin back end (nvJitLink or ptxas), for the configs a cold tuning compiles, alone or
// with other processes at once. Issue 34 (bench/NOTES.md). Each config is compiled as the tuner
// compiles it (the kind's embedded source, the prelude as "prelude.cuh", gemm::defines, the
// NvrtcCompiler's options), straight through NVRTC's C API, no store.
//
//   compile_split_bench --configs=FILE --index=I --phase=P [--at=EPOCH_MS] [--dir=DIR]
//                       [--shape=MxNxK] [--layout=NT] [--arch=sm_90a] [--include=CUDA_INCLUDE]
//                       [--extra=OPT;OPT] [--repeat=N] [--label=L]
//   P: full    source -> cubin (the tuner's compile), NVRTC's --time table in
//              DIR/time_L_full_I_REP.csv
//      ptx     source -> PTX for compute_XX (front end + NVVM), written to DIR/I.ptx
//      syntax  the front end alone (-fdevice-syntax-only)
//      link    DIR/I.ptx -> cubin through nvJitLink (the back end NVRTC runs inside)
//      ptxas   DIR/I.ptx -> cubin through the ptxas program
//      dump    writes the kernel's source (as the tuner compiles it, includes expanded but
//              "prelude.cuh") to DIR/I.cu, the prelude to DIR/prelude.cuh and the options to DIR/I.opt
//   --source=FILE compiles FILE instead of the kind's source (a probe: an edited DIR/I.cu).
//   --cold     no warm-up compile: the first timed compile pays NVRTC's start in this process.
//   --repeat=N compiles it N times in this process (with --extra=--pch: the first creates the
//   precompiled header, the later ones may use it). Every compile waits for --at (epoch ms) first;
//   NVRTC is loaded and warmed up before that, so a process's start is not a config's cost.
// Lines: SPLIT <phase> <index> <rep> <wall ms> <start ms> <end ms> <kind> <ok|error...>, times
// from --at (or this process's first compile).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/dylib.h"
#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/compiler_util.h"
#include "ops/gemm_configs.h"
#include "templates/gemm.h"

namespace ktune {
namespace {

#define SPLIT_NVRTC(X)                                                                      \
  X(int, CreateProgram, (void**, const char*, const char*, int, const char* const*,          \
                         const char* const*))                                                \
  X(int, DestroyProgram, (void**))                                                           \
  X(int, CompileProgram, (void*, int, const char* const*))                                   \
  X(int, GetPTXSize, (void*, size_t*))                                                       \
  X(int, GetPTX, (void*, char*))                                                             \
  X(int, GetCUBINSize, (void*, size_t*))                                                     \
  X(int, GetProgramLogSize, (void*, size_t*))                                                \
  X(int, GetProgramLog, (void*, char*))
struct Nvrtc {
  DynLib lib;
  KTUNE_DYLIB_ENTRY_POINTS(SPLIT_NVRTC)
};
#define SPLIT_JITLINK(X)                                        \
  X(int, Create, (void**, uint32_t, const char**))              \
  X(int, Destroy, (void**))                                     \
  X(int, AddData, (void*, int, const void*, size_t, const char*)) \
  X(int, Complete, (void*))                                     \
  X(int, GetLinkedCubinSize, (void*, size_t*))
struct JitLink {
  DynLib lib;
  KTUNE_DYLIB_ENTRY_POINTS(SPLIT_JITLINK)
};

struct Args {
  std::string configs, phase, dir = ".", arch = "sm_90a", layout = "NT", label = "x";
  std::string include = "/usr/local/cuda/include", source;
  std::vector<std::string> extra;
  int64_t m = 4096, n = 4096, k = 4096;
  int index = -1, repeat = 1;
  bool warm = true;
  double at_ms = 0;
};

double epochMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

bool parse(int argc, char** argv, Args* a) {
  if (const char* h = std::getenv("CUDA_HOME")) a->include = std::string(h) + "/include";
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    const size_t eq = s.find('=');
    const std::string k = s.substr(0, eq), v = eq == std::string::npos ? "" : s.substr(eq + 1);
    if (k == "--configs") a->configs = v;
    else if (k == "--phase") a->phase = v;
    else if (k == "--dir") a->dir = v;
    else if (k == "--label") a->label = v;
    else if (k == "--source") a->source = v;
    else if (k == "--arch") a->arch = v;
    else if (k == "--layout") a->layout = v;
    else if (k == "--include") a->include = v;
    else if (k == "--index") a->index = std::atoi(v.c_str());
    else if (k == "--repeat") a->repeat = std::max(1, std::atoi(v.c_str()));
    else if (k == "--at") a->at_ms = std::atof(v.c_str());
    else if (k == "--cold") a->warm = false;
    else if (k == "--shape") {
      if (std::sscanf(v.c_str(), "%ldx%ldx%ld", &a->m, &a->n, &a->k) != 3) return false;
    } else if (k == "--extra") {
      std::stringstream ss(v);
      for (std::string o; std::getline(ss, o, ';');)
        if (!o.empty()) a->extra.push_back(o);
    } else {
      std::fprintf(stderr, "compile_split_bench: unknown argument %s\n", s.c_str());
      return false;
    }
  }
  return !a->configs.empty() && a->index >= 0 && !a->phase.empty();
}

// The request the tuner would make for line `index` of the configs file.
Expected<CompileRequest> requestFor(const Args& a, gemm::KernelKind* kind) {
  std::ifstream in(a.configs);
  std::string line;
  for (int i = 0; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (i++ != a.index) continue;
    KTUNE_ASSIGN_OR_RETURN(Config c, Config::parse(line));
    KTUNE_ASSIGN_OR_RETURN(*kind, gemm_ops::kindOf(c));
    gemm::Layout l = gemm::Layout::kNT;
    for (gemm::Layout x : {gemm::Layout::kNN, gemm::Layout::kNT, gemm::Layout::kTN, gemm::Layout::kTT})
      if (a.layout == gemm::layoutName(x)) l = x;
    gemm::GemmShape s =
        gemm::denseShape(l, gemm::ElemType::kBF16, gemm::ElemType::kBF16, a.m, a.n, a.k);
    s.aligned16 = true;
    CompileRequest req;
    req.source = std::string(gemm::kernelSource(*kind));
    if (!a.source.empty()) {
      KTUNE_ASSIGN_OR_RETURN(req.source, readFile(a.source));
    }
    req.source_name = "gemm_family.cu";
    req.entry = gemm::entryName(*kind);
    req.defines = gemm::defines(*kind, gemm_ops::knobsOf(c), s);
    req.arch = a.arch;
    return req;
  }
  return Status::NotFound("no config " + std::to_string(a.index) + " in " + a.configs);
}

// One NVRTC compile with the NvrtcCompiler's options (the arch's virtual form for PTX); "" or
// the error. The PTX, when asked for, in *ptx.
std::string nvrtcCompile(const Nvrtc& api, const Args& a, const CompileRequest& req,
                         const std::string& phase, const std::string& tag, std::string* ptx) {
  const std::string arch = phase == "ptx" ? "compute_" + a.arch.substr(3) : a.arch;
  std::vector<std::string> base = {"-arch=" + arch, "-std=c++17", "-default-device",
                                   "-I" + a.include, "--ptxas-options=-v"};
  if (phase == "syntax") base.push_back("-fdevice-syntax-only");
  if (phase == "full") base.push_back("--time=" + a.dir + "/time_" + a.label + "_" + tag + ".csv");
  std::vector<std::string> opts = compiler_detail::requestFlags(req, base);
  opts.insert(opts.end(), a.extra.begin(), a.extra.end());
  const std::string prelude(compiler_detail::preludeSource());
  const char* headers[] = {prelude.c_str()};
  const char* names[] = {"prelude.cuh"};
  void* prog = nullptr;
  if (api.CreateProgram(&prog, req.source.c_str(), req.source_name.c_str(), 1, headers, names))
    return "nvrtcCreateProgram failed";
  std::vector<const char*> argv;
  for (auto& o : opts) argv.push_back(o.c_str());
  const int rc = api.CompileProgram(prog, int(argv.size()), argv.data());
  std::string err;
  size_t n = 0;
  if (rc != 0) {
    api.GetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    if (n) api.GetProgramLog(prog, log.data());
    err = "rc " + std::to_string(rc) + ": " + log.substr(0, 300);
  } else if (ptx && api.GetPTXSize(prog, &n) == 0 && n > 1) {
    ptx->assign(n, '\0');
    api.GetPTX(prog, ptx->data());
    ptx->pop_back();
  }
  api.DestroyProgram(&prog);
  return err;
}

std::string jitLink(const JitLink& j, const std::string& arch, const std::string& ptx) {
  const std::string o = "-arch=" + arch;
  const char* opts[] = {o.c_str()};
  void* h = nullptr;
  if (j.Create(&h, 1, opts)) return "nvJitLinkCreate failed";
  int rc = j.AddData(h, 2 /* PTX */, ptx.data(), ptx.size(), "module.ptx");
  if (rc == 0) rc = j.Complete(h);
  size_t n = 0;
  if (rc == 0 && (j.GetLinkedCubinSize(h, &n) != 0 || n == 0)) rc = -1;
  j.Destroy(&h);
  return rc == 0 ? "" : "nvJitLink rc " + std::to_string(rc);
}

std::string ptxasCompile(const Args& a, const std::string& ptx_path, const std::string& tag) {
  std::string ptxas = findProgram("ptxas");
  if (ptxas.empty()) ptxas = parentDir(a.include) + "/bin/ptxas";
  auto r = runProcess({ptxas, "-arch=" + a.arch, "-v", ptx_path, "-o",
                       a.dir + "/" + tag + ".cubin"}, "", 120000);
  if (!r.ok()) return r.status().toString();
  return r->exit_code == 0 && !r->signaled ? "" : "ptxas failed: " + r->err.substr(0, 200);
}

int run(const Args& a) {
  gemm::KernelKind kind{};
  auto req = requestFor(a, &kind);
  if (!req.ok()) return std::fprintf(stderr, "%s\n", req.status().toString().c_str()), 2;
  if (a.phase == "dump") {
    const std::string stem = a.dir + "/" + std::to_string(a.index);
    std::string opts;
    for (const auto& o : compiler_detail::requestFlags(*req, {})) opts += o + "\n";
    const bool ok = writeFileAtomic(stem + ".cu", req->source).ok() &&
                    writeFileAtomic(a.dir + "/prelude.cuh", std::string(compiler_detail::preludeSource())).ok() &&
                    writeFileAtomic(stem + ".opt", opts).ok();
    std::printf("DUMP %s.cu %s\n", stem.c_str(), ok ? "ok" : "error");
    return ok ? 0 : 1;
  }
  Nvrtc api;
  JitLink jl;
  auto lib = DynLib::open({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, "NVRTC");
  if (!lib.ok() || !(api.lib = std::move(*lib), api.bindEntryPoints(api.lib, "nvrtc")).ok())
    return std::fprintf(stderr, "no NVRTC\n"), 2;
  const bool linking = a.phase == "link";
  if (linking) {
    auto l = DynLib::open({"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"}, "nvJitLink");
    if (!l.ok() || !(jl.lib = std::move(*l), jl.bindEntryPoints(jl.lib, "nvJitLink")).ok())
      return std::fprintf(stderr, "no nvJitLink\n"), 2;
  }
  // NVRTC's own start-up (and nvJitLink's) outside the timed compiles.
  CompileRequest warm;
  warm.source = "extern \"C\" __global__ void warm(float* p) { p[threadIdx.x] = 1.0f; }";
  warm.source_name = "warm.cu";
  std::string warm_ptx;
  Args wa = a;
  wa.extra.clear();
  if (a.warm) (void)nvrtcCompile(api, wa, warm, "ptx", "warm", &warm_ptx);
  if (linking && !warm_ptx.empty()) (void)jitLink(jl, a.arch, warm_ptx);
  std::string ptx;
  const std::string ptx_path = a.dir + "/" + std::to_string(a.index) + ".ptx";
  if (linking) {
    auto p = readFile(ptx_path);
    if (!p.ok()) return std::fprintf(stderr, "no %s: run --phase=ptx first\n", ptx_path.c_str()), 2;
    ptx = *p;
  }
  while (a.at_ms > 0 && epochMs() < a.at_ms) std::this_thread::sleep_for(std::chrono::microseconds(200));
  const double base = a.at_ms > 0 ? a.at_ms : epochMs();
  for (int rep = 0; rep < a.repeat; ++rep) {
    const std::string tag = a.phase + "_" + std::to_string(a.index) + "_" + std::to_string(rep);
    const double s = epochMs();
    std::string out, err;
    if (a.phase == "link") err = jitLink(jl, a.arch, ptx);
    else if (a.phase == "ptxas") err = ptxasCompile(a, ptx_path, tag);
    else err = nvrtcCompile(api, a, *req, a.phase, tag, a.phase == "ptx" ? &out : nullptr);
    const double e = epochMs();
    if (a.phase == "ptx" && err.empty()) (void)writeFileAtomic(ptx_path, out);
    std::printf("SPLIT %s %d %d %.1f %.1f %.1f %s %s\n", a.phase.c_str(), a.index, rep, e - s,
                s - base, e - base, gemm::kernelKindName(kind), err.empty() ? "ok" : err.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace ktune

int main(int argc, char** argv) {
  ktune::Args a;
  if (!ktune::parse(argc, argv, &a)) {
    std::fprintf(stderr, "usage: compile_split_bench --configs=FILE --index=I "
                         "--phase=full|ptx|syntax|link|ptxas [--at=EPOCH_MS] [--dir=DIR] ...\n");
    return 2;
  }
  return ktune::run(a);
}
