#include "autotune/vendor/hipblaslt.h"

namespace ktune::vendor {

// The stable C entry points (hipblaslt.h); only their presence and the handle are used so far.
struct HipBlasLt::Api {
  int (*create)(void**) = nullptr;
  int (*destroy)(void*) = nullptr;
  void* desc_create = nullptr;
  void* layout_create = nullptr;
  void* heuristic = nullptr;
  void* matmul = nullptr;
};

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
  KTUNE_RETURN_IF_ERROR(lib->bind(a.desc_create, "hipblasLtMatmulDescCreate"));
  KTUNE_RETURN_IF_ERROR(lib->bind(a.layout_create, "hipblasLtMatrixLayoutCreate"));
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

}  // namespace ktune::vendor
