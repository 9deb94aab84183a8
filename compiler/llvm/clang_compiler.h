// The LLVM path for AMD GPUs: clang-19 (a subprocess) compiles a ktune kernel for any gfx arch
// its AMDGPU backend knows (gfx942 included, which Debian's ROCm 5.2 cannot target), with
// -nogpulib -nogpuinc, so no ROCm installation is needed. Also the LLVM IR / MLIR views that
// hiprtc cannot give.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/compiler_util.h"

namespace ktune {

struct ClangConfig {
  // clang executable (path or name on PATH). Empty: KTUNE_DEFAULT_CLANG (found by CMake), then
  // clang-19, then clang on PATH. Options::clang (KTUNE_CLANG) is the usual source.
  std::string clang;
  // mlir-translate for the MLIR view; empty: mlir-translate-19, then mlir-translate on PATH and
  // next to clang.
  std::string mlir_translate;
  int timeout_ms = 300000;  // per subprocess
};

// Checks that clang runs and has the AMDGPU backend. kUnavailable naming what was tried.
// The returned compiler is thread-safe (each compile has its own temp dir).
Expected<std::unique_ptr<Compiler>> openLlvmAmdgpuCompiler(const ClangConfig& config);

namespace clang_detail {
// Flags that compile one ktune source for `arch` on the device side only, without ROCm; for an
// sm_* arch, cudaDeviceFlags (clang's CUDA mode: the LLVM IR and MLIR views NVRTC cannot give).
std::vector<std::string> deviceFlags(const std::string& arch, const std::string& include_dir);
// clang -x cuda for `arch` against the CUDA toolkit NVRTC uses (its headers, libdevice).
std::vector<std::string> cudaDeviceFlags(const std::string& arch, const std::string& include_dir);
// Empty stand-ins, in the include dir, for headers clang's CUDA wrapper includes but newer
// toolkits dropped (texture_fetch_functions.h is gone from CUDA 13).
Status writeCudaShims(const compiler_detail::TempDir& dir);
// LLVM IR (text) of req through `clang`: the view hiprtc cannot give. Fails with kCompileError.
Expected<std::string> emitLlvm(const std::string& clang, const CompileRequest& req, int timeout_ms);
// MLIR LLVM-dialect view of LLVM IR text via mlir-translate --import-llvm; when the tool is
// missing, a sentence saying so (not an error: it is an optional view).
std::string mlirView(const std::string& mlir_translate, const std::string& llvm_ir, int timeout_ms);
// mlir-translate-19 / mlir-translate on PATH, or next to `clang`; "" when absent.
std::string findMlirTranslate(const std::string& clang);
// Resolves the clang to use (see ClangConfig::clang); "" when none is found.
std::string findClang(const std::string& requested);
}  // namespace clang_detail

}  // namespace ktune
