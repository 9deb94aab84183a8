#include "templates/gemm.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ktune::gemm {

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t I(const Config& c, const char* name) { return c.getInt(name, 0); }

bool transA(Layout l) { return l == Layout::kTN || l == Layout::kTT; }
bool transB(Layout l) { return l == Layout::kNT || l == Layout::kTT; }

// Length of the K slice each split gets, rounded up to a multiple of `granule` (the kernels use
// the same formula), and whether the last slice is empty.
bool splitLeavesEmptySlice(int64_t k, int64_t split, int64_t granule) {
  if (split <= 1) return false;
  const int64_t per = ceilDiv(ceilDiv(k, split), granule) * granule;
  return (split - 1) * per >= k;
}

ConfigSpace buildMmaSpace() {
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
  s.constrain("WARPS_M * WARPS_N in {4, 8}", [](const Config& c) {
    const int64_t w = I(c, "WARPS_M") * I(c, "WARPS_N");
    return w == 4 || w == 8;
  });
  s.constrain("BLOCK_M % (16 * WARPS_M) == 0 && BLOCK_N % (16 * WARPS_N) == 0",
              [](const Config& c) {
                return I(c, "BLOCK_M") % (16 * I(c, "WARPS_M")) == 0 &&
                       I(c, "BLOCK_N") % (16 * I(c, "WARPS_N")) == 0;
              });
  // Warp tile WM x WN holds WM*WN/32 fp32 accumulators per thread. With WM or WN outside
  // [32, 64] ptxas for sm_90a spills (e.g. 256x16, 16x256, 128x32 warp tiles), and below 32 the
  // ldmatrix traffic per mma is too high to be worth timing.
  s.constrain("32 <= BLOCK_M/WARPS_M <= 64 && 32 <= BLOCK_N/WARPS_N <= 64", [](const Config& c) {
    const int64_t wm = I(c, "BLOCK_M") / std::max<int64_t>(1, I(c, "WARPS_M"));
    const int64_t wn = I(c, "BLOCK_N") / std::max<int64_t>(1, I(c, "WARPS_N"));
    return wm >= 32 && wm <= 64 && wn >= 32 && wn <= 64;
  });
  s.constrain("tile 16-byte chunks divide among threads", [](const Config& c) {
    const int64_t threads = 32 * I(c, "WARPS_M") * I(c, "WARPS_N");
    return (I(c, "BLOCK_M") * I(c, "BLOCK_K") / 8) % threads == 0 &&
           (I(c, "BLOCK_K") * I(c, "BLOCK_N") / 8) % threads == 0;
  });
  // Two resident blocks of 8 warps cap registers at 128 per thread, which spills; with 4 warps
  // the cap is 255, so only the register-light warp tiles are worth the hint.
  s.constrain("MIN_BLOCKS == 2 needs 4 warps and <= 64 accumulators per thread", [](const Config& c) {
    if (I(c, "MIN_BLOCKS") != 2) return true;
    const int64_t wm = I(c, "BLOCK_M") / std::max<int64_t>(1, I(c, "WARPS_M"));
    const int64_t wn = I(c, "BLOCK_N") / std::max<int64_t>(1, I(c, "WARPS_N"));
    return I(c, "WARPS_M") * I(c, "WARPS_N") == 4 && wm * wn <= 2048;
  });
  s.sharedBytes([](const Config& c) { return sharedBytes(KernelKind::kMma, c); });
  return s;
}

// Registers the skinny kernel keeps live: SK_DEPTH fragments of 2*NT*U 16-byte weight loads, one
// step of MT*U 16-byte A loads, and the accumulators. Configs above 144 use > 200 registers
// (ptxas, sm_90a): too few warps per SM to stream at full bandwidth.
int64_t skinnyRegs(const Config& c) {
  const int64_t nt = I(c, "SK_NT"), mt = I(c, "SK_MT"), u = I(c, "SK_U"), d = I(c, "SK_DEPTH");
  return 4 * d * 2 * nt * u + 4 * mt * u + 4 * nt * mt;
}

ConfigSpace buildSkinnySpace() {
  ConfigSpace s;
  s.addInts("SK_NT", {1, 2, 4}, "cuda")
      .addInts("SK_MT", {1, 2, 4, 8}, "cuda")
      .addInts("SK_U", {1, 2, 4}, "cuda")
      .addInts("NUM_WARPS", {4, 8}, "cuda")
      .addInts("SPLIT_K", {1, 2, 4, 8}, "cuda")
      .addInts("SK_DEPTH", {2, 3, 4}, "cuda")
      .addInts("SK_PF", {0, 1, 2}, "cuda");
  s.constrain("register estimate 8*SK_DEPTH*SK_NT*SK_U + 4*SK_MT*SK_U + 4*SK_NT*SK_MT <= 144",
              [](const Config& c) { return skinnyRegs(c) <= 144; });
  s.sharedBytes([](const Config& c) { return sharedBytes(KernelKind::kSkinny, c); });
  return s;
}

// MFMA kernel geometry (gemm_mfma.cuh): waves arranged wavesM x (NUM_WAVES / wavesM), K read
// 16 (MI 32) or 32 (MI 16) at a time per ds_read_b128 round.
int64_t mfmaWavesM(const Config& c) {
  return I(c, "NUM_WAVES") == 8 && I(c, "BLOCK_M") >= I(c, "BLOCK_N") ? 4 : 2;
}
int64_t mfmaThreads(const Config& c) { return 64 * I(c, "NUM_WAVES"); }

// VGPRs per lane the kernel needs, estimated from its structure: fp32 accumulators (in AGPRs),
// the next tile's 16-byte loads held in registers (NUM_STAGES 0 and 2), one round of operand
// fragments, and about 64 for addresses, masks and the epilogue. Checked against the compilers'
// .vgpr_count on the curated configs by amd_spaces_test (the estimate is an upper bound there).
int64_t mfmaVgprEstimate(const Config& c) {
  const int64_t threads = mfmaThreads(c), mi = I(c, "MATRIX_INSTR");
  const int64_t acc = I(c, "BLOCK_M") * I(c, "BLOCK_N") / threads;
  const int64_t prefetch =
      I(c, "NUM_STAGES") == 1 ? 0 : (I(c, "BLOCK_M") + I(c, "BLOCK_N")) * I(c, "BLOCK_K") / 8 / threads * 4;
  const int64_t wm = I(c, "BLOCK_M") / mfmaWavesM(c);
  const int64_t wn = I(c, "BLOCK_N") / (I(c, "NUM_WAVES") / mfmaWavesM(c));
  const int64_t frags = (wm / mi + wn / mi) * 4;
  return acc + prefetch + frags + 64;
}

ConfigSpace buildMfmaSpace() {
  // The MI300X guide's knobs: tiles 32..256 (K 16..128), num_warps 4/8, num_stages 0-2 with its
  // AMD meaning (see gemm_mfma.cuh), waves_per_eu 0-4, matrix_instr_nonkdim 16/32, GROUP_M.
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
  s.constrain("wave tile is a multiple of MATRIX_INSTR", [](const Config& c) {
    const int64_t mi = I(c, "MATRIX_INSTR"), wm = mfmaWavesM(c);
    return (I(c, "BLOCK_M") / wm) % mi == 0 && I(c, "BLOCK_M") % wm == 0 &&
           (I(c, "BLOCK_N") / (I(c, "NUM_WAVES") / wm)) % mi == 0;
  });
  s.constrain("BLOCK_K % (MATRIX_INSTR == 32 ? 16 : 32) == 0", [](const Config& c) {
    return I(c, "BLOCK_K") % (I(c, "MATRIX_INSTR") == 32 ? 16 : 32) == 0;
  });
  s.constrain("tile 16-byte chunks divide among threads", [](const Config& c) {
    const int64_t threads = mfmaThreads(c);
    return (I(c, "BLOCK_M") * I(c, "BLOCK_K") / 8) % threads == 0 &&
           (I(c, "BLOCK_K") * I(c, "BLOCK_N") / 8) % threads == 0;
  });
  // A workgroup's waves share the 4 SIMDs: 8 waves put 2 on each, so each may use half the file.
  s.constrain("VGPR estimate (accumulators + prefetch + fragments + 64) <= 512 * 4 / NUM_WAVES",
              [](const Config& c) { return mfmaVgprEstimate(c) <= 512 * 4 / I(c, "NUM_WAVES"); });
  // The hint asks LLVM for WAVES_PER_EU waves; below the estimate's reach it only forces spills.
  s.constrain("WAVES_PER_EU == 0 || VGPR estimate <= 512 / WAVES_PER_EU", [](const Config& c) {
    const int64_t w = I(c, "WAVES_PER_EU");
    return w == 0 || mfmaVgprEstimate(c) <= 512 / w;
  });
  s.sharedBytes([](const Config& c) { return sharedBytes(KernelKind::kMfma, c); });
  return s;
}

ConfigSpace buildWgmmaSpace() {
  ConfigSpace s;
  s.addInts("BLOCK_N", {128, 256}, "cuda")
      .addInts("WARPGROUPS", {1, 2}, "cuda")
      .addInts("NUM_STAGES", {3, 4, 5, 6}, "cuda")
      .addInts("GROUP_M", {8}, "cuda")
      .addInts("SPLIT_K", {1, 2, 4, 8}, "cuda");
  // 128 accumulators per thread plus the split-K reduction's addressing spill (ptxas, sm_90a).
  s.constrain("SPLIT_K == 1 || BLOCK_N == 128", [](const Config& c) {
    return I(c, "SPLIT_K") == 1 || I(c, "BLOCK_N") == 128;
  });
  s.sharedBytes([](const Config& c) { return sharedBytes(KernelKind::kWgmma, c); });
  return s;
}

ConfigSpace buildTmaSpace() {
  ConfigSpace s;
  s.addInts("BLOCK_N", {128, 192, 256}, "cuda")
      .addInts("CONSUMERS", {1, 2}, "cuda")
      .addInts("WG_M", {1, 2}, "cuda")
      .addInts("NUM_STAGES", {2, 3, 4, 5, 6, 7, 8}, "cuda")
      .addInts("GROUP_M", {8, 16}, "cuda")
      .addInts("CLUSTER_M", {1, 2}, "cuda")
      .addInts("EPI_TMA", {0, 1}, "cuda")
      .addInts("SPLIT_K", {1, 2, 4}, "cuda");
  // Each consumer thread holds WG_M * BLOCK_N / 2 fp32 accumulators; 128 is the most that leaves
  // room for addressing under setmaxnreg's 232-register budget.
  s.constrain("WG_M * BLOCK_N <= 256", [](const Config& c) {
    return I(c, "WG_M") * I(c, "BLOCK_N") <= 256;
  });
  s.constrain("CLUSTER_M == 1 || BLOCK_N % 128 == 0", [](const Config& c) {
    return I(c, "CLUSTER_M") == 1 || I(c, "BLOCK_N") % 128 == 0;
  });
  // The split tail (SPLIT_K > 1) is offered with the TMA-store epilogue and without clusters only:
  // that is the combination that wins large shapes, and it keeps the space (compiled whole in CI)
  // about 1.5x rather than 3x the size.
  s.constrain("SPLIT_K == 1 || (EPI_TMA == 1 && CLUSTER_M == 1)", [](const Config& c) {
    return I(c, "SPLIT_K") == 1 || (I(c, "EPI_TMA") == 1 && I(c, "CLUSTER_M") == 1);
  });
  s.sharedBytes([](const Config& c) { return sharedBytes(KernelKind::kTma, c); });
  return s;
}

void addCommonDefines(std::vector<std::pair<std::string, std::string>>& d, const GemmShape& s) {
  d.emplace_back("LAYOUT", std::to_string(static_cast<int>(s.layout)));
  d.emplace_back("DTYPE_AB", std::to_string(static_cast<int>(s.ab)));
  d.emplace_back("DTYPE_C", std::to_string(static_cast<int>(s.c)));
  d.emplace_back("HAS_BIAS", s.has_bias ? "1" : "0");
  d.emplace_back("ACT", std::to_string(static_cast<int>(s.act)));
}

double activate(double v, Activation a) {
  switch (a) {
    case Activation::kSilu: return v / (1.0 + std::exp(-v));
    case Activation::kGelu: return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    default: return v;
  }
}

}  // namespace

const char* layoutName(Layout l) {
  switch (l) {
    case Layout::kNN: return "NN";
    case Layout::kNT: return "NT";
    case Layout::kTN: return "TN";
    case Layout::kTT: return "TT";
  }
  return "?";
}
const char* elemTypeName(ElemType t) {
  switch (t) {
    case ElemType::kF16: return "f16";
    case ElemType::kBF16: return "bf16";
    case ElemType::kF32: return "f32";
  }
  return "?";
}
const char* activationName(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kSilu: return "silu";
    case Activation::kGelu: return "gelu";
  }
  return "?";
}
const char* kernelKindName(KernelKind k) {
  switch (k) {
    case KernelKind::kMma: return "mma";
    case KernelKind::kSkinny: return "skinny";
    case KernelKind::kMfma: return "mfma";
    case KernelKind::kWgmma: return "wgmma";
    case KernelKind::kTma: return "tma";
  }
  return "?";
}

Expected<KernelKind> parseKernelKind(const std::string& s) {
  for (KernelKind k : {KernelKind::kMma, KernelKind::kSkinny, KernelKind::kMfma, KernelKind::kWgmma,
                       KernelKind::kTma})
    if (s == kernelKindName(k)) return k;
  return Status::InvalidArgument("unknown GEMM kernel kind '" + s +
                                 "' (expected mma, skinny, mfma, wgmma or tma)");
}

Expected<Layout> parseLayout(const std::string& s) {
  for (Layout l : {Layout::kNN, Layout::kNT, Layout::kTN, Layout::kTT})
    if (s == layoutName(l)) return l;
  return Status::InvalidArgument("unknown GEMM layout '" + s + "' (expected NN, NT, TN or TT)");
}
Expected<ElemType> parseElemType(const std::string& s) {
  for (ElemType t : {ElemType::kF16, ElemType::kBF16, ElemType::kF32})
    if (s == elemTypeName(t)) return t;
  return Status::InvalidArgument("unknown GEMM element type '" + s + "' (expected f16, bf16, f32)");
}
Expected<Activation> parseActivation(const std::string& s) {
  for (Activation a : {Activation::kNone, Activation::kSilu, Activation::kGelu})
    if (s == activationName(a)) return a;
  return Status::InvalidArgument("unknown activation '" + s + "' (expected none, silu, gelu)");
}
int64_t elemBytes(ElemType t) { return t == ElemType::kF32 ? 4 : 2; }

GemmShape denseShape(Layout layout, ElemType ab, ElemType c, int64_t m, int64_t n, int64_t k) {
  GemmShape s;
  s.layout = layout;
  s.ab = ab;
  s.c = c;
  s.m = m;
  s.n = n;
  s.k = k;
  s.lda = storedColsA(s);
  s.ldb = storedColsB(s);
  s.ldc = n;
  return s;
}

int64_t storedRowsA(const GemmShape& s) { return transA(s.layout) ? s.k : s.m; }
int64_t storedColsA(const GemmShape& s) { return transA(s.layout) ? s.m : s.k; }
int64_t storedRowsB(const GemmShape& s) { return transB(s.layout) ? s.n : s.k; }
int64_t storedColsB(const GemmShape& s) { return transB(s.layout) ? s.k : s.n; }

Status validate(const GemmShape& s) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (s.m <= 0 || s.n <= 0 || s.k <= 0)
    return Status::InvalidArgument("GEMM dims must be positive, got M=" + std::to_string(s.m) +
                                   " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k));
  if (s.m > kMax || s.n > kMax || s.k > kMax)
    return Status::InvalidArgument("GEMM dims must fit in int32 (M, N, K <= 2^31-1)");
  if (s.ab == ElemType::kF32)
    return Status::InvalidArgument("GEMM inputs must be f16 or bf16 (f32 inputs are not supported; "
                                   "convert A and B first)");
  if (s.lda < storedColsA(s))
    return Status::InvalidArgument("lda=" + std::to_string(s.lda) + " is shorter than a row of A (" +
                                   std::to_string(storedColsA(s)) + " for layout " +
                                   layoutName(s.layout) + ")");
  if (s.ldb < storedColsB(s))
    return Status::InvalidArgument("ldb=" + std::to_string(s.ldb) + " is shorter than a row of B (" +
                                   std::to_string(storedColsB(s)) + " for layout " +
                                   layoutName(s.layout) + ")");
  if (s.ldc < s.n)
    return Status::InvalidArgument("ldc=" + std::to_string(s.ldc) + " is shorter than N=" +
                                   std::to_string(s.n));
  if (!std::isfinite(s.alpha) || !std::isfinite(s.beta))
    return Status::InvalidArgument("alpha and beta must be finite");
  // Byte spans of A, B, C must fit comfortably in int64: derived sizes (snapshots of C, bounds
  // checks) would otherwise overflow, which is undefined behaviour. No real tensor is > 2^60 B.
  struct View {
    const char* name;
    int64_t rows, ld, cols, esize;
  };
  for (const View& v : {View{"A", storedRowsA(s), s.lda, storedColsA(s), elemBytes(s.ab)},
                        View{"B", storedRowsB(s), s.ldb, storedColsB(s), elemBytes(s.ab)},
                        View{"C", s.m, s.ldc, s.n, elemBytes(s.c)}}) {
    int64_t t = 0;
    if (__builtin_mul_overflow(v.rows - 1, v.ld, &t) || __builtin_add_overflow(t, v.cols, &t) ||
        __builtin_mul_overflow(t, v.esize, &t) || t > (int64_t(1) << 60))
      return Status::InvalidArgument(std::string(v.name) + " spans more than 2^60 bytes (" +
                                     std::to_string(v.rows) + " rows, leading dimension " +
                                     std::to_string(v.ld) + "): overflow; check the leading "
                                     "dimensions");
  }
  return Status::Ok();
}

bool fastPathOk(const GemmShape& s) { return s.aligned16 && s.lda % 8 == 0 && s.ldb % 8 == 0; }

std::string shapeKey(const GemmShape& s) {
  std::string k = std::string(layoutName(s.layout)) + ":" + elemTypeName(s.ab) + ">" +
                  elemTypeName(s.c) + ":m=" + std::to_string(s.m) + ",n=" + std::to_string(s.n) +
                  ",k=" + std::to_string(s.k) + ":lda=" + std::to_string(s.lda) +
                  ",ldb=" + std::to_string(s.ldb) + ",ldc=" + std::to_string(s.ldc) +
                  ":bias=" + (s.has_bias ? "1" : "0") + ":act=" + activationName(s.act) +
                  ":beta=" + (s.beta != 0.0f ? "1" : "0") + ":a16=" + (s.aligned16 ? "1" : "0");
  return k;
}

const char* sourceFile(KernelKind k) {
  switch (k) {
    case KernelKind::kMma: return "gemm_mma.cuh";
    case KernelKind::kSkinny: return "gemm_skinny.cuh";
    case KernelKind::kMfma: return "gemm_mfma.cuh";
    case KernelKind::kWgmma: return "gemm_wgmma.cuh";
    case KernelKind::kTma: return "gemm_tma.cuh";
  }
  return "";
}
const char* entryName(KernelKind k) {
  switch (k) {
    case KernelKind::kMma: return "ktune_gemm_mma";
    case KernelKind::kSkinny: return "ktune_gemm_skinny";
    case KernelKind::kMfma: return "ktune_gemm_mfma";
    case KernelKind::kWgmma: return "ktune_gemm_wgmma";
    case KernelKind::kTma: return "ktune_gemm_tma";
  }
  return "";
}

std::vector<KernelKind> kernelsForBackend(const std::string& backend) {
  if (backend == "cuda") return {KernelKind::kMma, KernelKind::kSkinny};
  if (backend == "hip") return {KernelKind::kMfma};
  return {};
}

std::vector<KernelKind> kernelsForArch(const std::string& arch) {
  if (arch.rfind("gfx", 0) == 0) return kernelsForBackend("hip");
  auto k = kernelsForBackend("cuda");
  if (arch == "sm_90a") {
    k.push_back(KernelKind::kWgmma);
    k.push_back(KernelKind::kTma);
  }
  return k;
}

const ConfigSpace& configSpace(KernelKind k) {
  static const ConfigSpace kMma = buildMmaSpace();
  static const ConfigSpace kSkinny = buildSkinnySpace();
  static const ConfigSpace kMfma = buildMfmaSpace();
  static const ConfigSpace kWgmma = buildWgmmaSpace();
  static const ConfigSpace kTma = buildTmaSpace();
  switch (k) {
    case KernelKind::kTma: return kTma;
    case KernelKind::kSkinny: return kSkinny;
    case KernelKind::kMfma: return kMfma;
    case KernelKind::kWgmma: return kWgmma;
    default: return kMma;
  }
}

int64_t sharedBytes(KernelKind k, const Config& c) {
  switch (k) {
    case KernelKind::kMma:
      return I(c, "NUM_STAGES") * (I(c, "BLOCK_M") * I(c, "BLOCK_K") + I(c, "BLOCK_K") * I(c, "BLOCK_N")) * 2;
    case KernelKind::kMfma:  // static LDS, swizzled unpadded tiles; two buffers at NUM_STAGES 2;
                             // split-K adds the 4-byte "last slice" flag
      return (I(c, "NUM_STAGES") == 2 ? 2 : 1) * (I(c, "BLOCK_M") + I(c, "BLOCK_N")) *
                 I(c, "BLOCK_K") * 2 +
             (c.getInt("SPLIT_K", 1) > 1 ? 4 : 0);
    case KernelKind::kSkinny:
      return I(c, "NUM_WARPS") * 16 * I(c, "SK_NT") * (8 * I(c, "SK_MT") + 1) * 4;
    case KernelKind::kWgmma:  // + 1024 to align the tiles to the 128-byte swizzle's 1 KiB groups
      return I(c, "NUM_STAGES") * (64 * I(c, "WARPGROUPS") + I(c, "BLOCK_N")) * 64 * 2 + 1024;
    case KernelKind::kTma:  // tiles + 1 KiB alignment + the full/empty mbarriers
      return I(c, "NUM_STAGES") * (64 * I(c, "WG_M") * I(c, "CONSUMERS") + I(c, "BLOCK_N")) * 64 * 2 +
             I(c, "EPI_TMA") * I(c, "CONSUMERS") * 16384 + 1024 + 256;
  }
  return 0;
}

Status applicable(KernelKind k, const Config& c, const GemmShape& s) {
  KTUNE_RETURN_IF_ERROR(validate(s));
  switch (k) {
    case KernelKind::kMma:
      if (splitLeavesEmptySlice(s.k, I(c, "SPLIT_K"), I(c, "BLOCK_K")))
        return Status::Unsupported("SPLIT_K=" + std::to_string(I(c, "SPLIT_K")) +
                                   " leaves an empty K slice for K=" + std::to_string(s.k) +
                                   " with BLOCK_K=" + std::to_string(I(c, "BLOCK_K")));
      return Status::Ok();
    case KernelKind::kSkinny:
      if (s.layout != Layout::kNT)
        return Status::Unsupported("skinny GEMM handles layout NT only (B stored [N][K]), got " +
                                   std::string(layoutName(s.layout)));
      if (!fastPathOk(s) || s.k % 8 != 0)
        return Status::Unsupported(
            "skinny GEMM needs 16-byte aligned A/B, lda % 8 == 0, ldb % 8 == 0 and K % 8 == 0");
      if (splitLeavesEmptySlice(s.k, I(c, "SPLIT_K"), 32 * I(c, "SK_U")))
        return Status::Unsupported("SPLIT_K=" + std::to_string(I(c, "SPLIT_K")) +
                                   " leaves an empty K slice for K=" + std::to_string(s.k));
      return Status::Ok();
    case KernelKind::kMfma: {
      if (!fastPathOk(s))
        return Status::Unsupported(
            "MFMA GEMM needs 16-byte aligned A/B with lda % 8 == 0 and ldb % 8 == 0");
      // Buffer offsets inside one tile stay below 256 rows * ld * 2 bytes (32-bit).
      if (s.lda >= (int64_t{1} << 22) || s.ldb >= (int64_t{1} << 22))
        return Status::Unsupported("MFMA GEMM needs lda and ldb below 2^22");
      if (splitLeavesEmptySlice(s.k, I(c, "SPLIT_K"), I(c, "BLOCK_K")))
        return Status::Unsupported("SPLIT_K=" + std::to_string(I(c, "SPLIT_K")) +
                                   " leaves an empty K slice for K=" + std::to_string(s.k) +
                                   " with BLOCK_K=" + std::to_string(I(c, "BLOCK_K")));
      // The split-K reduction reads its fp32 workspace rows 16 bytes at a time.
      if (I(c, "SPLIT_K") > 1 && s.n % 4 != 0)
        return Status::Unsupported("MFMA split-K needs N % 4 == 0");
      // Operands stored MN-major are transposed in 8x8 blocks, a whole number per thread.
      const int64_t blocks_per = 64 * mfmaThreads(c);
      if (transA(s.layout) && (I(c, "BLOCK_M") * I(c, "BLOCK_K")) % blocks_per != 0)
        return Status::Unsupported("MFMA GEMM with A stored [K][M] needs BLOCK_M * BLOCK_K a "
                                   "multiple of 64 * threads (" + std::to_string(blocks_per) + ")");
      if (!transB(s.layout) && (I(c, "BLOCK_N") * I(c, "BLOCK_K")) % blocks_per != 0)
        return Status::Unsupported("MFMA GEMM with B stored [K][N] needs BLOCK_N * BLOCK_K a "
                                   "multiple of 64 * threads (" + std::to_string(blocks_per) + ")");
      return Status::Ok();
    }
    case KernelKind::kWgmma:
      if (s.layout != Layout::kNT)
        return Status::Unsupported("wgmma GEMM handles layout NT only (A [M][K], B [N][K])");
      if (!fastPathOk(s))
        return Status::Unsupported(
            "wgmma GEMM needs 16-byte aligned A/B with lda % 8 == 0 and ldb % 8 == 0");
      if (splitLeavesEmptySlice(s.k, I(c, "SPLIT_K"), 64))
        return Status::Unsupported("SPLIT_K=" + std::to_string(I(c, "SPLIT_K")) +
                                   " leaves an empty K slice for K=" + std::to_string(s.k) +
                                   " (64-wide k-tiles)");
      return Status::Ok();
    case KernelKind::kTma:
      if (s.ab == ElemType::kF32)
        return Status::Unsupported("TMA GEMM takes 16-bit A and B (f16, bf16)");
      if (!fastPathOk(s))
        return Status::Unsupported(
            "TMA GEMM needs 16-byte aligned A/B with lda % 8 == 0 and ldb % 8 == 0");
      return Status::Ok();
  }
  return Status::Internal("unknown kernel kind");
}

std::vector<std::pair<std::string, std::string>> defines(KernelKind k, const Config& c,
                                                         const GemmShape& s) {
  std::vector<std::pair<std::string, std::string>> d;
  for (const auto& [name, value] : c.params()) d.emplace_back(name, paramValueToString(value));
  addCommonDefines(d, s);
  if (k == KernelKind::kMma) d.emplace_back("ALIGNED", fastPathOk(s) ? "1" : "0");
  if (k == KernelKind::kMfma) d.emplace_back("HAS_BETA", s.beta != 0.0f ? "1" : "0");
  return d;
}

Expected<LaunchPlan> launchPlan(KernelKind k, const Config& c, const GemmShape& s,
                                const DeviceInfo& dev) {
  KTUNE_RETURN_IF_ERROR(configSpace(k).validate(c));
  KTUNE_RETURN_IF_ERROR(applicable(k, c, s));
  LaunchPlan p;
  p.shared_bytes = sharedBytes(k, c);
  const int64_t limit = k == KernelKind::kMfma
                            ? dev.shared_per_block
                            : std::max(dev.shared_per_block_optin, dev.shared_per_block);
  if (limit > 0 && p.shared_bytes > limit)
    return Status::OutOfResources("config " + c.toString() + " needs " +
                                  std::to_string(p.shared_bytes) + " B shared memory > " +
                                  std::to_string(limit) + " B on " + dev.name);
  int64_t split = I(c, "SPLIT_K");
  switch (k) {
    case KernelKind::kMma: {
      const int64_t gm = ceilDiv(s.m, I(c, "BLOCK_M")), gn = ceilDiv(s.n, I(c, "BLOCK_N"));
      if (gm * gn > std::numeric_limits<int32_t>::max())
        return Status::Unsupported("too many tiles for a 1-D grid");
      p.grid = Dim3{static_cast<unsigned>(gm * gn), 1u, static_cast<unsigned>(split)};
      p.block = Dim3{static_cast<unsigned>(32 * I(c, "WARPS_M") * I(c, "WARPS_N")), 1u, 1u};
      if (split > 1) p.counters = gm * gn;
      break;
    }
    case KernelKind::kSkinny: {
      const int64_t gx = ceilDiv(s.n, 16 * I(c, "SK_NT")), gy = ceilDiv(s.m, 8 * I(c, "SK_MT"));
      if (gy > 65535) return Status::Unsupported("M too large for the skinny kernel's grid.y");
      p.grid = Dim3{static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                    static_cast<unsigned>(split)};
      p.block = Dim3{static_cast<unsigned>(32 * I(c, "NUM_WARPS")), 1u, 1u};
      if (split > 1) p.counters = gx * gy;
      break;
    }
    case KernelKind::kMfma: {
      const int64_t gm = ceilDiv(s.m, I(c, "BLOCK_M")), gn = ceilDiv(s.n, I(c, "BLOCK_N"));
      p.grid = Dim3{static_cast<unsigned>(gm * gn), 1u, static_cast<unsigned>(split)};
      p.block = Dim3{static_cast<unsigned>(64 * I(c, "NUM_WAVES")), 1u, 1u};
      p.shared_bytes = 0;  // the MFMA kernel's LDS is static
      if (split > 1) p.counters = gm * gn;
      break;
    }
    case KernelKind::kWgmma: {
      if (dev.arch != "sm_90a")
        return Status::Unsupported("wgmma GEMM needs arch sm_90a, device is " + dev.arch);
      const int64_t gm = ceilDiv(s.m, 64 * I(c, "WARPGROUPS")), gn = ceilDiv(s.n, I(c, "BLOCK_N"));
      p.grid = Dim3{static_cast<unsigned>(gm * gn), 1u, static_cast<unsigned>(split)};
      p.block = Dim3{static_cast<unsigned>(128 * I(c, "WARPGROUPS")), 1u, 1u};
      if (split > 1) p.counters = gm * gn;
      break;
    }
    case KernelKind::kTma: {
      if (dev.arch != "sm_90a")
        return Status::Unsupported("TMA GEMM needs arch sm_90a, device is " + dev.arch);
      const int64_t cluster = I(c, "CLUSTER_M");
      const int64_t bm = 64 * I(c, "WG_M") * I(c, "CONSUMERS");
      // Tiles of a cluster (CLUSTER_M vertically adjacent block tiles) are walked together.
      const int64_t tiles = ceilDiv(s.m, bm * cluster) * ceilDiv(s.n, I(c, "BLOCK_N"));
      if (tiles > std::numeric_limits<int32_t>::max())
        return Status::Unsupported("too many tiles for the TMA GEMM's tile counter");
      // Persistent: one block per SM (the kernel's shared memory allows no second one).
      const int64_t clusters = std::max<int64_t>(1, (dev.multiprocessors > 0 ? dev.multiprocessors : 1) / cluster);
      int64_t blocks = std::min(tiles, clusters) * cluster;
      p.block = Dim3{static_cast<unsigned>(128 * (I(c, "CONSUMERS") + 1)), 1u, 1u};
      if (split > 1) {
        // The last round's tiles are split along K (see gemm_tma.cuh); with fewer tiles than SMs
        // that round is the only one, so launch up to SPLIT_K blocks per tile.
        blocks = std::min(tiles * split, clusters);
        const TmaSplitScratch scratch = tmaSplitScratch(c, blocks);
        p.workspace_bytes = scratch.workspace_bytes;
        p.counters = scratch.counters;
      }
      p.grid = Dim3{static_cast<unsigned>(blocks), 1u, 1u};
      split = 1;  // the workspace above, not the M x N one of the split-K kernels
      break;
    }
  }
  if (split > 1) p.workspace_bytes = s.m * s.n * 4;
  return p;
}

std::vector<Config> curatedConfigs(KernelKind k, const GemmShape& s) {
  std::vector<Config> out;
  auto add = [&](Config c) {
    if (!configSpace(k).validate(c).ok()) return;
    if (!applicable(k, c, s).ok()) return;
    out.push_back(std::move(c));
  };
  auto mma = [](int64_t bm, int64_t bn, int64_t bk, int64_t wm, int64_t wn, int64_t st,
                int64_t split) {
    return Config{{"BLOCK_M", bm}, {"BLOCK_N", bn},     {"BLOCK_K", bk}, {"WARPS_M", wm},
                  {"WARPS_N", wn}, {"NUM_STAGES", st}, {"GROUP_M", int64_t{8}},
                  {"SPLIT_K", split}, {"MIN_BLOCKS", int64_t{0}}};
  };
  switch (k) {
    case KernelKind::kMma: {
      add(mma(128, 256, 32, 2, 4, 4, 1));
      add(mma(256, 128, 32, 4, 2, 4, 1));
      add(mma(128, 128, 32, 2, 2, 4, 1));
      add(mma(128, 128, 64, 2, 2, 3, 1));
      add(mma(128, 256, 64, 2, 4, 3, 1));
      add(mma(128, 64, 32, 2, 2, 4, 1));
      add(mma(64, 128, 64, 2, 2, 4, 1));
      if (s.m * s.n <= 1024 * 1024) {  // few tiles: split the reduction
        add(mma(128, 128, 32, 2, 2, 4, 2));
        add(mma(64, 128, 64, 2, 2, 4, 4));
        add(mma(128, 64, 64, 2, 2, 4, 2));
        add(mma(128, 64, 64, 2, 2, 4, 4));
        add(mma(64, 64, 64, 2, 2, 4, 4));
      }
      break;
    }
    case KernelKind::kSkinny: {
      // One A tile covers ceil(M/8) rows (up to 64; grid.y covers more). Deep register rings
      // (SK_DEPTH) and split-K keep enough weight bytes in flight per SM.
      const int64_t mt = std::clamp<int64_t>(ceilDiv(s.m, 8), 1, 8);
      auto sk = [mt](int64_t nt, int64_t u, int64_t w, int64_t split, int64_t depth, int64_t pf) {
        return Config{{"SK_NT", nt},    {"SK_MT", mt},       {"SK_U", u},   {"NUM_WARPS", w},
                      {"SPLIT_K", split}, {"SK_DEPTH", depth}, {"SK_PF", pf}};
      };
      // Ordered by the H100 sweep of 2026-11-22 (bench/NOTES.md): at these sizes deeper rings and
      // split-K did not pay; the first entry is the default when tuning is off.
      if (mt == 1) add(sk(1, 2, 8, 1, 2, 1));
      if (s.n >= 8192) add(sk(2, 1, 4, 1, 2, 1));
      add(sk(2, 2, 8, 1, 3, 1));
      add(sk(2, 1, 4, 1, 2, 1));
      add(sk(1, 2, 8, 1, 2, 1));
      add(sk(1, 2, 8, 1, 4, 2));
      add(sk(2, 1, 8, 1, 2, 1));
      add(sk(1, 4, 4, 1, 3, 1));
      add(sk(1, 2, 8, 2, 2, 1));
      add(sk(1, 1, 8, 1, 2, 0));  // fits the register budget for any M tile
      break;
    }
    case KernelKind::kWgmma: {
      auto wg = [](int64_t bn, int64_t wgs, int64_t st, int64_t split) {
        return Config{{"BLOCK_N", bn},          {"WARPGROUPS", wgs}, {"NUM_STAGES", st},
                      {"GROUP_M", int64_t{8}}, {"SPLIT_K", split}};
      };
      // Ordered by the H100 sweep of 2026-11-22 (bench/NOTES.md).
      if (s.m <= 256) {  // decode-sized M: one warpgroup, deep pipeline
        add(wg(128, 1, 6, 1));
        add(wg(128, 1, 5, 1));
      }
      add(wg(256, 2, 4, 1));
      add(wg(128, 2, 3, 1));
      add(wg(128, 2, 5, 1));
      add(wg(256, 2, 3, 1));
      if (s.m * s.n <= 1024 * 1024) {  // few output tiles: split the reduction over more blocks
        add(wg(128, 1, 6, 2));
        add(wg(128, 2, 6, 4));
      }
      break;
    }
    case KernelKind::kTma: {
      auto tma = [](int64_t bn, int64_t cons, int64_t wgm, int64_t st, int64_t gm, int64_t cl,
                    int64_t epi, int64_t split = 1) {
        return Config{{"BLOCK_N", bn},     {"CONSUMERS", cons}, {"WG_M", wgm},
                      {"NUM_STAGES", st}, {"GROUP_M", gm},     {"CLUSTER_M", cl},
                      {"EPI_TMA", epi},   {"SPLIT_K", split}};
      };

      // 128x256 tiles with two consumer warpgroups is the classic Hopper shape (H100 run of
      // 2026-11-22: 749 TFLOP/s at 8192^3); smaller tiles for decode-sized M.
      // C through shared memory and TMA stores (EPI_TMA=1) won on every large shape (+4-11%).
      if (s.m <= 256) {
        add(tma(128, 1, 1, 8, 8, 1, 1));
        add(tma(128, 1, 1, 8, 8, 1, 0));
        add(tma(128, 1, 1, 6, 16, 1, 1));
        add(tma(128, 2, 1, 6, 8, 1, 1));
        // Few tiles: split K so every SM streams part of the weights.
        add(tma(128, 1, 1, 8, 8, 1, 1, 2));
        add(tma(128, 1, 1, 8, 8, 1, 1, 4));
        add(tma(128, 2, 1, 6, 8, 1, 1, 2));
        add(tma(128, 2, 1, 6, 8, 1, 1, 4));  // M = 128: 32 tiles x 4 = 128 blocks, B read once
      }
      // Split tail: the kernel splits the last round's tiles along K only when that round leaves
      // at least half the SMs idle (1024x14336: 448 tiles of 128x256 = 3 rounds + 52 tiles on 132
      // SMs), and otherwise runs exactly like SPLIT_K=1.
      add(tma(256, 2, 1, 4, 16, 1, 1, 2));
      add(tma(256, 2, 1, 4, 8, 1, 1, 2));
      add(tma(128, 2, 1, 5, 8, 1, 1, 2));
      add(tma(256, 2, 1, 4, 16, 1, 1));
      add(tma(256, 2, 1, 4, 8, 1, 1));
      add(tma(256, 2, 1, 4, 16, 1, 0));
      add(tma(128, 2, 2, 4, 8, 1, 1));
      add(tma(128, 2, 1, 4, 8, 1, 1));
      add(tma(256, 2, 1, 3, 16, 1, 1));
      // Neighbours of the winners (pipeline depth, tile order, one consumer), so the default
      // candidate set covers the tile shapes that win elsewhere (wave counts differ per shape).
      add(tma(256, 2, 1, 3, 8, 1, 1));
      add(tma(128, 2, 2, 4, 16, 1, 1));
      add(tma(128, 2, 2, 3, 8, 1, 1));
      add(tma(128, 2, 1, 5, 8, 1, 1));
      add(tma(128, 2, 1, 6, 16, 1, 1));
      add(tma(128, 2, 1, 5, 16, 1, 1));
      add(tma(256, 1, 1, 4, 8, 1, 1));
      add(tma(256, 1, 1, 4, 16, 1, 1));
      add(tma(128, 1, 2, 5, 8, 1, 1));
      add(tma(128, 1, 2, 6, 16, 1, 1));
      add(tma(256, 2, 1, 4, 8, 2, 1));
      add(tma(128, 2, 2, 4, 8, 2, 1));
      // 128x192 tiles: fewer idle SMs in the last wave when 128x256 tiles leave one (e.g.
      // 1024x14336: 448 tiles = 3.4 waves on 132 SMs; 600 tiles of 128x192 = 4.5).
      add(tma(192, 2, 1, 4, 8, 1, 1));
      add(tma(192, 2, 1, 5, 8, 1, 0));  // 5 stages leave no room for the C buffer
      add(tma(192, 2, 1, 4, 16, 1, 1));
      // Two-block clusters with B multicast: correct, but 1.4x slower than the same tile alone on
      // the H100 (2026-11-22, bench/NOTES.md); one stays in the curated set so tuning re-measures.
      add(tma(256, 2, 1, 4, 8, 2, 0));
      break;
    }
    case KernelKind::kMfma: {
      // Chosen with the static analysis (amd_spaces_test prints the table: occupancy equal to
      // LLVM's, every ISA verdict PASS on gfx90a and gfx942). The first applicable entry is the
      // default; for B stored [K][N] (NN, TN) only tiles with BLOCK_N * BLOCK_K a multiple of
      // 64 * threads apply, which is why two 4-wave, BLOCK_K 128 / BLOCK_N 256 tiles lead.
      auto mfma = [](int64_t bm, int64_t bn, int64_t bk, int64_t mi, int64_t waves, int64_t wpe,
                     int64_t stages, int64_t gm, int64_t split = 1) {
        return Config{{"BLOCK_M", bm},        {"BLOCK_N", bn},      {"BLOCK_K", bk},
                      {"MATRIX_INSTR", mi},   {"NUM_WAVES", waves}, {"WAVES_PER_EU", wpe},
                      {"NUM_STAGES", stages}, {"GROUP_M", gm},      {"SPLIT_K", split}};
      };
      // MFMA 16x16 first: the guide finds it ahead of 32x32 for GEMMs on MI300X.
      add(mfma(128, 128, 128, 16, 4, 0, 0, 8));
      add(mfma(128, 256, 64, 16, 4, 0, 0, 8));
      add(mfma(64, 256, 64, 16, 4, 0, 0, 8));
      add(mfma(128, 128, 128, 32, 4, 0, 0, 8));
      add(mfma(128, 64, 64, 32, 4, 0, 0, 8));
      add(mfma(256, 128, 64, 16, 8, 0, 0, 8));
      add(mfma(128, 256, 64, 16, 8, 0, 0, 8));
      add(mfma(128, 128, 64, 16, 4, 0, 0, 8));
      add(mfma(128, 128, 64, 32, 4, 0, 0, 8));
      add(mfma(256, 64, 64, 16, 4, 0, 0, 8));
      add(mfma(64, 128, 64, 16, 4, 2, 0, 8));
      add(mfma(128, 64, 64, 16, 4, 2, 0, 8));
      add(mfma(64, 128, 64, 32, 4, 0, 0, 8));
      add(mfma(64, 64, 64, 16, 4, 0, 0, 4));
      add(mfma(128, 128, 32, 32, 4, 0, 2, 8));  // two LDS buffers
      // NUM_STAGES 1 (no prefetch) stays in the space for tuning, but its K loop waits for every
      // load before the MFMAs (the overlap verdict says so), so none is curated.
      add(mfma(256, 128, 64, 32, 8, 0, 0, 8));
      // Decode-sized M.
      add(mfma(32, 128, 64, 16, 4, 0, 0, 1));
      add(mfma(32, 256, 64, 16, 4, 0, 0, 1));
      // Few tiles (decode-sized M): split K so more CUs stream the weights.
      add(mfma(32, 128, 64, 16, 4, 0, 0, 1, 4));
      add(mfma(64, 128, 64, 16, 4, 0, 0, 8, 2));
      break;
    }
  }
  // Deduplicate (the M-tile variants can coincide).
  std::vector<Config> uniq;
  for (auto& c : out)
    if (std::find(uniq.begin(), uniq.end(), c) == uniq.end()) uniq.push_back(c);
  return uniq;
}

TmaSplitScratch tmaSplitScratch(const Config& c, int64_t blocks) {
  const int64_t cons = c.getInt("CONSUMERS", 1);
  const int64_t bm = 64 * c.getInt("WG_M", 1) * cons;
  return {blocks * bm * c.getInt("BLOCK_N", 256) * 4, blocks * cons};
}

TmaDescriptors tmaDescriptors(const GemmShape& s, DevicePtr a, DevicePtr b, DevicePtr c) {
  TmaDescriptors d;
  const int eb = static_cast<int>(elemBytes(s.ab));
  // A and B as stored: [M][K] or [K][M], [N][K] or [K][N] (the kernel picks the coordinates).
  auto fill = [&](TensorMap2DDesc& t, DevicePtr p, int64_t rows, int64_t cols, int64_t ld) {
    t.base = p;
    t.elem_bytes = eb;
    t.rows = static_cast<uint64_t>(rows);
    t.cols = static_cast<uint64_t>(cols);
    t.row_stride_bytes = static_cast<uint64_t>(ld) * static_cast<uint64_t>(eb);
    t.box_rows = 64;
    t.box_cols = 64;
    t.swizzle_bytes = 128;
  };
  fill(d.a, a, storedRowsA(s), storedColsA(s), s.lda);
  fill(d.b, b, storedRowsB(s), storedColsB(s), s.ldb);
  // C: rows M, cols N, ldc, boxes of 64 x 64 16-bit elements (fp32 C keeps the direct stores).
  d.c.base = c;
  d.c.elem_bytes = static_cast<int>(elemBytes(s.c));
  d.c.rows = static_cast<uint64_t>(s.m);
  d.c.cols = static_cast<uint64_t>(s.n);
  d.c.row_stride_bytes = static_cast<uint64_t>(s.ldc) * static_cast<uint64_t>(d.c.elem_bytes);
  d.c.box_rows = 64;
  d.c.box_cols = 64;
  d.c.swizzle_bytes = 128;
  return d;
}

std::vector<double> reference(const GemmShape& s, const float* a, const float* b,
                              const float* c_in, const float* bias) {
  std::vector<double> out(static_cast<size_t>(s.m * s.n));
  const bool ta = transA(s.layout), tb = transB(s.layout);
  std::vector<double> brow(static_cast<size_t>(s.k));
  for (int64_t j = 0; j < s.n; ++j) {
    for (int64_t kk = 0; kk < s.k; ++kk) brow[kk] = tb ? b[j * s.ldb + kk] : b[kk * s.ldb + j];
    for (int64_t i = 0; i < s.m; ++i) {
      double acc = 0;
      for (int64_t kk = 0; kk < s.k; ++kk)
        acc += static_cast<double>(ta ? a[kk * s.lda + i] : a[i * s.lda + kk]) * brow[kk];
      double v = s.alpha * acc;
      if (s.beta != 0.0f && c_in) v += s.beta * static_cast<double>(c_in[i * s.ldc + j]);
      if (s.has_bias && bias) v += bias[j];
      out[i * s.n + j] = activate(v, s.act);
    }
  }
  return out;
}

}  // namespace ktune::gemm
