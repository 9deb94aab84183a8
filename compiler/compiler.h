// ktune compiler — kernel source to code object, with dumps and resource usage.
//
// Implementations: NVRTC (cubin for sm_80/sm_90/sm_90a, PTX on request), hiprtc + comgr (AMD code
// objects for the archs the installed ROCm knows, e.g. gfx90a), the LLVM path (clang-19's
// AMDGPU backend, for gfx942 and other archs Debian's ROCm 5.2 lacks), and the IR front door
// (compiler/ir/): modules a compiler generated, as PTX, LLVM IR, AMDGCN assembly or MLIR, and
// prebuilt cubin/hsaco. None needs a GPU.
// compile() is thread-safe: the tuner compiles many configs in parallel.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace ktune {

// What to keep besides the binary. Stored with the code object and shown by the CLI.
enum Dump : unsigned {
  kDumpNone = 0,
  kDumpSource = 1u << 0,  // the instantiated source as compiled (prelude + defines)
  kDumpPtx = 1u << 1,     // NVIDIA
  kDumpSass = 1u << 2,    // NVIDIA, via nvdisasm/cuobjdump when installed
  kDumpLlvm = 1u << 3,    // LLVM IR (NVRTC -dlto / hiprtc / clang -emit-llvm)
  kDumpIsa = 1u << 4,     // AMDGCN assembly
  // C++ sources: the LLVM-dialect view (mlir-translate --import-llvm of the LLVM IR); a failed
  // view starts with kMlirViewUnavailable. MLIR inputs: the module after each lowering stage.
  kDumpMlir = 1u << 5,
  kDumpAll = 0x3f,
};
// "source", "ptx", "sass", "llvm", "isa", "mlir" <-> Dump bits.
Expected<unsigned> parseDumpName(const std::string& name);
const char* dumpName(Dump d);

// The first words of an "mlir" dump that holds the reason instead of a view (the CLI exits
// non-zero on it when the view was asked for).
inline constexpr const char kMlirViewUnavailable[] = "MLIR view unavailable: ";

// What CompileRequest::source holds.
enum class Language {
  kCpp,        // CUDA C++ (sm_*) / HIP C++ (gfx*): ktune's prelude, -D defines, name expressions
  kPtx,        // PTX text -> cubin (nvJitLink, or ptxas)
  kLlvmIr,     // LLVM IR text for NVPTX (-> PTX with llc) or AMDGPU (-> code object), by arch
  kAmdgcnAsm,  // AMDGCN assembly (llvm-mc -> ld.lld)
  kMlir,       // MLIR with a gpu.module, lowered to NVVM / ROCDL, then as LLVM IR
  kCubin,      // prebuilt NVIDIA code object: checked (ELF, machine, SM) and kept as it is
  kHsaco,      // prebuilt AMD code object: checked (ELF, machine, gfx target) and kept as it is
};
// "cpp", "ptx", "llvm", "amdgcn", "mlir", "cubin", "hsaco" (parseLanguage also takes "cuda",
// "hip", "ll", "llvm-nvptx", "llvm-amdgpu", "asm", "s"; the LLVM target follows the arch).
const char* languageName(Language l);
Expected<Language> parseLanguage(const std::string& name);
// By extension: .cu .cuh .hip .cpp .cc -> cpp, .ptx, .ll, .s .asm, .mlir, .cubin, .hsaco .co.
// kInvalidArgument naming the extensions known when none matches.
Expected<Language> languageFromPath(const std::string& path);

// How a compiler (an embedder generating one module per config) hands ktune a kernel:
//
//   CompileRequest req;
//   req.language = Language::kMlir;      // or kPtx, kLlvmIr, kAmdgcnAsm, kCubin, kHsaco
//   req.source = module_text;            // the module (bytes, for cubin/hsaco)
//   req.entry = "rmsnorm";               // kernel symbol; empty: the module's only kernel
//   req.arch = "gfx942";                 // or "sm_90a"
//   auto compiler = compilerFor(req);    // the IR compiler for every language but kCpp
//   auto obj = store->getOrCompile(**compiler, req);   // cached under the module's content key
//
// defines do not apply to the IR languages (substitute values into the text per config);
// options are passed to the first tool of the pipeline (llc, llvm-mc, mlir-opt, ptxas).
// Then the CodeObject is like any other: resources, dumps, analysis, loading, benchmarking.
struct CompileRequest {
  std::string source;       // kernel source (prelude is added by the compiler) or module
  std::string source_name;  // for diagnostics, e.g. "rmsnorm.cu"
  // Kernel to keep. A C++ name expression for template instances ("rmsnorm<__nv_bfloat16,8>")
  // or an extern "C" name. The compiler resolves the mangled (lowered) name.
  std::string entry;
  std::vector<std::pair<std::string, std::string>> defines;  // -DKEY=VAL
  std::string arch;                  // "sm_90a", "gfx90a", "gfx942"
  std::vector<std::string> options;  // extra compiler flags
  unsigned dumps = kDumpNone;
  // What `source` holds; last, so aggregate initialisation written for C++ sources still works.
  Language language = Language::kCpp;
};

// What the compiler reports about one kernel. Fields that a vendor does not have stay 0.
struct ResourceUsage {
  // NVIDIA (ptxas report)
  int registers = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t stack_bytes = 0;
  // AMD (code-object metadata)
  int vgpr = 0;
  int agpr = 0;
  int sgpr = 0;
  int vgpr_spill = 0;
  int sgpr_spill = 0;
  int64_t scratch_bytes = 0;  // private_segment_fixed_size
  // both
  int64_t shared_bytes = 0;  // static shared / LDS (group_segment_fixed_size)
  int wave_size = 0;
  int max_threads_per_block = 0;  // from launch bounds / metadata when known
  bool spills() const {
    return spill_store_bytes > 0 || spill_load_bytes > 0 || vgpr_spill > 0 || sgpr_spill > 0;
  }
};

struct CodeObject {
  std::string binary;  // cubin / hsaco bytes
  std::string format;  // "cubin", "hsaco", "sim"
  std::string arch;
  std::string entry;          // the name expression asked for
  std::string lowered_entry;  // mangled symbol to look up in the module
  ResourceUsage resources;
  std::map<std::string, std::string> dumps;  // dumpName -> text
  std::string compiler;          // "nvrtc", "hiprtc", "clang"
  std::string compiler_version;  // "13.0", "5.2.21153", "19.1.7"
  std::vector<std::string> options;  // exact options used
  std::string log;                   // compiler log (warnings, ptxas -v)
  double compile_ms = 0;
  // Set only for an object taken from a shared cache (remote/cache.h) after its fleet MAC
  // verified: HMAC-SHA256 under the fleet key over its store key and binary, kept in the store's
  // metadata so `ktune cache verify` can re-authenticate it. Empty: compiled on this machine.
  std::string shared_mac;
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  virtual std::string name() const = 0;
  virtual std::string version() const = 0;
  // True if this compiler can target `arch`.
  virtual bool supportsArch(const std::string& arch) const = 0;
  // kCompileError carries the full log and the options used; kUnsupported for an unknown arch.
  virtual Expected<CodeObject> compile(const CompileRequest& req) = 0;
};

// Factories; kUnavailable with the reason (library not found) when missing.
Expected<std::unique_ptr<Compiler>> openNvrtcCompiler();
Expected<std::unique_ptr<Compiler>> openHiprtcCompiler();
Expected<std::unique_ptr<Compiler>> openLlvmAmdgpuCompiler(const std::string& clang = "");
// Picks the compiler for an arch: sm_* -> NVRTC; gfx* -> hiprtc when it knows the arch, else LLVM.
// clang: the clang binary for the LLVM path (Options::clang, KTUNE_CLANG); "" = the default search.
Expected<std::unique_ptr<Compiler>> compilerForArch(const std::string& arch,
                                                    const std::string& clang = "");
// The IR front door (compiler/ir/ir_compiler.h): every language but kCpp, both vendors. Its tools
// (llc-19, llvm-mc-19, ld.lld-19, mlir-opt-19, mlir-translate-19, llvm-readelf-19, nvJitLink or
// ptxas) are looked for once; a language whose tool is missing fails with kUnavailable naming
// the package. version() lists the toolchain's versions, so they are part of store keys.
Expected<std::unique_ptr<Compiler>> openIrCompiler();
// compilerForArch(req.arch, clang) for kCpp, openIrCompiler() for the rest.
Expected<std::unique_ptr<Compiler>> compilerFor(const CompileRequest& req,
                                                const std::string& clang = "");
// A request for the module in `path` (a regular file of at most kMaxModuleFileBytes): language
// from `language` when not empty, else from the extension; entry and arch as given.
inline constexpr uint64_t kMaxModuleFileBytes = 64ull << 20;
Expected<CompileRequest> requestFromFile(const std::string& path, const std::string& arch,
                                         const std::string& entry, const std::string& language);

}  // namespace ktune
