// ktune simulated compiler — "compiles" a request into a CodeObject of format "sim" for the
// simulated backend (runtime/sim/sim_backend.h). The binary is a deterministic text recording the
// entry, arch, defines and resource usage, so identical requests give identical bytes (the store
// and the tuner dedup them). A test hook decides, per request, a compile error (with a log),
// the resource usage (registers, shared, spills), a delay (to observe parallel compiles), and
// which defines do not reach the binary (to make two configs compile to identical code).
// Thread safety: compile() may be called from several threads at once (the hook must be too).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "compiler/compiler.h"

namespace ktune {

struct SimCompileDecision {
  Status status;            // non-OK: compile() returns it (use CompileError with a log)
  ResourceUsage resources;  // reported in the CodeObject and through Backend::attributes
  double delay_ms = 0;      // sleep this long inside compile() (wall clock)
  std::vector<std::string> ignore_defines;  // defines left out of the binary
};

class SimCompiler : public Compiler {
 public:
  using Hook = std::function<SimCompileDecision(const CompileRequest&)>;
  explicit SimCompiler(Hook hook = nullptr, std::string version = "1");

  std::string name() const override { return "sim"; }
  std::string version() const override { return version_; }
  bool supportsArch(const std::string& arch) const override { return !arch.empty(); }
  Expected<CodeObject> compile(const CompileRequest& req) override;

  // Calls of compile() so far (failed ones included).
  int compileCount() const { return count_.load(); }
  // Most compile() calls that were running at the same time.
  int maxConcurrent() const { return max_concurrent_.load(); }
  void resetCounters() { count_ = 0; max_concurrent_ = 0; }

 private:
  Hook hook_;
  std::string version_;
  std::atomic<int> count_{0}, running_{0}, max_concurrent_{0};
};

// Binary layout (text, one field per line), parsed by runtime/sim/sim_backend.cc:
//   ktune-sim-code-object 1 / entry=<e> / arch=<a> / [module=<sha256 of a non-C++ module>] /
//   define <K>=<V> ... / registers=<n> /
//   shared=<bytes> / local=<bytes> / max_threads=<n>

}  // namespace ktune
