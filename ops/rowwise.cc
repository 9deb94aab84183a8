#include "ops/rowwise_families.h"

#include "ops/buffers.h"
#include "ops/rowwise_session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "autotune/static_prune.h"
#include "ops/tune_args.h"
#include "autotune/verifier.h"
#include "base/json_bounded.h"

namespace ktune {
namespace rowwise_ops {

namespace rw = rowwise;

namespace {

// ---------------------------------------------------------------------------------------------
// Family registration (one per dtype and op, per Engine)
// ---------------------------------------------------------------------------------------------
std::string rmsId(const RmsNormArgs& a) {
  std::string s;
  for (int64_t v : {int64_t(a.dtype), a.rows, a.cols, int64_t(a.x), int64_t(a.y), int64_t(a.weight),
                    int64_t(a.residual), int64_t(a.residual_out), a.x_stride, a.y_stride,
                    a.residual_stride, a.residual_out_stride})
    s += std::to_string(v) + ",";
  return s;
}

// Offline tuning (KTUNE_TUNING=0 records keys; `ktune tune --from-file` / Engine::tuneFromFile
// and the isolation worker rebuild a problem): the args as JSON, and a problem with its own
// random-filled buffers made from that JSON. The buffers are freed with the returned problem.

template <class A>
std::shared_ptr<A> ownedProblem(const A& a, std::unique_ptr<DeviceBuffers> bufs) {
  auto* raw = new A(a);
  auto* b = bufs.release();
  return std::shared_ptr<A>(raw, [b](A* p) {
    delete p;
    delete b;
  });
}

int64_t jsonInt(const nlohmann::json& j, const char* k, int64_t fallback = 0) {
  auto it = j.find(k);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

// make_problem's start: the args JSON (args_json's output) parsed, with the dtype and rows read
// into a fresh A; the op reads its own fields from the returned object.
template <class A>
Expected<std::pair<nlohmann::json, A>> parseArgsJson(const std::string& text, const char* op) {
  auto j = parseJsonOrDiscarded(text);
  if (j.is_discarded() || !j.is_object())
    return Status::InvalidArgument(std::string(op) + ": args JSON is not an object");
  // Types, strides and the memory the problem needs, before anything reads or allocates.
  if (Status s = checkBuiltinTuneArgs(op, j); !s.ok()) return s.withContext(std::string(op));
  A a;
  KTUNE_ASSIGN_OR_RETURN(a.dtype, parseDType(j.value("dtype", std::string("bf16"))));
  a.rows = jsonInt(j, "rows");
  return std::make_pair(std::move(j), a);
}


// make_problem: the args from their JSON, with random-filled buffers of their own.
Expected<std::shared_ptr<RmsNormArgs>> rmsMakeProblem(FamilyCtx& c, const std::string& text) {
  FamilyCtx* ctx = &c;
  KTUNE_ASSIGN_OR_RETURN(auto parsed, parseArgsJson<RmsNormArgs>(text, "rmsnorm"));
  auto& [j, a] = parsed;
  a.cols = jsonInt(j, "cols");
  a.x_stride = jsonInt(j, "x_stride");
  a.y_stride = jsonInt(j, "y_stride");
  a.eps = j.value("eps", 1e-6f);
  if (a.rows <= 0 || a.cols <= 0 || a.rows > (int64_t(1) << 31) || a.cols > (int64_t(1) << 31))
    return Status::InvalidArgument("rmsnorm: args JSON needs positive rows and cols");
  auto bufs = std::make_unique<DeviceBuffers>(ctx->tuner->backend());
  const int64_t xs = a.x_stride ? a.x_stride : a.cols, ys = a.y_stride ? a.y_stride : a.cols;
  KTUNE_ASSIGN_OR_RETURN(a.x, bufs->random(a.dtype, a.rows * xs, 1));
  KTUNE_ASSIGN_OR_RETURN(a.y, bufs->random(a.dtype, a.rows * ys, 2));
  if (j.value("weight", true)) {
    KTUNE_ASSIGN_OR_RETURN(a.weight, bufs->random(a.dtype, a.cols, 3));
    a.weight_dtype = a.dtype;
  }
  if (j.value("residual", false)) {
    KTUNE_ASSIGN_OR_RETURN(a.residual, bufs->random(a.dtype, a.rows * a.cols, 4));
    KTUNE_ASSIGN_OR_RETURN(a.residual_out, bufs->random(a.dtype, a.rows * a.cols, 5));
  }
  KTUNE_RETURN_IF_ERROR(validate(a));
  return ownedProblem(a, std::move(bufs));
}

// pre_run: restore aliased inputs from the session's backup, poison the outputs.
Status rmsPreRun(FamilyCtx& c, const RmsNormArgs& a, StreamHandle s) {
  FamilyCtx* ctx = &c;
  std::lock_guard<std::mutex> lk(ctx->mu);
  Backend& b = ctx->tuner->backend();
  const auto p = toProblem(a);
  const auto st = rw::kernelStrides(p);
  const size_t es = rw::sizeOf(p.dtype);
  const size_t xn = spanBytes(a.rows, a.cols, st.x, es), yn = spanBytes(a.rows, a.cols, st.y, es);
  std::vector<std::tuple<DevicePtr, int64_t, int64_t>> inputs = {{a.x, st.x, a.cols}};
  // Input regions (x, residual) and output regions (y, residual_out); an input an output
  // overlaps is backed up and restored before every run.
  std::vector<std::pair<DevicePtr, size_t>> ins = {{a.x, xn}}, outs = {{a.y, yn}};
  size_t ron = 0;
  if (p.has_residual) {
    inputs.push_back({a.residual, st.r, a.cols});
    ins.push_back({a.residual, spanBytes(a.rows, a.cols, st.r, es)});
    ron = spanBytes(a.rows, a.cols, st.ro, es);
    outs.push_back({a.residual_out, ron});
  }
  std::vector<std::pair<DevicePtr, size_t>> aliased;
  for (const auto& in : ins) {
    for (const auto& o : outs) {
      if (overlaps(in.first, in.second, o.first, o.second)) {
        aliased.push_back(in);
        break;
      }
    }
  }
  auto hitsInput = [&](DevicePtr o, size_t on) {
    for (const auto& in : ins)
      if (overlaps(in.first, in.second, o, on)) return true;
    return false;
  };
  const bool y_aliases = hitsInput(a.y, yn);
  const bool ro_aliases = p.has_residual && hitsInput(a.residual_out, ron);
  KTUNE_RETURN_IF_ERROR(beginOrRestore(*ctx, rmsId(a), a.rows, es, inputs, a.weight, a.cols,
                                       aliased, s));
  // Poison outputs that are not inputs, so unwritten elements fail verification.
  if (!y_aliases) KTUNE_RETURN_IF_ERROR(b.memset8(a.y, 0xff, yn, s));
  if (p.has_residual && !ro_aliases) KTUNE_RETURN_IF_ERROR(b.memset8(a.residual_out, 0xff, ron, s));
  return Status::Ok();
}


// verify: the sampled rows against the float64 reference on the session's input snapshot.
Expected<VerifyResult> rmsVerify(FamilyCtx& c, const RmsNormArgs& a, StreamHandle s) {
  Backend& b = c.tuner->backend();
  const auto& [p, st, es, one] = RowView<RmsNormArgs>(a);
  const Tolerance tol = toleranceFor(a.dtype, a.cols);
  std::vector<double> w, y(size_t(a.cols)), ro(size_t(a.cols));
  std::vector<unsigned char> got;
  auto check = [&](const Session& ss, size_t i, const std::vector<double>& in,
                   VerifyResult& total) -> Status {
    if (p.has_weight && w.empty()) w = rw::unpack(p.dtype, ss.weight.data(), size_t(a.cols));
    const double* r = p.has_residual ? in.data() + a.cols : nullptr;
    rw::rmsNormReference(one, in.data(), p.has_weight ? w.data() : nullptr, r, y.data(), ro.data());
    got.clear();
    KTUNE_RETURN_IF_ERROR(readRow(b, a.y, ss.rows[i], st.y, a.cols, es, got));
    merge(total, compareRow(got, a.dtype, y, tol));
    if (p.has_residual) {
      got.clear();
      KTUNE_RETURN_IF_ERROR(readRow(b, a.residual_out, ss.rows[i], st.ro, a.cols, es, got));
      merge(total, compareRow(got, a.dtype, ro, toleranceFor(a.dtype, 1)));
    }
    return Status::Ok();
  };
  return verifySampledRows(c, rmsId(a), "rmsnorm", p.dtype, s, check);
}

// What a row-wise family takes from its kernel (templates/rowwise.h): the embedded source and
// entry, the device's space and default config, the defines, and the problem static pruning
// launches (one 4096-wide row: the block depends on the config only).
template <class P>
struct RowKernel {
  const char* op;  // the family is "<op>_<dtype>"
  std::string_view (*source)();
  const char* file;
  const char* entry;
  ConfigSpace (*space)(rw::RowDType, const rw::RowwiseLimits&);
  Config (*default_config)(rw::RowDType, const rw::RowwiseLimits&);
  std::vector<std::pair<std::string, std::string>> (*defines)(const Config&, const P&);
  P probe;
};

const RowKernel<rw::RmsNormProblem> kRmsNormKernel{
    "rmsnorm", rw::rmsNormSource, rw::kRmsNormSource, rw::kRmsNormEntry, rw::rmsNormSpace,
    rw::rmsNormDefaultConfig, rw::rmsNormDefines, rw::RmsNormProblem{.rows = 1, .cols = 4096}};
const RowKernel<rw::SiluMulProblem> kSiluMulKernel{
    "silu_mul", rw::siluMulSource, rw::kSiluMulSource, rw::kSiluMulEntry, rw::siluMulSpace,
    rw::siluMulDefaultConfig, rw::siluMulDefines, rw::SiluMulProblem{.rows = 1, .d = 4096}};

// A row-wise family as registered: the one spec, and the engine objects of its space.
template <class A>
struct RowFamily {
  TypedKernelSpec<A> spec;
  FamilyExtras extras;
};

// The family of kernel `k` for dtype `dt` on t's device, less its problem-specific parts (key,
// args, JSON, verification). The launch rule is a template argument: it runs on every launch.
template <class A, class P, rw::LaunchShape (*kLaunch)(const Config&, const P&, const DeviceInfo&)>
RowFamily<A> kernelFamily(Engine& t, rw::RowDType dt, const RowKernel<P>& k) {
  const auto lim = rw::limitsFor(t.device());
  RowFamily<A> r;
  auto& [f, x] = r;
  f.name = std::string(k.op) + "_" + rw::name(dt);
  f.source = std::string(k.source());
  x.source_name = k.file;
  f.entry = k.entry;
  x.space = k.space(dt, lim);
  x.default_config = k.default_config(dt, lim);
  // Rows per block changes the grid by a factor the waves hide (1024 rows: 8, 4 or 2 full waves),
  // and SiLU·Mul's load hint (L2 evict_first) changes no launch figure at all, so the prior cannot
  // rank either: the guided race times each combination before it stops (the exhaustive winners
  // of SiLU·Mul at 1024-4096 rows had LOAD_HINT=1 where the guided ones kept 0).
  x.race_each = {"ROWS_PER_BLOCK", "LOAD_HINT"};
  f.programmatic_wait = true;  // both kernels start with KTUNE_PDL_WAIT (templates/kernels/)
  x.prune = makeStaticPruner(staticPruneOptionsFrom(t.options().options),
                             [probe = k.probe](const Config& c, const DeviceInfo& d) {
                               const auto l = kLaunch(c, probe, d);
                               return PruneLaunch{int(l.block.x * l.block.y * l.block.z),
                                                  int64_t(l.shared)};
                             });
  x.defines = [defines = k.defines](const Config& c, const void* a) {
    return defines(c, toProblem(*static_cast<const A*>(a)));
  };
  f.launch = [dev = t.device()](const Knobs& c, const A& a, const DeviceFacts&) {
    const auto l = kLaunch(EngineViews::config(c), toProblem(a), dev);
    Launch out;
    out.grid[0] = l.grid.x, out.grid[1] = l.grid.y, out.grid[2] = l.grid.z;
    out.block[0] = l.block.x, out.block[1] = l.block.y, out.block[2] = l.block.z;
    out.shared_bytes = l.shared;
    return out;
  };
  return r;
}

RowFamily<RmsNormArgs> rmsFamilyDesc(Engine& t, rw::RowDType dt, std::shared_ptr<FamilyCtx> ctx) {
  auto r = kernelFamily<RmsNormArgs, rw::RmsNormProblem, rw::rmsNormLaunch>(t, dt, kRmsNormKernel);
  auto& f = r.spec;
  f.key = [](const RmsNormArgs& a, KeyFields& kf) {
    KeyBuilder& k = EngineViews::key(kf);
    const auto p = toProblem(a);
    k.add("cols", a.cols)
        .add("rows", bucketPow2Capped(a.rows, 4096))
        .add("w", int64_t(p.has_weight))
        .add("res", int64_t(p.has_residual))
        .add("align", rw::alignmentBytes(p));
  };
  f.args_json = [](const RmsNormArgs& a) {
    return nlohmann::json{{"dtype", dtypeName(a.dtype)}, {"rows", a.rows}, {"cols", a.cols},
                          {"weight", a.weight != 0}, {"residual", a.residual != 0},
                          {"eps", a.eps}, {"x_stride", a.x_stride}, {"y_stride", a.y_stride}}
        .dump();
  };
  f.make_problem = [ctx](const std::string& text) { return rmsMakeProblem(*ctx, text); };
  f.args = [](const RmsNormArgs& a, ArgPack& pack) {
    KernelArgs& k = EngineViews::args(pack);
    const auto st = rw::kernelStrides(toProblem(a));
    k.add(a.y).add(a.x).add(a.weight).add(a.residual).add(a.residual_out);
    k.add((long long)a.rows).add((long long)a.cols).add((long long)st.x).add((long long)st.y);
    k.add((long long)st.r).add((long long)st.ro).add(a.eps);
  };
  f.before_run = [ctx](const RmsNormArgs& a, StreamHandle s) { return rmsPreRun(*ctx, a, s); };
  r.extras.verify = [ctx](const void* a, StreamHandle s) {
    return rmsVerify(*ctx, *static_cast<const RmsNormArgs*>(a), s);
  };
  return r;
}

std::string siluId(const SiluMulArgs& a) {
  std::string s;
  for (int64_t v : {int64_t(a.dtype), a.rows, a.d, int64_t(a.x), int64_t(a.out), a.x_stride,
                    a.out_stride})
    s += std::to_string(v) + ",";
  return s;
}

Expected<VerifyResult> siluVerify(FamilyCtx& ctx, const SiluMulArgs& a, StreamHandle s) {
  Backend& b = ctx.tuner->backend();
  const auto& [p, st, es, one] = RowView<SiluMulArgs>(a);
  std::vector<double> ref(size_t(a.d));
  std::vector<unsigned char> got;
  auto check = [&](const Session& ss, size_t i, const std::vector<double>& in,
                   VerifyResult& total) -> Status {
    rw::siluMulReference(one, in.data(), ref.data());
    got.clear();
    KTUNE_RETURN_IF_ERROR(readRow(b, a.out, ss.rows[i], st.out, a.d, es, got));
    merge(total, compareRow(got, a.dtype, ref, toleranceFor(a.dtype, 1)));
    return Status::Ok();
  };
  return verifySampledRows(ctx, siluId(a), "silu_mul", p.dtype, s, check);
}

RowFamily<SiluMulArgs> siluFamilyDesc(Engine& t, rw::RowDType dt, std::shared_ptr<FamilyCtx> ctx) {
  auto r = kernelFamily<SiluMulArgs, rw::SiluMulProblem, rw::siluMulLaunch>(t, dt, kSiluMulKernel);
  auto& f = r.spec;
  f.key = [](const SiluMulArgs& a, KeyFields& kf) {
    EngineViews::key(kf).add("d", a.d)
        .add("rows", bucketPow2Capped(a.rows, 4096))
        .add("align", rw::alignmentBytes(toProblem(a)));
  };
  f.args_json = [](const SiluMulArgs& a) {
    return nlohmann::json{{"dtype", dtypeName(a.dtype)}, {"rows", a.rows}, {"d", a.d},
                          {"x_stride", a.x_stride}, {"out_stride", a.out_stride}}
        .dump();
  };
  f.make_problem = [ctx](const std::string& text) -> Expected<std::shared_ptr<SiluMulArgs>> {
    KTUNE_ASSIGN_OR_RETURN(auto parsed, parseArgsJson<SiluMulArgs>(text, "silu_mul"));
    auto& [j, a] = parsed;
    a.d = jsonInt(j, "d");
    a.x_stride = jsonInt(j, "x_stride");
    a.out_stride = jsonInt(j, "out_stride");
    if (a.rows <= 0 || a.d <= 0 || a.rows > (int64_t(1) << 31) || a.d > (int64_t(1) << 30))
      return Status::InvalidArgument("silu_mul: args JSON needs positive rows and d");
    auto bufs = std::make_unique<DeviceBuffers>(ctx->tuner->backend());
    const int64_t xs = a.x_stride ? a.x_stride : 2 * a.d, os = a.out_stride ? a.out_stride : a.d;
    KTUNE_ASSIGN_OR_RETURN(a.x, bufs->random(a.dtype, a.rows * xs, 1));
    KTUNE_ASSIGN_OR_RETURN(a.out, bufs->random(a.dtype, a.rows * os, 2));
    KTUNE_RETURN_IF_ERROR(validate(a));
    return ownedProblem(a, std::move(bufs));
  };
  f.args = [](const SiluMulArgs& a, ArgPack& pack) {
    const auto st = rw::kernelStrides(toProblem(a));
    EngineViews::args(pack).add(a.out).add(a.x).add((long long)a.rows).add((long long)a.d).add((long long)st.x)
        .add((long long)st.out);
  };
  f.before_run = [ctx](const SiluMulArgs& a, StreamHandle s) -> Status {
    std::lock_guard<std::mutex> lk(ctx->mu);
    const auto p = toProblem(a);
    const auto st = rw::kernelStrides(p);
    const size_t es = rw::sizeOf(p.dtype);
    const size_t xn = spanBytes(a.rows, 2 * a.d, st.x, es), on = spanBytes(a.rows, a.d, st.out, es);
    const bool aliased = overlaps(a.out, on, a.x, xn);
    std::vector<std::pair<DevicePtr, size_t>> al;
    if (aliased) al.push_back({a.x, xn});
    KTUNE_RETURN_IF_ERROR(beginOrRestore(*ctx, siluId(a), a.rows, es, {{a.x, st.x, 2 * a.d}}, 0, 0,
                                         al, s));
    if (!aliased) KTUNE_RETURN_IF_ERROR(ctx->tuner->backend().memset8(a.out, 0xff, on, s));
    return Status::Ok();
  };
  r.extras.verify = [ctx](const void* a, StreamHandle s) {
    return siluVerify(*ctx, *static_cast<const SiluMulArgs*>(a), s);
  };
  return r;
}

}  // namespace

Expected<rw::RowDType> rowType(DType t, const char* op) {
  switch (t) {
    case DType::kF32: return rw::RowDType::kF32;
    case DType::kF16: return rw::RowDType::kF16;
    case DType::kBF16: return rw::RowDType::kBF16;
    default:
      return Status::Unsupported(std::string(op) + ": dtype " + dtypeName(t) +
                                 " is not supported (use f32, f16 or bf16)");
  }
}

int dtypeIndex(rw::RowDType t) { return static_cast<int>(t); }

Status checkPtr(DevicePtr p, size_t esize, const char* op, const char* what) {
  if (p == 0) return Status::InvalidArgument(std::string(op) + ": " + what + " is null");
  if (p % esize != 0)
    return Status::InvalidArgument(std::string(op) + ": " + what + " is not aligned to its " +
                                   std::to_string(esize) + "-byte element size");
  return Status::Ok();
}

// Bytes a [rows, cols] view with row stride `stride` (elements) spans.
size_t spanBytes(int64_t rows, int64_t cols, int64_t stride, size_t esize) {
  return static_cast<size_t>((rows - 1) * stride + cols) * esize;
}

bool overlaps(DevicePtr a, size_t an, DevicePtr b, size_t bn) { return a < b + bn && b < a + an; }

std::string familyName(bool rms, rw::RowDType dt) {
  return std::string(rms ? "rmsnorm_" : "silu_mul_") + rw::name(dt);
}

// The tuner's family `name`, registered from desc() on first use. The tuner owns the family (and,
// through its closures, the family's context): no registry of tuners is kept here.
template <class A>
Expected<Family<A>> familyOn(Engine& t, const std::string& name,
                             const std::function<RowFamily<A>()>& desc) {
  auto f = t.template family<A>(name);
  if (f.ok() || f.status().code() != Code::kNotFound) return f;
  auto [spec, extras] = desc();
  auto added = t.add(std::move(spec), std::move(extras));
  if (added.ok()) return added;
  return t.template family<A>(name);  // another thread registered it first
}

Expected<Family<RmsNormArgs>> rmsFamilyOf(Engine& t, rw::RowDType dt) {
  return familyOn<RmsNormArgs>(t, familyName(true, dt), [&] {
    auto ctx = std::make_shared<FamilyCtx>();
    ctx->tuner = &t;
    return rmsFamilyDesc(t, dt, ctx);
  });
}

Expected<Family<SiluMulArgs>> siluFamilyOf(Engine& t, rw::RowDType dt) {
  return familyOn<SiluMulArgs>(t, familyName(false, dt), [&] {
    auto ctx = std::make_shared<FamilyCtx>();
    ctx->tuner = &t;
    return siluFamilyDesc(t, dt, ctx);
  });
}

}  // namespace rowwise_ops
}  // namespace ktune
