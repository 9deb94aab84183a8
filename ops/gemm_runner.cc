// GemmRunner: one GEMM kernel compiled, loaded and launched without the tuner (tests, benches,
// the op's trusted reference), and the mapping of a GEMM call to cuBLASLt's view.
#include "ops/gemm.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>

#include "compiler/store/store.h"
#include "templates/embedded.h"

namespace ktune {

DType dtypeOf(gemm::ElemType t) { return t; }

gemm::GemmShape withAlignment(gemm::GemmShape shape, const GemmBuffers& buf) {
  shape.aligned16 = (buf.a % 16 == 0) && (buf.b % 16 == 0);
  return shape;
}

Expected<cublaslt::LtProblem> toLtProblem(const gemm::GemmShape& s) {
  if (s.act != gemm::Activation::kNone)
    return Status::Unsupported(std::string("cuBLASLt candidates do not cover activation ") +
                               gemm::activationName(s.act));
  auto lt = [](gemm::ElemType t) {
    return t == gemm::ElemType::kF16      ? cublaslt::LtType::kF16
           : t == gemm::ElemType::kBF16   ? cublaslt::LtType::kBF16
           : t == gemm::ElemType::kF8E4M3 ? cublaslt::LtType::kF8E4M3
           : t == gemm::ElemType::kF8E5M2 ? cublaslt::LtType::kF8E5M2
                                          : cublaslt::LtType::kF32;
  };
  cublaslt::LtProblem p;
  p.trans_a = s.layout == gemm::Layout::kTN || s.layout == gemm::Layout::kTT;
  p.trans_b = s.layout == gemm::Layout::kNT || s.layout == gemm::Layout::kTT;
  p.ab = lt(s.ab);
  p.c = lt(s.c);
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.lda = s.lda;
  p.ldb = s.ldb;
  p.ldc = s.ldc;
  p.alpha = s.alpha;
  p.beta = s.beta;
  p.bias = s.has_bias;
  return p;
}

GemmRunner::GemmRunner(Backend& backend, Compiler& compiler, DeviceInfo device,
                       CodeObjectStore* store)
    : backend_(backend), compiler_(compiler), device_(std::move(device)), store_(store) {}

GemmRunner::~GemmRunner() {
  for (auto& [k, l] : kernels_) (void)backend_.unloadModule(l->module);
  scratch_.release(backend_);
}

// Called with mu_ held; releases it while compiling so several threads compile in parallel.
Expected<GemmRunner::Loaded*> GemmRunner::load(std::unique_lock<std::mutex>& lock,
                                               gemm::KernelKind kind, const Config& config,
                                               const gemm::GemmShape& shape) {
  KTUNE_RETURN_IF_ERROR(gemm::applicable(kind, config, shape));
  auto defs = gemm::defines(kind, config, shape);
  const std::string key = variantKey(gemm::kernelKindName(kind), defs);
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second.get();
  const std::string_view src = gemm::kernelSource(kind);
  if (src.empty())
    return Status::NotFound(std::string("kernel source ") + gemm::sourceFile(kind) +
                            " is not embedded in this build");
  CompileRequest req;
  req.source = std::string(src);
  req.source_name = gemm::sourceFile(kind);
  req.entry = gemm::entryName(kind);
  req.defines = std::move(defs);
  req.arch = device_.arch;
  lock.unlock();
  auto compiled = store_ ? store_->getOrCompile(compiler_, req) : compiler_.compile(req);
  lock.lock();
  if (!compiled.ok()) return compiled.status();
  it = kernels_.find(key);  // another thread may have finished the same kernel meanwhile
  if (it != kernels_.end()) return it->second.get();
  auto l = std::make_unique<Loaded>();
  l->code = std::move(compiled).value();
  KTUNE_ASSIGN_OR_RETURN(l->module, backend_.loadModule(l->code.binary));
  const std::string& sym = l->code.lowered_entry.empty() ? l->code.entry : l->code.lowered_entry;
  auto fn = backend_.getFunction(l->module, sym);
  if (!fn.ok()) {
    (void)backend_.unloadModule(l->module);
    return fn.status();
  }
  l->function = *fn;
  const int64_t shared = gemm::launchSharedBytes(kind, config);  // static LDS needs no opt-in
  if (shared > 48 * 1024) {
    Status s = backend_.setMaxDynamicShared(l->function, shared);
    if (!s.ok()) {
      (void)backend_.unloadModule(l->module);
      return s;
    }
  }
  Loaded* out = l.get();
  kernels_.emplace(key, std::move(l));
  return out;
}

Expected<const CodeObject*> GemmRunner::compile(gemm::KernelKind kind, const Config& config,
                                                const gemm::GemmShape& shape) {
  std::unique_lock<std::mutex> lock(mu_);
  KTUNE_ASSIGN_OR_RETURN(Loaded * l, load(lock, kind, config, shape));
  return &l->code;
}

Status GemmRunner::launch(gemm::KernelKind kind, const Config& config, const gemm::GemmShape& shape,
                          const GemmBuffers& buf, StreamHandle stream) {
  if (!buf.a || !buf.b || !buf.c)
    return Status::InvalidArgument("GEMM needs non-null A, B and C buffers");
  if (shape.has_bias && !buf.bias)
    return Status::InvalidArgument("GEMM with has_bias needs a bias buffer");
  const gemm::GemmShape s = withAlignment(shape, buf);
  KTUNE_ASSIGN_OR_RETURN(gemm::LaunchPlan plan, gemm::launchPlan(kind, config, s, device_));
  std::unique_lock<std::mutex> lock(mu_);
  KTUNE_ASSIGN_OR_RETURN(Loaded * l, load(lock, kind, config, s));
  if (plan.workspace_bytes > 0 || plan.counters > 0)
    KTUNE_RETURN_IF_ERROR(
        scratch_.ensure(backend_, plan.workspace_bytes, plan.counters, stream).status());
  args_.clear();
  args_.add(buf.a).add(buf.b).add(buf.c).add(buf.bias);
  args_.add(plan.workspace_bytes > 0 ? scratch_.workspace : DevicePtr{0});
  args_.add(plan.counters > 0 ? scratch_.counters : DevicePtr{0});
  args_.add(static_cast<int32_t>(s.m)).add(static_cast<int32_t>(s.n)).add(static_cast<int32_t>(s.k));
  args_.add(static_cast<int64_t>(s.lda)).add(static_cast<int64_t>(s.ldb)).add(static_cast<int64_t>(s.ldc));
  args_.add(s.alpha).add(s.beta);
  const bool decode_maps = gemm::decodeTakesTensorMaps(kind, config);
  if (kind == gemm::KernelKind::kTma || decode_maps) {
    const auto encode = [this](const TensorMap2DDesc& x) { return backend_.encodeTensorMap2D(x); };
    // The config's L2 promotion probe knobs (TMA_L2A/B/C) on the kTma kind's own maps only.
    // The kTma kind's own maps in boxes of the config's tiles (the decode kind's tail: defaults).
    const bool own = kind == gemm::KernelKind::kTma;
    const gemm::TmaDescriptors d = gemm::tmaDescriptors(
        s, buf.a, buf.b, buf.c, own ? gemm::tmaL2Promotion(config) : gemm::kTmaL2Promotion,
        own ? gemm::tmaBoxRows(config, s) : gemm::kTmaBoxRows);
    const TensorMapCache::Maps m = tma_maps_.get(d, encode);
    // A or B that cannot be encoded: encode again for the driver's reason (not cached).
    if (!m.a_ok || !m.b_ok) {
      auto r = backend_.encodeTensorMap2D(!m.a_ok ? d.a : d.b);
      return r.ok() ? Status::Internal("TMA tensor map of A or B failed to encode earlier") : r.status();
    }
    const bool c_ok = m.c_ok && s.c != gemm::ElemType::kF32;
    args_.add(m.a).add(m.b).add(c_ok ? m.c : TensorMap{}).add(static_cast<int32_t>(c_ok));
    args_.add(buf.scale_a).add(buf.scale_b);
    if (decode_maps) {  // then the maps in the decode kernel's boxes
      const gemm::TmaDescriptors x =
          gemm::decodeDescriptors(s, buf.a, buf.b, gemm::decodeL2Promotion(config));
      const TensorMapCache::Maps mx = tma_maps_.get(x, encode);
      if (!mx.a_ok || !mx.b_ok || !mx.c_ok) {
        auto r = backend_.encodeTensorMap2D(!mx.a_ok ? x.a : !mx.b_ok ? x.b : x.c);
        return r.ok() ? Status::Internal("decode tensor map failed to encode earlier") : r.status();
      }
      args_.add(mx.a).add(mx.b).add(mx.c);
    }
  }
  Dim3 grid = plan.grid;
  if (plan.persistent_cluster > 1) {
    if (l->resident_blocks == 0)
      l->resident_blocks = residentClusterGrid(backend_, l->function, Dim3{~0u, 1, 1}, plan.block,
                                               static_cast<size_t>(plan.shared_bytes),
                                               static_cast<unsigned>(plan.persistent_cluster)).x;
    grid.x = std::min(grid.x, l->resident_blocks);
  }
  return backend_.launch(l->function, grid, plan.block, static_cast<size_t>(plan.shared_bytes),
                         args_.data(), stream);
}

}  // namespace ktune
