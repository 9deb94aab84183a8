// The AMD MFMA GEMM's host side (mfma.cuh and its parts beside it): the MI300X guide's space with
// LDS and VGPR constraints, applicability and launch rule.
#include "templates/gemm/kernel.h"

namespace ktune::gemm::detail {
namespace {

using K = const Config&;

// Kernel geometry (mfma_index.cuh wavesM): waves arranged wavesM x (NUM_WAVES / wavesM).
int64_t wavesM(K c) { return knob(c, "NUM_WAVES") == 8 && knob(c, "BLOCK_M") >= knob(c, "BLOCK_N") ? 4 : 2; }
int64_t threads(K c) { return 64 * knob(c, "NUM_WAVES"); }

// VGPRs per lane the kernel needs, estimated from its structure: fp32 accumulators (in AGPRs),
// the next tile's 16-byte loads held in registers (NUM_STAGES 0 and 2), one round of operand
// fragments, and about 64 for addresses, masks and the epilogue. Checked against the compilers'
// .vgpr_count on the curated configs by amd_spaces_test (the estimate is an upper bound there).
int64_t vgprEstimate(K c) {
  const int64_t t = threads(c), mi = knob(c, "MATRIX_INSTR");
  const int64_t bm = knob(c, "BLOCK_M"), bn = knob(c, "BLOCK_N");
  const int64_t acc = bm * bn / t;
  const int64_t prefetch = knob(c, "NUM_STAGES") == 1 ? 0 : (bm + bn) * knob(c, "BLOCK_K") / 8 / t * 4;
  const int64_t wm = bm / wavesM(c), wn = bn / (knob(c, "NUM_WAVES") / wavesM(c));
  const int64_t frags = (wm / mi + wn / mi) * 4;
  return acc + prefetch + frags + 64;
}

ConfigSpace buildSpace() {
  // The MI300X guide's knobs: tiles 32..256 (K 16..128), num_warps 4/8, num_stages 0-2 with its
  // AMD meaning (see mfma.cuh), waves_per_eu 0-4, matrix_instr_nonkdim 16/32, GROUP_M.
  ConfigSpace s;
  s.addInts("BLOCK_M", {32, 64, 128, 256}, "hip")
      .addInts("BLOCK_N", {32, 64, 128, 256}, "hip")
      .addInts("BLOCK_K", {16, 32, 64, 128}, "hip")
      .addInts("MATRIX_INSTR", {16, 32}, "hip")
      .addInts("NUM_WAVES", {4, 8}, "hip")
      .addInts("WAVES_PER_EU", {0, 1, 2, 3, 4}, "hip")
      .addInts("NUM_STAGES", {0, 1, 2}, "hip")
      .addInts("GROUP_M", {1, 4, 8}, "hip")
      .addInts("SPLIT_K", {1, 2, 4}, "hip");
  s.constrain("wave tile is a multiple of MATRIX_INSTR", [](K c) {
    const int64_t mi = knob(c, "MATRIX_INSTR"), wm = wavesM(c);
    return (knob(c, "BLOCK_M") / wm) % mi == 0 && knob(c, "BLOCK_M") % wm == 0 &&
           (knob(c, "BLOCK_N") / (knob(c, "NUM_WAVES") / wm)) % mi == 0;
  });
  s.constrain("BLOCK_K % (MATRIX_INSTR == 32 ? 16 : 32) == 0", [](K c) {
    return knob(c, "BLOCK_K") % (knob(c, "MATRIX_INSTR") == 32 ? 16 : 32) == 0;
  });
  s.constrain("tile 16-byte chunks divide among threads", [](K c) {
    const int64_t t = threads(c);
    return (knob(c, "BLOCK_M") * knob(c, "BLOCK_K") / 8) % t == 0 &&
           (knob(c, "BLOCK_K") * knob(c, "BLOCK_N") / 8) % t == 0;
  });
  // A workgroup's waves share the 4 SIMDs: 8 waves put 2 on each, so each may use half the file.
  s.constrain("VGPR estimate (accumulators + prefetch + fragments + 64) <= 512 * 4 / NUM_WAVES",
              [](K c) { return vgprEstimate(c) <= 512 * 4 / knob(c, "NUM_WAVES"); });
  // The hint asks LLVM for WAVES_PER_EU waves; below the estimate's reach it only forces spills.
  s.constrain("WAVES_PER_EU == 0 || VGPR estimate <= 512 / WAVES_PER_EU", [](K c) {
    const int64_t w = knob(c, "WAVES_PER_EU");
    return w == 0 || vgprEstimate(c) <= 512 / w;
  });
  s.sharedBytes([](K c) { return mfmaKernel().shared_bytes(c); });
  return s;
}

// Static LDS, swizzled unpadded tiles; two buffers at NUM_STAGES 2; split-K adds the 4-byte
// "last slice" flag.
int64_t sharedBytes(K c) {
  return (knob(c, "NUM_STAGES") == 2 ? 2 : 1) * (knob(c, "BLOCK_M") + knob(c, "BLOCK_N")) *
             knob(c, "BLOCK_K") * 2 +
         (c.getInt("SPLIT_K", 1) > 1 ? 4 : 0);
}

Status applicable(K c, const GemmShape& s) {
  KTUNE_RETURN_IF_ERROR(needFastPath(s, "MFMA"));
  // Buffer offsets inside one tile stay below 256 rows * ld * 2 bytes (32-bit).
  if (s.lda >= (int64_t{1} << 22) || s.ldb >= (int64_t{1} << 22))
    return Status::Unsupported("MFMA GEMM needs lda and ldb below 2^22");
  KTUNE_RETURN_IF_ERROR(checkSplitSlices(c, s, knob(c, "BLOCK_K"),
                                         " with BLOCK_K=" + std::to_string(knob(c, "BLOCK_K"))));
  // The split-K reduction reads its fp32 workspace rows 16 bytes at a time.
  if (knob(c, "SPLIT_K") > 1 && s.n % 4 != 0)
    return Status::Unsupported("MFMA split-K needs N % 4 == 0");
  // Operands stored MN-major are transposed in 8x8 blocks, a whole number per thread.
  const int64_t blocks_per = 64 * threads(c);
  if (transA(s.layout) && (knob(c, "BLOCK_M") * knob(c, "BLOCK_K")) % blocks_per != 0)
    return Status::Unsupported("MFMA GEMM with A stored [K][M] needs BLOCK_M * BLOCK_K a "
                               "multiple of 64 * threads (" + std::to_string(blocks_per) + ")");
  if (!transB(s.layout) && (knob(c, "BLOCK_N") * knob(c, "BLOCK_K")) % blocks_per != 0)
    return Status::Unsupported("MFMA GEMM with B stored [K][N] needs BLOCK_N * BLOCK_K a "
                               "multiple of 64 * threads (" + std::to_string(blocks_per) + ")");
  return Status::Ok();
}

void extraDefines(K, const GemmShape& s, DefineList& d) {
  d.emplace_back("HAS_BETA", s.beta != 0.0f ? "1" : "0");
}

Status plan(K c, const GemmShape& s, const DeviceInfo&, LaunchPlan& p) {
  tiledPlan(c, s, ceilDiv(s.m, knob(c, "BLOCK_M")) * ceilDiv(s.n, knob(c, "BLOCK_N")), threads(c), p);
  return Status::Ok();
}

}  // namespace

const KernelDesc& mfmaKernel() {
  static const KernelDesc d{KernelKind::kMfma, "mfma", "gemm/mfma/mfma.cuh", "ktune_gemm_mfma",
                            "hip", false, buildSpace, sharedBytes, applicable, extraDefines,
                            plan, /*static_shared=*/true};
  return d;
}

}  // namespace ktune::gemm::detail
