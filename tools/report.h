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
// Side-by-side report of two code objects (e.g. MFMA 16x16 vs 32x32 of one tile), then the
// config diff and the instruction-histogram diff below (tools/cache_diff.cc).
Expected<std::string> reportDiff(const CodeObject& a, const CodeObject& b);
// "-DKEY=VAL" settings (and other options) that differ, one line each; "" when equal.
std::string configDiff(const CodeObject& a, const CodeObject& b);
// Mnemonics whose counts differ in the two ISA dumps, largest differences first.
std::string histogramDiff(const CodeObject& a, const CodeObject& b);
// `s` padded with spaces to `width` characters.
std::string padTo(const std::string& s, size_t width);

}  // namespace ktune::cli
