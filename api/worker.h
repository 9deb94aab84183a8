// The isolation worker's program (autotune/isolation.h), inside libktune so that the worker and
// the plugins it loads share one copy of the library: a plugin built against the installed package
// (ktune/plugin.hpp) links libktune.so and registers on the worker's own engine through the
// Autotuner it is handed. ktune-worker (worker_main.cc) is a main() over this entry. Not part of
// the public API (no public header declares it); exported only for ktune-worker.
#pragma once

#include "ktune/export.h"

// Runs the worker: `ktune-worker --cache-dir DIR [--backend B] [--device N] [--plugin LIB.so]...`.
// Returns the process's exit status: 0 on EOF, 2 on a start-up error (printed on stderr); after a
// candidate faulted the device it exits the process with status 3 itself (no destructors: the
// device context is broken).
extern "C" KTUNE_API int ktune_worker_main(int argc, char** argv);
