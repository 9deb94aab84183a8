// GemmOp's state (internal to ops/gemm*.cc): the family, the vendor library, the per-key
// verification buffers (C snapshot, trusted reference), the split-K scratch and the TMA maps.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "autotune/verifier.h"
#include "ops/gemm.h"
#include "ops/gemm_vendor.h"

namespace ktune {

struct GemmOp::State {
  Engine* tuner = nullptr;
  std::shared_ptr<Engine> keep_tuner;  // set by create(shared_ptr): the op keeps its tuner alive
  Family<GemmCall> family;
  // cuBLASLt / hipBLASLt: vendor candidates and the trusted reference (null without the library).
  std::unique_ptr<GemmVendor> vendor;
  std::unique_ptr<GemmRunner> ref_runner;  // the default config as trusted reference
  Config default_config;
  gemm::KernelKind default_kind = gemm::KernelKind::kMma;
  int vendor_algos = 0;
  // Where the vendor's answers are kept (ops/vendor_answers.h): the cache directory, or empty
  // (Options::vendor_answers off).
  std::string answers_dir;
  bool warm_up_later = false;  // OpOptions::warm_up_later
  bool defer_reference = false;  // OpOptions::defer_reference
  // The vendor's warm-up for `s`, where the op defers it (warm_up_later) and no answer is kept,
  // or the reference is left to the first check (referenceLater). Returns referenceLater(s).
  bool warmUpFor(const gemm::GemmShape& s);
  // Whether a rebuilt problem of shape `s` leaves its reference to the first check
  // (defer_reference, and the reference is the vendor's kept default: no compile waits there).
  bool referenceLater(const gemm::GemmShape& s) const;
  std::function<void()> open_vendor;  // OpOptions::vendor_later: GemmOp::openVendor's work
  std::function<Config(const GemmCall&)> key_default;  // the family's default_for (defaultFor)
  // Verification checks both sides of every multiple of this many rows: the smallest BLOCK_M of
  // the family's configs (skinny kernels, for small M, see every row anyway).
  int64_t verify_tile = 64;

  std::mutex verify_mu;  // one check at a time uses a key's verify_stage
  std::mutex mu;  // guards everything below
  SplitKScratch scratch;
  struct KeyBuffers {
    DevicePtr c_snapshot = 0;  // original C (beta != 0), restored before every tuning run
    DevicePtr reference = 0;   // trusted result for verification
    bool have_reference = false;
    // The sampled rows of a check are gathered here (verifyStageBytes), kept between checks: an
    // allocation and a free per check were a part of every read-back.
    DevicePtr verify_stage = 0;
    size_t verify_stage_bytes = 0;
  };
  std::unordered_map<std::string, KeyBuffers> per_key;

  // TMA tensor maps (kTma kernels take them as arguments), keyed by the descriptors so a caller
  // that changes pointers every call pays the encoding once per pointer (gemm_host_cache.h).
  bool tma = false;
  // The decode kind on sm_90a: its TMA-fed configs take the same maps, then A's own
  // (gemm::decodeTakesTensorMaps); the other kinds' kernels ignore arguments past their own.
  bool decode_maps = false;
  TensorMapCache tma_maps;

  // Appends the A, B and C tensor maps for `call`, A and B in boxes of `boxes` rows (the launched
  // kTma config's gemm::tmaBoxRows; zeroed maps when they cannot be encoded: then no kTma config is
  // applicable to the call and none is launched).
  void addTensorMaps(const GemmCall& call, KernelArgs& args, gemm::TmaBoxRows boxes);
  // Then the decode kernel's own maps (gemm::decodeDescriptors; zeroed when they cannot be
  // encoded: then no TMA-fed decode config is applicable to the call).
  void addDecodeMaps(const GemmCall& call, KernelArgs& args);

  ~State();

  // The scratch each (config, problem) launches with, from its launch rule (gemm::launchPlan).
  ScratchPlanCache scratch_plans;

  // At least `bytes` of split-K workspace and `counters` counters, zeroed once when allocated.
  // Inside a stream capture (of `stream`) nothing is allocated: a config that needs more than is
  // allocated is refused with kUnsupported before any device call, so the capture stays valid
  // (prepare() sizes the scratch of a shape's config before a capture).
  Status ensureScratch(int64_t bytes, int64_t counters, StreamHandle stream);
  // The scratch config `c` launches with on `shape` (its launch rule, cached), made available.
  Status sizeScratch(const Config& c, const gemm::GemmShape& shape, StreamHandle stream);

  // Tuning off without cuBLASLt: the first curated config (curated best-first for the shape's
  // class) of the newest kind that can compute the call (TMA, then wgmma), else of the main kind.
  Config defaultFor(const GemmCall& call, const std::vector<gemm::KernelKind>& kinds,
                    gemm::KernelKind main_kind, const DeviceInfo& dev,
                    const std::string& curated_path) const;

  Status preRun(const GemmCall& call, StreamHandle stream);

  Status launchReference(const GemmCall& call, DevicePtr out, StreamHandle stream);

  // The tile whose boundaries verification checks: verify_tile, doubled while the checked rows
  // would hold more than kMaxVerifyElements. A wide output (N = 28672) has 7x the elements per
  // row of a 4096-wide one, and reading back and comparing 290 such rows took most of the bench
  // stage: ~8M elements copied, converted and compared per verification, ~110 verifications per
  // key. Rows on both sides of every multiple of the coarser tile are still both sides of a
  // boundary of every finer tile, so a kernel that is wrong at its tile edges still fails.
  static constexpr int64_t kMaxVerifyElements = int64_t(2) << 20;
  int64_t verifyTileFor(const gemm::GemmShape& s) const;

  // The trusted output of `call`'s key in kb.reference, computed once (`mu` held): C's snapshot
  // (beta != 0, taken by preRun) or zeros, then the reference kernel.
  Status ensureReference(KeyBuffers& kb, const GemmCall& call, StreamHandle stream);

  // A rebuilt problem's reference, before any candidate runs (make_problem: the isolation worker's
  // problem build and offline tuning). Computed at the first verification instead, its one-time
  // cost landed in the first candidate's watchdog window in the worker: where the vendor refuses
  // the pointers (A at +2 bytes) or has no such GEMM (fp8, the gate/up epilogue), the reference
  // is a JIT kernel compiled there, and under a loaded machine that compile outlasted the 2 s
  // watchdog, so every candidate of the key was killed as hung, the compile with it each time.
  // Best effort: a reference that fails here is computed again, and reported, by verify().
  void prepareReference(const GemmCall& call);

  Expected<VerifyResult> verify(const GemmCall& call, StreamHandle stream);
};

}  // namespace ktune
