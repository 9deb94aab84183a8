#include "ops/vendor/cublaslt.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "base/clock.h"
#include "base/format.h"
#include "base/timeline.h"

namespace ktune::cublaslt {

namespace {

// The few cuBLASLt / CUDA library declarations used (values from cublasLt.h, cublas_api.h and
// library_types.h of CUDA 12/13; these enum values are part of the stable ABI).
using LtStatus = int;
using LtHandle = void*;
using LtDesc = void*;
using LtLayout = void*;
using LtPref = void*;
struct LtAlgoRaw {
  uint64_t data[8];
};
struct LtHeuristicResult {
  LtAlgoRaw algo;
  size_t workspaceSize;
  LtStatus state;
  float wavesCount;
  int reserved[4];
};
constexpr int kCudaR16F = 2, kCudaR16BF = 14, kCudaR32F = 0, kCudaR8FE4M3 = 28, kCudaR8FE5M2 = 29;
constexpr int kComputeF32 = 68;  // CUBLAS_COMPUTE_32F
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7, kDescBiasPointer = 8;
constexpr int kDescAScalePointer = 17, kDescBScalePointer = 18, kDescFastAccum = 25;
constexpr uint32_t kEpilogueDefault = 1, kEpilogueBias = 4;
constexpr int kPrefMaxWorkspace = 1;
constexpr int kAlgoConfigTileId = 1;    // CUBLASLT_ALGO_CONFIG_TILE_ID (uint32_t)
constexpr int kAlgoConfigSplitKNum = 2;  // CUBLASLT_ALGO_CONFIG_SPLITK_NUM (int32_t)
constexpr int kOpN = 0, kOpT = 1;

int cudaType(LtType t) {
  switch (t) {
    case LtType::kF16: return kCudaR16F;
    case LtType::kBF16: return kCudaR16BF;
    case LtType::kF8E4M3: return kCudaR8FE4M3;
    case LtType::kF8E5M2: return kCudaR8FE5M2;
    default: return kCudaR32F;
  }
}

// RAII for the per-call descriptors.
struct Descs {
  LtDesc op = nullptr;
  LtLayout a = nullptr, b = nullptr, c = nullptr;
};

}  // namespace

struct CublasLt::Api {
  LtStatus (*create)(LtHandle*) = nullptr;
  LtStatus (*destroy)(LtHandle) = nullptr;
  size_t (*getVersion)() = nullptr;
  LtStatus (*descCreate)(LtDesc*, int, int) = nullptr;
  LtStatus (*descDestroy)(LtDesc) = nullptr;
  LtStatus (*descSet)(LtDesc, int, const void*, size_t) = nullptr;
  LtStatus (*layoutCreate)(LtLayout*, int, uint64_t, uint64_t, int64_t) = nullptr;
  LtStatus (*layoutDestroy)(LtLayout) = nullptr;
  LtStatus (*prefCreate)(LtPref*) = nullptr;
  LtStatus (*prefDestroy)(LtPref) = nullptr;
  LtStatus (*prefSet)(LtPref, int, const void*, size_t) = nullptr;
  LtStatus (*heuristic)(LtHandle, LtDesc, LtLayout, LtLayout, LtLayout, LtLayout, LtPref, int,
                        LtHeuristicResult*, int*) = nullptr;
  // Optional (null when the library lacks it): an algorithm's config attribute.
  LtStatus (*configGet)(const LtAlgoRaw*, int, void*, size_t, size_t*) = nullptr;
  LtStatus (*matmul)(LtHandle, LtDesc, const void*, const void*, LtLayout, const void*, LtLayout,
                     const void*, const void*, LtLayout, void*, LtLayout, const LtAlgoRaw*, void*,
                     size_t, void*) = nullptr;

  void release(Descs& d) const {
    if (d.op) descDestroy(d.op);
    if (d.a) layoutDestroy(d.a);
    if (d.b) layoutDestroy(d.b);
    if (d.c) layoutDestroy(d.c);
    d = Descs{};
  }
};

namespace {

Status ltError(const char* what, LtStatus st) {
  return Status::LaunchError(std::string("cuBLASLt ") + what + " failed with cublasStatus " +
                             std::to_string(st));
}

Status makeDescs(const CublasLt::Api& api, const LtProblem& p, Descs& d) {
  LtStatus st = api.descCreate(&d.op, kComputeF32, kCudaR32F);
  if (st) return ltError("MatmulDescCreate", st);
  const LtColumnMajor v = columnMajorView(p);
  const int32_t op_lt_a = v.trans_lt_a ? kOpT : kOpN;
  const int32_t op_lt_b = v.trans_lt_b ? kOpT : kOpN;
  if ((st = api.descSet(d.op, kDescTransA, &op_lt_a, sizeof(op_lt_a))))
    return ltError("set TRANSA", st);
  if ((st = api.descSet(d.op, kDescTransB, &op_lt_b, sizeof(op_lt_b))))
    return ltError("set TRANSB", st);
  const uint32_t epi = p.bias ? kEpilogueBias : kEpilogueDefault;
  if ((st = api.descSet(d.op, kDescEpilogue, &epi, sizeof(epi)))) return ltError("set EPILOGUE", st);
  if (isFp8(p.ab)) {
    const int8_t fast = p.fast_accum ? 1 : 0;
    if ((st = api.descSet(d.op, kDescFastAccum, &fast, sizeof(fast)))) return ltError("set FAST_ACCUM", st);
  }
  if ((st = api.layoutCreate(&d.a, cudaType(p.ab), v.a_rows, v.a_cols, v.a_ld)))
    return ltError("MatrixLayoutCreate(B)", st);
  if ((st = api.layoutCreate(&d.b, cudaType(p.ab), v.b_rows, v.b_cols, v.b_ld)))
    return ltError("MatrixLayoutCreate(A)", st);
  if ((st = api.layoutCreate(&d.c, cudaType(p.c), v.c_rows, v.c_cols, v.c_ld)))
    return ltError("MatrixLayoutCreate(C)", st);
  return Status::Ok();
}

std::atomic<int> g_live_handles{0};

// The fields of a problem that shape its descriptors (alpha, beta and pointers are per call).
struct ProblemKey {
  bool trans_a, trans_b, bias, fast_accum;
  LtType ab, c;
  int64_t m, n, k, lda, ldb, ldc;
  bool operator==(const ProblemKey&) const = default;
};
ProblemKey keyOf(const LtProblem& p) {
  return {p.trans_a, p.trans_b, p.bias, p.fast_accum, p.ab, p.c, p.m, p.n, p.k, p.lda, p.ldb, p.ldc};
}
struct ProblemHash {
  size_t operator()(const ProblemKey& k) const {
    size_t h = (size_t(k.trans_a) | size_t(k.trans_b) << 1 | size_t(k.bias) << 2 |
                size_t(k.ab) << 3 | size_t(k.c) << 6 | size_t(k.fast_accum) << 9);
    for (int64_t v : {k.m, k.n, k.k, k.lda, k.ldb, k.ldc})
      h ^= std::hash<int64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
  }
};
// Bound on the cached descriptor sets; past it the cache starts over (a process with that many
// GEMM shapes pays the rebuild, nobody else).
constexpr size_t kMaxCachedProblems = 256;

}  // namespace

struct CublasLt::DescCache {
  std::mutex mu;
  std::unordered_map<ProblemKey, std::shared_ptr<Descs>, ProblemHash> map;
  int64_t builds = 0;
};

LtColumnMajor columnMajorView(const LtProblem& p) {
  LtColumnMajor v;
  v.trans_lt_a = p.trans_b;  // B [N][K] row-major = K x N col-major
  v.trans_lt_b = p.trans_a;  // A [K][M] row-major = M x K col-major
  v.a_rows = static_cast<uint64_t>(p.trans_b ? p.k : p.n);
  v.a_cols = static_cast<uint64_t>(p.trans_b ? p.n : p.k);
  v.a_ld = p.ldb;
  v.b_rows = static_cast<uint64_t>(p.trans_a ? p.m : p.k);
  v.b_cols = static_cast<uint64_t>(p.trans_a ? p.k : p.m);
  v.b_ld = p.lda;
  v.c_rows = static_cast<uint64_t>(p.n);
  v.c_cols = static_cast<uint64_t>(p.m);
  v.c_ld = p.ldc;
  return v;
}

Status checkLtProblem(const LtProblem& p, const std::string& lib) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0)
    return Status::InvalidArgument(lib + " GEMM dims must be positive");
  const int64_t a_cols = p.trans_a ? p.m : p.k, b_cols = p.trans_b ? p.k : p.n;
  if (p.lda < a_cols || p.ldb < b_cols || p.ldc < p.n)
    return Status::InvalidArgument(lib + " GEMM leading dimension shorter than a row");
  if (p.ab == LtType::kF32) return Status::InvalidArgument(lib + " candidates take f16/bf16 inputs");
  if (isFp8(p.ab) && lib != "cuBLASLt")
    return Status::Unsupported(lib + " candidates take no fp8 inputs in ktune");
  if (isFp8(p.ab) && (p.trans_a || !p.trans_b))
    return Status::Unsupported(lib + " FP8 GEMM needs A [M][K] and B [N][K] (layout NT)");
  // A scale pointer 4 bytes into an allocation made cublasLtMatmul fail where the same scale in an
  // allocation of its own worked (bench/NOTES.md, "FP8 and prefill (issue 33)").
  if (isFp8(p.ab) && ((p.scale_a | p.scale_b) & 15) != 0)
    return Status::InvalidArgument(lib + " FP8 GEMM needs 16-byte aligned scale pointers");
  return Status::Ok();
}

std::string algoId(const std::string& lib, int index, const void* bytes, size_t n) {
  std::string s = lib + ":idx=" + std::to_string(index) + ":algo=";
  static const char kHex[] = "0123456789abcdef";
  const auto* b = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < n; ++i) {
    s += kHex[b[i] >> 4];
    s += kHex[b[i] & 15];
  }
  return s;
}

Status parseAlgoId(const std::string& id, const std::string& lib, int* index, void* bytes, size_t n) {
  const std::string prefix = lib + ":idx=";
  if (id.rfind(prefix, 0) != 0)
    return Status::InvalidArgument("not a " + lib + " algorithm id (expected '" + prefix + "N:algo=HEX'): " + id);
  const size_t colon = id.find(":algo=", prefix.size());
  if (colon == std::string::npos) return Status::InvalidArgument(lib + " algorithm id lacks ':algo=': " + id);
  const std::string idx = id.substr(prefix.size(), colon - prefix.size());
  if (idx.empty() || idx.size() > 6 || idx.find_first_not_of("0123456789") != std::string::npos)
    return Status::InvalidArgument(lib + " algorithm id has a bad index: " + id);
  *index = std::stoi(idx);
  const std::string hex = id.substr(colon + 6);
  if (hex.size() != 2 * n)
    return Status::InvalidArgument(lib + " algorithm id needs " + std::to_string(2 * n) +
                                   " hex digits, got " + std::to_string(hex.size()));
  auto digit = [](char ch) {
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                            : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
  };
  auto* out = static_cast<unsigned char*>(bytes);
  for (size_t i = 0; i < n; ++i) {
    const int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return Status::InvalidArgument(lib + " algorithm id has a non-hex digit in '" + hex + "'");
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return Status::Ok();
}

// The 64 algo bytes as eight 64-bit words, printed most significant digit first (the id format
// databases already hold).
std::string LtAlgo::id() const {
  unsigned char be[64];
  for (int w = 0; w < 8; ++w)
    for (int b = 0; b < 8; ++b) be[w * 8 + b] = static_cast<unsigned char>(bytes[w] >> (56 - 8 * b));
  return algoId("cublaslt", index, be, sizeof(be));
}

Expected<LtAlgo> LtAlgo::parse(const std::string& id) {
  LtAlgo a;
  unsigned char be[64];
  KTUNE_RETURN_IF_ERROR(parseAlgoId(id, "cublaslt", &a.index, be, sizeof(be)));
  for (int w = 0; w < 8; ++w) {
    uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v = (v << 8) | be[w * 8 + b];
    a.bytes[w] = v;
  }
  return a;
}

CublasLt::CublasLt() : cache_(std::make_unique<DescCache>()) {}

CublasLt::~CublasLt() {
  cache_.reset();  // descriptors first: their deleters use api_
  if (handle_ && api_ && api_->destroy) {
    api_->destroy(handle_);
    g_live_handles.fetch_sub(1);
  }
}

int CublasLt::liveHandles() { return g_live_handles.load(); }

int64_t CublasLt::descriptorBuilds() const {
  std::lock_guard<std::mutex> lock(cache_->mu);
  return cache_->builds;
}

namespace {
const char* const kLibraryNames[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
}  // namespace

void preloadLibrary() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Both handles stay open for the process's life (open()'s dlopen takes another reference).
    (void)::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    std::thread([] {
      for (const char* n : kLibraryNames)
        if (::dlopen(n, RTLD_NOW | RTLD_LOCAL) != nullptr) break;
      timelineMark("cublaslt_preloaded");
    }).detach();
  });
}

Expected<std::unique_ptr<CublasLt>> CublasLt::open(const std::vector<std::string>& extra_paths) {
  std::vector<std::string> names(std::begin(kLibraryNames), std::end(kLibraryNames));
  names.insert(names.end(), extra_paths.begin(), extra_paths.end());
  const auto t0 = std::chrono::steady_clock::now();
  KTUNE_ASSIGN_OR_RETURN(DynLib lib, DynLib::open(names, "cuBLASLt (libcublasLt)"));
  const double dlopen_ms = msSince(t0);
  std::unique_ptr<CublasLt> lt(new CublasLt());
  lt->api_ = std::make_unique<Api>();
  Api& a = *lt->api_;
  KTUNE_RETURN_IF_ERROR(lib.bind(a.create, "cublasLtCreate"));
  KTUNE_RETURN_IF_ERROR(lib.bind(a.destroy, "cublasLtDestroy"));
  KTUNE_RETURN_IF_ERROR(lib.bind(a.getVersion, "cublasLtGetVersion"));
  KTUNE_RETURN_IF_ERROR(lib.bind(a.descCreate, "cublasLtMatmulDescCreate"));
  KTUNE_RETURN_IF_ERROR(lib.bind(a.descDestroy, "cublasLtMatmulDescDestroy"));
  KTUNE_RETURN_IF_ERROR(lib.bind(a.descSet, "cublasLtMatmulDescSetAttribute"));
  KTUNE_RETURN_IF_ERROR(lib.bind(a.layoutCreate, "cublasLtMatrixLayoutCreate"));
  KTUNE_RETURN_IF_ERROR(lib.bind(a.layoutDestroy, "cublasLtMatrixLayoutDestroy"));
  KTUNE_RETURN_IF_ERROR(lib.bind(a.prefCreate, "cublasLtMatmulPreferenceCreate"));
  KTUNE_RETURN_IF_ERROR(lib.bind(a.prefDestroy, "cublasLtMatmulPreferenceDestroy"));
  KTUNE_RETURN_IF_ERROR(lib.bind(a.prefSet, "cublasLtMatmulPreferenceSetAttribute"));
  KTUNE_RETURN_IF_ERROR(lib.bind(a.heuristic, "cublasLtMatmulAlgoGetHeuristic"));
  KTUNE_RETURN_IF_ERROR(lib.bind(a.matmul, "cublasLtMatmul"));
  if (!lib.bind(a.configGet, "cublasLtMatmulAlgoConfigGetAttribute").ok()) a.configGet = nullptr;
  lt->version_ = a.getVersion();
  const LtStatus st = a.create(&lt->handle_);
  if (st != 0 || !lt->handle_)
    return Status::Unavailable("cublasLtCreate failed with cublasStatus " + std::to_string(st) +
                               " (is a CUDA device present and its context current?)");
  g_live_handles.fetch_add(1);
  lt->lib_ = std::move(lib);
  if (timelineOn())
    timelineMark("cublaslt_open",
                 strprintf("dlopen %.1f create %.1f", dlopen_ms, msSince(t0) - dlopen_ms));
  return lt;
}

std::string CublasLt::version() const {
  return "cublasLt " + std::to_string(version_) + " (" + lib_.path() + ")";
}

Expected<std::vector<LtAlgo>> CublasLt::heuristics(const LtProblem& p, int max_algos,
                                                   int64_t max_workspace) const {
  KTUNE_RETURN_IF_ERROR(checkLtProblem(p, "cuBLASLt"));
  if (max_algos <= 0) return Status::InvalidArgument("max_algos must be positive");
  Descs d;
  Status s = makeDescs(*api_, p, d);
  if (!s.ok()) {
    api_->release(d);
    return s;
  }
  LtPref pref = nullptr;
  LtStatus st = api_->prefCreate(&pref);
  if (st) {
    api_->release(d);
    return ltError("MatmulPreferenceCreate", st);
  }
  const uint64_t ws = static_cast<uint64_t>(std::max<int64_t>(0, max_workspace));
  api_->prefSet(pref, kPrefMaxWorkspace, &ws, sizeof(ws));
  std::vector<LtHeuristicResult> res(static_cast<size_t>(max_algos));
  int found = 0;
  const auto t_h = std::chrono::steady_clock::now();
  st = api_->heuristic(handle_, d.op, d.a, d.b, d.c, d.c, pref, max_algos, res.data(), &found);
  api_->prefDestroy(pref);
  api_->release(d);
  if (timelineOn())
    timelineMark("cublaslt_heuristic", strprintf("%.1f ms %d found", msSince(t_h), found));
  if (st) return ltError("MatmulAlgoGetHeuristic", st);
  std::vector<LtAlgo> out;
  for (int i = 0; i < found; ++i) {
    if (res[i].state != 0) continue;
    LtAlgo a;
    a.index = i;
    std::memcpy(a.bytes.data(), res[i].algo.data, sizeof(a.bytes));
    a.workspace_bytes = static_cast<int64_t>(res[i].workspaceSize);
    a.waves = res[i].wavesCount;
    // The tile and split-K count where the library says (the wide-tile rule, autotune/predict.h).
    auto attr = [&](int which, auto* v) {
      size_t written = 0;
      return api_->configGet &&
             api_->configGet(&res[i].algo, which, v, sizeof(*v), &written) == 0 &&
             written == sizeof(*v);
    };
    uint32_t tile = 0;
    if (attr(kAlgoConfigTileId, &tile) && !ltTileShape(tile, &a.tile_m, &a.tile_n))
      a.tile_m = a.tile_n = 0;
    int32_t split = 0;
    a.split_k = attr(kAlgoConfigSplitKNum, &split) && split > 0 ? split : 0;
    out.push_back(a);
  }
  if (out.empty()) return Status::Unsupported("cuBLASLt proposes no algorithm for this GEMM");
  return out;
}

Status CublasLt::run(const LtProblem& p, const LtAlgo* algo, DevicePtr a, DevicePtr b, DevicePtr c,
                     DevicePtr bias, DevicePtr workspace, int64_t workspace_bytes,
                     StreamHandle stream) const {
  KTUNE_RETURN_IF_ERROR(checkLtProblem(p, "cuBLASLt"));
  if (!a || !b || !c) return Status::InvalidArgument("cuBLASLt GEMM needs non-null A, B and C");
  if (p.bias && !bias) return Status::InvalidArgument("cuBLASLt GEMM with bias needs a bias pointer");
  LtAlgo chosen;
  if (!algo) {
    KTUNE_ASSIGN_OR_RETURN(auto list, heuristics(p, 1, workspace_bytes));
    chosen = list.front();
    algo = &chosen;
  }
  if (algo->workspace_bytes > workspace_bytes)
    return Status::InvalidArgument("cuBLASLt algorithm needs " + std::to_string(algo->workspace_bytes) +
                                   " B of workspace, got " + std::to_string(workspace_bytes));
  std::unique_lock<std::mutex> lock(cache_->mu);
  std::shared_ptr<Descs>& slot = cache_->map[keyOf(p)];
  if (!slot) {
    if (cache_->map.size() > kMaxCachedProblems) {
      cache_->map.clear();
      lock.unlock();
      return run(p, algo, a, b, c, bias, workspace, workspace_bytes, stream);
    }
    const Api* api = api_.get();
    auto fresh = std::shared_ptr<Descs>(new Descs, [api](Descs* d) {
      api->release(*d);
      delete d;
    });
    Status s = makeDescs(*api_, p, *fresh);
    if (!s.ok()) {
      cache_->map.erase(keyOf(p));
      return s;
    }
    ++cache_->builds;
    slot = std::move(fresh);
  }
  const std::shared_ptr<Descs> d = slot;
  if (p.bias || isFp8(p.ab)) {
    // The bias and scale pointers live in the shared descriptor: set and used under the lock.
    const void* bp = reinterpret_cast<const void*>(bias);
    LtStatus st = p.bias ? api_->descSet(d->op, kDescBiasPointer, &bp, sizeof(bp)) : 0;
    if (st) return ltError("set BIAS_POINTER", st);
    if (isFp8(p.ab)) {
      // The library's A is our B (columnMajorView): the scales swap places too.
      const void* sa = reinterpret_cast<const void*>(p.scale_b);
      const void* sb = reinterpret_cast<const void*>(p.scale_a);
      if ((st = api_->descSet(d->op, kDescAScalePointer, &sa, sizeof(sa))))
        return ltError("set A_SCALE_POINTER", st);
      if ((st = api_->descSet(d->op, kDescBScalePointer, &sb, sizeof(sb))))
        return ltError("set B_SCALE_POINTER", st);
    }
  } else {
    lock.unlock();  // read-only descriptors: no lock needed while enqueuing
  }
  LtAlgoRaw raw;
  std::memcpy(raw.data, algo->bytes.data(), sizeof(raw.data));
  const LtStatus st = api_->matmul(
      handle_, d->op, &p.alpha, reinterpret_cast<const void*>(b), d->a, reinterpret_cast<const void*>(a),
      d->b, &p.beta, reinterpret_cast<const void*>(c), d->c, reinterpret_cast<void*>(c), d->c, &raw,
      reinterpret_cast<void*>(workspace), static_cast<size_t>(workspace_bytes), stream.p);
  if (st) return ltError("Matmul", st);
  return Status::Ok();
}

}  // namespace ktune::cublaslt
