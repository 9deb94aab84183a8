#include "ops/gemm.h"
#include "ops/gemm_state.h"

#include "ops/buffers.h"
#include "ops/gemm_configs.h"
#include "ops/gemm_vendor.h"
#include "ops/vendor_answers.h"

#include <algorithm>
#include <cmath>
#include <cfloat>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "base/dtype.h"
#include "ops/recorded.h"
#include "autotune/static_prune.h"
#include "ops/tune_args.h"
#include "autotune/verifier.h"
#include "base/json_bounded.h"
#include "base/json_fields.h"
#include "base/timeline.h"

namespace ktune {
// ---------------------------------------------------------------------------------------------
// GemmOp
// ---------------------------------------------------------------------------------------------

namespace {

using gemm_ops::kindOf;
using gemm_ops::knobsOf;
using gemm_ops::withKind;

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
  return makeStaticPruner(o, gemm_ops::configLaunch);
}

}  // namespace


GemmOp::GemmOp(std::unique_ptr<State> st) : st_(std::move(st)) {}
// The family's callbacks point at this op's state: background tuning of its keys must be over
// before the state goes (the tuner may outlive the op).
GemmOp::~GemmOp() {
  if (st_) st_->family.cancelBackground();
}

void GemmOp::openVendor() {
  if (!st_->open_vendor) return;
  auto open = std::move(st_->open_vendor);
  st_->open_vendor = nullptr;
  open();
}

bool GemmOp::hasCublasLt() const { return vendorLibrary() == "cublaslt"; }
std::string GemmOp::vendorLibrary() const { return st_->vendor ? st_->vendor->source() : ""; }

namespace {

// The kernel kinds the family tunes on `dev` (wgmma and TMA on sm_90a), narrowed to
// options.kinds; sets S->tma when the TMA kernel is among them.
Expected<std::vector<gemm::KernelKind>> familyKinds(GemmOp::State* S, const DeviceInfo& dev,
                                                   const std::string& backend,
                                                   const GemmOp::OpOptions& options) {
  std::vector<gemm::KernelKind> kinds = gemm::kernelsForBackend(backend);
  if (options.wgmma && dev.arch == "sm_90a") kinds.push_back(gemm::KernelKind::kWgmma);
  if (options.tma && dev.arch == "sm_90a") {
    kinds.push_back(gemm::KernelKind::kTma);
    S->tma = true;
  }
  const auto decodeMaps = [&dev](const std::vector<gemm::KernelKind>& ks) {
    return dev.arch == "sm_90a" &&
           std::find(ks.begin(), ks.end(), gemm::KernelKind::kDecode) != ks.end();
  };
  S->decode_maps = decodeMaps(kinds);
  if (options.kinds.empty()) return kinds;
  std::vector<gemm::KernelKind> keep;
  for (auto k : kinds)
    if (std::find(options.kinds.begin(), options.kinds.end(), k) != options.kinds.end())
      keep.push_back(k);
  if (keep.empty())
    return Status::Unsupported("none of the requested GEMM kernel kinds runs on " + dev.name +
                               " (" + dev.arch + ")");
  S->tma = std::find(keep.begin(), keep.end(), gemm::KernelKind::kTma) != keep.end();
  S->decode_maps = decodeMaps(keep);
  return keep;
}

Defines gemmDefines(const Config& c, const GemmCall& call) {
  auto k = kindOf(c);
  const gemm::KernelKind kind = k.ok() ? *k : gemm::KernelKind::kMma;
  const Config knobs = knobsOf(c);
  const gemm::GemmShape s = withAlignment(call.shape, call.buf);
  Defines d = gemm::defines(kind, knobs, s);
  if (!k.ok() || !gemm::applicable(kind, knobs, s).ok()) d.emplace_back("KTUNE_GEMM_INAPPLICABLE", "1");
  return d;
}

void gemmKey(const GemmCall& call, KeyBuilder& k) {
  const gemm::GemmShape s = withAlignment(call.shape, call.buf);
  k.add("layout", gemm::layoutName(s.layout));
  k.add("ab", gemm::elemTypeName(s.ab));
  k.add("c", gemm::elemTypeName(s.c));
  k.add("M", s.m).add("N", s.n).add("K", s.k);
  k.add("lda", s.lda).add("ldb", s.ldb).add("ldc", s.ldc);
  const int64_t epi = (s.has_bias ? 1 : 0) | (static_cast<int64_t>(s.act) << 1) |
                      (s.beta != 0.0f ? 8 : 0) | (s.aligned16 ? 16 : 0);
  k.add("epi", epi);  // bit 0 bias, bits 1-2 activation, bit 3 beta != 0, bit 4 16-byte aligned
}

Launch gemmLaunch(const Config& c, const GemmCall& call, const DeviceInfo& d) {
  Launch dims;
  auto k = kindOf(c);
  auto plan = k.ok() ? gemm::launchPlan(*k, knobsOf(c), withAlignment(call.shape, call.buf), d)
                     : Expected<gemm::LaunchPlan>(k.status());
  if (!plan.ok()) {
    dims.grid[0] = 0;  // a launch would be refused; the reason is the candidate's failure
    dims.refused = plan.status();
    return dims;
  }
  dims.grid[0] = plan->grid.x, dims.grid[1] = plan->grid.y, dims.grid[2] = plan->grid.z;
  dims.block[0] = plan->block.x, dims.block[1] = plan->block.y, dims.block[2] = plan->block.z;
  dims.shared_bytes = static_cast<size_t>(plan->shared_bytes);
  dims.persistent_cluster = static_cast<unsigned>(plan->persistent_cluster);
  return dims;
}

const GemmCall& callOf(const void* p) { return *static_cast<const GemmCall*>(p); }

// The run-time hooks of the family: arguments, split-K workspace, C restore, verification.
void addRunHooks(TypedKernelSpec<GemmCall>& f, FamilyExtras& x, GemmOp::State* S) {
  // Per config: a kTma config's A and B maps are in boxes of its tiles (gemm::tmaBoxRows); every
  // other kind's in the default boxes (the decode kind's kTma tail is not read).
  const auto args = [S](const Config* c, const GemmCall& call, KernelArgs& a) {
    const auto& s = call.shape;
    a.add(call.buf.a).add(call.buf.b).add(call.buf.c).add(call.buf.bias);
    a.add(S->scratch.workspace).add(S->scratch.counters);
    a.add(static_cast<int32_t>(s.m)).add(static_cast<int32_t>(s.n)).add(static_cast<int32_t>(s.k));
    a.add(static_cast<int64_t>(s.lda)).add(static_cast<int64_t>(s.ldb)).add(static_cast<int64_t>(s.ldc));
    a.add(s.alpha).add(s.beta);
    if (!S->tma && !S->decode_maps) return;
    gemm::TmaBoxRows boxes = gemm::kTmaBoxRows;
    if (c && S->tma) {
      auto k = kindOf(*c);
      if (k.ok() && *k == gemm::KernelKind::kTma) boxes = gemm::tmaBoxRows(*c, s);
    }
    S->addTensorMaps(call, a, boxes);
    if (S->decode_maps) S->addDecodeMaps(call, a);
  };
  f.args = [args](const GemmCall& call, ArgPack& pack) {
    args(nullptr, call, EngineViews::args(pack));
  };
  x.config_args = [args](const Config& c, const void* p, KernelArgs& a) { args(&c, callOf(p), a); };
  f.before_launch = [S](const Knobs& knobs, const GemmCall& call, StreamHandle stream) -> Status {
    // The config's own launch rule says what it reduces through (split-K slices, stream-K ranges
    // that cut a tile, the TMA kernel's split tail), cached per (config, problem).
    return S->sizeScratch(EngineViews::config(knobs), withAlignment(call.shape, call.buf), stream);
  };
  f.before_run = [S](const GemmCall& call, StreamHandle s) { return S->preRun(call, s); };
  // Timed runs overwrite C completely when beta == 0: no re-poisoning (an M*N memset per sample);
  // with beta != 0 C is restored as before verification.
  f.before_timed_run = [S](const GemmCall& call, StreamHandle s) -> Status {
    if (call.shape.beta == 0.0f) return Status::Ok();
    return S->preRun(call, s);
  };
  x.verify = [S](const void* p, StreamHandle s) { return S->verify(callOf(p), s); };
}

// The vendor library's algorithms as candidates (when it was opened).
// With OpOptions::vendor_later the library is opened after the family is registered: its
// candidates are asked for at each call (none while it is not open, or could not be).
void addVendorCandidates(TypedKernelSpec<GemmCall>& f, GemmOp::State* S) {
  if (!S->vendor && !S->open_vendor) return;
  f.vendor_candidates = [S](const GemmCall& call) {
    if (!S->vendor) return std::vector<VendorCandidate>{};
    return vendor_answers::candidates(*S->vendor, S->answers_dir, S->tuner->device(),
                                      withAlignment(call.shape, call.buf), S->vendor_algos);
  };
  f.vendor_launch = [S](const std::string& id, const GemmCall& call, StreamHandle stream) -> Status {
    if (id.empty()) return Status::InvalidArgument("empty vendor algorithm id");
    if (!S->vendor) return Status::Unavailable("the vendor library is not open");
    return S->vendor->run(id, call.shape, call.buf, stream);
  };
}

// cuBLASLt on NVIDIA, hipBLASLt on AMD, when vendor algorithms are wanted. A missing library
// leaves JIT candidates only; on the simulated device a library is opened only from paths the
// caller names (the tests' fake hipBLASLt), never from the system.
void openVendorLibrary(GemmOp::State* S, const std::string& backend, bool sim,
                       const GemmOp::OpOptions& options) {
  if (S->vendor_algos <= 0) return;
  const auto& paths = backend == "cuda" ? options.cublaslt_paths : options.hipblaslt_paths;
  if (sim && paths.empty()) return;
  auto v = openGemmVendor(backend, S->tuner->backend(), S->tuner->device().multiprocessors, paths);
  if (v.ok()) S->vendor = std::move(v).value();
  // Its one-time set-up overlaps the caller's next steps (a warm tuning run's inputs).
  if (S->vendor && !sim && !options.warm_up_later) S->vendor->startWarmUp(S->tuner->device().ordinal);
}

}  // namespace

Expected<std::unique_ptr<GemmOp>> GemmOp::create(std::shared_ptr<Engine> tuner, OpOptions options) {
  if (!tuner) return Status::InvalidArgument("GemmOp::create needs a Engine");
  KTUNE_ASSIGN_OR_RETURN(auto op, create(*tuner, std::move(options)));
  op->st_->keep_tuner = std::move(tuner);
  return op;
}

Expected<std::unique_ptr<GemmOp>> GemmOp::create(Engine& tuner, OpOptions options) {
  const DeviceInfo& dev = tuner.device();
  // A simulated device (KTUNE_BACKEND=sim) gets the kernels of the vendor its arch names.
  const bool sim = dev.vendor == Vendor::kSimulated;
  const Arch arch(dev.arch);
  const std::string backend = dev.vendor == Vendor::kNvidia || (sim && arch.isNvidia()) ? "cuda"
                              : dev.vendor == Vendor::kAmd || (sim && arch.isAmd())     ? "hip"
                                                                                        : "";
  if (backend.empty())
    return Status::Unsupported("GEMM op needs an NVIDIA or AMD device, got " + dev.name);
  auto st = std::make_unique<State>();
  State* S = st.get();
  S->tuner = &tuner;
  S->vendor_algos = tuner.options().options.vendor_algos;
  if (tuner.options().options.vendor_answers) S->answers_dir = tuner.options().options.cache_dir;
  S->warm_up_later = options.warm_up_later;
  S->defer_reference = options.defer_reference;
  if (!options.vendor_later) openVendorLibrary(S, backend, sim, options);
  else if (S->vendor_algos > 0)
    S->open_vendor = [S, backend, sim, options] { openVendorLibrary(S, backend, sim, options); };
  const gemm::KernelKind main_kind = backend == "cuda" ? gemm::KernelKind::kMma : gemm::KernelKind::kMfma;
  const auto big = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16,
                                    4096, 4096, 4096);
  const std::string& curated_path = tuner.options().options.curated_path;
  KTUNE_ASSIGN_OR_RETURN(auto curated, gemm::curatedConfigs(main_kind, big, dev, curated_path));
  if (curated.empty()) return Status::Internal("no curated GEMM config for " + backend);
  S->default_config = curated.front();
  S->default_kind = main_kind;
  // The reference kernel compiles through the store: a restarted worker finds it there.
  S->ref_runner =
      std::make_unique<GemmRunner>(tuner.backend(), tuner.compiler(), dev, &tuner.store());

  TypedKernelSpec<GemmCall> f;
  FamilyExtras x;  // the configs (with their string KIND), pruning, defines per problem
  f.name = "gemm";
  // Each kind compiles from its own source (gemm::kernelSource), so editing one kernel leaves the
  // other kinds' cached code objects valid. KTUNE_GEMM_INAPPLICABLE turns a config that cannot
  // compute the problem into a compile error (that candidate's failure; tuning goes on).
  f.source = std::string(gemm::kernelSource(main_kind));
  x.source_fn = [](const Config& c, const void*) -> Expected<ConfigModule> {
    ConfigModule m;
    auto k = kindOf(c);
    m.text = std::string(gemm::kernelSource(k.ok() ? *k : gemm::KernelKind::kMma));
    return m;
  };
  x.source_name = "gemm_family.cu";
  f.entry = gemm::entryName(main_kind);
  x.entry_fn = [](const Config& c, const void*) {
    auto k = kindOf(c);
    return std::string(gemm::entryName(k.ok() ? *k : gemm::KernelKind::kMma));
  };
  KTUNE_ASSIGN_OR_RETURN(auto kinds, familyKinds(S, dev, backend, options));
  KTUNE_ASSIGN_OR_RETURN(x.configs,
                         gemm_ops::familyConfigs(
                             kinds, backend, options.full_space,
                             std::max(dev.shared_per_block_optin, dev.shared_per_block), dev,
                             curated_path));
  S->verify_tile = gemm_ops::verifyTile(x.configs);
  S->key_default = [S, kinds, main_kind, dev, curated_path](const GemmCall& call) {
    return S->defaultFor(call, kinds, main_kind, dev, curated_path);
  };
  x.default_for = [S](const void* p) { return S->key_default(callOf(p)); };
  x.defines = [](const Config& c, const void* p) { return gemmDefines(c, callOf(p)); };
  // The decode kind's body (DC_WG: mma.sync, wgmma, TMA-fed, CUDA-core FMA: four kernels under
  // one KIND) and its stream-K blocks per SM (DC_GRID: whole waves whatever the value) are what
  // the prior cannot rank, and they interact: the guided race times each (DC_WG, DC_GRID) pair
  // before it stops (autotune/guided.h). So is the tma kind's CLUSTER_M: what a cluster saves is
  // L2 load requests (B multicast), which the static score (tiles, waves) does not see; each
  // value's best-ranked config is raced (a value the shape refuses, CLUSTER_M 4 below 512 rows,
  // fails before it is compiled).
  x.race_each = {"DC_WG", "DC_GRID", "CLUSTER_M"};
  // Large prefill shapes on sm_90a: mma.sync and the small-M kernel cannot beat the tma kind; at
  // decode rows (M <= 16) the kinds of 64- and 128-row tiles cannot beat the decode kind; a split
  // tail that splits nothing at the key is its SPLIT_K 1 twin's schedule (gemm_configs.h).
  x.guided_leave_out = [dev](const std::vector<Config>& cs, const void* p) {
    const GemmCall& call = callOf(p);
    return gemm_ops::guidedLeaveOut(cs, withAlignment(call.shape, call.buf), dev);
  };
  f.key = [](const GemmCall& call, KeyFields& k) { gemmKey(call, EngineViews::key(k)); };
  f.launch = [dev](const Knobs& c, const GemmCall& call, const DeviceFacts&) {
    return gemmLaunch(EngineViews::config(c), call, dev);
  };
  f.launch_per_key = true;  // gemmKey holds every shape field launchPlan reads: dims once per key
  addRunHooks(f, x, S);
  x.prune = makeGemmPruner(tuner.options().options, dev.vendor == Vendor::kAmd);
  // The decode bodies wait for the previous kernel before they touch memory (KTUNE_PDL_WAIT first
  // in each ktune_gemm_decode), so calls may launch them as programmatic dependent launches.
  x.programmatic_wait = [](const Config& c) {
    auto k = kindOf(c);
    return k.ok() && *k == gemm::KernelKind::kDecode;
  };
  x.default_config = withKind(S->default_config, main_kind);
  addVendorCandidates(f, S);
  // Offline tuning (ktune tune --from-file) and the isolation worker rebuild a call from its
  // shape; the data is deterministic (seed 1), so every rebuild of one shape in a process sees the
  // same A, B and C — State::per_key's cached C snapshot and reference stay valid across them.
  f.args_json = [](const GemmCall& call) { return gemmCallToJson(call); };
  f.make_problem = [S](const std::string& text) -> Expected<std::shared_ptr<GemmCall>> {
    // Typed fields and the memory the problem needs, before allocating (checkBuiltinTuneArgs).
    KTUNE_RETURN_IF_ERROR(checkBuiltinTuneArgs("gemm", parseJsonOrDiscarded(text)));
    KTUNE_ASSIGN_OR_RETURN(gemm::GemmShape shape, gemmShapeFromJson(text));
    // Beside the inputs' fill, where the reference will ask the library (or the first check).
    const bool later = S->warmUpFor(shape);
    KTUNE_ASSIGN_OR_RETURN(std::shared_ptr<GemmCall> call,
                           makeGemmProblem(S->tuner->backend(), S->tuner->device(), shape, 1));
    timelineMark("problem_inputs");
    if (later) return call;  // OpOptions::defer_reference
    S->prepareReference(*call);
    timelineMark("problem_reference");
    return call;
  };
  KTUNE_ASSIGN_OR_RETURN(S->family, tuner.add(std::move(f), std::move(x)));
  return std::unique_ptr<GemmOp>(new GemmOp(std::move(st)));
}

namespace {
Status checkCall(const GemmCall& call) {
  KTUNE_RETURN_IF_ERROR(gemm::validate(call.shape));
  if (!call.buf.a || !call.buf.b || !call.buf.c)
    return Status::InvalidArgument("GEMM needs non-null A, B and C buffers");
  if (call.shape.has_bias && !call.buf.bias)
    return Status::InvalidArgument("GEMM with has_bias needs a bias buffer");
  // FP8 has one layout (both operands K-major): say so rather than fail every candidate.
  if (isFp8(call.shape.ab) && call.shape.layout != gemm::Layout::kNT)
    return Status::Unsupported(std::string("fp8 GEMM needs layout NT (A [M][K], B [N][K]: both "
                                           "K-major, as fp8 wgmma and cuBLASLt FP8 read them), got ") +
                               gemm::layoutName(call.shape.layout));
  // The gate/up pair's reference is the decode kernel's default (State::launchReference), so the
  // op takes the pair within that kernel's scope (the tma kernel is raced beside it there): say
  // why it cannot run rather than fail every candidate.
  if (call.shape.act == gemm::Activation::kSiluMul &&
      gemm::curatedConfigs(gemm::KernelKind::kDecode, withAlignment(call.shape, call.buf)).empty())
    return Status::Unsupported("act silu_mul (gate/up pair) runs within the decode kernel's "
                               "scope: layout NT, M <= 128, K % 8 == 0, lda and ldb % 8 == 0, "
                               "16-byte aligned A and B; got " + gemm::shapeKey(withAlignment(call.shape, call.buf)));
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

std::optional<TuneReport> GemmOp::fetchShared(const gemm::GemmShape& shape) {
  if (!gemm::validate(shape).ok()) return std::nullopt;
  gemm::GemmShape s = shape;
  s.aligned16 = true;  // what withAlignment finds for device allocations
  return st_->family.fetchShared(GemmCall{s, GemmBuffers{}});
}

std::optional<TuneReport> GemmOp::fetchRecorded(const gemm::GemmShape& shape) {
  if (!gemm::validate(shape).ok()) return std::nullopt;
  gemm::GemmShape s = shape;
  s.aligned16 = true;  // what withAlignment finds for device allocations
  return recordedReport(*st_->tuner, st_->family.name(), st_->family.key(GemmCall{s, GemmBuffers{}}));
}

Expected<size_t> GemmOp::precompile(const gemm::GemmShape& shape, int threads, size_t depth) {
  KTUNE_RETURN_IF_ERROR(gemm::validate(shape));
  gemm::GemmShape s = shape;
  s.aligned16 = true;  // what withAlignment finds for device allocations
  return st_->family.precompile(GemmCall{s, GemmBuffers{}}, threads, depth);
}

Expected<Config> GemmOp::defaultConfig(const gemm::GemmShape& shape) const {
  KTUNE_RETURN_IF_ERROR(gemm::validate(shape));
  gemm::GemmShape s = shape;
  s.aligned16 = true;  // what withAlignment finds for device allocations
  return st_->key_default(GemmCall{s, GemmBuffers{}});
}

void GemmOp::prepareWorker(const gemm::GemmShape& shape) {
  if (!gemm::validate(shape).ok()) return;
  gemm::GemmShape s = shape;
  s.aligned16 = true;  // what withAlignment finds for device allocations
  st_->tuner->prepareWorker(st_->family.name(), gemmCallToJson(GemmCall{s, GemmBuffers{}}));
}

Expected<predict::Prediction> GemmOp::predict(const gemm::GemmShape& shape) {
  KTUNE_RETURN_IF_ERROR(gemm::validate(shape));
  gemm::GemmShape s = shape;
  s.aligned16 = true;  // what withAlignment finds for device allocations
  return st_->family.predict(GemmCall{s, GemmBuffers{}});
}

Status GemmOp::prepare(const GemmCall& call, StreamHandle stream) {
  KTUNE_RETURN_IF_ERROR(checkCall(call));
  const GemmCall aligned{withAlignment(call.shape, call.buf), call.buf};
  KTUNE_RETURN_IF_ERROR(st_->family.prepare(aligned, stream));
  // What the selected config launches with, too: a split-K or stream-K config's scratch is sized
  // here, since a call inside a capture allocates nothing.
  KTUNE_ASSIGN_OR_RETURN(KeyReport r, st_->family.lookup(aligned));
  if (isVendorSource(r.winner_source)) return Status::Ok();
  KTUNE_ASSIGN_OR_RETURN(Config c, Config::parse(r.winner));
  return st_->sizeScratch(c, aligned.shape, stream);
}

Expected<KeyReport> GemmOp::lookup(const GemmCall& call) {
  KTUNE_RETURN_IF_ERROR(checkCall(call));
  return st_->family.lookup(GemmCall{withAlignment(call.shape, call.buf), call.buf});
}

}  // namespace ktune
