// hipBLASLt, AMD's counterpart of cuBLASLt, as vendor candidates for ktune's GEMM on AMD: the
// heuristic's algorithms become tuning candidates (id "hipblaslt:idx=N:algo=<48 hex digits>"), and
// its first choice (idx=0) is the vendor default a tuned winner is compared with.
//
// The library is opened with dlopen at run time (libhipblaslt.so.0, .so.1, .so, then any paths the
// caller gives), so ktune builds and runs without ROCm; when it is absent open() says so plainly
// ("hipBLASLt not found" with every name tried) and AMD tuning compares JIT configs only. The few
// types, enum values and prototypes used are declared in hipblaslt.cc from hipBLASLt's public C
// header (the hipDataType / hipblasComputeType_t values of ROCm 6 and later); no ROCm header is
// needed to build. Problems are the row-major cublaslt::LtProblem, mapped to the library's
// column-major view exactly as for cuBLASLt (cublaslt::columnMajorView).
//
// Not run on AMD hardware: CI checks every call against a fake libhipblaslt
// (tests/unit/vendor_hipblaslt_test.cc), which records what it is given.
//
// Thread safety: one HipBlasLt may be used from several threads (the handle is thread-safe per
// hipBLASLt's contract; descriptors are per call).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/vendor/cublaslt.h"
#include "base/dylib.h"
#include "base/status.h"
#include "runtime/backend.h"

namespace ktune::vendor {

// One algorithm of the heuristic: hipblasLtMatmulAlgo_t's 16 opaque bytes and its
// max_workspace_bytes re-create it with the same library version.
struct HipLtAlgo {
  int index = 0;  // rank in the heuristic's list (0 = the library's first choice)
  std::array<uint8_t, 16> data{};
  uint64_t max_workspace_bytes = 0;
  int64_t workspace_bytes = 0;  // what the heuristic says this algorithm needs
  // "hipblaslt:idx=3:algo=<32 hex digits of data><16 of max_workspace_bytes>".
  std::string id() const;
  // Inverse of id(); kInvalidArgument naming the defect otherwise.
  static Expected<HipLtAlgo> parse(const std::string& id);
};

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

  // Up to max_algos algorithms the heuristic proposes for `p` within max_workspace bytes, best
  // first. kUnsupported when it proposes none; kInvalidArgument for a bad problem; kLaunchError
  // with the hipBLAS status when a call fails.
  Expected<std::vector<HipLtAlgo>> heuristics(const cublaslt::LtProblem& p, int max_algos,
                                              int64_t max_workspace) const;

  // Runs `algo` (nullptr: the heuristic's first choice) on `stream` (a hipStream_t). The
  // workspace must hold algo->workspace_bytes. Asynchronous. kInvalidArgument for null buffers or
  // a short workspace; kLaunchError with the hipBLAS status on failure.
  Status run(const cublaslt::LtProblem& p, const HipLtAlgo* algo, DevicePtr a, DevicePtr b,
             DevicePtr c, DevicePtr bias, DevicePtr workspace, int64_t workspace_bytes,
             StreamHandle stream = {}) const;

  struct Api;  // the dlopen'ed entry points (hipblaslt.cc)

 private:
  HipBlasLt() = default;
  std::unique_ptr<Api> api_;
  DynLib lib_;
  void* handle_ = nullptr;
};

}  // namespace ktune::vendor
