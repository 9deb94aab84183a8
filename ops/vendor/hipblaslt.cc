#include "ops/vendor/hipblaslt.h"

#include <algorithm>
#include <cstring>

namespace ktune::vendor {

namespace {

// From hipBLASLt's hipblaslt.h and hipblas-common.h (ROCm 6+): hipDataType, hipblasComputeType_t,
// hipblasOperation_t and the descriptor/preference attribute numbers. They differ from cuBLASLt's
// (TRANSA is 0 here, 3 there; OP_N is 111, not 0).
constexpr int kHipR32F = 0, kHipR16F = 2, kHipR16BF = 14;
constexpr int kComputeF32 = 2;  // HIPBLAS_COMPUTE_32F
constexpr int kOpN = 111, kOpT = 112;
constexpr int kDescTransA = 0, kDescTransB = 1, kDescEpilogue = 2, kDescBiasPointer = 3,
              kDescBiasDataType = 4;
constexpr uint32_t kEpilogueDefault = 1, kEpilogueBias = 4;
constexpr int kPrefMaxWorkspace = 1;

struct AlgoRaw {  // hipblasLtMatmulAlgo_t
  uint8_t data[16];
  size_t max_workspace_bytes;
};
struct HeuristicResult {  // hipblasLtMatmulHeuristicResult_t
  AlgoRaw algo;
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};

int hipType(cublaslt::LtType t) {
  return t == cublaslt::LtType::kF16 ? kHipR16F : t == cublaslt::LtType::kBF16 ? kHipR16BF : kHipR32F;
}

Status hipLtError(const char* what, int st) {
  return Status::LaunchError(std::string("hipBLASLt ") + what + " failed with hipblasStatus " +
                             std::to_string(st));
}

}  // namespace

struct HipBlasLt::Api {
  using Desc = void*;
  int (*create)(void**) = nullptr;
  int (*destroy)(void*) = nullptr;
  int (*descCreate)(Desc*, int, int) = nullptr;
  int (*descDestroy)(Desc) = nullptr;
  int (*descSet)(Desc, int, const void*, size_t) = nullptr;
  int (*layoutCreate)(Desc*, int, uint64_t, uint64_t, int64_t) = nullptr;
  int (*layoutDestroy)(Desc) = nullptr;
  int (*prefCreate)(Desc*) = nullptr;
  int (*prefDestroy)(Desc) = nullptr;
  int (*prefSet)(Desc, int, const void*, size_t) = nullptr;
  int (*heuristic)(void*, Desc, Desc, Desc, Desc, Desc, Desc, int, HeuristicResult*, int*) = nullptr;
  int (*matmul)(void*, Desc, const void*, const void*, Desc, const void*, Desc, const void*,
                const void*, Desc, void*, Desc, const AlgoRaw*, void*, size_t, void*) = nullptr;

  // The per-call descriptors, destroyed with this object.
  struct Descs {
    const Api* api;
    Desc op = nullptr, a = nullptr, b = nullptr, c = nullptr;
    ~Descs() {
      if (op) api->descDestroy(op);
      for (Desc d : {a, b, c})
        if (d) api->layoutDestroy(d);
    }
  };

  Status make(const cublaslt::LtProblem& p, Descs& d) const {
    int st = descCreate(&d.op, kComputeF32, kHipR32F);
    if (st) return hipLtError("MatmulDescCreate", st);
    const cublaslt::LtColumnMajor v = cublaslt::columnMajorView(p);
    const int32_t op_a = v.trans_lt_a ? kOpT : kOpN, op_b = v.trans_lt_b ? kOpT : kOpN;
    const uint32_t epi = p.bias ? kEpilogueBias : kEpilogueDefault;
    const int32_t bias_type = hipType(p.c);
    if ((st = descSet(d.op, kDescTransA, &op_a, sizeof(op_a)))) return hipLtError("set TRANSA", st);
    if ((st = descSet(d.op, kDescTransB, &op_b, sizeof(op_b)))) return hipLtError("set TRANSB", st);
    if ((st = descSet(d.op, kDescEpilogue, &epi, sizeof(epi)))) return hipLtError("set EPILOGUE", st);
    if (p.bias && (st = descSet(d.op, kDescBiasDataType, &bias_type, sizeof(bias_type))))
      return hipLtError("set BIAS_DATA_TYPE", st);
    if ((st = layoutCreate(&d.a, hipType(p.ab), v.a_rows, v.a_cols, v.a_ld)))
      return hipLtError("MatrixLayoutCreate(B)", st);
    if ((st = layoutCreate(&d.b, hipType(p.ab), v.b_rows, v.b_cols, v.b_ld)))
      return hipLtError("MatrixLayoutCreate(A)", st);
    if ((st = layoutCreate(&d.c, hipType(p.c), v.c_rows, v.c_cols, v.c_ld)))
      return hipLtError("MatrixLayoutCreate(C)", st);
    return Status::Ok();
  }
};

std::string HipLtAlgo::id() const {
  unsigned char raw[24];
  std::memcpy(raw, data.data(), 16);
  for (int i = 0; i < 8; ++i) raw[16 + i] = static_cast<unsigned char>(max_workspace_bytes >> (56 - 8 * i));
  return cublaslt::algoId("hipblaslt", index, raw, sizeof(raw));
}

Expected<HipLtAlgo> HipLtAlgo::parse(const std::string& id) {
  HipLtAlgo a;
  unsigned char raw[24];
  KTUNE_RETURN_IF_ERROR(cublaslt::parseAlgoId(id, "hipblaslt", &a.index, raw, sizeof(raw)));
  std::memcpy(a.data.data(), raw, 16);
  for (int i = 0; i < 8; ++i) a.max_workspace_bytes = (a.max_workspace_bytes << 8) | raw[16 + i];
  return a;
}

HipBlasLt::~HipBlasLt() {
  if (handle_ && api_ && api_->destroy) api_->destroy(handle_);
}

std::vector<std::string> HipBlasLt::libraryNames() {
  return {"libhipblaslt.so.0", "libhipblaslt.so.1", "libhipblaslt.so"};
}

Expected<std::unique_ptr<HipBlasLt>> HipBlasLt::open(const std::vector<std::string>& extra_paths) {
  std::vector<std::string> names = libraryNames();
  names.insert(names.end(), extra_paths.begin(), extra_paths.end());
  auto lib = DynLib::open(names, "hipBLASLt (libhipblaslt)");
  if (!lib.ok())
    return Status::Unavailable("hipBLASLt not found, AMD GEMM tuning compares JIT configs only: " +
                               lib.status().message());
  std::unique_ptr<HipBlasLt> h(new HipBlasLt());
  h->api_ = std::make_unique<Api>();
  Api& a = *h->api_;
  KTUNE_RETURN_IF_ERROR(lib->bind(a.create, "hipblasLtCreate"));
  KTUNE_RETURN_IF_ERROR(lib->bind(a.destroy, "hipblasLtDestroy"));
  KTUNE_RETURN_IF_ERROR(lib->bind(a.descCreate, "hipblasLtMatmulDescCreate"));
  KTUNE_RETURN_IF_ERROR(lib->bind(a.descDestroy, "hipblasLtMatmulDescDestroy"));
  KTUNE_RETURN_IF_ERROR(lib->bind(a.descSet, "hipblasLtMatmulDescSetAttribute"));
  KTUNE_RETURN_IF_ERROR(lib->bind(a.layoutCreate, "hipblasLtMatrixLayoutCreate"));
  KTUNE_RETURN_IF_ERROR(lib->bind(a.layoutDestroy, "hipblasLtMatrixLayoutDestroy"));
  KTUNE_RETURN_IF_ERROR(lib->bind(a.prefCreate, "hipblasLtMatmulPreferenceCreate"));
  KTUNE_RETURN_IF_ERROR(lib->bind(a.prefDestroy, "hipblasLtMatmulPreferenceDestroy"));
  KTUNE_RETURN_IF_ERROR(lib->bind(a.prefSet, "hipblasLtMatmulPreferenceSetAttribute"));
  KTUNE_RETURN_IF_ERROR(lib->bind(a.heuristic, "hipblasLtMatmulAlgoGetHeuristic"));
  KTUNE_RETURN_IF_ERROR(lib->bind(a.matmul, "hipblasLtMatmul"));
  const int st = a.create(&h->handle_);
  if (st != 0 || !h->handle_)
    return Status::Unavailable("hipblasLtCreate failed with hipblasStatus " + std::to_string(st) +
                               " (is an AMD GPU present?)");
  h->lib_ = std::move(lib).value();
  return h;
}

std::string HipBlasLt::version() const { return "hipblaslt (" + lib_.path() + ")"; }

Expected<std::vector<HipLtAlgo>> HipBlasLt::heuristics(const cublaslt::LtProblem& p, int max_algos,
                                                       int64_t max_workspace) const {
  KTUNE_RETURN_IF_ERROR(cublaslt::checkLtProblem(p, "hipBLASLt"));
  if (max_algos <= 0) return Status::InvalidArgument("max_algos must be positive");
  Api::Descs d{api_.get()};
  KTUNE_RETURN_IF_ERROR(api_->make(p, d));
  void* pref = nullptr;
  int st = api_->prefCreate(&pref);
  if (st) return hipLtError("MatmulPreferenceCreate", st);
  const uint64_t ws = static_cast<uint64_t>(std::max<int64_t>(0, max_workspace));
  st = api_->prefSet(pref, kPrefMaxWorkspace, &ws, sizeof(ws));
  std::vector<HeuristicResult> res(static_cast<size_t>(max_algos));
  int found = 0;
  if (!st) st = api_->heuristic(handle_, d.op, d.a, d.b, d.c, d.c, pref, max_algos, res.data(), &found);
  api_->prefDestroy(pref);
  if (st) return hipLtError("MatmulAlgoGetHeuristic", st);
  std::vector<HipLtAlgo> out;
  for (int i = 0; i < std::min(found, max_algos); ++i) {
    if (res[size_t(i)].state != 0) continue;
    HipLtAlgo a;
    a.index = i;
    std::memcpy(a.data.data(), res[size_t(i)].algo.data, 16);
    a.max_workspace_bytes = res[size_t(i)].algo.max_workspace_bytes;
    a.workspace_bytes = static_cast<int64_t>(res[size_t(i)].workspaceSize);
    out.push_back(a);
  }
  if (out.empty()) return Status::Unsupported("hipBLASLt proposes no algorithm for this GEMM");
  return out;
}

Status HipBlasLt::run(const cublaslt::LtProblem& p, const HipLtAlgo* algo, DevicePtr a, DevicePtr b,
                      DevicePtr c, DevicePtr bias, DevicePtr workspace, int64_t workspace_bytes,
                      StreamHandle stream) const {
  KTUNE_RETURN_IF_ERROR(cublaslt::checkLtProblem(p, "hipBLASLt"));
  if (!a || !b || !c) return Status::InvalidArgument("hipBLASLt GEMM needs non-null A, B and C");
  if (p.bias && !bias) return Status::InvalidArgument("hipBLASLt GEMM with bias needs a bias pointer");
  HipLtAlgo chosen;
  if (!algo) {
    KTUNE_ASSIGN_OR_RETURN(auto list, heuristics(p, 1, workspace_bytes));
    chosen = list.front();
    algo = &chosen;
  }
  if (algo->workspace_bytes > workspace_bytes)
    return Status::InvalidArgument("hipBLASLt algorithm needs " + std::to_string(algo->workspace_bytes) +
                                   " B of workspace, got " + std::to_string(workspace_bytes));
  Api::Descs d{api_.get()};
  KTUNE_RETURN_IF_ERROR(api_->make(p, d));
  if (p.bias) {
    const void* bp = reinterpret_cast<const void*>(bias);
    if (int st = api_->descSet(d.op, kDescBiasPointer, &bp, sizeof(bp))) return hipLtError("set BIAS_POINTER", st);
  }
  AlgoRaw raw;
  std::memcpy(raw.data, algo->data.data(), 16);
  raw.max_workspace_bytes = static_cast<size_t>(algo->max_workspace_bytes);
  const int st = api_->matmul(handle_, d.op, &p.alpha, reinterpret_cast<const void*>(b), d.a,
                              reinterpret_cast<const void*>(a), d.b, &p.beta,
                              reinterpret_cast<const void*>(c), d.c, reinterpret_cast<void*>(c), d.c,
                              &raw, reinterpret_cast<void*>(workspace),
                              static_cast<size_t>(workspace_bytes), stream.p);
  if (st) return hipLtError("Matmul", st);
  return Status::Ok();
}

}  // namespace ktune::vendor
