#include "compiler/hip/hiprtc_compiler.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>

#include "base/dylib.h"
#include "compiler/analysis/amd_metadata.h"
#include "compiler/compiler_util.h"
#include "compiler/hip/comgr.h"
#include "compiler/llvm/clang_compiler.h"

namespace ktune {
namespace {

using namespace compiler_detail;

// The stable hiprtc C ABI (hip/hiprtc.h), declared here so no ROCm header is needed to build.
using hiprtcResult = int;
using hiprtcProgram = struct _hiprtcProgram*;
constexpr hiprtcResult kHiprtcSuccess = 0;

// The hiprtc entry points ktune uses (hiprtc<name>).
#define KTUNE_HIPRTC_ENTRY_POINTS(X)                                                          \
  X(const char*, GetErrorString, (hiprtcResult))                                              \
  X(hiprtcResult, Version, (int*, int*))                                                      \
  X(hiprtcResult, CreateProgram,                                                              \
    (hiprtcProgram*, const char*, const char*, int, const char**, const char**))              \
  X(hiprtcResult, DestroyProgram, (hiprtcProgram*))                                           \
  X(hiprtcResult, CompileProgram, (hiprtcProgram, int, const char**))                         \
  X(hiprtcResult, GetCodeSize, (hiprtcProgram, size_t*))                                      \
  X(hiprtcResult, GetCode, (hiprtcProgram, char*))                                            \
  X(hiprtcResult, GetProgramLogSize, (hiprtcProgram, size_t*))                                \
  X(hiprtcResult, GetProgramLog, (hiprtcProgram, char*))                                      \
  X(hiprtcResult, AddNameExpression, (hiprtcProgram, const char*))                            \
  X(hiprtcResult, GetLoweredName, (hiprtcProgram, const char*, const char**))

struct HiprtcApi {
  DynLib lib;
  KTUNE_DYLIB_ENTRY_POINTS(KTUNE_HIPRTC_ENTRY_POINTS)
};

// Targets of ROCm 5.x when comgr cannot list them (the list comgr 2.4 / ROCm 5.2 reports).
const char* const kRocm5Archs[] = {"gfx700",  "gfx701",  "gfx702",  "gfx801",  "gfx802",  "gfx803",
                                   "gfx900",  "gfx902",  "gfx904",  "gfx906",  "gfx908",  "gfx909",
                                   "gfx90a",  "gfx90c",  "gfx1010", "gfx1011", "gfx1012", "gfx1030",
                                   "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035"};

// Shared with comgr (see amdToolchainMutex): hiprtc calls into comgr itself.
std::mutex& hiprtcMutex() { return amdToolchainMutex(); }

class HiprtcCompiler final : public Compiler {
 public:
  HiprtcCompiler(std::unique_ptr<HiprtcApi> api, std::shared_ptr<Comgr> comgr, std::string clang)
      : api_(std::move(api)), comgr_(std::move(comgr)), clang_(std::move(clang)) {
    int major = 0, minor = 0;
    if (api_->Version(&major, &minor) == kHiprtcSuccess)
      version_ = std::to_string(major) + "." + std::to_string(minor);
    version_ += "/comgr-" + comgr_->version();
    archs_ = comgr_->isaNames();
    if (archs_.empty()) archs_.assign(std::begin(kRocm5Archs), std::end(kRocm5Archs));
  }

  std::string name() const override { return "hiprtc"; }
  std::string version() const override { return version_; }
  bool supportsArch(const std::string& arch) const override {
    // Decided from comgr's ISA list, never by trying: ROCm 5.2's hiprtc aborts the process on an
    // arch it does not know (seen with gfx942).
    const std::string base = arch.substr(0, arch.find(':'));
    return std::find(archs_.begin(), archs_.end(), base) != archs_.end();
  }

  Expected<CodeObject> compile(const CompileRequest& req) override {
    const auto t0 = std::chrono::steady_clock::now();
    KTUNE_RETURN_IF_ERROR(checkRequest(req));
    if (!supportsArch(req.arch))
      return Status::Unsupported("hiprtc " + version_ + " cannot target '" + req.arch +
                                 "' (this ROCm knows " + archList() +
                                 "); use the LLVM path (clang-19) for newer archs");
    const std::vector<std::string> opts =
        requestFlags(req, {"--offload-arch=" + req.arch, "-O3", "-std=c++17"});
    CodeObject co = codeObjectFor(req, "hsaco", name(), version_, opts);
    std::string lowered, code;
    KTUNE_RETURN_IF_ERROR(build(req, opts, &code, &lowered, &co.log));
    KTUNE_ASSIGN_OR_RETURN(co.binary, unbundleCodeObject(code, req.arch));
    if (co.binary.compare(0, 4,
                          "\x7f"
                          "ELF") != 0)
      return Status::Internal("hiprtc returned no ELF code object for " + req.arch);
    KTUNE_ASSIGN_OR_RETURN(auto kernels, comgr_->kernels(co.binary));
    if (lowered.empty()) {  // hiprtc could not lower the expression (e.g. typedefs on ROCm 5)
      std::vector<std::string> names;
      for (const auto& k : kernels) names.push_back(k.name);
      auto e = resolveEntry(req.entry, names);
      if (!e.ok()) return compileError("hiprtc " + version_, req, e.status().message(), opts);
      lowered = *e;
    }
    co.lowered_entry = lowered;
    const AmdKernelMeta* k = findAmdKernel(kernels, lowered);
    if (!k)
      return compileError("hiprtc " + version_, req,
                          "kernel '" + lowered + "' is not in the code object's metadata", opts);
    co.resources = amdResources(*k);
    if (req.dumps & kDumpSource) co.dumps["source"] = instantiatedSource(req);
    if (req.dumps & kDumpIsa) {
      auto isa = comgr_->disassemble(co.binary);
      co.dumps["isa"] = isa.ok() ? *isa : "disassembly unavailable: " + isa.status().message();
    }
    if (req.dumps & (kDumpLlvm | kDumpMlir)) {
      // hiprtc 5.x has no IR output; the same source through clang-19 shows what LLVM sees.
      std::string text;
      Expected<std::string> ir = Status::Unavailable("clang not found (install clang-19)");
      if (!clang_.empty()) ir = clang_detail::emitLlvm(clang_, req, 300000);
      text = ir.ok() ? "; LLVM IR from " + clang_ + " (hiprtc cannot emit IR), same source\n" + *ir
                     : "LLVM IR unavailable: " + ir.status().message();
      if (req.dumps & kDumpLlvm) co.dumps["llvm"] = text;
      if (req.dumps & kDumpMlir)
        co.dumps["mlir"] =
            ir.ok() ? clang_detail::mlirView(clang_detail::findMlirTranslate(clang_), *ir, 300000)
                    : text;
    }
    if (req.dumps & kDumpPtx) co.dumps["ptx"] = "PTX does not apply to AMD targets";
    if (req.dumps & kDumpSass) co.dumps["sass"] = "SASS does not apply to AMD targets";
    co.compile_ms = msSince(t0);
    return co;
  }

 private:
  std::string archList() const {
    std::string s;
    for (auto& a : archs_) s += (s.empty() ? "" : ",") + a;
    return s;
  }

  Status build(const CompileRequest& req, const std::vector<std::string>& opts, std::string* code,
               std::string* lowered, std::string* log) const {
    std::lock_guard<std::mutex> lock(hiprtcMutex());
    const std::string prelude(preludeSource());
    const char* headers[] = {prelude.c_str()};
    const char* names[] = {"prelude.cuh"};
    const std::string src_name = req.source_name.empty() ? "kernel.hip" : req.source_name;
    hiprtcProgram p = nullptr;
    hiprtcResult r =
        api_->CreateProgram(&p, req.source.c_str(), src_name.c_str(), 1, headers, names);
    if (r != kHiprtcSuccess)
      return Status::Internal(std::string("hiprtcCreateProgram: ") + api_->GetErrorString(r));
    struct Guard {
      const HiprtcApi* a;
      hiprtcProgram* p;
      ~Guard() { a->DestroyProgram(p); }
    } guard{api_.get(), &p};
    const bool expr = isNameExpression(req.entry);
    if (expr && api_->AddNameExpression(p, req.entry.c_str()) != kHiprtcSuccess)
      return Status::InvalidArgument("hiprtc rejected the name expression '" + req.entry + "'");
    std::vector<const char*> argv;
    for (auto& o : opts) argv.push_back(o.c_str());
    r = api_->CompileProgram(p, static_cast<int>(argv.size()), argv.data());
    size_t n = 0;
    log->clear();
    if (api_->GetProgramLogSize(p, &n) == kHiprtcSuccess && n > 0) {
      log->resize(n);
      if (api_->GetProgramLog(p, log->data()) != kHiprtcSuccess) log->clear();
      while (!log->empty() && log->back() == '\0') log->pop_back();
    }
    if (r != kHiprtcSuccess)
      return compileError("hiprtc " + version_, req,
                          *log + (log->empty() ? std::string(api_->GetErrorString(r)) : ""), opts);
    if (expr) {
      const char* low = nullptr;
      if (api_->GetLoweredName(p, req.entry.c_str(), &low) == kHiprtcSuccess && low) *lowered = low;
    } else {
      *lowered = req.entry;
    }
    n = 0;
    if (api_->GetCodeSize(p, &n) != kHiprtcSuccess || n == 0)
      return Status::Internal("hiprtc produced no code object for " + req.arch);
    code->resize(n);
    if (api_->GetCode(p, code->data()) != kHiprtcSuccess)
      return Status::Internal("hiprtcGetCode failed");
    return Status::Ok();
  }

  std::unique_ptr<HiprtcApi> api_;
  std::shared_ptr<Comgr> comgr_;
  std::string clang_;
  std::string version_;
  std::vector<std::string> archs_;
};

uint64_t readU64(const std::string& s, size_t off) {
  uint64_t v = 0;
  std::memcpy(&v, s.data() + off, sizeof(v));  // bundles are little-endian, as is every host here
  return v;
}

}  // namespace

Expected<std::string> unbundleCodeObject(const std::string& blob, const std::string& arch) {
  static const std::string kMagic = "__CLANG_OFFLOAD_BUNDLE__";
  if (blob.compare(0, kMagic.size(), kMagic) != 0) return blob;
  size_t off = kMagic.size();
  auto need = [&](size_t n) { return off + n <= blob.size(); };
  if (!need(8)) return Status::Corrupt("offload bundle truncated in its header");
  const uint64_t count = readU64(blob, off);
  off += 8;
  std::string ids;
  for (uint64_t i = 0; i < count; ++i) {
    if (!need(24)) return Status::Corrupt("offload bundle truncated in entry " + std::to_string(i));
    const uint64_t eoff = readU64(blob, off), esize = readU64(blob, off + 8),
                   idlen = readU64(blob, off + 16);
    off += 24;
    if (!need(idlen)) return Status::Corrupt("offload bundle entry id truncated");
    const std::string id = blob.substr(off, idlen);
    off += idlen;
    ids += " " + id;
    if (id.find("amdgcn") != std::string::npos &&
        id.find(arch.substr(0, arch.find(':'))) != std::string::npos) {
      if (eoff > blob.size() || esize > blob.size() - eoff)
        return Status::Corrupt("offload bundle entry '" + id + "' lies outside the bundle");
      return blob.substr(eoff, esize);
    }
  }
  return Status::Corrupt("offload bundle has no code object for " + arch + " (entries:" + ids +
                         ")");
}

Expected<std::unique_ptr<Compiler>> openHiprtcCompiler(const HiprtcConfig& config) {
  std::vector<std::string> names = config.library_candidates;
  if (names.empty())
    names = {"libhiprtc.so.6", "libhiprtc.so", "libamdhip64.so.6", "libamdhip64.so.5",
             "libamdhip64.so"};
  auto api = std::make_unique<HiprtcApi>();
  std::string tried;
  for (const auto& n : names) {
    auto lib = DynLib::open({n}, "hiprtc");
    if (!lib.ok()) {
      tried += "\n  " + lib.status().message();
      continue;
    }
    if (!lib->symbol("hiprtcCreateProgram").ok()) {
      tried += "\n  " + n + ": no hiprtcCreateProgram";
      continue;
    }
    api->lib = std::move(lib).value();
    break;
  }
  if (!api->lib.loaded()) return Status::Unavailable("hiprtc not found; tried:" + tried);
  KTUNE_RETURN_IF_ERROR(api->bindEntryPoints(api->lib, "hiprtc"));
  KTUNE_ASSIGN_OR_RETURN(auto comgr, Comgr::open());
  return std::unique_ptr<Compiler>(
      new HiprtcCompiler(std::move(api), std::move(comgr), clang_detail::findClang(config.clang)));
}

Expected<std::unique_ptr<Compiler>> openHiprtcCompiler() {
  return openHiprtcCompiler(HiprtcConfig{});
}

}  // namespace ktune
