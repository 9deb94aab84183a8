// The Hopper wgmma GEMM's host side (wgmma.cuh beside it): layout NT, cp.async pipeline, split-K.
#include "templates/gemm/kernel.h"

namespace ktune::gemm::detail {
namespace {

using K = const Config&;

ConfigSpace buildSpace() {
  ConfigSpace s;
  s.addInts("BLOCK_N", {128, 256}, "cuda")
      .addInts("WARPGROUPS", {1, 2}, "cuda")
      .addInts("NUM_STAGES", {3, 4, 5, 6}, "cuda")
      .addInts("GROUP_M", {8}, "cuda")
      .addInts("SPLIT_K", {1, 2, 4, 8}, "cuda");
  // 128 accumulators per thread plus the split-K reduction's addressing spill (ptxas, sm_90a).
  s.constrain("SPLIT_K == 1 || BLOCK_N == 128",
              [](K c) { return knob(c, "SPLIT_K") == 1 || knob(c, "BLOCK_N") == 128; });
  s.sharedBytes([](K c) { return wgmmaKernel().shared_bytes(c); });
  return s;
}

// + 1024 to align the tiles to the 128-byte swizzle's 1 KiB groups.
int64_t sharedBytes(K c) {
  return knob(c, "NUM_STAGES") * (64 * knob(c, "WARPGROUPS") + knob(c, "BLOCK_N")) * 64 * 2 + 1024;
}

Status applicable(K c, const GemmShape& s) {
  if (s.layout != Layout::kNT)
    return Status::Unsupported("wgmma GEMM handles layout NT only (A [M][K], B [N][K])");
  KTUNE_RETURN_IF_ERROR(needFastPath(s, "wgmma"));
  return checkSplitSlices(c, s, 64, " (64-wide k-tiles)");
}

Status plan(K c, const GemmShape& s, const DeviceInfo& dev, LaunchPlan& p) {
  if (dev.arch != "sm_90a")
    return Status::Unsupported("wgmma GEMM needs arch sm_90a, device is " + dev.arch);
  tiledPlan(c, s, ceilDiv(s.m, 64 * knob(c, "WARPGROUPS")) * ceilDiv(s.n, knob(c, "BLOCK_N")),
            128 * knob(c, "WARPGROUPS"), p);
  return Status::Ok();
}

}  // namespace

const KernelDesc& wgmmaKernel() {
  static const KernelDesc d{KernelKind::kWgmma, "wgmma", "gemm/wgmma/wgmma.cuh",
                            "ktune_gemm_wgmma", "cuda", /*needs_sm90a=*/true, buildSpace,
                            sharedBytes, applicable, nullptr, plan};
  return d;
}

}  // namespace ktune::gemm::detail
