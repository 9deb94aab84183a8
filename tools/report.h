// Report helpers shared by `ktune compile --report`, `ktune explain` and `ktune cache dump/diff`.
#pragma once

#include <string>

#include "base/status.h"
#include "compiler/compiler.h"

namespace ktune::cli {

// dynamic_shared: shared bytes the launch adds (the GEMM kernels' tiles), which the binary does
// not show.
Expected<std::string> reportText(const CodeObject& obj, int threads_per_block = 0,
                                 int64_t dynamic_shared = 0);
Expected<std::string> reportJson(const CodeObject& obj, int threads_per_block = 0,
                                 int64_t dynamic_shared = 0);
// Side-by-side report of two code objects (e.g. MFMA 16x16 vs 32x32 of one tile).
Expected<std::string> reportDiff(const CodeObject& a, const CodeObject& b);

}  // namespace ktune::cli
