// ktune GEMM family: config spaces, -D defines, launch rules and a float64 host reference for the
// kernels in templates/gemm/<kind>/ (mma: NVIDIA mma.sync; skinny: NVIDIA, small M, weight
// streaming; wgmma and tma: Hopper; mfma: AMD MFMA). Each folder holds the kernel's source and its
// host side (space, shared memory, applicability, launch rule, curated configs; see
// templates/gemm/kernel.h); templates/gemm/common.cuh is what the kernels share (and
// templates/gemm/hopper.cuh what the tma and decode kernels share).
//
//   C = act(alpha * op(A) * op(B) + beta * C + bias)
//
// Storage is row-major; Layout says which operands are stored transposed (see Layout). Problem
// facts that change the generated code (dtypes, layout, epilogue, alignment) become defines here,
// so one Config (the tunable knobs only) is meaningful across problems. Everything in this header
// is pure host code, thread-safe, and needs no GPU.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/config.h"
#include "base/status.h"
#include "base/device.h"
#include "base/dtype.h"

namespace ktune::gemm {

// NN: A [M][K], B [K][N].  NT: A [M][K], B [N][K] (nn.Linear weights).
// TN: A [K][M], B [K][N].  TT: A [K][M], B [N][K].  C is always [M][N].
enum class Layout { kNN = 0, kNT = 1, kTN = 2, kTT = 3 };
// ktune's one DType (base/dtype.h): inputs A/B are kF16 or kBF16; C (and bias) kF16, kBF16 or kF32
// (validate() refuses the others). The kernels' DTYPE_AB / DTYPE_C defines are its values (f32 0,
// f16 1, bf16 2), the numbering of the row-wise kernels too.
using ElemType = DType;
// kGelu is the exact (erf) form on NVIDIA, the tanh form on AMD (no libm there).
// kSiluMul is the gated form of an MLP's gate/up pair: B holds the concatenated [gate; up] weight
// (N rows: the first N/2 gate, the last N/2 up) and C gets N/2 columns,
//   C[m][j] = silu(alpha*G[m][j] + bias[j]) * (alpha*U[m][j] + bias[N/2+j]) + beta*C[m][j]
// with G, U the two halves of op(A)*op(B). The decode kernel (layout NT) and the tma kernel
// (K-major B: NT or TT; BLOCK_N 128 or 256, EPI_TMA 0 or 1) compute it.
enum class Activation { kNone = 0, kSilu = 1, kGelu = 2, kSiluMul = 3 };
// kWgmma: Hopper (sm_90a) warpgroup MMA fed by cp.async, layout NT only (split-K capable).
// kTma: Hopper warpgroup MMA fed by TMA, warp-specialised, persistent grid; every layout (MN-major
// operands through wgmma's transpose flag). Its launches take tensor maps after the common
// arguments (see tmaDescriptors).
enum class KernelKind { kMma, kSkinny, kMfma, kWgmma, kTma, kDecode };

const char* layoutName(Layout l);          // "NN", "NT", "TN", "TT"
const char* elemTypeName(ElemType t);      // "f16", "bf16", "f32"
const char* activationName(Activation a);  // "none", "silu", "gelu", "silu_mul"
const char* kernelKindName(KernelKind k);  // "mma", "skinny", "mfma", "wgmma", "tma", "decode"
Expected<Layout> parseLayout(const std::string& s);
Expected<ElemType> parseElemType(const std::string& s);
Expected<Activation> parseActivation(const std::string& s);
// "mma", "skinny", "mfma", "wgmma", "tma", "decode" -> the kind; kInvalidArgument listing them otherwise.
Expected<KernelKind> parseKernelKind(const std::string& s);
int64_t elemBytes(ElemType t);

// Everything about a GEMM except the device pointers.
struct GemmShape {
  Layout layout = Layout::kNN;
  ElemType ab = ElemType::kBF16;  // A and B
  ElemType c = ElemType::kBF16;   // C and bias
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;  // elements between rows of the stored matrices
  float alpha = 1.0f, beta = 0.0f;    // beta != 0 reads C
  bool has_bias = false;
  Activation act = Activation::kNone;
  // True when the A and B base addresses are 16-byte aligned (the caller derives it from the
  // pointers). Together with lda % 8 == 0 and ldb % 8 == 0 it enables the 16-byte load path.
  bool aligned16 = true;
};

// Columns of C: N/2 for Activation::kSiluMul (the gate/up pair), N otherwise.
int64_t outCols(const GemmShape& s);

// A shape with dense leading dimensions for `layout` (act none: ldc = N).
GemmShape denseShape(Layout layout, ElemType ab, ElemType c, int64_t m, int64_t n, int64_t k);
// Rows/columns of the stored A and B for this layout: A is a_rows x a_cols, etc.
int64_t storedRowsA(const GemmShape& s);
int64_t storedColsA(const GemmShape& s);
int64_t storedRowsB(const GemmShape& s);
int64_t storedColsB(const GemmShape& s);
// kInvalidArgument naming the problem: non-positive or too large (> 2^31-1) dims, leading
// dimensions shorter than a stored row, f32 inputs, non-finite alpha/beta, or an odd N with
// Activation::kSiluMul.
Status validate(const GemmShape& s);
// True when the 16-byte (cp.async / vector load) path is legal for this shape.
bool fastPathOk(const GemmShape& s);
// Stable text of the problem for tuning keys: "NT:bf16>bf16:m=16,n=4096,k=4096:lda=..,ldb=..,
// ldc=..:bias=0:act=none:beta=0:a16=1". (alpha only matters through the code, so it is left out;
// beta is reduced to zero / non-zero.)
std::string shapeKey(const GemmShape& s);

// The kernel's main file ("gemm/mma/mma.cuh", for diagnostics) and extern "C" entry.
const char* sourceFile(KernelKind k);
const char* entryName(KernelKind k);
// The complete source to compile for a kind: its main file with templates/gemm/common.cuh and its
// own folder's parts in place of their #include lines (prelude.cuh stays an include; the
// compilers provide it). Nothing of another kind's files, so editing one kernel changes only its
// own sources and cache keys; the one shared part beyond common.cuh is templates/gemm/hopper.cuh,
// the sm_90 primitives of the tma and decode kinds. Built once; the view stays valid for the
// process's lifetime.
std::string_view kernelSource(KernelKind k);
// Which kernels exist for a vendor ("cuda" -> mma, skinny; "hip" -> mfma). kWgmma is listed
// separately (it needs arch sm_90a): kernelsForArch adds it there.
std::vector<KernelKind> kernelsForBackend(const std::string& backend);
std::vector<KernelKind> kernelsForArch(const std::string& arch);

// The tunable knobs of a kernel with their constraints and shared-memory function.
// mma:    BLOCK_M/N/K, WARPS_M, WARPS_N, NUM_STAGES, GROUP_M, SPLIT_K, MIN_BLOCKS.
// skinny: SK_NT, SK_MT, SK_U, NUM_WARPS, SPLIT_K, SK_DEPTH, SK_PF.
// decode: DC_WARPS (4|8), DC_NT (1|2), DC_MT (1..16: M <= 8*DC_MT, the smallest such tier), DC_U
//         (1|2|4), DC_DEPTH (2|4), DC_PF (1|2), DC_XR (0|1), DC_GRID (1|2|3 blocks per SM,
//         stream-K; 0: one block per tile, no split of K; DC_WG 2 only: 4, 5 a cluster of 2, 4
//         splitting K, 6 persistent whole tiles, 7 a pair splitting the rows of A, 65 <= M <= 128,
//         DC_MT the tier of ceil(M/2)), DC_WG (0 mma.sync; 1 wgmma, sm_90a:
//         DC_WARPS/4 consumer warpgroups of DC_NT 64-row slabs, 2*DC_DEPTH ring stages of 64*DC_U k,
//         DC_PF 1|2: a producer warp or warpgroup; 2 the same ring fed by TMA (DC_PF 3: a producer
//         warpgroup giving its registers to two consumer warpgroups, 256-row tiles at 128 rows
//         on the cluster K split); 3 a CUDA-core GEMV
//         for M <= 8, DC_MT then the power of two >= M, templates/gemm/decode/decode_fma.cuh).
// mfma:   BLOCK_M/N (32..256), BLOCK_K (16..128), MATRIX_INSTR (16|32), NUM_WAVES (4|8),
//         WAVES_PER_EU (0..4), NUM_STAGES (0|1|2, the guide's AMD meaning), GROUP_M (1|4|8),
//         SPLIT_K (1|2|4).
// wgmma:  BLOCK_N (128|256), WARPGROUPS (1|2), NUM_STAGES (3..6), GROUP_M, SPLIT_K.
// tma:    BLOCK_N (128|192|256), CONSUMERS (1|2), WG_M (1|2), NUM_STAGES (2..8), GROUP_M, CLUSTER_M
//         (1|2|4: 4 with BLOCK_N=256, CONSUMERS=2, WG_M=1, EPI_TMA=2, 16-bit A/B), EPI_TMA (0|1:
//         C through shared memory and TMA stores; 2: the same, deferred into
//         the next tile's k-loop; CONSUMERS=2, CLUSTER_M=1), SPLIT_K (1|2|4: share the last, partly idle round
//         of the persistent grid out along K, stream-K style; with EPI_TMA>=1, CLUSTER_M=1),
//         PINGPONG (0|1: each consumer warpgroup on a 64*WG_M-row tile of its own, one's epilogue
//         under the other's MMAs; CONSUMERS=2, CLUSTER_M=1, SPLIT_K=1, EPI_TMA<=1).
// The returned space is built once and shared (immutable, thread-safe).
const ConfigSpace& configSpace(KernelKind k);
// Shared memory (or LDS) per block that a config needs, in bytes: static and dynamic together
// (what the resource pre-check and the per-block limit compare).
int64_t sharedBytes(KernelKind k, const Config& c);
// The part of it a launch requests as dynamic shared memory (LaunchPlan::shared_bytes): all of it
// for the NVIDIA kernels (their tiles are `extern __shared__`), 0 for the MFMA kernel, whose LDS
// is static and already in its code object. Occupancy adds this to the code object's static
// part (occupancySharedBytes), so nothing is counted twice.
int64_t launchSharedBytes(KernelKind k, const Config& c);

// Problem-level check: kUnsupported with the reason when this kernel/config cannot compute this
// problem (e.g. skinny needs layout NT and 16-byte alignment; SPLIT_K leaves empty K slices;
// MFMA path needs 16-byte alignment). Never lets a config give a wrong answer.
Status applicable(KernelKind k, const Config& c, const GemmShape& s);

// -D defines for compiling `c` for problem `s` (config knobs + dtype/layout/epilogue/alignment).
std::vector<std::pair<std::string, std::string>> defines(KernelKind k, const Config& c,
                                                         const GemmShape& s);

// One launch. Split-K configs need a zero-initialised fp32 workspace of workspace_bytes and
// `counters` zero-initialised uint32 counters; the kernel leaves both zero again, so the caller
// zeroes them once per allocation (not per launch) and must not share them across streams.
struct LaunchPlan {
  Dim3 grid, block;
  int64_t shared_bytes = 0;   // dynamic shared memory (0 for MFMA: its LDS is static)
  int64_t workspace_bytes = 0;
  int64_t counters = 0;
  // A persistent grid of clusters of this many blocks (1: none): grid.x is an upper bound, and a
  // launch runs the clusters of the loaded kernel resident at once (residentClusterGrid).
  int64_t persistent_cluster = 1;
};
// kOutOfResources when the config's shared memory exceeds dev.shared_per_block_optin (or LDS on
// AMD: shared_per_block); kUnsupported from applicable(); kInvalidArgument from validate().
Expected<LaunchPlan> launchPlan(KernelKind k, const Config& c, const GemmShape& s,
                                const DeviceInfo& dev);

// Scratch of a kTma config with SPLIT_K > 1 on a persistent grid of `blocks` blocks: one
// BLOCK_M x BLOCK_N fp32 slot and CONSUMERS counters per block (see gemm/tma/tma.cuh).
struct TmaSplitScratch {
  int64_t workspace_bytes = 0, counters = 0;
};
TmaSplitScratch tmaSplitScratch(const Config& c, int64_t blocks);
// Whether a kTma config's split tail (SPLIT_K > 1; `c` its knobs, no KIND) shares nothing out for
// shape `s` on `dev`: the kernel's own schedule (tma_schedule.cuh's make_sched on the grid
// launchPlan gives it) then takes every tile whole, as its SPLIT_K = 1 twin does, e.g. a last round
// of more than 60% of the SMs (4096^3 on 132 SMs: 116 of 132 tiles). Only the exchange code the
// kernel never runs and the scratch differ. False for SPLIT_K = 1 or a config the shape or device
// refuses.
bool tmaSplitTailIdle(const Config& c, const GemmShape& s, const DeviceInfo& dev);

// The TMA tensor maps a kTma launch needs (A and B as stored — rows x cols = M x K or K x M, N x K
// or K x N by layout; C: rows M, cols N; boxes 128 bytes wide with the 128-byte swizzle, 64 rows
// unless a TmaBoxRows says otherwise, C always 64 x 64), for
// Backend::encodeTensorMap2D. A and B are only meaningful with the 16-byte path (applicable()
// checks that first); C only for 16-bit C with a
// 16-byte aligned base and ldc (checkTensorMap2D refuses the others: the kernel's threads then
// copy the staged C themselves, or store an fp32 C from registers; see gemm/tma/tma.cuh's c_tma_ok).
struct TmaDescriptors {
  TensorMap2DDesc a, b, c;
};
// The maps' L2 promotion per operand (TensorMap2DDesc::l2_promotion_bytes). A kTma config may name
// it per operand with TMA_L2A / TMA_L2B / TMA_L2C, probe knobs outside the tuning space
// (ConfigSpace::addOptionalInts: 0, 128 or 256; never enumerated), kTmaL2Promotion when absent.
// They are host-side only: not defines (gemm::defines leaves them out), so configs that differ in
// them share one compiled kernel. Only the runner (gemm_bench, the GPU tests) reads them: the tuned
// op's maps take the defaults (their boxes follow the config: tmaBoxRows): A 128 bytes (a box
// row of 16-bit A), B and C 256. A at 128 measured 0.4-1.2% faster at 3000x5000x1000 (NT and NN,
// the four-block clusters) and level (within 0.3%) at 4096^3, 4096x6144x4096 and 4096x4096x14336;
// B at 128 and both at 0 gained less (bench/NOTES.md, issue 33: the tma maps' L2 promotion).
struct TmaL2Promotion {
  int a = 128, b = 256, c = 256;
};
inline constexpr TmaL2Promotion kTmaL2Promotion{};
TmaL2Promotion tmaL2Promotion(const Config& c);
bool isHostOnlyKnob(KernelKind k, const std::string& name);
// Rows of the A and B maps' boxes. A kTma config loads a K-major operand in one box per stage: A's
// whole block tile (BLOCK_M <= 256 rows, the TMA box limit) and B's whole tile (BLOCK_N rows, or
// its 1 / CLUSTER_M part each block of a cluster multicasts), so a 176-wide tile receives exactly
// 176 rows; an MN-major operand (64 k rows x 64 columns) and the gate/up pair's B (64-row boxes of
// gate, then of up rows) keep 64. The kernel issues its copies for exactly these boxes (tma.cuh's
// kABoxRows / kBBoxRows) and waits for their bytes: every kTma launch must pass the maps of
// tmaBoxRows(config, shape). The other kinds (the decode kind's unread kTma tail) take kTmaBoxRows.
// TMA_ABOX / TMA_BBOX = 64, probe knobs outside the tuning space (ConfigSpace::addOptionalInts,
// never enumerated), load A / B in 64-row boxes as before the one-box copies (for A/B runs of the
// two). They are defines the kernel reads (tma.cuh's kABoxRows / kBOneBox) and tmaBoxRows reads
// the same knobs, so the maps and the copies agree; a config without them has no such define.
struct TmaBoxRows {
  uint32_t a = 64, b = 64;
};
inline constexpr TmaBoxRows kTmaBoxRows{};
TmaBoxRows tmaBoxRows(const Config& c, const GemmShape& s);
TmaDescriptors tmaDescriptors(const GemmShape& s, DevicePtr a, DevicePtr b, DevicePtr c,
                              TmaL2Promotion l2 = kTmaL2Promotion, TmaBoxRows boxes = kTmaBoxRows);

// The decode kernel's TMA-fed body (DC_WG = 2) takes, after the common arguments, the kTma
// launch's tail (tmaDescriptors' maps, c_ok, the two scale pointers; not read) and then the three
// maps of decodeDescriptors (128-byte swizzle, boxes 64 k wide): A in boxes of decodeABoxRows(M) =
// min(8*DC_MT, 64) rows (a function of M alone: DC_MT is M's tier), then the weights [N][K] in
// boxes of 64 rows, then the same in boxes of 32 rows (the A-row split pair, DC_GRID = 7) or, for
// the gate/up pair (Activation::kSiluMul), decodePairMap: the weights viewed as [2][N/2][K] in
// boxes of 2 x 32 rows, so one request lands 32 gate rows and the 32 up rows of the same columns
// as one 64-row box in the same swizzle (the pair when a warpgroup has one slab). Other configs
// take no maps.
// The weight maps' L2 promotion (TensorMap2DDesc::l2_promotion_bytes) is the config's DC_L2P, a
// probe knob outside the tuning space (ConfigSpace::addOptionalInts: 0, 128 or 256, the TMA-fed
// body only), kDecodeL2Promotion when absent. Only the runner (gemm_bench, the GPU tests) reads
// it: the tuned op's maps take the default.
// 128 bytes (a box row: 64 k of 16-bit weights) rather than the 256 of the other maps: measured
// 3-6% faster at the wide 16-row shapes, 0 level with 128 (bench/NOTES.md, issue 32). A's map
// keeps 256.
bool decodeTakesTensorMaps(KernelKind k, const Config& c);
inline constexpr int kDecodeL2Promotion = 128;
int decodeL2Promotion(const Config& c);
int64_t decodeABoxRows(int64_t m);
TensorMap2DDesc decodeAMap(const GemmShape& s, DevicePtr a);
TensorMap2DDesc decodeBMap(const GemmShape& s, DevicePtr b, uint32_t box_rows,
                           int l2_promotion = kDecodeL2Promotion);
TensorMap2DDesc decodePairMap(const GemmShape& s, DevicePtr b, int l2_promotion = kDecodeL2Promotion);
TmaDescriptors decodeDescriptors(const GemmShape& s, DevicePtr a, DevicePtr b,
                                 int l2_promotion = kDecodeL2Promotion);

// A small hand-picked list of good configs for this problem, best first (the default config when
// tuning is off, the candidate set of the tuned op without a full space, the "small tuned set" of
// the benchmarks). Data, not code: templates/gemm/curated.json, built into the library, looked up
// per kernel as device:<name> -> arch:<arch> -> vendor:<cuda|hip> -> default (the first level
// present wins). Every returned config passes configSpace(k).validate() and applicable(k, c, s);
// duplicates are dropped. This form knows no device: the vendor and default levels only.
std::vector<Config> curatedConfigs(KernelKind k, const GemmShape& s);
// The same for a device, with a user overlay file in the same format (empty: none; the tuned op
// passes Options::curated_path, KTUNE_CURATED): at each level the overlay's list comes before
// the shipped one. kInvalidArgument / kNotFound when the overlay cannot be read or parsed.
Expected<std::vector<Config>> curatedConfigs(KernelKind k, const GemmShape& s, const DeviceInfo& dev,
                                             const std::string& overlay_path);
// kInvalidArgument naming the problem when `json_text` is not a valid curated table.
Status checkCuratedTable(std::string_view json_text);

// float64 reference. a, b, c_in are the stored matrices (with the shape's leading dims) already
// converted to float; c_in may be null when beta == 0, bias null when !has_bias. Returns
// M*outCols(s) values, row-major dense. kGelu uses the erf form.
std::vector<double> reference(const GemmShape& s, const float* a, const float* b,
                              const float* c_in, const float* bias);

}  // namespace ktune::gemm
