// What the GEMM template tests share (gemm_templates_test, gemm_decode_test, gemm_host_cache_test
// and their parts): a nominal sm_90a device, the mma config shorthand, and compiling a list of
// (kind, config, shape) jobs with NVRTC for sm_90a on two threads with a check of each PTX.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "compiler/compiler.h"
#include "templates/gemm.h"

namespace ktune::gemm::testutil {

// An sm_90a device as the launch rules see it (no GPU needed).
inline DeviceInfo sm90aDevice() {
  DeviceInfo d;
  d.vendor = Vendor::kNvidia;
  d.name = "test sm_90a device";
  d.arch = "sm_90a";
  d.shared_per_block = 48 * 1024;
  d.shared_per_block_optin = 227 * 1024;
  d.multiprocessors = 132;
  return d;
}

inline Config mmaConfig(int64_t bm, int64_t bn, int64_t bk, int64_t wm, int64_t wn, int64_t st,
                        int64_t split = 1) {
  return Config{{"BLOCK_M", bm}, {"BLOCK_N", bn},     {"BLOCK_K", bk},
                {"WARPS_M", wm}, {"WARPS_N", wn},     {"NUM_STAGES", st},
                {"GROUP_M", int64_t{8}}, {"SPLIT_K", split}, {"MIN_BLOCKS", int64_t{0}}};
}

// KTUNE_TEST_PTX_DIR=DIR: every compiled job's PTX is also written to DIR, one file per (kind,
// config, problem), so a change meant to leave the generated code alone (moving a kernel's
// primitives between files) can be checked by diffing two such folders.
inline void keepPtx(KernelKind k, const Config& c, const GemmShape& s, const std::string& ptx) {
  const char* dir = std::getenv("KTUNE_TEST_PTX_DIR");
  if (!dir || !*dir) return;
  std::string name = std::string(kernelKindName(k)) + "_" + c.toString() + "_" + shapeKey(s);
  for (char& ch : name)
    if (ch == '/' || ch == ' ' || ch == ':' || ch == '>') ch = '_';
  std::ofstream(std::string(dir) + "/" + name + ".ptx") << ptx;
}

using CompileJob = std::tuple<KernelKind, Config, GemmShape>;
// Inspects a job's PTX: an empty string means fine, anything else is the reason it is not.
using PtxCheck = std::function<std::string(const Config&, const GemmShape&, const std::string&)>;

// Compiles every job for sm_90a on two threads (NVRTC takes seconds per config on CI's two
// cores) and returns one line per job that does not compile, spills (unless allow_spills: then
// the spill is printed as a note) or whose PTX `check` refuses.
inline std::vector<std::string> compileJobs(Compiler& cc, const std::vector<CompileJob>& jobs,
                                            const PtxCheck& check, bool allow_spills = false) {
  std::vector<std::string> failures(jobs.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t j; (j = next++) < jobs.size();) {
      const auto& [k, c, s] = jobs[j];
      CompileRequest req;
      req.source = std::string(kernelSource(k));
      req.source_name = sourceFile(k);
      req.entry = entryName(k);
      req.defines = defines(k, c, s);
      req.arch = "sm_90a";
      req.dumps = kDumpPtx;
      auto r = cc.compile(req);
      std::string why;
      if (!r.ok()) {
        why = r.status().toString().substr(0, 2000);
      } else if (r->resources.spills() && !allow_spills) {
        why = "spills: " + r->log;
      } else {
        if (r->resources.spills())
          std::printf("note: %s with %s spills %lld bytes\n", c.toString().c_str(),
                      shapeKey(s).c_str(), static_cast<long long>(r->resources.spill_store_bytes));
        keepPtx(k, c, s, r->dumps["ptx"]);
        why = check(c, s, r->dumps["ptx"]);
      }
      if (!why.empty()) failures[j] = c.toString() + ": " + why;
    }
  };
  std::thread t1(work), t2(work);
  t1.join();
  t2.join();
  std::vector<std::string> out;
  for (auto& f : failures)
    if (!f.empty()) out.push_back(f);
  return out;
}

}  // namespace ktune::gemm::testutil
