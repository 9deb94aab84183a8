// What gemm_decode_test.cc and its part gemm_decode_compile_part.cc share (one program): a
// nominal sm_90a device, the base and wgmma-body decode configs and the NT bf16 shape shorthand.
#pragma once

#include <cstdint>

#include "templates/gemm.h"
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

}  // namespace ktune::gemm::decode_test
