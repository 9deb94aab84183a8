// ktune compiler — kernel source to code object, with dumps and resource usage.
//
// Implementations: NVRTC (cubin for sm_80/sm_90/sm_90a, PTX on request), hiprtc + comgr (AMD code
// objects for the archs the installed ROCm knows, e.g. gfx90a), and the LLVM path (clang-19's
// AMDGPU backend, for gfx942 and other archs Debian's ROCm 5.2 lacks). None needs a GPU.
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
  kDumpMlir = 1u << 5,    // MLIR LLVM-dialect view (via mlir-translate --import-llvm)
  kDumpAll = 0x3f,
};
// "source", "ptx", "sass", "llvm", "isa", "mlir" <-> Dump bits.
Expected<unsigned> parseDumpName(const std::string& name);
const char* dumpName(Dump d);

struct CompileRequest {
  std::string source;       // kernel source (prelude is added by the compiler)
  std::string source_name;  // for diagnostics, e.g. "rmsnorm.cu"
  // Kernel to keep. A C++ name expression for template instances ("rmsnorm<__nv_bfloat16,8>")
  // or an extern "C" name. The compiler resolves the mangled (lowered) name.
  std::string entry;
  std::vector<std::pair<std::string, std::string>> defines;  // -DKEY=VAL
  std::string arch;                  // "sm_90a", "gfx90a", "gfx942"
  std::vector<std::string> options;  // extra compiler flags
  unsigned dumps = kDumpNone;
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

}  // namespace ktune
