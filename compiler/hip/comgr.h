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

// One lock for every use of comgr in the process: Comgr's calls and hiprtc's compiles (hiprtc
// runs its compile through comgr, whose LLVM option state is process-global). A disassembly
// running beside a hiprtc compile was the suspected cause of a gfx90a config that intermittently
// compiled without its 128-bit loads in a threaded sweep.
std::mutex& comgrMutex();

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
