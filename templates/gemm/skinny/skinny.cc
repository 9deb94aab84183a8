// The skinny (weight-streaming, small M) GEMM's host side (skinny.cuh beside it).
#include <algorithm>

#include "templates/gemm/kernel.h"

namespace ktune::gemm::detail {
namespace {

using K = const Config&;

// Registers the kernel keeps live: SK_DEPTH fragments of 2*NT*U 16-byte weight loads, one step of
// MT*U 16-byte A loads, and the accumulators. Configs above 144 use > 200 registers (ptxas,
// sm_90a): too few warps per SM to stream at full bandwidth.
int64_t registerEstimate(K c) {
  const int64_t nt = knob(c, "SK_NT"), mt = knob(c, "SK_MT"), u = knob(c, "SK_U");
  return 4 * knob(c, "SK_DEPTH") * 2 * nt * u + 4 * mt * u + 4 * nt * mt;
}

ConfigSpace buildSpace() {
  ConfigSpace s;
  s.addInts("SK_NT", {1, 2, 4}, "cuda")
      .addInts("SK_MT", {1, 2, 4, 8}, "cuda")
      .addInts("SK_U", {1, 2, 4}, "cuda")
      .addInts("NUM_WARPS", {4, 8}, "cuda")
      .addInts("SPLIT_K", {1, 2, 4, 8}, "cuda")
      .addInts("SK_DEPTH", {2, 3, 4}, "cuda")
      .addInts("SK_PF", {0, 1, 2}, "cuda");
  s.constrain("register estimate 8*SK_DEPTH*SK_NT*SK_U + 4*SK_MT*SK_U + 4*SK_NT*SK_MT <= 144",
              [](K c) { return registerEstimate(c) <= 144; });
  s.sharedBytes([](K c) { return skinnyKernel().shared_bytes(c); });
  return s;
}

int64_t sharedBytes(K c) {
  return knob(c, "NUM_WARPS") * 16 * knob(c, "SK_NT") * (8 * knob(c, "SK_MT") + 1) * 4;
}

Status applicable(K c, const GemmShape& s) {
  if (s.layout != Layout::kNT)
    return Status::Unsupported("skinny GEMM handles layout NT only (B stored [N][K]), got " +
                               std::string(layoutName(s.layout)));
  if (!fastPathOk(s) || s.k % 8 != 0)
    return Status::Unsupported(
        "skinny GEMM needs 16-byte aligned A/B, lda % 8 == 0, ldb % 8 == 0 and K % 8 == 0");
  return checkSplitSlices(c, s, 32 * knob(c, "SK_U"), "");
}

Status plan(K c, const GemmShape& s, const DeviceInfo&, LaunchPlan& p) {
  const int64_t gx = ceilDiv(s.n, 16 * knob(c, "SK_NT")), gy = ceilDiv(s.m, 8 * knob(c, "SK_MT"));
  if (gy > 65535) return Status::Unsupported("M too large for the skinny kernel's grid.y");
  p.grid = Dim3{static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                static_cast<unsigned>(knob(c, "SPLIT_K"))};
  p.block = Dim3{static_cast<unsigned>(32 * knob(c, "NUM_WARPS")), 1u, 1u};
  splitScratch(c, s, gx * gy, p);
  return Status::Ok();
}

}  // namespace

const KernelDesc& skinnyKernel() {
  static const KernelDesc d{KernelKind::kSkinny, "skinny", "gemm/skinny/skinny.cuh",
                            "ktune_gemm_skinny", "cuda", false, buildSpace, sharedBytes,
                            applicable, nullptr, plan};
  return d;
}

}  // namespace ktune::gemm::detail
