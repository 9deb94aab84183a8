#include "compiler/nvrtc/nvrtc_compiler.h"

#include "base/sha256.h"

#include <algorithm>
#include <chrono>
#include <regex>
#include <unordered_map>
#include <mutex>
#include <sstream>

#include "base/dylib.h"
#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/compiler_util.h"
#include "compiler/llvm/clang_compiler.h"

#ifndef KTUNE_DEFAULT_CUDA_INCLUDE
#define KTUNE_DEFAULT_CUDA_INCLUDE "/usr/local/cuda/include"
#endif

namespace ktune {
namespace {

// Resource reports by cubin hash (see the NVRTC reuse note in compile()).
std::mutex& resourceMemoMutex() {
  static std::mutex mu;
  return mu;
}
std::unordered_map<std::string, ResourceUsage>& resourceMemo() {
  static auto* memo = new std::unordered_map<std::string, ResourceUsage>();
  return *memo;
}
void rememberResources(const std::string& cubin, const ResourceUsage& r) {
  std::string key = sha256Hex(cubin);
  std::lock_guard<std::mutex> l(resourceMemoMutex());
  resourceMemo()[key] = r;
}
}  // namespace

namespace {

bool rememberedResources(const std::string& cubin, ResourceUsage* r) {
  std::string key = sha256Hex(cubin);
  std::lock_guard<std::mutex> l(resourceMemoMutex());
  auto it = resourceMemo().find(key);
  if (it == resourceMemo().end()) return false;
  *r = it->second;
  return true;
}


using namespace compiler_detail;

// The stable NVRTC C ABI (nvrtc.h), declared here so no CUDA header is needed at build time.
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
constexpr nvrtcResult kNvrtcSuccess = 0;

// The NVRTC entry points ktune needs (nvrtc<name>).
#define KTUNE_NVRTC_ENTRY_POINTS(X)                                                          \
  X(const char*, GetErrorString, (nvrtcResult))                                              \
  X(nvrtcResult, Version, (int*, int*))                                                      \
  X(nvrtcResult, CreateProgram,                                                              \
    (nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*))  \
  X(nvrtcResult, DestroyProgram, (nvrtcProgram*))                                            \
  X(nvrtcResult, CompileProgram, (nvrtcProgram, int, const char* const*))                    \
  X(nvrtcResult, GetPTXSize, (nvrtcProgram, size_t*))                                        \
  X(nvrtcResult, GetPTX, (nvrtcProgram, char*))                                              \
  X(nvrtcResult, GetCUBINSize, (nvrtcProgram, size_t*))                                      \
  X(nvrtcResult, GetCUBIN, (nvrtcProgram, char*))                                            \
  X(nvrtcResult, GetProgramLogSize, (nvrtcProgram, size_t*))                                 \
  X(nvrtcResult, GetProgramLog, (nvrtcProgram, char*))                                       \
  X(nvrtcResult, AddNameExpression, (nvrtcProgram, const char*))                             \
  X(nvrtcResult, GetLoweredName, (nvrtcProgram, const char*, const char**))

struct NvrtcApi {
  DynLib lib;
  KTUNE_DYLIB_ENTRY_POINTS(KTUNE_NVRTC_ENTRY_POINTS)
  // Optional (NVRTC >= 11.2): null when absent.
  nvrtcResult (*GetNumSupportedArchs)(int*) = nullptr;
  nvrtcResult (*GetSupportedArchs)(int*) = nullptr;
};

// Owns one nvrtcProgram.
class Program {
 public:
  Program(const NvrtcApi& api, nvrtcProgram p) : api_(api), p_(p) {}
  ~Program() {
    if (p_) api_.DestroyProgram(&p_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return p_; }
  std::string log() const {
    size_t n = 0;
    if (api_.GetProgramLogSize(p_, &n) != kNvrtcSuccess || n == 0) return "";
    std::string s(n, '\0');
    if (api_.GetProgramLog(p_, s.data()) != kNvrtcSuccess) return "";
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }

 private:
  const NvrtcApi& api_;
  nvrtcProgram p_;
};

class NvrtcCompiler final : public Compiler {
 public:
  NvrtcCompiler(std::unique_ptr<NvrtcApi> api, std::string include)
      : api_(std::move(api)), cuda_include_(std::move(include)) {
    int major = 0, minor = 0;
    if (api_->Version(&major, &minor) == kNvrtcSuccess)
      version_ = std::to_string(major) + "." + std::to_string(minor);
    int n = 0;
    if (api_->GetNumSupportedArchs && api_->GetSupportedArchs &&
        api_->GetNumSupportedArchs(&n) == kNvrtcSuccess && n > 0) {
      archs_.resize(n);
      if (api_->GetSupportedArchs(archs_.data()) != kNvrtcSuccess) archs_.clear();
    }
  }

  std::string name() const override { return "nvrtc"; }
  std::string version() const override { return version_; }

  bool supportsArch(const std::string& arch) const override {
    int sm = smNumber(arch);
    if (sm <= 0) return false;
    if (archs_.empty()) return sm >= 50 && sm <= 120;  // old NVRTC without the query
    return std::find(archs_.begin(), archs_.end(), sm) != archs_.end();
  }

  Expected<CodeObject> compile(const CompileRequest& req) override {
    const auto t0 = std::chrono::steady_clock::now();
    KTUNE_RETURN_IF_ERROR(checkRequest(req));
    if (!supportsArch(req.arch))
      return Status::Unsupported("NVRTC " + version_ + " cannot target '" + req.arch +
                                 "' (expected sm_XX[a|f] with XX among " + archList() + ")");
    const std::vector<std::string> opts =
        requestFlags(req, {"-arch=" + req.arch, "-std=c++17", "-default-device",
                           "-I" + cuda_include_, "--ptxas-options=-v"});
    CodeObject co = codeObjectFor(req, "cubin", name(), version_, opts);
    std::string ptx;
    KTUNE_ASSIGN_OR_RETURN(auto prog, build(req, opts, &co.lowered_entry, &co.log));
    size_t n = 0;
    if (api_->GetCUBINSize(prog->get(), &n) != kNvrtcSuccess || n == 0)
      return Status::Internal("NVRTC produced no cubin for " + req.arch);
    co.binary.resize(n);
    if (api_->GetCUBIN(prog->get(), co.binary.data()) != kNvrtcSuccess)
      return Status::Internal("nvrtcGetCUBIN failed");
    // An extern "C" entry is taken on trust by build(); without this check a misspelt entry (or
    // an empty source) "compiles" and only fails at module load on the GPU, far from the cause.
    // Every kernel of a cubin has its own ".text.<symbol>" section.
    if (co.binary.find(".text." + co.lowered_entry + std::string(1, '\0')) == std::string::npos)
      return entryNotFound(req, co.log);
    if (req.dumps & kDumpPtx) ptx = getPtx(prog->get());
    prog.reset();
    if ((req.dumps & kDumpPtx) && ptx.empty()) {
      // Some NVRTC versions keep no PTX when asked for an sm_ target (they compile straight to
      // SASS); compile again for the virtual arch to show it.
      auto virt = opts;
      virt[0] = "-arch=compute_" + req.arch.substr(3);
      std::string unused_entry, unused_log;
      auto p2 = build(req, virt, &unused_entry, &unused_log);
      if (p2.ok()) ptx = getPtx((*p2)->get());
    }
    if (!parsePtxasReport(co.log, co.lowered_entry, &co.resources) &&
        !parsePtxasReport(co.log, "", &co.resources)) {
      // NVRTC 13 reuses the result of an identical earlier compile in this process and then
      // prints no ptxas report (seen on a GPU machine: the same GEMM config compiled for two
      // shapes reported 0 registers the second time). Identical programs give identical
      // cubins, so take the report remembered for this cubin.
      if (!rememberedResources(co.binary, &co.resources))
        cubinResources(co.binary, co.lowered_entry, &co.resources);
    } else {
      rememberResources(co.binary, co.resources);
    }
    co.resources.wave_size = 32;
    if (req.dumps & kDumpSource) co.dumps["source"] = instantiatedSource(req);
    if (req.dumps & kDumpPtx) co.dumps["ptx"] = ptx.empty() ? "PTX not available from NVRTC" : ptx;
    if (req.dumps & kDumpSass)
      co.dumps["sass"] = sassDump(co.binary, parentDir(cuda_include_) + "/bin");
    if (req.dumps & (kDumpLlvm | kDumpMlir)) addClangViews(req, &co);
    if (req.dumps & kDumpIsa) co.dumps["isa"] = "AMDGCN ISA does not apply to NVIDIA targets";
    co.compile_ms = msSince(t0);
    return co;
  }

 private:
  static int smNumber(const std::string& arch) {
    static const std::regex re("sm_([0-9]{2,3})[af]?");
    std::smatch m;
    if (!std::regex_match(arch, m, re)) return -1;
    return std::stoi(m[1]);
  }
  std::string archList() const {
    std::string s;
    for (int a : archs_) s += (s.empty() ? "" : ",") + std::to_string(a);
    return s.empty() ? "50..120" : s;
  }
  std::string getPtx(nvrtcProgram p) const {
    size_t n = 0;
    if (api_->GetPTXSize(p, &n) != kNvrtcSuccess || n <= 1) return "";
    std::string s(n, '\0');
    if (api_->GetPTX(p, s.data()) != kNvrtcSuccess) return "";
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }

  Expected<std::unique_ptr<Program>> build(const CompileRequest& req,
                                           const std::vector<std::string>& opts,
                                           std::string* lowered, std::string* log) const {
    const std::string prelude(preludeSource());
    const char* headers[] = {prelude.c_str()};
    const char* names[] = {"prelude.cuh"};
    nvrtcProgram raw = nullptr;
    const std::string src_name = req.source_name.empty() ? "kernel.cu" : req.source_name;
    nvrtcResult r =
        api_->CreateProgram(&raw, req.source.c_str(), src_name.c_str(), 1, headers, names);
    if (r != kNvrtcSuccess)
      return Status::Internal(std::string("nvrtcCreateProgram: ") + api_->GetErrorString(r));
    auto prog = std::make_unique<Program>(*api_, raw);
    const bool expr = isNameExpression(req.entry);
    if (expr && api_->AddNameExpression(raw, req.entry.c_str()) != kNvrtcSuccess)
      return Status::InvalidArgument("NVRTC rejected the name expression '" + req.entry + "'");
    std::vector<const char*> argv;
    for (auto& o : opts) argv.push_back(o.c_str());
    r = api_->CompileProgram(raw, static_cast<int>(argv.size()), argv.data());
    *log = prog->log();
    if (r != kNvrtcSuccess) return compileError("NVRTC " + version_, req, *log, opts);
    if (expr) {
      const char* low = nullptr;
      if (api_->GetLoweredName(raw, req.entry.c_str(), &low) != kNvrtcSuccess || !low)
        return compileError("NVRTC " + version_, req,
                            "no lowered name for name expression '" + req.entry + "'\n" + *log,
                            opts);
      *lowered = low;
    } else {
      *lowered = req.entry;
    }
    return prog;
  }

  // kNotFound naming the kernels ptxas did compile (from the -v log).
  static Status entryNotFound(const CompileRequest& req, const std::string& log) {
    static const std::regex entry_re(R"(Compiling entry function '([^']+)')");
    std::string kernels;
    for (std::sregex_iterator it(log.begin(), log.end(), entry_re), end; it != end; ++it)
      kernels += (kernels.empty() ? "" : ", ") + (*it)[1].str();
    return Status::NotFound("kernel '" + req.entry + "' not found in " +
                            (req.source_name.empty() ? std::string("the source") : req.source_name) +
                            " compiled for " + req.arch + " (kernels: " +
                            (kernels.empty() ? std::string("none") : kernels) +
                            "); check --entry and that the kernel is extern \"C\" __global__");
  }

  // NVRTC's LLVM IR is opaque NVVM bitcode: the LLVM IR and MLIR views come from clang-19
  // compiling the same source in CUDA mode (the same front end and NVPTX backend family).
  static void addClangViews(const CompileRequest& req, CodeObject* co) {
    const std::string clang = clang_detail::findClang("");
    Expected<std::string> ir = Status::Unavailable(
        "clang-19 not found (install clang-19): NVRTC gives no readable LLVM IR");
    if (!clang.empty()) ir = clang_detail::emitLlvm(clang, req, 300000);
    const std::string note = "; LLVM IR from clang-19 -x cuda (NVRTC's own is opaque NVVM bitcode)\n";
    if (req.dumps & kDumpLlvm)
      co->dumps["llvm"] = ir.ok() ? note + *ir : "LLVM IR unavailable: " + ir.status().message();
    if (req.dumps & kDumpMlir)
      co->dumps["mlir"] = ir.ok() ? clang_detail::mlirView("", *ir, 300000)
                                  : std::string(kMlirViewUnavailable) + ir.status().message();
  }

  std::unique_ptr<NvrtcApi> api_;
  std::string cuda_include_;
  std::string version_ = "unknown";
  std::vector<int> archs_;
};

}  // namespace

Expected<std::unique_ptr<Compiler>> openNvrtcCompiler(const NvrtcConfig& config) {
  const std::string include =
      config.cuda_include.empty() ? std::string(KTUNE_DEFAULT_CUDA_INCLUDE) : config.cuda_include;
  std::vector<std::string> names = config.library_candidates;
  if (names.empty()) {
    const std::string root = parentDir(include);
    for (const char* n : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) names.push_back(n);
    for (const char* sub : {"/lib64/", "/lib/"})
      for (const char* n : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
        names.push_back(root + sub + n);
  }
  auto api = std::make_unique<NvrtcApi>();
  KTUNE_ASSIGN_OR_RETURN(api->lib, DynLib::open(names, "NVRTC"));
  const DynLib& l = api->lib;
  KTUNE_RETURN_IF_ERROR(api->bindEntryPoints(l, "nvrtc"));
  // Optional (NVRTC >= 11.2).
  (void)l.bind(api->GetNumSupportedArchs, "nvrtcGetNumSupportedArchs");
  (void)l.bind(api->GetSupportedArchs, "nvrtcGetSupportedArchs");
  if (!pathExists(include + "/cuda_fp16.h"))
    return Status::Unavailable("CUDA headers not found: " + include +
                               "/cuda_fp16.h is missing (NVRTC kernels include cuda_fp16.h/"
                               "cuda_bf16.h); pass NvrtcConfig::cuda_include");
  return std::unique_ptr<Compiler>(new NvrtcCompiler(std::move(api), include));
}

Expected<std::unique_ptr<Compiler>> openNvrtcCompiler() { return openNvrtcCompiler(NvrtcConfig{}); }

}  // namespace ktune
