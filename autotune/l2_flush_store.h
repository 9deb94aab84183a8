// Where the L2 read flush keeps its code object between processes (internal to autotune/). The
// kernel's compiled object is process-wide (l2_flush.cc compiles it once per process per
// compiler, version and arch), so the store it is looked up in is process-wide too: the one of
// the last Engine created in this process (Engine::create sets it). A process with a warm store
// then loads the flush kernel instead of compiling it (an NVRTC compile of ~0.1-0.3 s at the
// start of every tuning process and of every isolation worker).
#pragma once

#include <memory>

#include "compiler/store/store.h"

namespace ktune {

// The store to look the read kernel up in (and write it to); an expired one means none.
void setFlushKernelStore(std::weak_ptr<CodeObjectStore> store);

}  // namespace ktune
