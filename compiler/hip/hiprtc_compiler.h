// hiprtc compiler: ktune source -> AMD code object (hsaco) for the archs the installed ROCm knows
// (Debian 12's ROCm 5.2: gfx90a, gfx908, gfx906, gfx1030, ... but not gfx942). comgr gives the
// disassembly and the metadata (VGPR/AGPR/SGPR, LDS, scratch). No GPU needed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/compiler.h"

namespace ktune {

struct HiprtcConfig {
  // Libraries tried in order for hiprtc. Empty: libhiprtc.so.6, libhiprtc.so, libamdhip64.so.6,
  // libamdhip64.so.5, libamdhip64.so (ROCm 5 ships hiprtc inside libamdhip64).
  std::vector<std::string> library_candidates;
  // clang for the LLVM IR / MLIR views (hiprtc 5.x cannot emit IR); see ClangConfig::clang.
  std::string clang;
};

// Opens hiprtc and comgr. kUnavailable with every library tried when either is missing. The
// returned compiler serializes calls into hiprtc (ROCm 5.x's hiprtc is not documented as
// thread-safe); compile() may be called from any thread.
Expected<std::unique_ptr<Compiler>> openHiprtcCompiler(const HiprtcConfig& config);

// If `blob` is a clang offload bundle ("__CLANG_OFFLOAD_BUNDLE__"), the entry for an amdgcn
// target whose id contains `arch`; otherwise `blob` unchanged. kCorrupt if the bundle is malformed
// or has no such entry.
Expected<std::string> unbundleCodeObject(const std::string& blob, const std::string& arch);

}  // namespace ktune
