#include "ops/gemm_vendor.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "autotune/predict.h"
#include "ops/vendor/cublaslt.h"
#include "ops/vendor/hipblaslt.h"

namespace ktune {
namespace {

// Every algorithm gets this much workspace (the one size everywhere, cuBLASLt's and hipBLASLt's):
// the heuristics are asked for algorithms within it.
constexpr int64_t kLtWorkspaceBytes = cublaslt::kWorkspaceBytes;

// An algorithm's output tile in the row-major problem's terms (rows along M, columns along N) and
// its split-K count: cuBLASLt solves C^T, so its tile's m runs along N and its n along M.
// hipBLASLt's algorithms do not say (the wide-tile rule then keeps the default).
predict::VendorTile rowMajorTile(const cublaslt::LtAlgo& a) {
  return {a.tile_n, a.tile_m, a.split_k};
}
predict::VendorTile rowMajorTile(const vendor::HipLtAlgo&) { return {}; }

// One implementation for both libraries: Lib has heuristics() and run() over cublaslt::LtProblem,
// Algo has id() and parse().
template <class Lib, class Algo>
class LtVendor final : public GemmVendor {
 public:
  LtVendor(const char* source, std::unique_ptr<Lib> lib, Backend& be, DevicePtr ws,
           int multiprocessors)
      : source_(source), lib_(std::move(lib)), be_(be), workspace_(ws), sms_(multiprocessors) {}
  ~LtVendor() override {
    {
      std::lock_guard<std::mutex> lock(warm_mu_);
      if (warm_.joinable()) warm_.join();
    }
    if (workspace_) (void)be_.free(workspace_);
  }
  void startWarmUp(int ordinal) override {
    std::lock_guard<std::mutex> lock(warm_mu_);
    if (warm_done_.load() || warm_.joinable()) return;
    warm_ = std::thread([this, ordinal] {
      if (!be_.setDevice(ordinal).ok()) return;
      auto lp = toLtProblem(gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16,
                                             gemm::ElemType::kBF16, 1024, 1024, 1024));
      if (lp.ok()) (void)lib_->heuristics(*lp, 1, kLtWorkspaceBytes);
    });
  }
  const char* source() const override { return source_; }
  std::string version() const override { return lib_->version(); }

  std::vector<VendorCandidate> candidates(const gemm::GemmShape& s, int max_algos) const override {
    std::vector<VendorCandidate> out;
    waitWarm();
    auto lp = toLtProblem(s);
    if (!lp.ok() || max_algos <= 0) return out;
    auto algos = lib_->heuristics(*lp, max_algos, kLtWorkspaceBytes);
    if (!algos.ok()) return out;
    // Heuristic #0 is the library's own choice: the default (tuning off, and the bar to beat).
    // Its choice can refuse pointers that are only element-aligned, so such a call has no vendor
    // default (the JIT default's unaligned path handles any address); the algorithms stay
    // candidates, verified like the rest.
    std::vector<predict::VendorTile> tiles;
    for (const auto& a : *algos) {
      out.push_back({a.id(), source_, a.index == 0 && s.aligned16});
      tiles.push_back(rowMajorTile(a));
    }
    // The wide-tile rule (autotune/predict.h) marks the pick an unseen key runs in place of #0;
    // measured on bf16 GEMMs only, so only those.
    if (s.ab != gemm::ElemType::kBF16 || !out.front().is_default) return out;
    const size_t pick = predict::wideTilePick(s.m, s.n, sms_, tiles);
    if (pick > 0) out[pick].predicted = true;
    return out;
  }

  Status run(const std::string& id, const gemm::GemmShape& s, const GemmBuffers& buf,
             StreamHandle stream) const override {
    waitWarm();
    KTUNE_ASSIGN_OR_RETURN(auto lp, toLtProblem(s));
    lp.scale_a = buf.scale_a, lp.scale_b = buf.scale_b;  // fp8 dequantisation, per call
    if (id.empty())
      return lib_->run(lp, nullptr, buf.a, buf.b, buf.c, buf.bias, workspace_, kLtWorkspaceBytes, stream);
    KTUNE_ASSIGN_OR_RETURN(Algo algo, parsed(id));
    return lib_->run(lp, &algo, buf.a, buf.b, buf.c, buf.bias, workspace_, kLtWorkspaceBytes, stream);
  }

 private:
  // Ids parsed once: a tuned call would otherwise parse 128 hex digits every time.
  Expected<Algo> parsed(const std::string& id) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = parsed_.find(id);
    if (it != parsed_.end()) return it->second;
    KTUNE_ASSIGN_OR_RETURN(Algo algo, Algo::parse(id));
    // The heuristics were asked for algorithms within kLtWorkspaceBytes, which every one gets.
    algo.workspace_bytes = 0;
    if (parsed_.size() > 1024) parsed_.clear();
    parsed_.emplace(id, algo);
    return algo;
  }

  // The warm-up thread (startWarmUp), joined before the library is used from elsewhere.
  void waitWarm() const {
    if (warm_done_.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock(warm_mu_);
    if (warm_.joinable()) warm_.join();
    warm_done_.store(true, std::memory_order_release);
  }

  const char* source_;
  std::unique_ptr<Lib> lib_;
  Backend& be_;
  DevicePtr workspace_;
  int sms_;  // the device's multiprocessors (the wide-tile rule's grid condition)
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, Algo> parsed_;
  mutable std::mutex warm_mu_;
  mutable std::thread warm_;
  mutable std::atomic<bool> warm_done_{false};
};

template <class Lib, class Algo>
Expected<std::unique_ptr<GemmVendor>> openLt(const char* source, Backend& be, int multiprocessors,
                                             const std::vector<std::string>& paths) {
  KTUNE_ASSIGN_OR_RETURN(std::unique_ptr<Lib> lib, Lib::open(paths));
  KTUNE_ASSIGN_OR_RETURN(DevicePtr ws, be.alloc(static_cast<size_t>(kLtWorkspaceBytes)));
  return std::unique_ptr<GemmVendor>(
      new LtVendor<Lib, Algo>(source, std::move(lib), be, ws, multiprocessors));
}

}  // namespace

Expected<std::unique_ptr<GemmVendor>> openGemmVendor(const std::string& backend, Backend& be,
                                                     int multiprocessors,
                                                     const std::vector<std::string>& paths) {
  using cublaslt::CublasLt, cublaslt::LtAlgo, vendor::HipBlasLt, vendor::HipLtAlgo;
  if (backend == "cuda") return openLt<CublasLt, LtAlgo>("cublaslt", be, multiprocessors, paths);
  if (backend == "hip")
    return openLt<HipBlasLt, HipLtAlgo>("hipblaslt", be, multiprocessors, paths);
  return Status::Unsupported("no vendor GEMM library for backend '" + backend + "'");
}

}  // namespace ktune
