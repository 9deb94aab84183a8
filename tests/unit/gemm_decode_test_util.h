// What gemm_decode_test.cc and its parts (gemm_decode_compile_part.cc, gemm_decode_cluster_part.cc,
// gemm_decode_cw_part.cc)
// share (one program): a nominal sm_90a device, the base and wgmma-body decode configs, the NT bf16
// shape shorthand and the NVRTC compile check.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/compiler.h"
#include "templates/gemm.h"
#include "tests/support/tools.h"
#include "tests/unit/gemm_test_util.h"

namespace ktune::gemm::decode_test {

using testutil::sm90aDevice;

inline Config decodeConfig(int64_t mt, int64_t grid = 2) {
  return Config{{"DC_WG", int64_t{0}},    {"DC_WARPS", int64_t{8}}, {"DC_NT", int64_t{1}}, {"DC_MT", mt},
                {"DC_U", int64_t{4}},     {"DC_DEPTH", int64_t{2}}, {"DC_PF", int64_t{1}},
                {"DC_XR", int64_t{1}},    {"DC_GRID", grid}};
}

inline GemmShape nt(int64_t m, int64_t n, int64_t k) {
  return denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, m, n, k);
}

// The wgmma body (DC_WG = 1) with its knobs.
inline Config wgConfig(int64_t mt, int64_t warps, int64_t nt_, int64_t u, int64_t depth, int64_t grid,
                int64_t pf = 1) {
  return Config{{"DC_WG", int64_t{1}}, {"DC_WARPS", warps}, {"DC_NT", nt_},
                {"DC_MT", mt},         {"DC_U", u},         {"DC_DEPTH", depth},
                {"DC_PF", pf},         {"DC_XR", int64_t{0}}, {"DC_GRID", grid}};
}

// The TMA-fed body (DC_WG = 2) with its knobs and DC_XR.
inline Config tmaConfig(int64_t mt, int64_t warps, int64_t nt_, int64_t u, int64_t depth, int64_t grid,
                        int64_t xr) {
  Config c = wgConfig(mt, warps, nt_, u, depth, grid);
  c.set("DC_WG", int64_t{2});
  c.set("DC_XR", xr);
  return c;
}

// Compiles each (config, shape) of the decode kind for sm_90a (testutil::compileJobs): a failure
// for every job that does not compile, spills, or whose PTX `check` refuses.
inline void compileEach(Compiler& cc, const std::vector<std::pair<Config, GemmShape>>& jobs,
                 const std::function<std::string(const Config&, const std::string&)>& check) {
  std::vector<testutil::CompileJob> all;
  for (const auto& [c, s] : jobs) all.emplace_back(KernelKind::kDecode, c, s);
  auto failures = testutil::compileJobs(
      cc, all, [&](const Config& c, const GemmShape&, const std::string& ptx) { return check(c, ptx); });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

}  // namespace ktune::gemm::decode_test
