// What the isolation worker needs from the engine: rebuild a problem from its JSON and verify +
// time one candidate for it. The worker (autotune/isolation.h) serves requests through this
// interface, so it does not depend on the tuner; Engine implements it.
#pragma once

#include <memory>
#include <string>

#include "autotune/benchmarker.h"
#include "autotune/database.h"
#include "base/status.h"
#include "runtime/backend.h"

namespace ktune {

// One candidate for the worker.
struct WorkerCandidate {
  std::string config;  // Config::toString() or vendor id
  std::string source = "jit";
  std::string code_object_key;  // store key of the compiled binary (JIT candidates)
};

class CandidateBench {
 public:
  virtual ~CandidateBench() = default;
  // Builds a problem of a registered family from its args_json (make_problem). kNotFound for an
  // unknown family, kUnsupported without make_problem.
  virtual Expected<std::shared_ptr<void>> makeProblem(const std::string& family,
                                                      const std::string& args_json) = 0;
  // Verifies and benchmarks one candidate for `p` (from makeProblem) in this process, loading its
  // code object from the store (recompiling if the entry is gone). Every failure (unknown
  // family, bad config, fault, wrong result, slower than best_ms) is the returned result's status
  // and reason.
  // Readies what timing with `bench` needs once per process (the read flush kernel) before the
  // first candidate, whose deadline should not pay for it. No-op by default.
  virtual void prepareBench(const BenchOptions& bench) { (void)bench; }
  virtual CandidateResult benchmarkCandidate(const std::string& family, const void* p,
                                             const WorkerCandidate& c, const BenchOptions& bench,
                                             double best_ms, StreamHandle s = {}) = 0;
};

}  // namespace ktune
