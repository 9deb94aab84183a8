// ktune GEMM: a runner for the JIT GEMM templates (templates/gemm.h) and the tunable GEMM op.
//
//   C = act(alpha * op(A) * op(B) + beta * C + bias)      (row-major, see gemm::Layout)
//
// GemmRunner compiles, caches and launches one (kernel, config) for a problem — what tests,
// benchmarks and the op use. GemmOp is the TunableOp: its candidates are the JIT configs of the
// device's GEMM kernels (mma.sync / skinny on NVIDIA, MFMA on AMD), the algorithms the vendor
// library's heuristic proposes (cuBLASLt on NVIDIA, hipBLASLt on AMD, when the library loads:
// ops/gemm_vendor.h), and a default; its key is (layout, dtypes,
// M, N, K, leading dims, epilogue, alignment).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "autotune/autotuner.h"
#include "ops/buffers.h"
#include "ops/gemm_host_cache.h"
#include "base/config.h"
#include "base/dtype.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"
#include "ops/vendor/cublaslt.h"
#include "templates/gemm.h"

namespace ktune {

// Device buffers of one GEMM call (bias may be 0 when the shape has no bias). scale_a / scale_b:
// per-tensor dequantisation scales of fp8 A and B, one device float each (0: scale 1), applied in
// the epilogue (C = act(alpha * sa * sb * op(A) * op(B) + beta * C + bias)); ignored by 16-bit
// kernels other than the TMA one, which applies them too.
struct GemmBuffers {
  DevicePtr a = 0, b = 0, c = 0, bias = 0;
  DevicePtr scale_a = 0, scale_b = 0;
};

// Shape facts derived from the buffers: sets shape.aligned16 from the A/B addresses.
gemm::GemmShape withAlignment(gemm::GemmShape shape, const GemmBuffers& buf);
// The storage DType of a GEMM element type.
DType dtypeOf(gemm::ElemType t);

// The cuBLASLt view of a GEMM shape; kUnsupported when cuBLASLt cannot express it (activation
// epilogues: cuBLASLt has no SiLU, and its GELU is the tanh form).
Expected<cublaslt::LtProblem> toLtProblem(const gemm::GemmShape& s);

// Compiles and launches GEMM template instances on one device. Kernels are cached by (kind,
// defines); the split-K workspace and counters are owned here, zeroed once on allocation (the
// kernels leave them zero), and must not be used by two streams at once.
// Thread safety: all methods may be called from several threads (one mutex); launches that use
// split-K from several threads at once must use separate runners.
class GemmRunner {
 public:
  // `backend`, `compiler` (and `store`) must outlive the runner; setDevice() must already be done.
  // With a code-object store, kernels compile through it (a later process finds them there).
  GemmRunner(Backend& backend, Compiler& compiler, DeviceInfo device,
             CodeObjectStore* store = nullptr);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // The code object for (kind, config, shape), compiled and loaded on first use (several threads
  // may compile different kernels at once). Errors: kCompileError with the log, kUnsupported
  // from gemm::applicable, load errors from the backend.
  Expected<const CodeObject*> compile(gemm::KernelKind kind, const Config& config,
                                      const gemm::GemmShape& shape);
  // Launches asynchronously on `stream`. kInvalidArgument for null buffers or a shape that does
  // not validate; kOutOfResources / kUnsupported from the launch rule; kLaunchError from the driver.
  Status launch(gemm::KernelKind kind, const Config& config, const gemm::GemmShape& shape,
                const GemmBuffers& buf, StreamHandle stream = {});
  const DeviceInfo& device() const { return device_; }

 private:
  struct Loaded {
    CodeObject code;
    ModuleHandle module;
    FunctionHandle function;
    // The most blocks of a persistent cluster grid that are resident at once (the launch plan's
    // persistent_cluster > 1; residentClusterGrid), asked on the first launch; 0 = not asked.
    unsigned resident_blocks = 0;
  };
  Expected<Loaded*> load(std::unique_lock<std::mutex>& lock, gemm::KernelKind kind,
                         const Config& config, const gemm::GemmShape& shape);

  Backend& backend_;
  Compiler& compiler_;
  DeviceInfo device_;
  CodeObjectStore* store_ = nullptr;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Loaded>> kernels_;
  SplitKScratch scratch_;
  KernelArgs args_;
  TensorMapCache tma_maps_;  // kTma launches: maps keyed by pointer, encoded once each
};

// One GEMM call for the tunable op.
struct GemmCall {
  gemm::GemmShape shape;  // aligned16 is recomputed from the buffers
  GemmBuffers buf;
};

// The tunable GEMM op. Candidates per key: the applicable curated JIT configs of every kernel of
// the device (all configs of the space with `full_space`), up to Options::vendor_algos cuBLASLt
// algorithms, and a default (the first curated config). Verification compares each candidate's
// output with cuBLASLt's (or, when cuBLASLt is unavailable or cannot express the epilogue, with
// the default JIT config's) on the caller's data — so tuning runs on real inputs and C is
// restored between runs when beta != 0.
class GemmOp {
 public:
  struct OpOptions {
    bool full_space = false;
    // Also try the Hopper wgmma kernel on sm_90a devices (every candidate is verified again
    // during tuning).
    bool wgmma = true;
    // Also try the TMA + warp-specialised persistent wgmma kernel (sm_90a).
    bool tma = true;
    // Only these kernel kinds (empty: every kind the device runs). create() fails when none of
    // them runs on the device.
    std::vector<gemm::KernelKind> kinds;
    // Extra library paths for libcublasLt (e.g. a pip wheel's lib dir).
    std::vector<std::string> cublaslt_paths;
    // Extra library paths for libhipblaslt (AMD). On the simulated device (KTUNE_BACKEND=sim) the
    // vendor library is opened only from these paths (tests pass a fake one).
    std::vector<std::string> hipblaslt_paths;
    // The vendor library is opened by openVendor(), not by create(): with a tuner made with
    // EngineOptions::context_later, create() then needs no device context, and the family can
    // precompile its first key while the context is made (`ktune tune gemm` does).
    bool vendor_later = false;
    // The vendor library's first heuristic query (its one-time set-up, GemmVendor::startWarmUp)
    // is not started when the library opens, only for a problem whose candidate list is not kept
    // (ops/vendor_answers.h): a process that needs no answer from the library (the isolating
    // `ktune tune` and its worker on a warm cache) pays nothing for it.
    bool warm_up_later = false;
    // A rebuilt problem (make_problem: the isolation worker's) whose reference the vendor library
    // computes from a kept default leaves it to the first check, with the library's set-up
    // started on its thread: the problem is ready once its inputs are, and candidates timed
    // without a check (a warm race's early wave, Options::early_jit) run while the library sets
    // up. A reference that is a JIT kernel (no kept default, fp8, unaligned A) is made at once.
    bool defer_reference = false;
  };
  // Registers the family "gemm" on `tuner`, which must outlive the op (as with Family<P>; this
  // takes what Engine::create returns: GemmOp::create(**tuner)). Fails when the tuner's device
  // has no GEMM kernel.
  static Expected<std::unique_ptr<GemmOp>> create(Engine& tuner, OpOptions options);
  static Expected<std::unique_ptr<GemmOp>> create(Engine& tuner) { return create(tuner, OpOptions{}); }
  // The same, and the op keeps a shared tuner alive.
  static Expected<std::unique_ptr<GemmOp>> create(std::shared_ptr<Engine> tuner, OpOptions options);
  static Expected<std::unique_ptr<GemmOp>> create(std::shared_ptr<Engine> tuner) {
    return create(std::move(tuner), OpOptions{});
  }
  ~GemmOp();

  // Validates and runs (tuning on first call per key). kInvalidArgument naming the defect for bad
  // shapes or null buffers.
  Status operator()(const GemmCall& call, StreamHandle stream = {});
  Expected<TuneReport> tune(const GemmCall& call, StreamHandle stream = {});
  Expected<KeyReport> lookup(const GemmCall& call);
  // The shape's result from the shared cache without buffers, compiling or benchmarking
  // (Engine::fetchShared), for A and B on 16-byte boundaries as device allocations are; nullopt on a
  // miss, without a shared cache, or for an invalid shape.
  std::optional<TuneReport> fetchShared(const gemm::GemmShape& shape);
  // The shape's result from this tuner's database (this device, driver, compiler and ktune), for
  // A and B on 16-byte boundaries as device allocations are, without buffers, compiling or
  // benchmarking: from = "database" ("pinned" for a pin). nullopt when the database holds no
  // measured winner for the key (none, a predicted or an unverified one) or the shape is invalid.
  std::optional<TuneReport> fetchRecorded(const gemm::GemmShape& shape);
  // Compiles into the store the configs a tuning run of this shape would compile first
  // (Family::precompile), for A and B on 16-byte boundaries as device allocations are; no buffers.
  // Returns how many were compiled. `ktune tune gemm` runs it for the next keys of a suite.
  // `depth` > 0: the first `depth` configs of the guided order (Family::precompile).
  Expected<size_t> precompile(const gemm::GemmShape& shape, int threads = 0, size_t depth = 0);
  // The JIT config a tuning run of this shape takes as the family's default (timed at every key,
  // first in the guided order), for A and B on 16-byte boundaries as device allocations are.
  // kInvalidArgument for an invalid shape.
  Expected<Config> defaultConfig(const gemm::GemmShape& shape) const;
  // Has the isolation worker build this shape's problem now (Engine::prepareWorker), for A and B
  // on 16-byte boundaries as device allocations are: the CLI calls it before filling its own
  // inputs, which the worker's then overlap. No-op for an invalid shape or without isolation.
  void prepareWorker(const gemm::GemmShape& shape);
  // The config predicted for the shape from the tuned GEMM keys (Family::predict; A and B taken as
  // 16-byte aligned, as device allocations are). kInvalidArgument for an invalid shape.
  Expected<predict::Prediction> predict(const gemm::GemmShape& shape);
  // Resolves and loads the call's config (Family::prepare): before a capture. The call's own
  // buffers are not launched on; a cuBLASLt selection runs once on buffers of its own (CUDA loads
  // its kernel lazily, on first use), and the kind's JIT default is loaded too.
  Status prepare(const GemmCall& call, StreamHandle stream = {});
  // OpOptions::vendor_later: opens the vendor library now (after Engine::awaitDevice); before it,
  // tuning runs have JIT candidates only. No-op without vendor_later or when already called.
  void openVendor();
  bool hasCublasLt() const;
  // "cublaslt" or "hipblaslt" when the vendor library was opened (its algorithms are candidates
  // and its first heuristic choice the vendor default), "" otherwise.
  std::string vendorLibrary() const;

  struct State;

 private:
  explicit GemmOp(std::unique_ptr<State> st);
  std::unique_ptr<State> st_;
};

// Offline tuning and isolation rebuild a GEMM problem from JSON (the family's args_json /
// make_problem): the untuned-keys file and the isolation worker see the shape, never pointers.
//
// The JSON object of a call's shape: "layout", "ab", "c", "m", "n", "k", "lda", "ldb", "ldc",
// "alpha", "beta", "bias", "act", "aligned16" (the 16-byte alignment of the call's A and B,
// which picks the kernels' load path and is part of the key). Pure; thread-safe.
std::string gemmCallToJson(const GemmCall& call);
// Inverse of gemmCallToJson: the recorded shape, with aligned16 as recorded. Required fields:
// layout, ab, c, m, n, k; lda/ldb/ldc default to dense, alpha to 1, beta to 0, bias to false,
// act to "none", aligned16 to true. kInvalidArgument naming the field and what it must be for
// text that is not a JSON object, a missing field, a wrong type, an out-of-range number, or a
// shape gemm::validate rejects. Never throws. Pure; thread-safe.
Expected<gemm::GemmShape> gemmShapeFromJson(const std::string& text);
// A call for `shape` with its own device buffers on `backend` (A, B, C of rows x leading
// dimension elements, and bias when shape.has_bias), filled with deterministic random values in
// [-1, 1] from `seed` (the same shape and seed give the same data in every process). When
// shape.aligned16 is false, A starts 2 bytes into its allocation so the call takes the same
// (unaligned) code path as the recorded one. The buffers are freed when the last copy of the
// returned pointer goes; `backend` must outlive it. Errors: validation (kInvalidArgument),
// kOutOfResources when the buffers exceed device.global_mem_bytes (when known), allocation and
// copy errors of the backend (everything allocated so far is freed). Thread safety: as the
// backend's alloc/copy.
Expected<std::shared_ptr<GemmCall>> makeGemmProblem(Backend& backend, const DeviceInfo& device,
                                                    const gemm::GemmShape& shape,
                                                    uint64_t seed = 1);

// Convenience: ktune::gemm(op, shape, buffers) = op({shape, buffers}, stream).
inline Status gemmCall(GemmOp& op, const gemm::GemmShape& shape, const GemmBuffers& buf,
                       StreamHandle stream = {}) {
  return op(GemmCall{shape, buf}, stream);
}

}  // namespace ktune
