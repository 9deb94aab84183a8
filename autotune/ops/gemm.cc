#include "autotune/ops/gemm.h"

#include <algorithm>
#include <cmath>
#include <cfloat>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "autotune/dtype.h"
#include "autotune/static_prune.h"
#include "autotune/verifier.h"
#include "base/json_fields.h"

#include "templates/embedded.h"

namespace ktune {

gemm::GemmShape withAlignment(gemm::GemmShape shape, const GemmBuffers& buf) {
  shape.aligned16 = (buf.a % 16 == 0) && (buf.b % 16 == 0);
  return shape;
}

Expected<cublaslt::LtProblem> toLtProblem(const gemm::GemmShape& s) {
  if (s.act != gemm::Activation::kNone)
    return Status::Unsupported(std::string("cuBLASLt candidates do not cover activation ") +
                               gemm::activationName(s.act));
  auto lt = [](gemm::ElemType t) {
    return t == gemm::ElemType::kF16   ? cublaslt::LtType::kF16
           : t == gemm::ElemType::kBF16 ? cublaslt::LtType::kBF16
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

namespace {

std::string kernelKey(gemm::KernelKind kind, const std::vector<std::pair<std::string, std::string>>& d) {
  std::string k = gemm::kernelKindName(kind);
  for (const auto& [n, v] : d) k += "," + n + "=" + v;
  return k;
}

}  // namespace

GemmRunner::GemmRunner(Backend& backend, Compiler& compiler, DeviceInfo device)
    : backend_(backend), compiler_(compiler), device_(std::move(device)) {}

GemmRunner::~GemmRunner() {
  for (auto& [k, l] : kernels_) (void)backend_.unloadModule(l->module);
  if (workspace_) (void)backend_.free(workspace_);
  if (counters_) (void)backend_.free(counters_);
}

// Called with mu_ held; releases it while compiling so several threads compile in parallel.
Expected<GemmRunner::Loaded*> GemmRunner::load(std::unique_lock<std::mutex>& lock,
                                               gemm::KernelKind kind, const Config& config,
                                               const gemm::GemmShape& shape) {
  KTUNE_RETURN_IF_ERROR(gemm::applicable(kind, config, shape));
  auto defs = gemm::defines(kind, config, shape);
  const std::string key = kernelKey(kind, defs);
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second.get();
  const std::string_view src = templates::embeddedSource(gemm::sourceFile(kind));
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
  auto compiled = compiler_.compile(req);
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
  const int64_t shared = gemm::sharedBytes(kind, config);
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

Status GemmRunner::ensureWorkspace(int64_t bytes, int64_t counters, StreamHandle stream) {
  if (bytes > workspace_bytes_) {
    if (workspace_) KTUNE_RETURN_IF_ERROR(backend_.free(workspace_));
    workspace_ = 0;
    workspace_bytes_ = 0;
    KTUNE_ASSIGN_OR_RETURN(workspace_, backend_.alloc(static_cast<size_t>(bytes)));
    workspace_bytes_ = bytes;
    KTUNE_RETURN_IF_ERROR(backend_.memset8(workspace_, 0, static_cast<size_t>(bytes), stream));
  }
  if (counters > counter_count_) {
    if (counters_) KTUNE_RETURN_IF_ERROR(backend_.free(counters_));
    counters_ = 0;
    counter_count_ = 0;
    KTUNE_ASSIGN_OR_RETURN(counters_, backend_.alloc(static_cast<size_t>(counters) * 4));
    counter_count_ = counters;
    KTUNE_RETURN_IF_ERROR(backend_.memset32(counters_, 0, static_cast<size_t>(counters), stream));
  }
  return Status::Ok();
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
    KTUNE_RETURN_IF_ERROR(ensureWorkspace(plan.workspace_bytes, plan.counters, stream));
  args_.clear();
  args_.add(buf.a).add(buf.b).add(buf.c).add(buf.bias);
  args_.add(plan.workspace_bytes > 0 ? workspace_ : DevicePtr{0});
  args_.add(plan.counters > 0 ? counters_ : DevicePtr{0});
  args_.add(static_cast<int32_t>(s.m)).add(static_cast<int32_t>(s.n)).add(static_cast<int32_t>(s.k));
  args_.add(static_cast<int64_t>(s.lda)).add(static_cast<int64_t>(s.ldb)).add(static_cast<int64_t>(s.ldc));
  args_.add(s.alpha).add(s.beta);
  if (kind == gemm::KernelKind::kTma) {
    const gemm::TmaDescriptors d = gemm::tmaDescriptors(s, buf.a, buf.b, buf.c);
    KTUNE_ASSIGN_OR_RETURN(TensorMap ma, backend_.encodeTensorMap2D(d.a));
    KTUNE_ASSIGN_OR_RETURN(TensorMap mb, backend_.encodeTensorMap2D(d.b));
    auto mc = backend_.encodeTensorMap2D(d.c);
    const bool c_ok = mc.ok() && s.c != gemm::ElemType::kF32;
    args_.add(ma).add(mb).add(c_ok ? *mc : TensorMap{}).add(static_cast<int32_t>(c_ok));
  }
  return backend_.launch(l->function, plan.grid, plan.block, static_cast<size_t>(plan.shared_bytes),
                         args_.data(), stream);
}

// ---------------------------------------------------------------------------------------------
// GemmOp
// ---------------------------------------------------------------------------------------------

namespace {

constexpr int64_t kLtWorkspaceBytes = 32 << 20;

DType toDType(gemm::ElemType t) {
  return t == gemm::ElemType::kF16 ? DType::kF16 : t == gemm::ElemType::kBF16 ? DType::kBF16 : DType::kF32;
}

int kindIndex(gemm::KernelKind k) { return static_cast<int>(k); }

Expected<gemm::KernelKind> kindOf(const Config& c) {
  const std::string k = c.getStr("KIND");
  for (gemm::KernelKind kind : {gemm::KernelKind::kMma, gemm::KernelKind::kSkinny,
                                gemm::KernelKind::kMfma, gemm::KernelKind::kWgmma,
                                gemm::KernelKind::kTma})
    if (k == gemm::kernelKindName(kind)) return kind;
  return Status::InvalidArgument("GEMM config without a valid KIND: " + c.toString());
}

// The config without KIND (what the kernel templates and their spaces know).
Config knobsOf(const Config& c) {
  Config out;
  for (const auto& [n, v] : c.params())
    if (n != "KIND") out.set(n, v);
  return out;
}

Config withKind(Config c, gemm::KernelKind k) {
  c.set("KIND", std::string(gemm::kernelKindName(k)));
  return c;
}

// One source for every kernel of the family: KTUNE_GEMM_KIND picks the template;
// KTUNE_GEMM_INAPPLICABLE turns a config that cannot compute the problem into a compile error
// (recorded as that candidate's failure, so tuning goes on with the others).
std::string familySource() {
  std::string s =
      "#ifdef KTUNE_GEMM_INAPPLICABLE\n#error \"ktune GEMM: config not applicable to this problem "
      "(see gemm::applicable)\"\n#endif\n";
  s += "#if KTUNE_GEMM_KIND == 0\n";
  s += templates::embeddedSource("gemm_mma.cuh");
  s += "\n#elif KTUNE_GEMM_KIND == 1\n";
  s += templates::embeddedSource("gemm_skinny.cuh");
  s += "\n#elif KTUNE_GEMM_KIND == 2\n";
  s += templates::embeddedSource("gemm_mfma.cuh");
  s += "\n#elif KTUNE_GEMM_KIND == 3\n";
  s += templates::embeddedSource("gemm_wgmma.cuh");
  s += "\n#else\n";
  s += templates::embeddedSource("gemm_tma.cuh");
  s += "\n#endif\n";
  return s;
}

// Static pruning (autotune/static_prune.h): spills, occupancy for the config's block size (launch
// rule on a nominal shape: block and shared memory depend on the config only), and the matrix
// instruction of the config's KIND. The tuner asks for no dumps, so the matrix rule needs a
// disassembly: done on AMD (comgr in-process, ~30 ms; llvm-objdump for gfx942, ~0.1 s), not on
// NVIDIA, where an nvdisasm process per candidate would cost ~0.1 s each against the cold-tuning
// budget and mma/wgmma come from inline PTX (they cannot silently become FMAs).
PruneFn makeGemmPruner(const Options& env, bool disassemble) {
  StaticPruneOptions o = staticPruneOptionsFrom(env);
  o.disassemble = disassemble;
  o.require_matrix_fn = [](const Config& c) { return matrixPrefixForGemmKind(c.getStr("KIND")); };
  return makeStaticPruner(o, [](const Config& c, const DeviceInfo& d) {
    PruneLaunch l;
    auto k = kindOf(c);
    if (!k.ok()) return l;
    for (int64_t m : {4096, 16, 1}) {
      auto plan = gemm::launchPlan(
          *k, knobsOf(c),
          gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16, m, 4096, 4096),
          d);
      if (!plan.ok()) continue;
      l.threads_per_block = int(plan->block.x * plan->block.y * plan->block.z);
      l.dynamic_shared = plan->shared_bytes;
      break;
    }
    return l;
  });
}

// Candidate configs for a backend: the curated sets of representative problems (large, decode
// M = 1/16/64, small-M split-K), or every config of the spaces.
std::vector<Config> familyConfigs(const std::vector<gemm::KernelKind>& kinds,
                                  const std::string& backend, bool full, int64_t shared_limit) {
  std::vector<Config> out;
  auto add = [&](gemm::KernelKind k, const Config& c) {
    Config kc = withKind(c, k);
    if (std::find(out.begin(), out.end(), kc) == out.end()) out.push_back(kc);
  };
  for (gemm::KernelKind k : kinds) {
    if (full) {
      // Configs whose shared memory exceeds the device's limit are left out before compiling.
      for (const Config& c : gemm::configSpace(k).enumerate(backend, shared_limit).accepted) add(k, c);
      continue;
    }
    for (auto [m, n, kk] : {std::tuple<int64_t, int64_t, int64_t>{4096, 4096, 4096},
                            {128, 4096, 4096}, {1, 4096, 4096}, {16, 4096, 4096}, {64, 4096, 4096}}) {
      const auto s = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16,
                                      gemm::ElemType::kBF16, m, n, kk);
      for (const Config& c : gemm::curatedConfigs(k, s)) add(k, c);
    }
  }
  return out;
}

}  // namespace

struct GemmOp::State {
  std::shared_ptr<Tuner> tuner;
  Family<GemmCall> family;
  std::unique_ptr<cublaslt::CublasLt> lt;
  std::unique_ptr<GemmRunner> ref_runner;  // the default config as trusted reference
  Config default_config;
  int vendor_algos = 0;

  std::mutex mu;  // guards everything below
  DevicePtr workspace = 0, counters = 0, lt_workspace = 0;
  int64_t workspace_bytes = 0, counter_count = 0;
  struct KeyBuffers {
    DevicePtr c_snapshot = 0;  // original C (beta != 0), restored before every tuning run
    DevicePtr reference = 0;   // trusted result for verification
    bool have_reference = false;
  };
  std::unordered_map<std::string, KeyBuffers> per_key;

  // TMA tensor maps of the last call's A and B (kTma kernels take them as arguments). Encoding is
  // host work (~1 µs); repeated calls on the same buffers and shape reuse the maps.
  bool tma = false;
  std::mutex tma_mu;
  struct TmaMaps {
    gemm::TmaDescriptors desc;
    TensorMap a, b, c;
    bool c_ok = false;  // C can be written by TMA stores (else the kernel stores directly)
    bool valid = false;
  } tma_maps;

  // Appends the A and B tensor maps for `call` (zeroed maps when they cannot be encoded: then no
  // kTma config is applicable to the call and none is launched).
  void addTensorMaps(const GemmCall& call, KernelArgs& args) {
    const gemm::TmaDescriptors d =
        gemm::tmaDescriptors(call.shape, call.buf.a, call.buf.b, call.buf.c);
    std::lock_guard<std::mutex> lock(tma_mu);
    auto same = [](const TensorMap2DDesc& x, const TensorMap2DDesc& y) {
      return x.base == y.base && x.rows == y.rows && x.cols == y.cols &&
             x.row_stride_bytes == y.row_stride_bytes && x.elem_bytes == y.elem_bytes;
    };
    if (!tma_maps.valid || !same(tma_maps.desc.a, d.a) || !same(tma_maps.desc.b, d.b) ||
        !same(tma_maps.desc.c, d.c)) {
      auto a = tuner->backend().encodeTensorMap2D(d.a);
      auto b = tuner->backend().encodeTensorMap2D(d.b);
      auto c = tuner->backend().encodeTensorMap2D(d.c);
      tma_maps.desc = d;
      tma_maps.a = a.ok() ? *a : TensorMap{};
      tma_maps.b = b.ok() ? *b : TensorMap{};
      tma_maps.c = c.ok() ? *c : TensorMap{};
      tma_maps.c_ok = c.ok() && call.shape.c != gemm::ElemType::kF32;
      tma_maps.valid = true;
    }
    args.add(tma_maps.a).add(tma_maps.b).add(tma_maps.c).add(static_cast<int32_t>(tma_maps.c_ok));
  }

  ~State() {
    Backend& be = tuner->backend();
    for (auto& [k, b] : per_key) {
      if (b.c_snapshot) (void)be.free(b.c_snapshot);
      if (b.reference) (void)be.free(b.reference);
    }
    if (workspace) (void)be.free(workspace);
    if (counters) (void)be.free(counters);
    if (lt_workspace) (void)be.free(lt_workspace);
  }

  // Split-K workspace for problem s: M*N floats and one counter per smallest tile, or more when a
  // kernel asks for it (the TMA kernel's split tail: min_bytes / min_counters); zeroed once.
  Status ensureWorkspace(const gemm::GemmShape& s, int64_t min_bytes = 0, int64_t min_counters = 0) {
    std::lock_guard<std::mutex> lock(mu);
    Backend& be = tuner->backend();
    const int64_t bytes = std::max(s.m * s.n * 4, min_bytes);
    const int64_t count = std::max({((s.m + 63) / 64) * ((s.n + 63) / 64),
                                    ((s.m + 7) / 8) * ((s.n + 15) / 16), min_counters});
    if (bytes > workspace_bytes) {
      if (workspace) KTUNE_RETURN_IF_ERROR(be.free(workspace));
      workspace = 0;
      workspace_bytes = 0;
      KTUNE_ASSIGN_OR_RETURN(workspace, be.alloc(static_cast<size_t>(bytes)));
      workspace_bytes = bytes;
      KTUNE_RETURN_IF_ERROR(be.memset8(workspace, 0, static_cast<size_t>(bytes)));
      KTUNE_RETURN_IF_ERROR(be.synchronize());
    }
    if (count > counter_count) {
      if (counters) KTUNE_RETURN_IF_ERROR(be.free(counters));
      counters = 0;
      counter_count = 0;
      KTUNE_ASSIGN_OR_RETURN(counters, be.alloc(static_cast<size_t>(count) * 4));
      counter_count = count;
      KTUNE_RETURN_IF_ERROR(be.memset32(counters, 0, static_cast<size_t>(count)));
      KTUNE_RETURN_IF_ERROR(be.synchronize());
    }
    return Status::Ok();
  }

  Status preRun(const GemmCall& call, StreamHandle stream) {
    Backend& be = tuner->backend();
    const auto& s = call.shape;
    const size_t c_bytes = static_cast<size_t>(s.m * s.ldc * gemm::elemBytes(s.c));
    std::lock_guard<std::mutex> lock(mu);
    auto& kb = per_key[gemm::shapeKey(s)];
    if (s.beta != 0.0f) {
      if (!kb.c_snapshot) {
        KTUNE_ASSIGN_OR_RETURN(kb.c_snapshot, be.alloc(c_bytes));
        KTUNE_RETURN_IF_ERROR(be.copyDeviceToDevice(kb.c_snapshot, call.buf.c, c_bytes, stream));
      }
      return be.copyDeviceToDevice(call.buf.c, kb.c_snapshot, c_bytes, stream);
    }
    return poisonNaN(be, call.buf.c, toDType(s.c), s.m * s.ldc, stream);
  }

  Status launchReference(const GemmCall& call, DevicePtr out, StreamHandle stream) {
    const auto& s = call.shape;
    if (lt) {
      auto lp = toLtProblem(s);
      // cuBLASLt's heuristic choice can refuse pointers that are only element-aligned (seen on
      // the H100 for an A at +2 bytes): the JIT default config, whose unaligned path handles any
      // address, is the reference then.
      if (lp.ok() && lt->run(*lp, nullptr, call.buf.a, call.buf.b, out, call.buf.bias,
                             lt_workspace, kLtWorkspaceBytes, stream)
                         .ok())
        return Status::Ok();
    }
    GemmBuffers b = call.buf;
    b.c = out;
    return ref_runner->launch(gemm::KernelKind::kMma, default_config, s, b, stream);
  }

  Expected<VerifyResult> verify(const GemmCall& call, StreamHandle stream) {
    Backend& be = tuner->backend();
    const auto& s = call.shape;
    const size_t c_bytes = static_cast<size_t>(s.m * s.ldc * gemm::elemBytes(s.c));
    DevicePtr ref = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto& kb = per_key[gemm::shapeKey(s)];
      if (!kb.have_reference) {
        if (!kb.reference) {
          KTUNE_ASSIGN_OR_RETURN(kb.reference, be.alloc(c_bytes));
        }
        if (s.beta != 0.0f && kb.c_snapshot)
          KTUNE_RETURN_IF_ERROR(be.copyDeviceToDevice(kb.reference, kb.c_snapshot, c_bytes, stream));
        else
          KTUNE_RETURN_IF_ERROR(be.memset8(kb.reference, 0, c_bytes, stream));
        KTUNE_RETURN_IF_ERROR(launchReference(call, kb.reference, stream));
        KTUNE_RETURN_IF_ERROR(be.synchronize(stream));
        kb.have_reference = true;
      }
      ref = kb.reference;
    }
    // Padding columns (ldc > N) hold NaN in the candidate's output and reference values in the
    // trusted one, so only dense C is compared element by element.
    if (s.ldc != s.n) {
      VerifyResult ok;
      return ok;
    }
    Tolerance tol = toleranceFor(toDType(s.c), s.k);
    tol.atol *= std::max(1.0, std::sqrt(static_cast<double>(s.k)) / 4);
    // Large outputs: compare 64 sampled rows (all columns: first and last 8, the rest at an odd
    // stride, so row offsets inside tiles vary), so verification costs about a millisecond per
    // candidate instead of a full copy and compare (256 rows cost ~18 ms each on the H100 host,
    // the largest part of a 76-candidate tuning run).
    if (s.m * s.n > (int64_t(1) << 20))
      return compareDeviceRowsToTrusted(be, call.buf.c, ref, toDType(s.c), s.n, s.ldc,
                                        sampleRows(s.m, 64), tol);
    return compareDeviceToTrusted(be, call.buf.c, ref, toDType(s.c), s.m * s.n, tol);
  }
};

GemmOp::GemmOp(std::unique_ptr<State> st) : st_(std::move(st)) {}
GemmOp::~GemmOp() = default;

bool GemmOp::hasCublasLt() const { return st_->lt != nullptr; }

Expected<std::unique_ptr<GemmOp>> GemmOp::create(std::shared_ptr<Tuner> tuner, OpOptions options) {
  if (!tuner) return Status::InvalidArgument("GemmOp::create needs a Tuner");
  const DeviceInfo& dev = tuner->device();
  // A simulated device (KTUNE_BACKEND=sim) gets the kernels of the vendor its arch names.
  const bool sim = dev.vendor == Vendor::kSimulated;
  const std::string backend =
      dev.vendor == Vendor::kNvidia || (sim && dev.arch.rfind("sm_", 0) == 0)  ? "cuda"
      : dev.vendor == Vendor::kAmd || (sim && dev.arch.rfind("gfx", 0) == 0) ? "hip"
                                                                              : "";
  if (backend.empty())
    return Status::Unsupported("GEMM op needs an NVIDIA or AMD device, got " + dev.name);
  auto st = std::make_unique<State>();
  State* S = st.get();
  S->tuner = tuner;
  S->vendor_algos = tuner->options().options.vendor_algos;
  if (backend == "cuda" && !sim && S->vendor_algos > 0) {
    auto lt = cublaslt::CublasLt::open(options.cublaslt_paths);
    if (lt.ok()) {
      S->lt = std::move(lt).value();
      auto ws = tuner->backend().alloc(static_cast<size_t>(kLtWorkspaceBytes));
      if (!ws.ok()) return ws.status();
      S->lt_workspace = *ws;
    }
  }
  const gemm::KernelKind main_kind = backend == "cuda" ? gemm::KernelKind::kMma : gemm::KernelKind::kMfma;
  const auto big = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16,
                                    4096, 4096, 4096);
  auto curated = gemm::curatedConfigs(main_kind, big);
  if (curated.empty()) return Status::Internal("no curated GEMM config for " + backend);
  S->default_config = curated.front();
  if (backend == "cuda")
    S->ref_runner = std::make_unique<GemmRunner>(tuner->backend(), tuner->compiler(), dev);

  KernelFamily<GemmCall> f;
  f.name = "gemm";
  f.source = familySource();
  f.source_name = "gemm_family.cu";
  f.entry = gemm::entryName(main_kind);
  f.entry_fn = [](const Config& c, const GemmCall&) {
    auto k = kindOf(c);
    return std::string(gemm::entryName(k.ok() ? *k : gemm::KernelKind::kMma));
  };
  std::vector<gemm::KernelKind> kinds = gemm::kernelsForBackend(backend);
  if (options.wgmma && dev.arch == "sm_90a") kinds.push_back(gemm::KernelKind::kWgmma);
  if (options.tma && dev.arch == "sm_90a") {
    kinds.push_back(gemm::KernelKind::kTma);
    S->tma = true;
  }
  if (!options.kinds.empty()) {
    std::vector<gemm::KernelKind> keep;
    for (auto k : kinds)
      if (std::find(options.kinds.begin(), options.kinds.end(), k) != options.kinds.end())
        keep.push_back(k);
    if (keep.empty())
      return Status::Unsupported("none of the requested GEMM kernel kinds runs on " + dev.name +
                                 " (" + dev.arch + ")");
    S->tma = std::find(keep.begin(), keep.end(), gemm::KernelKind::kTma) != keep.end();
    kinds = std::move(keep);
  }
  f.configs = familyConfigs(kinds, backend, options.full_space,
                            std::max(dev.shared_per_block_optin, dev.shared_per_block));
  f.defines = [](const Config& c, const GemmCall& call) {
    Defines d;
    auto k = kindOf(c);
    const gemm::KernelKind kind = k.ok() ? *k : gemm::KernelKind::kMma;
    const Config knobs = knobsOf(c);
    const gemm::GemmShape s = withAlignment(call.shape, call.buf);
    d = gemm::defines(kind, knobs, s);
    d.emplace_back("KTUNE_GEMM_KIND", std::to_string(kindIndex(kind)));
    if (!k.ok() || !gemm::applicable(kind, knobs, s).ok()) d.emplace_back("KTUNE_GEMM_INAPPLICABLE", "1");
    return d;
  };
  f.key = [](const GemmCall& call, KeyBuilder& k) {
    const gemm::GemmShape s = withAlignment(call.shape, call.buf);
    k.add("layout", gemm::layoutName(s.layout));
    k.add("ab", gemm::elemTypeName(s.ab));
    k.add("c", gemm::elemTypeName(s.c));
    k.add("M", s.m).add("N", s.n).add("K", s.k);
    k.add("lda", s.lda).add("ldb", s.ldb).add("ldc", s.ldc);
    const int64_t epi = (s.has_bias ? 1 : 0) | (static_cast<int64_t>(s.act) << 1) |
                        (s.beta != 0.0f ? 8 : 0) | (s.aligned16 ? 16 : 0);
    k.add("epi", epi);  // bit 0 bias, bits 1-2 activation, bit 3 beta != 0, bit 4 16-byte aligned
  };
  f.launch = [](const Config& c, const GemmCall& call, const DeviceInfo& d) {
    LaunchDims dims;
    auto k = kindOf(c);
    if (!k.ok()) return dims;
    auto plan = gemm::launchPlan(*k, knobsOf(c), withAlignment(call.shape, call.buf), d);
    if (!plan.ok()) {
      dims.grid = Dim3{0, 0, 0};  // refused by the driver: recorded as this candidate's failure
      return dims;
    }
    dims.grid = plan->grid;
    dims.block = plan->block;
    dims.shared = static_cast<size_t>(plan->shared_bytes);
    return dims;
  };
  f.args = [S](const GemmCall& call, KernelArgs& a) {
    const auto& s = call.shape;
    a.add(call.buf.a).add(call.buf.b).add(call.buf.c).add(call.buf.bias);
    a.add(S->workspace).add(S->counters);
    a.add(static_cast<int32_t>(s.m)).add(static_cast<int32_t>(s.n)).add(static_cast<int32_t>(s.k));
    a.add(static_cast<int64_t>(s.lda)).add(static_cast<int64_t>(s.ldb)).add(static_cast<int64_t>(s.ldc));
    a.add(s.alpha).add(s.beta);
    if (S->tma) S->addTensorMaps(call, a);
  };
  f.before_launch = [S](const Config& c, const GemmCall& call, StreamHandle) -> Status {
    if (c.getInt("SPLIT_K", 1) <= 1) return Status::Ok();
    if (c.getStr("KIND") == gemm::kernelKindName(gemm::KernelKind::kTma)) {
      // TMA kernel's split tail: one BLOCK_M x BLOCK_N fp32 slot and CONSUMERS
      // counters per block of the persistent grid (at most one block per SM; gemm.cc launchPlan).
      const auto scratch =
          gemm::tmaSplitScratch(c, std::max(1, S->tuner->device().multiprocessors));
      return S->ensureWorkspace(call.shape, scratch.workspace_bytes, scratch.counters);
    }
    return S->ensureWorkspace(call.shape);
  };
  f.prune = makeGemmPruner(tuner->options().options, dev.vendor == Vendor::kAmd);
  f.pre_run = [S](const GemmCall& call, StreamHandle s) { return S->preRun(call, s); };
  // Timed runs overwrite C completely when beta == 0: no re-poisoning (an M*N memset per sample);
  // with beta != 0 C is restored as before verification.
  f.pre_timed_run = [S](const GemmCall& call, StreamHandle s) -> Status {
    if (call.shape.beta == 0.0f) return Status::Ok();
    return S->preRun(call, s);
  };
  f.verify = [S](const GemmCall& call, StreamHandle s) { return S->verify(call, s); };
  f.default_config = withKind(S->default_config, main_kind);
  if (S->lt) {
    f.vendor_candidates = [S](const GemmCall& call) {
      std::vector<VendorCandidate> out;
      auto lp = toLtProblem(withAlignment(call.shape, call.buf));
      if (!lp.ok()) return out;
      auto algos = S->lt->heuristics(*lp, S->vendor_algos, kLtWorkspaceBytes);
      if (!algos.ok()) return out;
      for (const auto& a : *algos) out.push_back({a.id(), "cublaslt"});
      return out;
    };
    f.vendor_launch = [S](const std::string& id, const GemmCall& call, StreamHandle stream) -> Status {
      KTUNE_ASSIGN_OR_RETURN(auto algo, cublaslt::LtAlgo::parse(id));
      KTUNE_ASSIGN_OR_RETURN(auto lp, toLtProblem(call.shape));
      // Heuristics were asked with at most kLtWorkspaceBytes, which every algorithm gets.
      algo.workspace_bytes = 0;
      return S->lt->run(lp, &algo, call.buf.a, call.buf.b, call.buf.c, call.buf.bias,
                        S->lt_workspace, kLtWorkspaceBytes, stream);
    };
  }
  // Offline tuning (ktune tune --from-file) and the isolation worker rebuild a call from its
  // shape; the data is deterministic (seed 1), so every rebuild of one shape in a process sees the
  // same A, B and C — State::per_key's cached C snapshot and reference stay valid across them.
  f.args_json = [](const GemmCall& call) { return gemmCallToJson(call); };
  f.make_problem = [S](const std::string& text) -> Expected<std::shared_ptr<GemmCall>> {
    KTUNE_ASSIGN_OR_RETURN(gemm::GemmShape shape, gemmShapeFromJson(text));
    return makeGemmProblem(S->tuner->backend(), S->tuner->device(), shape, 1);
  };
  KTUNE_ASSIGN_OR_RETURN(S->family, tuner->add(std::move(f)));
  return std::unique_ptr<GemmOp>(new GemmOp(std::move(st)));
}

namespace {
Status checkCall(const GemmCall& call) {
  KTUNE_RETURN_IF_ERROR(gemm::validate(call.shape));
  if (!call.buf.a || !call.buf.b || !call.buf.c)
    return Status::InvalidArgument("GEMM needs non-null A, B and C buffers");
  if (call.shape.has_bias && !call.buf.bias)
    return Status::InvalidArgument("GEMM with has_bias needs a bias buffer");
  return Status::Ok();
}
}  // namespace

Status GemmOp::operator()(const GemmCall& call, StreamHandle stream) {
  KTUNE_RETURN_IF_ERROR(checkCall(call));
  return st_->family(GemmCall{withAlignment(call.shape, call.buf), call.buf}, stream);
}

Expected<TuneReport> GemmOp::tune(const GemmCall& call, StreamHandle stream) {
  KTUNE_RETURN_IF_ERROR(checkCall(call));
  return st_->family.tune(GemmCall{withAlignment(call.shape, call.buf), call.buf}, stream);
}

Expected<Selection> GemmOp::lookup(const GemmCall& call) {
  KTUNE_RETURN_IF_ERROR(checkCall(call));
  return st_->family.lookup(GemmCall{withAlignment(call.shape, call.buf), call.buf});
}

// ---------------------------------------------------------------------------------------------
// GEMM problems from JSON (offline tuning, isolation worker)
// ---------------------------------------------------------------------------------------------

namespace {

using Json = nlohmann::json;

Status badField(const char* name, const std::string& what) {
  return Status::InvalidArgument(std::string("GEMM args JSON: field '") + name + "' " + what);
}

// The field, or nullptr when it is absent (or null) and optional.
Expected<const Json*> findField(const Json& j, const char* name, bool required) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    if (required)
      return badField(name, "is missing (the line was not written by ktune, or was cut)");
    return static_cast<const Json*>(nullptr);
  }
  return &*it;
}

// An integer field in [lo, hi]; `fallback` when optional and absent.
Expected<int64_t> intField(const Json& j, const char* name, bool required, int64_t fallback,
                           int64_t lo, int64_t hi) {
  KTUNE_ASSIGN_OR_RETURN(const Json* v, findField(j, name, required));
  if (!v) return fallback;
  // Integers only: 4096.5 or "4096" are not sizes (checkedNumber would truncate the float).
  if (!v->is_number_integer()) return badField(name, "must be an integer, got " + v->dump());
  int64_t out = 0;
  try {
    out = jsonfields::checkedNumber<int64_t>(*v, name);
  } catch (const std::exception&) {
    return badField(name, "value " + v->dump() + " is out of range");
  }
  if (out < lo || out > hi)
    return badField(name, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                              "], got " + std::to_string(out));
  return out;
}

Expected<float> floatField(const Json& j, const char* name, float fallback) {
  KTUNE_ASSIGN_OR_RETURN(const Json* v, findField(j, name, false));
  if (!v) return fallback;
  if (!v->is_number()) return badField(name, "must be a number, got " + v->dump());
  double d = 0;
  try {
    d = jsonfields::checkedNumber<double>(*v, name);
  } catch (const std::exception&) {
    return badField(name, "value " + v->dump() + " is not a number");
  }
  if (!std::isfinite(d) || std::fabs(d) > double(FLT_MAX))
    return badField(name, "must be a finite float, got " + v->dump());
  return static_cast<float>(d);
}

Expected<bool> boolField(const Json& j, const char* name, bool fallback) {
  KTUNE_ASSIGN_OR_RETURN(const Json* v, findField(j, name, false));
  if (!v) return fallback;
  if (!v->is_boolean()) return badField(name, "must be true or false, got " + v->dump());
  return v->get<bool>();
}

template <class T>
Expected<T> enumField(const Json& j, const char* name, bool required, T fallback,
                      Expected<T> (*parse)(const std::string&), const char* accepted) {
  KTUNE_ASSIGN_OR_RETURN(const Json* v, findField(j, name, required));
  if (!v) return fallback;
  if (!v->is_string())
    return badField(name, std::string("must be a string (") + accepted + "), got " + v->dump());
  auto r = parse(v->get<std::string>());
  if (!r.ok())
    return badField(name, std::string("must be one of ") + accepted + ", got " + v->dump());
  return r;
}

// Deterministic generator (splitmix64): the same values in every process and on every platform,
// unlike std::uniform_real_distribution, whose output is implementation-defined.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Fills `count` elements of type t at dst with values in [-1, 1), generated on the host (bf16/f16
// bits rounded there) and copied in chunks, so a large operand never needs a host copy of itself.
Status fillRandom(Backend& b, DevicePtr dst, DType t, int64_t count, uint64_t seed) {
  constexpr int64_t kChunk = int64_t(1) << 20;
  const size_t es = sizeOf(t);
  std::vector<unsigned char> host(static_cast<size_t>(std::min(count, kChunk)) * es);
  uint64_t state = seed;
  for (int64_t off = 0; off < count; off += kChunk) {
    const int64_t n = std::min(kChunk, count - off);
    for (int64_t i = 0; i < n; ++i) {
      const double u = static_cast<double>(splitmix64(state) >> 11) * 0x1p-53;  // [0, 1)
      storeFromDouble(host.data(), t, i, 2.0 * u - 1.0);
    }
    KTUNE_RETURN_IF_ERROR(b.copyToDevice(dst + static_cast<DevicePtr>(off) * es, host.data(),
                                         static_cast<size_t>(n) * es));
  }
  return Status::Ok();
}

// A GemmCall that owns its buffers (what make_problem returns, as a shared_ptr<GemmCall> whose
// deleter destroys this type).
struct OwnedGemmCall : GemmCall {
  Backend* backend = nullptr;
  std::vector<DevicePtr> allocations;
  OwnedGemmCall() = default;
  OwnedGemmCall(const OwnedGemmCall&) = delete;
  OwnedGemmCall& operator=(const OwnedGemmCall&) = delete;
  ~OwnedGemmCall() {
    for (DevicePtr p : allocations) (void)backend->free(p);
  }
};

}  // namespace

std::string gemmCallToJson(const GemmCall& call) {
  const gemm::GemmShape& s = call.shape;
  // The alignment the call's pointers give (what its key records); the shape's own flag for a
  // call without buffers.
  const bool aligned16 =
      (call.buf.a || call.buf.b) ? withAlignment(s, call.buf).aligned16 : s.aligned16;
  Json j = {{"layout", gemm::layoutName(s.layout)},
            {"ab", gemm::elemTypeName(s.ab)},
            {"c", gemm::elemTypeName(s.c)},
            {"m", s.m},
            {"n", s.n},
            {"k", s.k},
            {"lda", s.lda},
            {"ldb", s.ldb},
            {"ldc", s.ldc},
            {"alpha", s.alpha},
            {"beta", s.beta},
            {"bias", s.has_bias},
            {"act", gemm::activationName(s.act)},
            {"aligned16", aligned16}};
  return j.dump();
}

Expected<gemm::GemmShape> gemmShapeFromJson(const std::string& text) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::InvalidArgument("GEMM args JSON is not a JSON object: '" + text.substr(0, 80) +
                                   "' (expected what gemmCallToJson writes)");
  constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();
  constexpr int64_t kMaxLd = int64_t(1) << 60;  // gemm::validate bounds the spans further
  KTUNE_ASSIGN_OR_RETURN(gemm::Layout layout,
                         enumField<gemm::Layout>(j, "layout", true, gemm::Layout::kNN,
                                                 gemm::parseLayout, "NN, NT, TN, TT"));
  KTUNE_ASSIGN_OR_RETURN(gemm::ElemType ab,
                         enumField<gemm::ElemType>(j, "ab", true, gemm::ElemType::kBF16,
                                                   gemm::parseElemType, "bf16, f16"));
  KTUNE_ASSIGN_OR_RETURN(gemm::ElemType c,
                         enumField<gemm::ElemType>(j, "c", true, gemm::ElemType::kBF16,
                                                   gemm::parseElemType, "bf16, f16, f32"));
  KTUNE_ASSIGN_OR_RETURN(int64_t m, intField(j, "m", true, 0, 1, kMaxDim));
  KTUNE_ASSIGN_OR_RETURN(int64_t n, intField(j, "n", true, 0, 1, kMaxDim));
  KTUNE_ASSIGN_OR_RETURN(int64_t k, intField(j, "k", true, 0, 1, kMaxDim));
  gemm::GemmShape s = gemm::denseShape(layout, ab, c, m, n, k);
  KTUNE_ASSIGN_OR_RETURN(s.lda, intField(j, "lda", false, s.lda, 1, kMaxLd));
  KTUNE_ASSIGN_OR_RETURN(s.ldb, intField(j, "ldb", false, s.ldb, 1, kMaxLd));
  KTUNE_ASSIGN_OR_RETURN(s.ldc, intField(j, "ldc", false, s.ldc, 1, kMaxLd));
  KTUNE_ASSIGN_OR_RETURN(s.alpha, floatField(j, "alpha", 1.0f));
  KTUNE_ASSIGN_OR_RETURN(s.beta, floatField(j, "beta", 0.0f));
  KTUNE_ASSIGN_OR_RETURN(s.has_bias, boolField(j, "bias", false));
  KTUNE_ASSIGN_OR_RETURN(s.act,
                         enumField<gemm::Activation>(j, "act", false, gemm::Activation::kNone,
                                                     gemm::parseActivation, "none, silu, gelu"));
  KTUNE_ASSIGN_OR_RETURN(s.aligned16, boolField(j, "aligned16", true));
  Status v = gemm::validate(s);
  if (!v.ok()) return Status::InvalidArgument("GEMM args JSON: " + v.message());
  return s;
}

Expected<std::shared_ptr<GemmCall>> makeGemmProblem(Backend& backend, const DeviceInfo& device,
                                                    const gemm::GemmShape& shape, uint64_t seed) {
  KTUNE_RETURN_IF_ERROR(gemm::validate(shape));
  const DType ab = toDType(shape.ab), cd = toDType(shape.c);
  // Whole rows x leading dimension (C is snapshotted and poisoned that way by the op); A gets 16
  // spare bytes for the misaligned start. validate() bounds the spans by 2^60 bytes, but a huge
  // leading dimension on the last row is not in the span, so the products are checked here.
  const int64_t a_rows = gemm::storedRowsA(shape), b_rows = gemm::storedRowsB(shape);
  int64_t a_bytes = 0, b_bytes = 0, c_bytes = 0, total = 0;
  if (__builtin_mul_overflow(a_rows, shape.lda, &a_bytes) ||
      __builtin_mul_overflow(a_bytes, int64_t(sizeOf(ab)), &a_bytes) ||
      __builtin_add_overflow(a_bytes, int64_t(16), &a_bytes) ||
      __builtin_mul_overflow(b_rows, shape.ldb, &b_bytes) ||
      __builtin_mul_overflow(b_bytes, int64_t(sizeOf(ab)), &b_bytes) ||
      __builtin_mul_overflow(shape.m, shape.ldc, &c_bytes) ||
      __builtin_mul_overflow(c_bytes, int64_t(sizeOf(cd)), &c_bytes) ||
      __builtin_add_overflow(a_bytes, b_bytes, &total) ||
      __builtin_add_overflow(total, c_bytes, &total) || total > (int64_t(1) << 60))
    return Status::InvalidArgument(
        "GEMM problem: A, B and C need more than 2^60 bytes; check the leading dimensions");
  const int64_t bias_bytes = shape.has_bias ? shape.n * int64_t(sizeOf(cd)) : 0;
  total += bias_bytes;
  if (device.global_mem_bytes > 0 && total > device.global_mem_bytes)
    return Status::OutOfResources("GEMM problem needs " + std::to_string(total) +
                                  " bytes of device memory for A, B and C, more than the " +
                                  std::to_string(device.global_mem_bytes) + " bytes of " +
                                  device.name + "; tune a smaller shape on this device");
  auto call = std::make_shared<OwnedGemmCall>();
  call->backend = &backend;
  call->shape = shape;
  auto alloc = [&](int64_t bytes) -> Expected<DevicePtr> {
    KTUNE_ASSIGN_OR_RETURN(DevicePtr p, backend.alloc(static_cast<size_t>(bytes)));
    call->allocations.push_back(p);
    return p;
  };
  KTUNE_ASSIGN_OR_RETURN(DevicePtr a, alloc(a_bytes));
  // Allocations are at least 16-byte aligned on every backend, so +2 bytes makes A (and with it
  // the whole call) take the unaligned path, as the recorded call did.
  call->buf.a = shape.aligned16 ? a : a + 2;
  KTUNE_ASSIGN_OR_RETURN(call->buf.b, alloc(b_bytes));
  KTUNE_ASSIGN_OR_RETURN(call->buf.c, alloc(c_bytes));
  if (shape.has_bias) {
    KTUNE_ASSIGN_OR_RETURN(call->buf.bias, alloc(bias_bytes));
  }
  KTUNE_RETURN_IF_ERROR(fillRandom(backend, call->buf.a, ab, a_rows * shape.lda, seed));
  KTUNE_RETURN_IF_ERROR(fillRandom(backend, call->buf.b, ab, b_rows * shape.ldb, seed + 1));
  KTUNE_RETURN_IF_ERROR(fillRandom(backend, call->buf.c, cd, shape.m * shape.ldc, seed + 2));
  if (shape.has_bias) {
    KTUNE_RETURN_IF_ERROR(fillRandom(backend, call->buf.bias, cd, shape.n, seed + 3));
  }
  call->shape = withAlignment(shape, call->buf);
  return std::shared_ptr<GemmCall>(std::move(call));
}

}  // namespace ktune
