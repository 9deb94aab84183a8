// What the CUDA driver (runtime/cuda) and the HIP runtime (runtime/hip) connections share
// (internal header): the text and Status of a failed call, and the process-wide connection
// loaded once.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "base/status.h"

namespace ktune::driver_common {

// "cuModuleLoadData: CUDA_ERROR_INVALID_PTX: ..." ("<call>: <text>", then `detail` on its own
// line when given) with `code`. Cold path.
[[gnu::noinline, gnu::cold]] Status callError(Code code, const char* call, const std::string& text,
                                              const std::string& detail);

// "<name>: <description>" for a result, from the API's own name and description when it has them
// ("<type> <number>" without a name); the description is left out when it only repeats the name.
std::string resultText(int result, const char* type, const char* name, const char* description);

// The connection `load` makes, loaded on first use by any thread and never torn down (it is
// intentionally leaked: the library stays loaded for the process, see cuda_backend.h). One per
// `load` function.
template <class T, Expected<std::unique_ptr<T>> (*load)()>
const Expected<T*>& loadOnce() {
  static const Expected<T*> loaded = []() -> Expected<T*> {
    auto l = load();
    if (!l.ok()) return l.status();
    return std::move(l).value().release();
  }();
  return loaded;
}

}  // namespace ktune::driver_common
