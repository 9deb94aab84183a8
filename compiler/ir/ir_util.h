// Internal pieces of the IR front door (ir_compiler.cc): the toolchain, found once, and one
// function per pipeline step. Not part of the public API; everything here is thread-safe (each
// step runs its tools in its own temporary directory).
#pragma once

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/subprocess.h"
#include "compiler/compiler.h"
#include "compiler/compiler_util.h"

namespace ktune::ir_detail {

class NvJitLink;  // libnvJitLink, opened at run time (nvidia.cc)

// The tools the IR languages need. A path is "" when the tool was not found.
struct Toolchain {
  std::string llc, opt, llvm_mc, lld, llvm_link, readelf, objdump;  // llvm-19, lld-19
  std::string mlir_opt, mlir_translate;                         // mlir-19-tools
  std::string ptxas, libdevice;                                 // CUDA toolkit
  std::string amd_bitcode;  // dir with ocml.bc / ockl.bc (rocm-device-libs), "" when absent
  std::shared_ptr<NvJitLink> jitlink;                           // null when not found
  std::string llvm_version, ptxas_version, jitlink_version;
  std::string jitlink_missing;  // why libnvJitLink did not load
  // "pipeline 1; llvm 19.1.7; nvjitlink 13.0; ptxas 13.0.88": part of every store key of the IR
  // compiler.
  std::string versions() const;
};

// Looked up once per process (PATH, then the CUDA toolkit next to the NVRTC headers).
const Toolchain& toolchain();
// `path`, or kUnavailable "<tool> not found: install <package>" when it is empty.
Expected<std::string> need(const std::string& path, const std::string& tool,
                           const std::string& package);
// Runs a tool; kCompileError with its stderr and the command when it fails; kTimeout.
Expected<std::string> runTool(const std::vector<std::string>& argv, const std::string& input,
                              const CompileRequest& req);

// A tool started before its input exists, so that its start-up (loading libLLVM/libMLIR, tens of
// milliseconds per process) overlaps the step before it: argv's "{input}" is replaced by a FIFO
// the tool reads its input from; run() feeds it and returns the tool's stdout, as runTool does.
// One run per tool; destroying an unused tool ends its input (it exits).
class EarlyTool {
 public:
  static Expected<std::unique_ptr<EarlyTool>> start(std::vector<std::string> argv);
  ~EarlyTool();
  EarlyTool(const EarlyTool&) = delete;
  EarlyTool& operator=(const EarlyTool&) = delete;
  Expected<std::string> run(const std::string& input, const CompileRequest& req);

 private:
  EarlyTool() = default;
  bool exited() const;
  bool openInput();
  std::string fifo_;
  std::optional<compiler_detail::TempDir> dir_;
  int fd_ = -1;
  std::vector<std::string> argv_;
  std::future<Expected<ProcessResult>> result_;
};
// `argv` run on `input`: through `early` when it was started (for `argv`), else by runTool.
Expected<std::string> runToolOrEarly(EarlyTool* early, const std::vector<std::string>& argv,
                                     const std::string& input, const CompileRequest& req);

// opt -O3 (inlining, the mid-level pipeline clang runs on C++): after device libraries are
// linked in.
Expected<std::string> optimize(const CompileRequest& req, const std::string& ir);

bool isNvidiaArch(const std::string& arch);
bool isAmdArch(const std::string& arch);

// ---- NVIDIA (nvidia.cc) ----------------------------------------------------------------------
// LLVM IR -> PTX with llc -O3 -march=nvptx64 -mcpu=<arch>; when the module calls __nv_*
// functions, libdevice is linked first and opt -O3 inlines them ("llvm-link+opt+" appended to
// *chain). Without a library call llc -O3 alone: opt's mid-level passes add a process and, on
// MLIR's output, cost registers (casts folded into branches keep f32 copies of 16-bit data live).
Expected<std::string> llvmToPtx(const CompileRequest& req, const std::string& ir,
                                std::string* chain, EarlyTool* llc = nullptr);
// llc's command line for llvmToPtx (input "{input}" for an EarlyTool, "-" for stdin).
std::vector<std::string> ptxLlcArgv(const CompileRequest& req, const std::string& input);
// PTX -> cubin (nvJitLink, else ptxas), with the ptxas report in co->log and co->resources.
Status ptxToCubin(const CompileRequest& req, const std::string& ptx, CodeObject* co);
// Checks a prebuilt cubin (64-bit ELF, EM_CUDA, SM matches the arch); resources from .nv.info.
Status checkCubin(const CompileRequest& req, const std::string& cubin);
// Kernel names: ".entry NAME" of a PTX module / ".text.NAME" sections of a cubin.
std::vector<std::string> ptxKernels(const std::string& ptx);
std::vector<std::string> cubinKernels(const std::string& cubin);
// SASS of a cubin via nvdisasm/cuobjdump (a sentence when neither is installed).
std::string sassOf(const std::string& cubin);

// ---- AMD (amdgpu.cc) -------------------------------------------------------------------------
// LLVM IR -> AMDGCN assembly with llc (the ISA view and its metadata block); ocml/ockl linked
// first (rocm-device-libs) and inlined by opt -O3 when the module calls them, as MLIR's ROCDL
// lowering of math ops and gpu.block_dim does ("llvm-link+opt+" appended to *chain).
Expected<std::string> llvmToAmdgcn(const CompileRequest& req, const std::string& ir,
                                   std::string* chain, EarlyTool* llc = nullptr);
// llc's command line for llvmToAmdgcn (input as for ptxLlcArgv).
std::vector<std::string> amdgcnLlcArgv(const CompileRequest& req, const std::string& input);
// Assembly -> hsaco with llvm-mc and ld.lld -shared; resources from the metadata block.
Status amdgcnToHsaco(const CompileRequest& req, const std::string& isa, CodeObject* co);
// Checks a prebuilt hsaco (ELF, EM_AMDGPU, amdhsa.target matches the arch); metadata as YAML
// (llvm-readelf --notes) in *metadata, disassembly in *isa when isa != nullptr.
Status checkHsaco(const CompileRequest& req, const std::string& hsaco, std::string* metadata,
                  std::string* isa);
// Kernel names and resources from an amdhsa metadata text (assembly or readelf --notes).
std::vector<std::string> amdKernels(const std::string& metadata);
void amdKernelResources(const std::string& metadata, const std::string& kernel, ResourceUsage* r);

// ---- MLIR (mlir.cc) --------------------------------------------------------------------------
struct MlirLowering {
  std::string llvm_ir;  // the gpu.module as LLVM IR
  std::string stages;   // the module after each stage (only when MLIR dumps were asked for)
};
// gpu.module -> NVVM (sm_*) or ROCDL (gfx*) through mlir-opt, then mlir-translate --mlir-to-llvmir.
Expected<MlirLowering> lowerMlir(const CompileRequest& req);
// LLVM IR (any target) -> MLIR LLVM dialect with mlir-translate --import-llvm, after rewriting
// what mlir-translate 19 cannot import (target intrinsics it lacks, inline asm) into calls to
// declared functions named after them; a header comment lists the rewrites.
// `mlir_translate` empty: the toolchain's.
Expected<std::string> importLlvmIr(const std::string& mlir_translate, const std::string& llvm_ir,
                                   int timeout_ms);

}  // namespace ktune::ir_detail
