#include "ops/gemm_state.h"
#include "ops/vendor_answers.h"

#include <algorithm>
#include <cmath>

#include "autotune/device_compare.h"
#include "base/dtype.h"
#include "ops/buffers.h"
#include "ops/gemm_configs.h"

namespace ktune {

using gemm_ops::kindOf;
using gemm_ops::knobsOf;
using gemm_ops::idleSplitTwin;
using gemm_ops::withKind;

void GemmOp::State::addTensorMaps(const GemmCall& call, KernelArgs& args, gemm::TmaBoxRows boxes) {
  const TensorMapCache::Maps m = tma_maps.get(
      gemm::tmaDescriptors(call.shape, call.buf.a, call.buf.b, call.buf.c, gemm::kTmaL2Promotion,
                           boxes),
      [this](const TensorMap2DDesc& d) { return tuner->backend().encodeTensorMap2D(d); });
  const bool c_ok = m.c_ok && call.shape.c != gemm::ElemType::kF32;
  args.add(m.a).add(m.b).add(m.c).add(static_cast<int32_t>(c_ok));
  args.add(call.buf.scale_a).add(call.buf.scale_b);
}

void GemmOp::State::addDecodeMaps(const GemmCall& call, KernelArgs& args) {
  const TensorMapCache::Maps m = tma_maps.get(
      gemm::decodeDescriptors(call.shape, call.buf.a, call.buf.b),
      [this](const TensorMap2DDesc& x) { return tuner->backend().encodeTensorMap2D(x); });
  args.add(m.a).add(m.b).add(m.c);
}

GemmOp::State::~State() {
  Backend& be = tuner->backend();
  for (auto& [k, b] : per_key) {
    if (b.c_snapshot) (void)be.free(b.c_snapshot);
    if (b.reference) (void)be.free(b.reference);
    if (b.verify_stage) (void)be.free(b.verify_stage);
  }
  scratch.release(be);
}

Status GemmOp::State::ensureScratch(int64_t bytes, int64_t counters, StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mu);
  if (bytes <= scratch.workspace_bytes && counters <= scratch.counter_count) return Status::Ok();
  Backend& be = tuner->backend();
  if (auto capturing = be.isCapturing(stream); capturing.ok() && *capturing) {
    return Status::Unsupported(
        "this GEMM config needs " + std::to_string(bytes) + " bytes of split-K workspace and " +
        std::to_string(counters) + " counters, more than the " +
        std::to_string(scratch.workspace_bytes) + " and " + std::to_string(scratch.counter_count) +
        " allocated, and a call inside a stream capture allocates nothing; call the op's "
        "prepare() for this shape (or run it once) before capturing");
  }
  KTUNE_ASSIGN_OR_RETURN(bool grew, scratch.ensure(be, bytes, counters));
  if (grew) KTUNE_RETURN_IF_ERROR(be.synchronize());
  return Status::Ok();
}

Status GemmOp::State::sizeScratch(const Config& c, const gemm::GemmShape& shape,
                                  StreamHandle stream) {
  const DeviceInfo& dev = tuner->device();
  KTUNE_ASSIGN_OR_RETURN(
      const ScratchPlanCache::Need need,
      scratch_plans.get(c, shape,
                        [&dev](const Config& cfg, const gemm::GemmShape& s)
                            -> Expected<gemm::LaunchPlan> {
                          KTUNE_ASSIGN_OR_RETURN(gemm::KernelKind k, kindOf(cfg));
                          return gemm::launchPlan(k, knobsOf(cfg), s, dev);
                        }));
  if (need.workspace_bytes == 0 && need.counters == 0) return Status::Ok();
  return ensureScratch(need.workspace_bytes, need.counters, stream);
}

Config GemmOp::State::defaultFor(const GemmCall& call, const std::vector<gemm::KernelKind>& kinds,
                  gemm::KernelKind main_kind, const DeviceInfo& dev,
                  const std::string& curated_path) const {
  const gemm::GemmShape s = withAlignment(call.shape, call.buf);
  // The gate/up pair (silu_mul): the decode kernel's default first (the op's scope for the pair
  // is the decode kernel's, whose default is its reference; the tma kernel is raced beside it).
  const bool gated = s.act == gemm::Activation::kSiluMul;
  for (gemm::KernelKind k : {gated ? gemm::KernelKind::kDecode : gemm::KernelKind::kTma,
                             gemm::KernelKind::kWgmma, main_kind}) {
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) continue;
    auto c = gemm::curatedConfigs(k, s, dev, curated_path);
    // A split tail that splits nothing at this shape: its SPLIT_K 1 twin, the same schedule.
    if (c.ok() && !c->empty()) return idleSplitTwin(withKind(c->front(), k), s, dev);
  }
  return withKind(default_config, main_kind);
}

Status GemmOp::State::preRun(const GemmCall& call, StreamHandle stream) {
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
  return poisonNaN(be, call.buf.c, dtypeOf(s.c), s.m * s.ldc, stream);
}

bool GemmOp::State::referenceLater(const gemm::GemmShape& s) const {
  // The problem's A is placed by s.aligned16 (makeGemmProblem): the reference's shape key.
  return defer_reference && vendor && s.aligned16 && !isFp8(s.ab) &&
         s.act == gemm::Activation::kNone &&
         !vendor_answers::keptDefault(*vendor, answers_dir, tuner->device(), s, vendor_algos).empty();
}

bool GemmOp::State::warmUpFor(const gemm::GemmShape& s) {
  const bool later = referenceLater(s);
  if (!warm_up_later || !vendor || tuner->device().vendor == Vendor::kSimulated) return later;
  if (later || vendor_answers::keptDefault(*vendor, answers_dir, tuner->device(), s, vendor_algos).empty())
    vendor->startWarmUp(tuner->device().ordinal);
  return later;
}

Status GemmOp::State::launchReference(const GemmCall& call, DevicePtr out, StreamHandle stream) {
  const auto& s = call.shape;
  GemmBuffers b = call.buf;
  b.c = out;
  // The vendor's heuristic choice can refuse pointers that are only element-aligned (seen with
  // cuBLASLt for an A at +2 bytes): the JIT default config, whose unaligned path
  // handles any address, is the reference then.
  // The library's own choice: the kept answer's default (ops/vendor_answers.h), else asked now;
  // a kept id the library refuses (another process wrote the file, or it was altered) is not
  // the reference: the library is asked.
  if (vendor) {
    const std::string kept = vendor_answers::keptDefault(*vendor, answers_dir, tuner->device(),
                                                         withAlignment(s, b), vendor_algos);
    if (vendor->run(kept, s, b, stream).ok()) return Status::Ok();
    if (!kept.empty() && vendor->run("", s, b, stream).ok()) return Status::Ok();
  }
  if (isFp8(s.ab)) {  // one fp8 kernel (e5m2 x e5m2 has no cuBLASLt algorithm): its default
    const auto c = gemm::curatedConfigs(gemm::KernelKind::kTma, s);
    if (c.empty())
      return Status::Unsupported("fp8 GEMM: no tma config computes this shape (layout NT, "
                                 "16-byte aligned A and B, lda and ldb % 16 == 0)");
    return ref_runner->launch(gemm::KernelKind::kTma, c.front(), s, b, stream);
  }
  if (s.act == gemm::Activation::kSiluMul) {  // no vendor epilogue: the decode kernel's default
    const auto c = gemm::curatedConfigs(gemm::KernelKind::kDecode, s);
    if (c.empty())
      return Status::Unsupported("act silu_mul: no decode GEMM config computes this shape "
                                 "(layout NT, M <= 128, K % 8 == 0, 16-byte aligned A and B)");
    return ref_runner->launch(gemm::KernelKind::kDecode, c.front(), s, b, stream);
  }
  return ref_runner->launch(default_kind, default_config, s, b, stream);
}

int64_t GemmOp::State::verifyTileFor(const gemm::GemmShape& s) const {
  int64_t tile = verify_tile;
  while (tile < s.m && (2 * (s.m / tile) + 34) * s.n > kMaxVerifyElements) tile *= 2;
  return tile;
}

Status GemmOp::State::ensureReference(KeyBuffers& kb, const GemmCall& call, StreamHandle stream) {
  if (kb.have_reference) return Status::Ok();
  Backend& be = tuner->backend();
  const auto& s = call.shape;
  const size_t c_bytes = static_cast<size_t>(s.m * s.ldc * gemm::elemBytes(s.c));
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
  return Status::Ok();
}

void GemmOp::State::prepareReference(const GemmCall& call) {
  if (!preRun(call, {}).ok()) return;  // takes the C snapshot the reference starts from
  std::lock_guard<std::mutex> lock(mu);
  (void)ensureReference(per_key[gemm::shapeKey(call.shape)], call, {});
}

Expected<VerifyResult> GemmOp::State::verify(const GemmCall& call, StreamHandle stream) {
  Backend& be = tuner->backend();
  const auto& s = call.shape;
  DevicePtr ref = 0;
  KeyBuffers* kbp = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    kbp = &per_key[gemm::shapeKey(s)];
    KTUNE_RETURN_IF_ERROR(ensureReference(*kbp, call, stream));
    ref = kbp->reference;
  }
  Tolerance tol = toleranceFor(dtypeOf(s.c), s.k);
  tol.atol *= std::max(1.0, std::sqrt(static_cast<double>(s.k)) / 4);
  // Padding columns (ldc > N) hold NaN in the candidate's output and reference values in the
  // trusted one: padded outputs are compared row by row over the N real columns. Large outputs:
  // the rows on both sides of every M-tile boundary (tiles of any multiple of verify_tile rows),
  // plus 32 seeded random rows; whole rows, so every N-tile boundary is checked too. Staged
  // copies keep that to a few milliseconds per candidate.
  const int64_t cols = gemm::outCols(s);
  // On the device (autotune/device_compare.h, when on): the whole output's N real columns, every
  // row, against the trusted output, a few bytes read back.
  Expected<VerifyResult> dv = Status::Internal("verifier: not compared");
  if (deviceCompareToTrusted(be, call.buf.c, ref, dtypeOf(s.c), s.m, cols, s.ldc, tol, &dv, stream))
    return dv;
  if (s.m * cols > (int64_t(1) << 20) || s.ldc != cols) {
    const auto rows = s.m * cols > (int64_t(1) << 20) ? tileBoundaryRows(s.m, verifyTileFor(s), 32)
                                                       : sampleRows(s.m, s.m);
    std::lock_guard<std::mutex> vl(verify_mu);
    const size_t need = verifyStageBytes(dtypeOf(s.c), cols, rows.size());
    if (kbp->verify_stage_bytes < need) {  // unordered_map nodes stay put: kbp is stable
      if (kbp->verify_stage) (void)be.free(kbp->verify_stage);
      kbp->verify_stage = 0;
      kbp->verify_stage_bytes = 0;
      if (auto st = be.alloc(need); st.ok()) {
        kbp->verify_stage = *st;
        kbp->verify_stage_bytes = need;
      }  // else the check allocates its own, or copies row by row
    }
    return compareDeviceRowsToTrusted(be, call.buf.c, ref, dtypeOf(s.c), cols, s.ldc, rows, tol,
                                      kbp->verify_stage, kbp->verify_stage_bytes);
  }
  return compareDeviceToTrusted(be, call.buf.c, ref, dtypeOf(s.c), s.m * cols, tol);
}

}  // namespace ktune
