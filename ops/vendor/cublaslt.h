// cuBLASLt as a vendor candidate for ktune's GEMM: heuristic algorithms, running one algorithm,
// and a stable id per algorithm so a tuning database can record and re-create it.
//
// libcublasLt is opened with dlopen (libcublasLt.so.13, .so.12, .so, then any extra paths the
// caller gives); the few types and prototypes used are declared here (stable C ABI), so no CUDA
// header is needed at build time. Problems are row-major, as everywhere in ktune: the wrapper maps
// row-major C = op(A) op(B) to cuBLASLt's column-major C^T = op(B)^T op(A)^T.
//
// Thread safety: a CublasLt object may be used from several threads at once (the cuBLASLt handle
// is thread-safe; run()'s cached descriptors are read-only once built, and the bias pointer is set
// and used under the cache's lock). Every call needs the CUDA context that owns the
// buffers current on the calling thread (Backend::setDevice does that).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/dylib.h"
#include "base/status.h"
#include "runtime/backend.h"

namespace ktune::cublaslt {

// The one cuBLASLt workspace size of ktune: the GEMM op's candidates and reference, the tuning-off
// default and bench/ all ask the heuristic with it and give every algorithm this much, so
// "heuristic #0" names the same algorithm everywhere (the heuristic's choice depends on it).
// 32 MiB is what NVIDIA's cuBLAS documentation recommends for Hopper.
constexpr int64_t kWorkspaceBytes = int64_t(32) << 20;

// kF8E4M3 / kF8E5M2: FP8 inputs (A and B only; cuBLASLt takes e4m3 x e4m3, e4m3 x e5m2 and
// e5m2 x e4m3, not e5m2 x e5m2, and only the "TN" column-major form: ktune's layout NT).
enum class LtType { kF16, kBF16, kF32, kF8E4M3, kF8E5M2 };

// Row-major GEMM: C[M][N] = alpha * op(A) * op(B) + beta * C (+ bias[N]).
// trans_a: A stored [K][M] (else [M][K]); trans_b: B stored [N][K] (else [K][N]).
struct LtProblem {
  bool trans_a = false, trans_b = false;
  LtType ab = LtType::kBF16;  // A and B
  LtType c = LtType::kBF16;   // C, D and bias
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  float alpha = 1.0f, beta = 0.0f;
  bool bias = false;  // bias has N elements of type `c`
  // FP8 inputs: per-tensor scales (device floats; 0 = 1), per call like alpha and the pointers,
  // and CUBLASLT_MATMUL_DESC_FAST_ACCUM (accumulate in the tensor cores' own fp32 accumulator
  // throughout, as ktune's fp8 kernel does; false: cuBLASLt's slower periodic promotion).
  DevicePtr scale_a = 0, scale_b = 0;
  bool fast_accum = true;
};
inline bool isFp8(LtType t) { return t == LtType::kF8E4M3 || t == LtType::kF8E5M2; }

// One algorithm from the heuristic. The 64 algo bytes re-create it with the same library version.
struct LtAlgo {
  int index = 0;  // rank in the heuristic's list (0 = the library's first choice)
  std::array<uint64_t, 8> bytes{};
  int64_t workspace_bytes = 0;
  float waves = 0;
  // The output tile in cuBLASLt's column-major terms: tile_m along its m (the row-major problem's
  // N), tile_n along its n (M); from CUBLASLT_ALGO_CONFIG_TILE_ID, 0 when unknown (an id()-parsed
  // algorithm, a library without the attribute call, a tile id newer than ltTileShape's table).
  int tile_m = 0, tile_n = 0;
  // CUBLASLT_ALGO_CONFIG_SPLITK_NUM (1: no split); 0 when unknown, as the tile.
  int split_k = 0;
  // "cublaslt:idx=3:algo=<128 hex digits>".
  std::string id() const;
  // Inverse of id(); kInvalidArgument naming the defect otherwise.
  static Expected<LtAlgo> parse(const std::string& id);
};

// What cuBLASLt and hipBLASLt share (both libraries are column-major): the row-major problem seen
// as D^T (N x M) = op(B^T) (N x K) * op(A^T) (K x M), so the library's "A" is our B and its "B"
// our A. Pure functions.
struct LtColumnMajor {
  bool trans_lt_a = false, trans_lt_b = false;  // op of the library's A (our B) and B (our A)
  uint64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0, c_rows = 0, c_cols = 0;
  int64_t a_ld = 0, b_ld = 0, c_ld = 0;
};
LtColumnMajor columnMajorView(const LtProblem& p);
// kInvalidArgument naming `lib` and the defect: non-positive dims, short leading dims, f32 inputs;
// kUnsupported for fp8 inputs in another layout than NT; kInvalidArgument for fp8 scale pointers
// that are not 16-byte aligned.
Status checkLtProblem(const LtProblem& p, const std::string& lib);
// The shape (m x n, cuBLASLt's terms) of a cublasLtMatmulTile_t id; false for an unknown id
// (ops/vendor/cublaslt_tiles.cc, generated from cublasLt.h by dev/gen_lt_tiles.py).
bool ltTileShape(uint32_t id, int* m, int* n);

// "<lib>:idx=<index>:algo=<2*n hex digits>" for an opaque algorithm of n bytes.
std::string algoId(const std::string& lib, int index, const void* bytes, size_t n);
// Inverse of algoId; kInvalidArgument naming the defect (wrong library, bad index, length, digit).
Status parseAlgoId(const std::string& id, const std::string& lib, int* index, void* bytes, size_t n);

// Starts loading libcublasLt (the names open() tries first) on a thread of its own, once per
// process, after loading the CUDA driver's library on the calling thread (a dlopen waits for
// another thread's). A tuning process and its worker call it once the driver has started
// (Options::lt_preload, KTUNE_LT_PRELOAD: beside cuInit the load held cuInit back by 50-60 ms),
// so the library's 50-70 ms of loading overlap the context's creation instead of following it;
// open() then finds it loaded. Without the library, nothing.
void preloadLibrary();

class CublasLt {
 public:
  ~CublasLt();
  CublasLt(const CublasLt&) = delete;
  CublasLt& operator=(const CublasLt&) = delete;

  // Opens the library and creates a handle. kUnavailable (listing every name tried) when the
  // library is missing; kUnavailable with the cuBLAS status when the handle cannot be created
  // (e.g. no GPU / no current context).
  static Expected<std::unique_ptr<CublasLt>> open(const std::vector<std::string>& extra_paths = {});

  // "cublasLt 130000 (<path>)".
  std::string version() const;

  // Up to max_algos algorithms the heuristic proposes for `p` with at most max_workspace bytes of
  // workspace, best first. kUnsupported when cuBLASLt proposes none; kInvalidArgument for a bad
  // problem (non-positive dims, short leading dims).
  Expected<std::vector<LtAlgo>> heuristics(const LtProblem& p, int max_algos,
                                           int64_t max_workspace) const;

  // Runs `algo` (or, with nullptr, the heuristic's first choice) on `stream` (a CUstream). The
  // workspace must hold algo->workspace_bytes. Asynchronous: errors of the kernel itself show up at
  // the next synchronisation. kLaunchError with the cuBLAS status on failure.
  Status run(const LtProblem& p, const LtAlgo* algo, DevicePtr a, DevicePtr b, DevicePtr c,
             DevicePtr bias, DevicePtr workspace, int64_t workspace_bytes,
             StreamHandle stream = {}) const;

  // Descriptor sets built so far by run() (one per distinct problem: run() keeps them, keyed by
  // the problem, so a repeated call does no descriptor work). For tests and benches.
  int64_t descriptorBuilds() const;
  // cuBLASLt handles created by open() and not yet destroyed, in this process (a destructor
  // that forgot cublasLtDestroy shows here).
  static int liveHandles();

  struct Api;        // the dlopen'ed entry points (defined in cublaslt.cc)
  struct DescCache;  // run()'s descriptors per problem (defined in cublaslt.cc)

 private:
  CublasLt();
  DynLib lib_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<DescCache> cache_;
  void* handle_ = nullptr;
  size_t version_ = 0;
};

}  // namespace ktune::cublaslt
