// Report helpers shared by `ktune compile --report`, `ktune explain` and `ktune cache dump/diff`.
#pragma once

#include <string>

#include "base/status.h"
#include "compiler/compiler.h"

namespace ktune::cli {

Expected<std::string> reportText(const CodeObject& obj, int threads_per_block = 0);
Expected<std::string> reportJson(const CodeObject& obj, int threads_per_block = 0);
// Side-by-side report of two code objects (e.g. MFMA 16x16 vs 32x32 of one tile).
Expected<std::string> reportDiff(const CodeObject& a, const CodeObject& b);

}  // namespace ktune::cli
