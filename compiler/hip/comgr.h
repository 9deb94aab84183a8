// AMD code-object manager (libamd_comgr, opened with dlopen): disassembly, metadata and the list
// of ISAs the installed ROCm knows. Works without a GPU.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/analysis/amd_metadata.h"

namespace ktune {

// One lock for every call into comgr AND into hiprtc: ROCm's hiprtc compiles through comgr
// (which parses LLVM's process-global command-line options), so a hiprtc compile on one thread
// and a comgr disassembly or metadata read on another interfere; the disassembly then comes back
// wrong or partial. That is the cause of the once-seen flake "no 128-bit global load" in
// AnalysisSpaces.RowwiseConfigsForGfx90a (the test compiles on 2-4 threads).
std::mutex& amdToolchainMutex();

class Comgr {
 public:
  // Opens libamd_comgr.so.2 (or .so.3, .so); kUnavailable listing what was tried.
  static Expected<std::shared_ptr<Comgr>> open();
  ~Comgr();
  // "2.4".
  std::string version() const;
  // Arch names comgr can target, e.g. {"gfx900", ..., "gfx90a", "gfx1030"} (feature suffixes
  // dropped).
  std::vector<std::string> isaNames() const;
  // AMDGCN assembly of an executable code object (AMD_COMGR_ACTION_DISASSEMBLE_EXECUTABLE_TO_
  // SOURCE). The ISA name is read from the code object itself.
  Expected<std::string> disassemble(const std::string& hsaco) const;
  // The "amdhsa.kernels" metadata of a code object.
  Expected<std::vector<AmdKernelMeta>> kernels(const std::string& hsaco) const;
  // The code object's ISA name, e.g. "amdgcn-amd-amdhsa--gfx90a".
  Expected<std::string> isaName(const std::string& hsaco) const;

  struct Api;

 private:
  Comgr() = default;
  std::unique_ptr<Api> api_;
};

}  // namespace ktune
