// The decode GPU tests' shared checks (gemm_gpu_decode_part.cc defines them; its knob tests are in
// gemm_gpu_decode_knobs_part.cc, both parts of the gemm_gpu_test program).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/gpu/gemm_gpu_problem.h"

namespace ktune::gemm_gpu {

// Every curated config of `kind` for each shape (compiled on every core first) against the
// float64 host reference, twice; each shape must have curated configs. Seeds from `seed` on.
// `only` (when set): the curated configs that have this knob.
void curatedVsHostReference(KernelKind kind, const std::vector<GemmShape>& shapes, uint32_t seed,
                            const std::string& only = "");

// The decode kind's wgmma bodies (DC_WG = wg: 1 the cp.async ring, 2 the TMA-fed one) with the
// knob rows given (DC_WARPS, DC_NT, DC_U, DC_DEPTH, DC_GRID, DC_PF[, DC_XR]), each where it is valid and
// launchable, on odd N, K tails (K % 64 != 0), M not a power of two, the gate/up pair, bias, C +=
// and f32 C, against float64 (twice each); l2p: the weight maps' L2 promotion (DC_L2P, set when
// not the default); wp: DC_WP (the consumers' wgmmas kept in flight a stage), set when 1.
struct DecodeCase {
  int64_t m, n, k;
  ElemType c;
  bool bias;
  Activation act;
  float beta;
  ElemType ab = ElemType::kBF16;
};
void checkDecodeWgBody(int64_t wg, const std::vector<std::array<int64_t, 7>>& knobs,
                       std::vector<DecodeCase> cases = {}, int64_t l2p = gemm::kDecodeL2Promotion,
                       const Config& probe = {});

}  // namespace ktune::gemm_gpu
