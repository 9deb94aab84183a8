// The vendor library behind the GEMM op's vendor candidates and trusted reference: cuBLASLt on
// NVIDIA, hipBLASLt on AMD. Both go through one interface, so the op treats them alike: the
// heuristic's algorithms are candidates ("cublaslt:idx=N:..." / "hipblaslt:idx=N:..."), and the
// heuristic's first choice (idx=0) is the vendor default and the verification reference.
// Thread safety: candidates() and run() may be called from several threads (the libraries'
// handles are thread-safe; the workspace is only used on the tuner's stream).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "autotune/family.h"
#include "ops/gemm.h"

namespace ktune {

class GemmVendor {
 public:
  virtual ~GemmVendor() = default;
  // "cublaslt" or "hipblaslt": the candidates' source and their ids' prefix.
  virtual const char* source() const = 0;
  virtual std::string version() const = 0;
  // Up to max_algos algorithms for `s`, best first; empty when the library cannot express the
  // shape (activation epilogues) or proposes nothing.
  virtual std::vector<VendorCandidate> candidates(const gemm::GemmShape& s, int max_algos) const = 0;
  // Runs the algorithm `id` (one of candidates()' ids, possibly from an earlier process) or, with
  // an empty id, the heuristic's first choice; asynchronous on `stream`. kInvalidArgument for a
  // malformed id; the library's errors otherwise.
  virtual Status run(const std::string& id, const gemm::GemmShape& s, const GemmBuffers& buf,
                     StreamHandle stream) const = 0;
  // Starts the library's first heuristic query (tens of ms of one-time set-up inside the
  // library) on a thread bound to device `ordinal`, so that it overlaps what the caller does next
  // (a tuning run's random inputs); candidates() and run() wait for it. Optional.
  virtual void startWarmUp(int ordinal) { (void)ordinal; }
};

// Opens the vendor library of `backend` ("cuda": cuBLASLt, "hip": hipBLASLt; extra paths are
// tried after the default names) and allocates its workspace on `be` (freed with the object; `be`
// must outlive it). `multiprocessors`: the device's (DeviceInfo), which the wide-tile rule's grid
// condition reads (0: the rule never picks). kUnavailable when the library or a device for it is
// missing: the op then tunes JIT configs only.
Expected<std::unique_ptr<GemmVendor>> openGemmVendor(const std::string& backend, Backend& be,
                                                     int multiprocessors,
                                                     const std::vector<std::string>& paths);

}  // namespace ktune
