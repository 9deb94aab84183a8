#include "compiler/sim/sim_compiler.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/sha256.h"
#include "compiler/compiler_util.h"

namespace ktune {

SimCompiler::SimCompiler(Hook hook, std::string version)
    : hook_(std::move(hook)), version_(std::move(version)) {}

Expected<CodeObject> SimCompiler::compile(const CompileRequest& req) {
  ++count_;
  int now = ++running_;
  int prev = max_concurrent_.load();
  while (now > prev && !max_concurrent_.compare_exchange_weak(prev, now)) {
  }
  struct Leave {
    std::atomic<int>& r;
    ~Leave() { --r; }
  } leave{running_};

  if (req.entry.empty()) return Status::InvalidArgument("sim compiler: empty entry name");
  if (req.arch.empty()) return Status::Unsupported("sim compiler: empty arch");
  SimCompileDecision d;
  if (hook_) d = hook_(req);
  if (d.delay_ms > 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(d.delay_ms * 1e3)));
  }
  if (!d.status.ok()) return d.status;

  // Deterministic bytes: same request (minus ignored defines) -> same binary.
  auto defs = req.defines;
  std::sort(defs.begin(), defs.end());
  std::string bin = "ktune-sim-code-object 1\nentry=" + req.entry + "\narch=" + req.arch + "\n";
  // A generated module per config (no defines) still gives one binary per distinct module.
  if (req.language != Language::kCpp) bin += "module=" + sha256Hex(req.source) + "\n";
  for (const auto& [k, v] : defs) {
    if (std::find(d.ignore_defines.begin(), d.ignore_defines.end(), k) != d.ignore_defines.end())
      continue;
    bin += "define " + k + "=" + v + "\n";
  }
  const ResourceUsage& r = d.resources;
  bin += "registers=" + std::to_string(r.registers ? r.registers : r.vgpr) + "\n";
  bin += "shared=" + std::to_string(r.shared_bytes) + "\n";
  bin += "local=" + std::to_string(r.stack_bytes + r.scratch_bytes) + "\n";
  bin += "max_threads=" + std::to_string(r.max_threads_per_block) + "\n";

  CodeObject co = compiler_detail::codeObjectFor(req, "sim", name(), version_);
  co.binary = std::move(bin);
  co.lowered_entry = req.entry;
  co.resources = r;
  for (const auto& [k, v] : req.defines) co.options.push_back("-D" + k + "=" + v);
  co.options.insert(co.options.end(), req.options.begin(), req.options.end());
  if (req.dumps & kDumpSource) {
    std::string src;
    for (const auto& [k, v] : req.defines) src += "#define " + k + " " + v + "\n";
    co.dumps["source"] = src + req.source;
  }
  co.compile_ms = d.delay_ms;
  return co;
}

}  // namespace ktune
