// hipBLASLt, AMD's counterpart of cuBLASLt, as the vendor reference for AMD GEMM tuning.
//
// The library is opened with dlopen at run time (libhipblaslt.so.0, .so.1, .so, then any paths the
// caller gives), so ktune builds and runs without ROCm; when it is absent open() says so plainly
// ("hipBLASLt not found" with every name tried) and AMD tuning compares JIT configs only.
//
// Status: this wrapper opens the library, checks the entry points ktune's GEMM op needs
// (handle, matmul descriptors and layouts, heuristic, matmul) and creates a handle. Running its
// heuristic algorithms as tuning candidates, like the cuBLASLt ones on NVIDIA, is not wired in yet:
// no machine here has an AMD GPU or hipBLASLt to check the enum values of the installed version.
//
// Thread safety: one HipBlasLt may be shared; its handle is thread-safe per hipBLASLt's contract.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/dylib.h"
#include "base/status.h"

namespace ktune::vendor {

class HipBlasLt {
 public:
  ~HipBlasLt();
  HipBlasLt(const HipBlasLt&) = delete;
  HipBlasLt& operator=(const HipBlasLt&) = delete;

  // kUnavailable "hipBLASLt not found: ..." (listing every name tried) when the library is
  // missing; kUnavailable naming the symbol when it lacks an entry point; kUnavailable with the
  // hipBLAS status when no handle can be created (no AMD GPU).
  static Expected<std::unique_ptr<HipBlasLt>> open(const std::vector<std::string>& extra_paths = {});
  // "hipblaslt (<path>)".
  std::string version() const;

  // The library names open() tries before the caller's paths.
  static std::vector<std::string> libraryNames();

 private:
  HipBlasLt() = default;
  struct Api;
  std::unique_ptr<Api> api_;
  DynLib lib_;
  void* handle_ = nullptr;
};

}  // namespace ktune::vendor
