// The mma.sync GEMM's host side (mma.cuh beside it): space, shared memory, launch rule.
#include <algorithm>
#include <limits>

#include "templates/gemm/kernel.h"

namespace ktune::gemm::detail {
namespace {

using K = const Config&;

// Warp tile BLOCK_M/WARPS_M x BLOCK_N/WARPS_N.
int64_t warpM(K c) { return knob(c, "BLOCK_M") / std::max<int64_t>(1, knob(c, "WARPS_M")); }
int64_t warpN(K c) { return knob(c, "BLOCK_N") / std::max<int64_t>(1, knob(c, "WARPS_N")); }

ConfigSpace buildSpace() {
  ConfigSpace s;
  s.addInts("BLOCK_M", {64, 128, 256}, "cuda")
      .addInts("BLOCK_N", {64, 128, 256}, "cuda")
      .addInts("BLOCK_K", {32, 64}, "cuda")
      .addInts("WARPS_M", {1, 2, 4}, "cuda")
      .addInts("WARPS_N", {1, 2, 4}, "cuda")
      .addInts("NUM_STAGES", {2, 3, 4, 5}, "cuda")
      .addInts("GROUP_M", {8}, "cuda")
      .addInts("SPLIT_K", {1, 2, 4}, "cuda")
      .addInts("MIN_BLOCKS", {0, 2}, "cuda");
  s.constrain("WARPS_M * WARPS_N in {4, 8}", [](K c) {
    const int64_t w = knob(c, "WARPS_M") * knob(c, "WARPS_N");
    return w == 4 || w == 8;
  });
  s.constrain("BLOCK_M % (16 * WARPS_M) == 0 && BLOCK_N % (16 * WARPS_N) == 0", [](K c) {
    return knob(c, "BLOCK_M") % (16 * knob(c, "WARPS_M")) == 0 &&
           knob(c, "BLOCK_N") % (16 * knob(c, "WARPS_N")) == 0;
  });
  // Warp tile WM x WN holds WM*WN/32 fp32 accumulators per thread. With WM or WN outside
  // [32, 64] ptxas for sm_90a spills (e.g. 256x16, 16x256, 128x32 warp tiles), and below 32 the
  // ldmatrix traffic per mma is too high to be worth timing.
  s.constrain("32 <= BLOCK_M/WARPS_M <= 64 && 32 <= BLOCK_N/WARPS_N <= 64", [](K c) {
    return warpM(c) >= 32 && warpM(c) <= 64 && warpN(c) >= 32 && warpN(c) <= 64;
  });
  s.constrain("tile 16-byte chunks divide among threads", [](K c) {
    const int64_t threads = 32 * knob(c, "WARPS_M") * knob(c, "WARPS_N");
    return (knob(c, "BLOCK_M") * knob(c, "BLOCK_K") / 8) % threads == 0 &&
           (knob(c, "BLOCK_K") * knob(c, "BLOCK_N") / 8) % threads == 0;
  });
  // Two resident blocks of 8 warps cap registers at 128 per thread, which spills; with 4 warps
  // the cap is 255, so only the register-light warp tiles are worth the hint.
  s.constrain("MIN_BLOCKS == 2 needs 4 warps and <= 64 accumulators per thread", [](K c) {
    if (knob(c, "MIN_BLOCKS") != 2) return true;
    return knob(c, "WARPS_M") * knob(c, "WARPS_N") == 4 && warpM(c) * warpN(c) <= 2048;
  });
  s.sharedBytes([](K c) { return mmaKernel().shared_bytes(c); });
  return s;
}

int64_t sharedBytes(K c) {
  return knob(c, "NUM_STAGES") *
         (knob(c, "BLOCK_M") * knob(c, "BLOCK_K") + knob(c, "BLOCK_K") * knob(c, "BLOCK_N")) * 2;
}

Status applicable(K c, const GemmShape& s) {
  return checkSplitSlices(c, s, knob(c, "BLOCK_K"),
                          " with BLOCK_K=" + std::to_string(knob(c, "BLOCK_K")));
}

void extraDefines(K, const GemmShape& s, DefineList& d) {
  d.emplace_back("ALIGNED", fastPathOk(s) ? "1" : "0");
}

Status plan(K c, const GemmShape& s, const DeviceInfo&, LaunchPlan& p) {
  const int64_t tiles = ceilDiv(s.m, knob(c, "BLOCK_M")) * ceilDiv(s.n, knob(c, "BLOCK_N"));
  if (tiles > std::numeric_limits<int32_t>::max())
    return Status::Unsupported("too many tiles for a 1-D grid");
  tiledPlan(c, s, tiles, 32 * knob(c, "WARPS_M") * knob(c, "WARPS_N"), p);
  return Status::Ok();
}

}  // namespace

const KernelDesc& mmaKernel() {
  static const KernelDesc d{KernelKind::kMma, "mma", "gemm/mma/mma.cuh", "ktune_gemm_mma", "cuda",
                            false, buildSpace, sharedBytes, applicable, extraDefines, plan};
  return d;
}

}  // namespace ktune::gemm::detail
