// The Hopper TMA GEMM's host side (tma.cuh and the tma_*.cuh files it includes beside it):
// space, persistent launch rule with the split tail's scratch, tensor maps.
#include <algorithm>
#include <limits>

#include "templates/gemm/kernel.h"

// The kernel's persistent schedule (plain C++, namespace kt), for tmaSplitTailIdle: the host asks
// the kernel's own make_sched whether a split tail shares anything out.
#define KTUNE_DEVICE inline
namespace kt_host {
#include "templates/gemm/tma/tma_schedule.cuh"
}  // namespace kt_host
#undef KTUNE_DEVICE

namespace ktune::gemm {

namespace {
// Rows of a block tile: the consumers' slabs together, or one consumer's with ping-pong (each
// consumer warpgroup then owns a tile of its own).
int64_t tileRows(const Config& c) {
  const int64_t wgs = c.getInt("PINGPONG", 0) != 0 ? 1 : c.getInt("CONSUMERS", 1);
  return 64 * c.getInt("WG_M", 1) * wgs;
}
}  // namespace

TmaSplitScratch tmaSplitScratch(const Config& c, int64_t blocks) {
  const int64_t cons = c.getInt("CONSUMERS", 1);
  const int64_t bm = tileRows(c);
  return {blocks * bm * c.getInt("BLOCK_N", 256) * 4, blocks * cons};
}

namespace {
// A 2-D tensor map of boxes of `box_rows` rows, 128 bytes wide (64 16-bit or 128 8-bit elements),
// with the 128-byte swizzle over a matrix as stored.
TensorMap2DDesc boxMap(DevicePtr p, int elem_bytes, int64_t rows, int64_t cols, int64_t ld,
                       uint32_t box_rows = 64) {
  TensorMap2DDesc t;
  t.base = p;
  t.elem_bytes = elem_bytes;
  t.rows = static_cast<uint64_t>(rows);
  t.cols = static_cast<uint64_t>(cols);
  t.row_stride_bytes = static_cast<uint64_t>(ld) * static_cast<uint64_t>(elem_bytes);
  t.box_rows = box_rows;
  t.box_cols = static_cast<uint32_t>(128 / elem_bytes);
  t.swizzle_bytes = 128;
  return t;
}
}  // namespace

TmaBoxRows tmaBoxRows(const Config& c, const GemmShape& s) {
  // As tma.cuh's KT_A_MN / KT_B_MN and kABoxRows / kBBoxRows.
  const bool a_mn = s.layout == Layout::kTN || s.layout == Layout::kTT;
  const bool b_mn = s.layout == Layout::kNN || s.layout == Layout::kTN;
  // The box probe knobs (TMA_ABOX / TMA_BBOX = 64, defines the kernel reads) keep 64-row boxes.
  TmaBoxRows r;
  if (!a_mn && !c.has("TMA_ABOX")) r.a = static_cast<uint32_t>(tileRows(c));
  if (!b_mn && s.act != Activation::kSiluMul && !c.has("TMA_BBOX"))
    r.b = static_cast<uint32_t>(c.getInt("BLOCK_N", 256) / std::max<int64_t>(1, c.getInt("CLUSTER_M", 1)));
  return r;
}

TmaDescriptors tmaDescriptors(const GemmShape& s, DevicePtr a, DevicePtr b, DevicePtr c,
                              TmaL2Promotion l2, TmaBoxRows boxes) {
  TmaDescriptors d;
  const int eb = static_cast<int>(elemBytes(s.ab));
  // A and B as stored: [M][K] or [K][M], [N][K] or [K][N] (the kernel picks the coordinates).
  d.a = boxMap(a, eb, storedRowsA(s), storedColsA(s), s.lda, boxes.a);
  d.b = boxMap(b, eb, storedRowsB(s), storedColsB(s), s.ldb, boxes.b);
  // C: rows M, cols N (N / 2 for the gate/up pair), ldc, boxes of 64 x 64 16-bit elements (fp32 C
  // keeps the direct stores).
  d.c = boxMap(c, static_cast<int>(elemBytes(s.c)), s.m, outCols(s), s.ldc);
  d.a.l2_promotion_bytes = l2.a;
  d.b.l2_promotion_bytes = l2.b;
  d.c.l2_promotion_bytes = l2.c;
  return d;
}

TmaL2Promotion tmaL2Promotion(const Config& c) {
  TmaL2Promotion l2;
  l2.a = static_cast<int>(c.getInt("TMA_L2A", kTmaL2Promotion.a));
  l2.b = static_cast<int>(c.getInt("TMA_L2B", kTmaL2Promotion.b));
  l2.c = static_cast<int>(c.getInt("TMA_L2C", kTmaL2Promotion.c));
  return l2;
}

bool isHostOnlyKnob(KernelKind k, const std::string& name) {
  return k == KernelKind::kTma && (name == "TMA_L2A" || name == "TMA_L2B" || name == "TMA_L2C");
}

namespace detail {
namespace {

using K = const Config&;

ConfigSpace buildSpace() {
  ConfigSpace s;
  s.addInts("BLOCK_N", {128, 176, 192, 224, 256}, "cuda")
      .addInts("CONSUMERS", {1, 2}, "cuda")
      .addInts("WG_M", {1, 2}, "cuda")
      .addInts("NUM_STAGES", {2, 3, 4, 5, 6, 7, 8}, "cuda")
      .addInts("GROUP_M", {8, 16}, "cuda")
      .addInts("CLUSTER_M", {1, 2, 4}, "cuda")
      .addInts("EPI_TMA", {0, 1, 2}, "cuda")
      .addInts("SPLIT_K", {1, 2, 4}, "cuda")
      .addInts("PINGPONG", {0, 1}, "cuda")
      .addOptionalInts("TMA_L2A", {0, 128, 256}, "cuda")
      .addOptionalInts("TMA_L2B", {0, 128, 256}, "cuda")
      .addOptionalInts("TMA_L2C", {0, 128, 256}, "cuda")
      .addOptionalInts("TMA_ABOX", {64}, "cuda")
      .addOptionalInts("TMA_BBOX", {64}, "cuda");
  // TMA_ABOX / TMA_BBOX (probe knobs, not enumerated; absent: a K-major operand's tile in one
  // box): 64 loads A / B in 64-row boxes, as before the one-box copies (tma.cuh's kABoxRows / kBOneBox).
  // Timed beside the one-box copies in the same rounds they were level or slower (the four-block
  // clusters at 3000x5000x1000 NT and NN, the cooperative 128x256 at 4096x6144x4096; the 128x176
  // ping-pong at 1024x14336x4096 within 0.2%), so no family's default takes them (bench/NOTES.md,
  // issue 33: the box probe's A/B).
  s.constrain("TMA_ABOX, TMA_BBOX 64 when present", [](K c) {
    return c.getInt("TMA_ABOX", 64) == 64 && c.getInt("TMA_BBOX", 64) == 64;
  });
  // TMA_L2A / B / C (probe knobs, not enumerated; absent: kTmaL2Promotion): the maps' L2
  // promotion in bytes per operand (gemm.h's tmaL2Promotion).
  s.constrain("TMA_L2A, TMA_L2B, TMA_L2C one of 0, 128, 256", [](K c) {
    const TmaL2Promotion l2 = tmaL2Promotion(c);
    const auto ok = [](int v) { return v == 0 || v == 128 || v == 256; };
    return ok(l2.a) && ok(l2.b) && ok(l2.c);
  });
  // Each consumer thread holds WG_M * BLOCK_N / 2 fp32 accumulators; 128 is the most that leaves
  // room for the cooperative kernel's addressing and deferred epilogue under setmaxnreg's
  // 232-register budget; a ping-pong consumer (one tile, no packed C) also takes 128 x 192 (192).
  s.constrain("WG_M * BLOCK_N <= 256 || (PINGPONG == 1 && WG_M * BLOCK_N <= 384)", [](K c) {
    const int64_t acc = knob(c, "WG_M") * knob(c, "BLOCK_N");
    return acc <= 256 || (knob(c, "PINGPONG") == 1 && acc <= 384);
  });
  // The widths that are not a multiple of 64 are there for the tile count (tma_wgmma_wide.cuh): the
  // kernel takes any multiple of 8 from 136 to 248 (a probe's value), the space enumerates 176 and
  // 224 (152, 168 and 200 lost 2-26% where their rounds are fuller: bench/NOTES.md, issue 33); two
  // consumers (cooperative or ping-pong) without clusters only (what the tile count pays for).
  s.constrain("BLOCK_N == 128 || (BLOCK_N % 8 == 0 && BLOCK_N >= 136 && BLOCK_N <= 256)", [](K c) {
    const int64_t bn = knob(c, "BLOCK_N");
    return bn == 128 || (bn % 8 == 0 && bn >= 136 && bn <= 256);
  });
  s.constrain("BLOCK_N % 64 == 0 || (CONSUMERS == 2 && CLUSTER_M == 1)", [](K c) {
    return knob(c, "BLOCK_N") % 64 == 0 ||
           (knob(c, "CONSUMERS") == 2 && knob(c, "CLUSTER_M") == 1);
  });
  s.constrain("CLUSTER_M == 1 || BLOCK_N % 128 == 0",
              [](K c) { return knob(c, "CLUSTER_M") == 1 || knob(c, "BLOCK_N") % 128 == 0; });
  // Four-block clusters (a quarter of B per block, multicast to all four: 25% fewer load requests
  // per output than the pair) are offered as they were measured to win (3000x5000x1000, where the
  // loads bound the kernel): 128 x 256 block tiles, two consumers, the deferred epilogue. Their
  // grid is the kernel's resident clusters (Backend::maxActiveClusters), not SMs / 4.
  s.constrain("CLUSTER_M < 4 || (BLOCK_N == 256 && CONSUMERS == 2 && WG_M == 1 && EPI_TMA == 2)",
              [](K c) {
                return knob(c, "CLUSTER_M") < 4 ||
                       (knob(c, "BLOCK_N") == 256 && knob(c, "CONSUMERS") == 2 &&
                        knob(c, "WG_M") == 1 && knob(c, "EPI_TMA") == 2);
              });
  // The split tail (SPLIT_K > 1) is offered with the TMA-store epilogue and without clusters only:
  // that is the combination that wins large shapes, and it keeps the space (compiled whole in CI)
  // about 1.5x rather than 3x the size.
  s.constrain("SPLIT_K == 1 || (EPI_TMA >= 1 && CLUSTER_M == 1)", [](K c) {
    return knob(c, "SPLIT_K") == 1 || (knob(c, "EPI_TMA") >= 1 && knob(c, "CLUSTER_M") == 1);
  });
  // The deferred epilogue (EPI_TMA = 2) holds the packed C (up to 64 registers) beside the
  // accumulators: offered with two consumers (setmaxnreg gives them 232 registers; one consumer
  // with WG_M 2 spills at 255), with or without clusters.
  s.constrain("EPI_TMA < 2 || CONSUMERS == 2", [](K c) {
    return knob(c, "EPI_TMA") < 2 || knob(c, "CONSUMERS") == 2;
  });
  // Ping-pong (each consumer on a tile of its own, one's epilogue under the other's MMAs): two
  // consumers, the plain schedule (no cluster, no split tail) and an epilogue that needs no
  // next tile of its own warpgroup (EPI_TMA 0 or 1).
  s.constrain("PINGPONG == 0 || (CONSUMERS == 2 && CLUSTER_M == 1 && SPLIT_K == 1 && EPI_TMA <= 1)",
              [](K c) {
                return knob(c, "PINGPONG") == 0 ||
                       (knob(c, "CONSUMERS") == 2 && knob(c, "CLUSTER_M") == 1 &&
                        knob(c, "SPLIT_K") == 1 && knob(c, "EPI_TMA") <= 1);
              });
  s.sharedBytes([](K c) { return tmaKernel().shared_bytes(c); });
  return s;
}

// Tiles + 1 KiB alignment + the full/empty mbarriers (+ the C staging buffers with EPI_TMA: two
// 64 x 64 boxes per consumer, one with ping-pong; tma.cuh's kEpiBytes).
// A stage holds BLOCK_N B rows (one box of them, K-major B only: gemm::tmaBoxRows).
int64_t sharedBytes(K c) {
  const int64_t epi = knob(c, "EPI_TMA") > 0 ? (knob(c, "PINGPONG") != 0 ? 8192 : 16384) : 0;
  return knob(c, "NUM_STAGES") * (tileRows(c) + knob(c, "BLOCK_N")) * 64 * 2 +
         knob(c, "CONSUMERS") * epi + 1024 + 256;
}

// The gate/up pair (Activation::kSiluMul, tma_gated.cuh): a tile's B stage is whole 64-row boxes
// of gate rows and of up rows, stored from the tile's registers.
Status gatedApplicable(K c, const GemmShape& s, bool b_mn_major) {
  if (s.act != Activation::kSiluMul) return Status::Ok();
  const std::string what = "TMA GEMM with act silu_mul (gate/up pair) ";
  if (knob(c, "BLOCK_N") % 128 != 0)
    return Status::Unsupported(what + "needs BLOCK_N 128 or 256 (whole 64-row boxes of gate and of "
                               "up rows), got " + std::to_string(knob(c, "BLOCK_N")));
  if (knob(c, "EPI_TMA") >= 2)
    return Status::Unsupported(what + "stores from the tile's registers: EPI_TMA 0 or 1, got 2 (the "
                               "deferred epilogue)");
  if (isFp8(s.ab) || b_mn_major)
    return Status::Unsupported(what + "takes 16-bit A and B and a K-major B (layout NT or TT), got " +
                               std::string(elemTypeName(s.ab)) + " " + layoutName(s.layout));
  return Status::Ok();
}

Status applicable(K c, const GemmShape& s) {
  if (s.ab == ElemType::kF32)
    return Status::Unsupported("TMA GEMM takes 16-bit or fp8 A and B (f16, bf16, f8e4m3, f8e5m2)");
  // wgmma reads 8-bit operands K-major only (its transpose flag exists for 16-bit types): an fp8
  // A must be stored [M][K] and B [N][K]. Nothing is transposed behind the caller's back (a copy
  // of the weights per call would cost more than the GEMM saves).
  if (isFp8(s.ab) && s.layout != Layout::kNT)
    return Status::Unsupported(std::string("fp8 GEMM needs layout NT (A [M][K], B [N][K], both "
                                           "K-major as the fp8 wgmma reads them), got ") +
                               layoutName(s.layout) + "; store A or B transposed first");
  // A B tile whose width is not a multiple of 64 is read K-major only: the MN-major descriptor
  // steps whole 64-column chunks (tma.cuh).
  const bool b_mn_major = s.layout == Layout::kNN || s.layout == Layout::kTN;
  // Four-block clusters: the 16-bit wgmma only (what their GPU tests and benches ran), and a
  // cluster tile of 512 rows: below that M some of its blocks would have no rows at all.
  if (knob(c, "CLUSTER_M") == 4 && isFp8(s.ab))
    return Status::Unsupported("TMA GEMM CLUSTER_M 4 takes 16-bit A and B (f16, bf16), got " +
                               std::string(elemTypeName(s.ab)) + "; use CLUSTER_M 1 or 2");
  if (knob(c, "CLUSTER_M") == 4 && s.m < 4 * tileRows(c))
    return Status::Unsupported("TMA GEMM CLUSTER_M 4 needs M >= " +
                               std::to_string(4 * tileRows(c)) + " (one cluster tile of 4 x " +
                               std::to_string(tileRows(c)) + " rows), got M = " +
                               std::to_string(s.m) + "; use CLUSTER_M 1 or 2");
  KTUNE_RETURN_IF_ERROR(gatedApplicable(c, s, b_mn_major));
  if (b_mn_major && knob(c, "BLOCK_N") % 64 != 0)
    return Status::Unsupported("TMA GEMM BLOCK_N " + std::to_string(knob(c, "BLOCK_N")) +
                               " needs a K-major B (layout NT or TT), got " + layoutName(s.layout));
  return needFastPath(s, "TMA");
}

// Output tiles of the persistent schedule: tiles of a cluster (CLUSTER_M vertically adjacent block
// tiles) are walked together; the gate/up pair has tiles of BLOCK_N / 2 output columns (N / 2).
int64_t tmaTiles(K c, const GemmShape& s) {
  const int64_t bm = tileRows(c), cluster = knob(c, "CLUSTER_M"), bn = knob(c, "BLOCK_N");
  return ceilDiv(s.m, bm * cluster) *
         (s.act == Activation::kSiluMul ? ceilDiv(s.n / 2, bn / 2) : ceilDiv(s.n, bn));
}

Status plan(K c, const GemmShape& s, const DeviceInfo& dev, LaunchPlan& p) {
  if (dev.arch != "sm_90a")
    return Status::Unsupported("TMA GEMM needs arch sm_90a, device is " + dev.arch);
  const int64_t cluster = knob(c, "CLUSTER_M"), split = knob(c, "SPLIT_K");
  const int64_t tiles = tmaTiles(c, s);
  if (tiles > std::numeric_limits<int32_t>::max())
    return Status::Unsupported("too many tiles for the TMA GEMM's tile counter");
  // Persistent: one block per SM (the kernel's shared memory allows no second one). With
  // clusters that is an upper bound: a cluster's blocks share a GPC, so fewer may be resident
  // (bench/NOTES.md, issue 33: four-block clusters); each launch runs the clusters of the loaded
  // kernel resident at once (persistent_cluster: residentClusterGrid), and the tiles are walked
  // with the launched grid's stride.
  const int64_t clusters =
      std::max<int64_t>(1, (dev.multiprocessors > 0 ? dev.multiprocessors : 1) / cluster);
  int64_t blocks = std::min(tiles, clusters) * cluster;
  p.persistent_cluster = cluster;
  p.block = Dim3{static_cast<unsigned>(128 * (knob(c, "CONSUMERS") + 1)), 1u, 1u};
  if (split > 1) {
    // The last round's tiles are split along K (see tma.cuh); with fewer tiles than SMs that
    // round is the only one, so launch up to SPLIT_K blocks per tile. Its scratch is per block,
    // not the M x N workspace of the split-K kernels.
    blocks = std::min(tiles * split, clusters);
    const TmaSplitScratch scratch = tmaSplitScratch(c, blocks);
    p.workspace_bytes = scratch.workspace_bytes;
    p.counters = scratch.counters;
  }
  p.grid = Dim3{static_cast<unsigned>(blocks), 1u, 1u};
  return Status::Ok();
}

// HAS_BETA 0 (beta == 0, part of the problem key): the kernel never reads C, and its epilogue
// variants that add beta * C are not compiled (about a third of a 128 x 256 config's compile:
// bench/NOTES.md, issue 34).
void extraDefines(const Config&, const GemmShape& s, DefineList& d) {
  d.emplace_back("HAS_BETA", s.beta != 0.0f ? "1" : "0");
}

}  // namespace

const KernelDesc& tmaKernel() {
  static const KernelDesc d{KernelKind::kTma, "tma", "gemm/tma/tma.cuh", "ktune_gemm_tma", "cuda",
                            /*needs_sm90a=*/true, buildSpace, sharedBytes, applicable, extraDefines,
                            plan};
  return d;
}

}  // namespace detail

bool tmaSplitTailIdle(const Config& c, const GemmShape& s, const DeviceInfo& dev) {
  const int64_t split = c.getInt("SPLIT_K", 1);
  if (split <= 1) return false;
  auto p = launchPlan(KernelKind::kTma, c, s, dev);
  if (!p.ok()) return false;
  const int64_t tiles = detail::tmaTiles(c, s);
  const int64_t ktiles = detail::ceilDiv(s.k, 128 / elemBytes(s.ab));  // a k-tile is 128 bytes of a row
  const kt_host::Sched sc = kt_host::make_sched(static_cast<int>(tiles), static_cast<int>(ktiles),
                                                0, static_cast<int>(p->grid.x),
                                                static_cast<int>(split));
  return sc.tail == 0;
}

}  // namespace ktune::gemm
