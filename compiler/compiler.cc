#include "compiler/compiler.h"

namespace ktune {

Expected<unsigned> parseDumpName(const std::string& name) {
  if (name == "source") return unsigned(kDumpSource);
  if (name == "ptx") return unsigned(kDumpPtx);
  if (name == "sass") return unsigned(kDumpSass);
  if (name == "llvm") return unsigned(kDumpLlvm);
  if (name == "isa" || name == "amdgcn") return unsigned(kDumpIsa);
  if (name == "mlir") return unsigned(kDumpMlir);
  if (name == "all") return unsigned(kDumpAll);
  return Status::InvalidArgument("unknown dump '" + name +
                                 "' (expected source, ptx, sass, llvm, isa, mlir or all)");
}

const char* dumpName(Dump d) {
  switch (d) {
    case kDumpSource: return "source";
    case kDumpPtx: return "ptx";
    case kDumpSass: return "sass";
    case kDumpLlvm: return "llvm";
    case kDumpIsa: return "isa";
    case kDumpMlir: return "mlir";
    default: return "none";
  }
}

}  // namespace ktune
