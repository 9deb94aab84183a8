// The IR front door: modules an embedding compiler generated (MLIR, LLVM IR, PTX, AMDGCN
// assembly) and prebuilt code objects, compiled into the same CodeObject the C++ path gives, so
// the store, the analysis, the dumps and the tuner treat them alike.
//
//   MLIR --mlir-opt, mlir-translate--> LLVM IR --llc--> PTX --nvJitLink|ptxas--> cubin   (sm_*)
//                                              \--llc--> AMDGCN asm --llvm-mc, ld.lld--> hsaco (gfx*)
//   cubin / hsaco: checked (ELF machine, arch) and kept as they are.
#include <chrono>
#include <regex>

#include "compiler/compiler_util.h"
#include "compiler/ir/ir_util.h"
#include "compiler/nvrtc/nvrtc_compiler.h"

namespace ktune {
namespace {

using namespace ir_detail;

bool nvidiaOnly(Language l) { return l == Language::kPtx || l == Language::kCubin; }
bool amdOnly(Language l) { return l == Language::kAmdgcnAsm || l == Language::kHsaco; }
bool isBinary(Language l) { return l == Language::kCubin || l == Language::kHsaco; }

Status checkIrRequest(const CompileRequest& req) {
  if (req.language == Language::kCpp)
    return Status::InvalidArgument("the IR compiler takes no C++ source (use compilerForArch)");
  KTUNE_RETURN_IF_ERROR(compiler_detail::checkArch(req.arch));
  if (!isNvidiaArch(req.arch) && !isAmdArch(req.arch))
    return Status::Unsupported("unknown arch '" + req.arch +
                               "': expected sm_XX[a] (NVIDIA) or gfxNNN (AMD)");
  const std::string lang = languageName(req.language);
  if (nvidiaOnly(req.language) && !isNvidiaArch(req.arch))
    return Status::InvalidArgument(lang + " is NVIDIA code; arch " + req.arch + " is AMD");
  if (amdOnly(req.language) && !isAmdArch(req.arch))
    return Status::InvalidArgument(lang + " is AMD code; arch " + req.arch + " is NVIDIA");
  if (req.source.find_first_not_of(" \t\r\n") == std::string::npos)
    return Status::InvalidArgument("empty " + lang + " module" +
                                   (req.source_name.empty() ? "" : " (" + req.source_name + ")"));
  if (!req.defines.empty())
    return Status::InvalidArgument("-D defines do not apply to a " + lang +
                                   " module: substitute the values into its text");
  if (req.language == Language::kLlvmIr) {
    static const std::regex triple_re(R"(target triple = "([a-z0-9_]+))");
    std::smatch m;
    if (std::regex_search(req.source, m, triple_re)) {
      const std::string t = m[1].str();
      const bool nv = t.rfind("nvptx", 0) == 0, amd = t.rfind("amdgcn", 0) == 0;
      if ((nv && !isNvidiaArch(req.arch)) || (amd && !isAmdArch(req.arch)) || (!nv && !amd))
        return Status::InvalidArgument("the LLVM module targets " + t + ", which cannot run on " +
                                       req.arch);
    }
  }
  return Status::Ok();
}

// The kernel to keep: `entry` among `kernels` (exact or demangled match), or the only kernel.
Expected<std::string> pickKernel(const CompileRequest& req, const std::vector<std::string>& kernels) {
  if (!req.entry.empty()) return compiler_detail::resolveEntry(req.entry, kernels);
  if (kernels.size() == 1) return kernels[0];
  std::string list;
  for (const auto& k : kernels) list += (list.empty() ? "" : ", ") + k;
  return Status::NotFound(std::string(kernels.empty() ? "no kernel" : "several kernels") +
                          " in the " + languageName(req.language) + " module" +
                          (list.empty() ? "" : " (" + list + "); name one as the entry"));
}

class IrCompiler final : public Compiler {
 public:
  std::string name() const override { return "ktune-ir"; }
  std::string version() const override { return toolchain().versions(); }
  bool supportsArch(const std::string& arch) const override {
    return isNvidiaArch(arch) || isAmdArch(arch);
  }

  Expected<CodeObject> compile(const CompileRequest& req) override {
    const auto t0 = std::chrono::steady_clock::now();
    KTUNE_RETURN_IF_ERROR(checkIrRequest(req));
    CodeObject co = compiler_detail::codeObjectFor(
        req, isNvidiaArch(req.arch) ? "cubin" : "hsaco", /*compiler=*/"", version());
    if (req.dumps & kDumpSource)
      co.dumps["source"] = isBinary(req.language)
                               ? "prebuilt " + std::string(languageName(req.language)) + ", " +
                                     std::to_string(req.source.size()) + " bytes"
                               : req.source;
    std::string chain;
    Status s = isNvidiaArch(req.arch) ? compileNvidia(req, &co, &chain) : compileAmd(req, &co, &chain);
    if (!s.ok()) return s;
    co.compiler = chain;
    fillOtherDumps(req, &co);
    co.compile_ms = compiler_detail::msSince(t0);
    return co;
  }

 private:
  // The module as LLVM IR, with its dumps: MLIR lowered (the mlir dump: its stages), LLVM IR as
  // given (the mlir dump: its MLIR view).
  static Expected<std::string> llvmIrOf(const CompileRequest& req, CodeObject* co,
                                        std::string* chain) {
    std::string ir;
    if (req.language == Language::kLlvmIr) {
      ir = req.source;
      if (req.dumps & kDumpMlir) co->dumps["mlir"] = view(ir);
    } else {
      KTUNE_ASSIGN_OR_RETURN(MlirLowering low, lowerMlir(req));
      if (req.dumps & kDumpMlir) co->dumps["mlir"] = std::move(low.stages);
      *chain += "mlir-opt+mlir-translate+";
      ir = std::move(low.llvm_ir);
    }
    if (req.dumps & kDumpLlvm) co->dumps["llvm"] = ir;
    return ir;
  }

  // llc started while MLIR is lowered (its start-up overlaps mlir-opt and mlir-translate); null
  // for other inputs, whose llc has nothing to overlap, or when it cannot start early.
  static std::unique_ptr<EarlyTool> earlyLlc(const CompileRequest& req,
                                             const std::vector<std::string>& argv) {
    if (req.language != Language::kMlir || toolchain().llc.empty()) return nullptr;
    auto t = EarlyTool::start(argv);
    return t.ok() ? std::move(*t) : nullptr;
  }

  // The target's assembly (PTX or AMDGCN): the source itself when it is already in `asm_language`,
  // else its LLVM IR (llvmIrOf) through llc, started early when it can be (earlyLlc).
  static Expected<std::string> targetAssembly(
      const CompileRequest& req, CodeObject* co, std::string* chain, Language asm_language,
      std::vector<std::string> (*llc_argv)(const CompileRequest&, const std::string&),
      Expected<std::string> (*lower)(const CompileRequest&, const std::string&, std::string*,
                                     EarlyTool*)) {
    if (req.language == asm_language) return req.source;
    auto llc = earlyLlc(req, llc_argv(req, "{input}"));
    KTUNE_ASSIGN_OR_RETURN(std::string ir, llvmIrOf(req, co, chain));
    KTUNE_ASSIGN_OR_RETURN(std::string out, lower(req, ir, chain, llc.get()));
    *chain += "llc+";
    return out;
  }

  static Status compileNvidia(const CompileRequest& req, CodeObject* co, std::string* chain) {
    if (req.language == Language::kCubin) {
      KTUNE_RETURN_IF_ERROR(checkCubin(req, req.source));
      KTUNE_ASSIGN_OR_RETURN(co->lowered_entry, pickKernel(req, cubinKernels(req.source)));
      co->binary = req.source;
      cubinResources(co->binary, co->lowered_entry, &co->resources);
      co->resources.wave_size = 32;
      *chain = "prebuilt";
      return Status::Ok();
    }
    KTUNE_ASSIGN_OR_RETURN(
        std::string ptx, targetAssembly(req, co, chain, Language::kPtx, ptxLlcArgv, llvmToPtx));
    KTUNE_ASSIGN_OR_RETURN(co->lowered_entry, pickKernel(req, ptxKernels(ptx)));
    KTUNE_RETURN_IF_ERROR(ptxToCubin(req, ptx, co));
    *chain += co->compiler;
    if (req.dumps & kDumpPtx) co->dumps["ptx"] = ptx;
    return Status::Ok();
  }

  static Status compileAmd(const CompileRequest& req, CodeObject* co, std::string* chain) {
    if (req.language == Language::kHsaco) {
      std::string metadata, isa;
      KTUNE_RETURN_IF_ERROR(
          checkHsaco(req, req.source, &metadata, (req.dumps & kDumpIsa) ? &isa : nullptr));
      KTUNE_ASSIGN_OR_RETURN(co->lowered_entry, pickKernel(req, amdKernels(metadata)));
      amdKernelResources(metadata, co->lowered_entry, &co->resources);
      co->binary = req.source;
      if (req.dumps & kDumpIsa) co->dumps["isa"] = isa;
      *chain = "prebuilt";
      return Status::Ok();
    }
    KTUNE_ASSIGN_OR_RETURN(
        std::string isa,
        targetAssembly(req, co, chain, Language::kAmdgcnAsm, amdgcnLlcArgv, llvmToAmdgcn));
    KTUNE_ASSIGN_OR_RETURN(co->lowered_entry, pickKernel(req, amdKernels(isa)));
    KTUNE_RETURN_IF_ERROR(amdgcnToHsaco(req, isa, co));
    amdKernelResources(isa, co->lowered_entry, &co->resources);
    *chain += "llvm-mc+ld.lld";
    if (req.dumps & kDumpIsa) co->dumps["isa"] = isa;
    return Status::Ok();
  }

  static std::string view(const std::string& ir) {
    auto v = importLlvmIr("", ir, 300000);
    return v.ok() ? *v : std::string(kMlirViewUnavailable) + v.status().message();
  }

  // The dumps a language has no text for say so, as the C++ compilers do.
  static void fillOtherDumps(const CompileRequest& req, CodeObject* co) {
    const bool nv = isNvidiaArch(req.arch);
    const std::string lang = languageName(req.language);
    auto absent = [&](Dump d, const std::string& why) {
      if ((req.dumps & d) && !co->dumps.count(dumpName(d))) co->dumps[dumpName(d)] = why;
    };
    absent(kDumpPtx, nv ? "no PTX: the input was a " + lang : "PTX does not apply to AMD targets");
    absent(kDumpIsa, nv ? "AMDGCN ISA does not apply to NVIDIA targets"
                        : "no AMDGCN assembly for a " + lang + " input");
    absent(kDumpLlvm, "no LLVM IR: the input was a " + lang);
    absent(kDumpMlir, std::string(kMlirViewUnavailable) + "the input was a " + lang +
                          " (MLIR views exist for MLIR, LLVM IR and C++ inputs)");
    if ((req.dumps & kDumpSass) && nv) co->dumps["sass"] = sassOf(co->binary);
    absent(kDumpSass, "SASS does not apply to AMD targets");
  }
};

}  // namespace

Expected<std::unique_ptr<Compiler>> openIrCompiler() {
  return std::unique_ptr<Compiler>(new IrCompiler());
}

}  // namespace ktune
