// One config's compile result explained: resource usage, occupancy and the ISA report together
// (what `ktune explain` prints). Pure computation over a CodeObject; thread-safe; no GPU.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/analysis/isa_report.h"
#include "compiler/analysis/occupancy.h"
#include "compiler/compiler.h"

namespace ktune {

struct KernelReport {
  std::string arch, compiler, entry;
  ResourceUsage resources;
  int threads_per_block = 0;
  int64_t dynamic_shared = 0;  // shared/LDS bytes the launch adds (resources hold the static part)
  bool has_occupancy = false;
  std::string occupancy_note;  // why there is none (unknown arch, does not fit, ...)
  AmdOccupancy amd;            // when arch is gfx*
  NvOccupancy nv;              // when arch is sm_*
  int llvm_occupancy = -1;     // "; Occupancy:" of the clang-path assembly (-1: not in the dump)
  bool has_isa = false;        // analysed from the isa (AMD), sass or ptx dump, whichever exists
  std::string isa_source;      // "isa", "sass" or "ptx"
  IsaReport isa;

  std::string text() const;
  std::string toJson() const;
};

// threads_per_block: the launch's block size (0: the kernel's max_threads_per_block, else 256);
// dynamic_shared: shared/LDS bytes added at launch. Never fails: missing parts are noted.
KernelReport analyzeCodeObject(const CodeObject& co, int threads_per_block = 0,
                               int64_t dynamic_shared = 0);

}  // namespace ktune
