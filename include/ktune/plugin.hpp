// ktune — isolation-worker plugins: your kernel families in `ktune-worker`.
//
// With isolation on (TunerOptions::isolate, KTUNE_ISOLATE=1) candidates are verified and timed in
// a separate process, `ktune-worker`, so a candidate that faults or hangs kills only the worker.
// That process must know your families too: build them into a shared library that links the
// installed libktune.so and defines the entry point declared below, and name the library in
// TunerOptions::worker_plugins (KTUNE_WORKER_PLUGINS=a.so:b.so). The worker loads it at start and
// calls the entry point once with the worker's own Autotuner (same backend kind, device and
// code-object store as the tuner that started it); the families registered there are the ones the
// worker serves (its hello lists them).
//
//   #include <ktune/plugin.hpp>
//   #include <ktune/typed.hpp>
//   KTUNE_PLUGIN_EXPORT ktune::Status ktune_register_kernels(ktune::Autotuner& tuner) {
//     return ktune::addTypedKernel(tuner, mySaxpySpec()).status();
//   }
//
// A family registered in a plugin must be the same as the tuner's (name, source, space, launch)
// and must set TypedKernelSpec::args_json and make_problem: the worker gets the problem as the
// args_json text and rebuilds it, with its own device buffers, through make_problem. On the
// simulated backend (backend "sim") the plugin registers its simulated kernels there too
// (Autotuner::registerSimKernel). Return a non-OK Status to refuse to start: the worker exits and
// the tuner reports the message. The entry point runs once, on the worker's main thread, before
// any request; the Autotuner outlives every call the worker makes into the plugin's callbacks.
#pragma once

#include "ktune/export.h"
#include "ktune/status.hpp"
#include "ktune/tuner.hpp"

// Marks the plugin's entry point: C linkage (the worker finds it by name) and exported even when
// the plugin is built with hidden visibility.
#if defined(__GNUC__) || defined(__clang__)
#define KTUNE_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define KTUNE_PLUGIN_EXPORT extern "C"
#endif

// The entry point a plugin defines (the worker looks it up under this name).
KTUNE_PLUGIN_EXPORT ktune::Status ktune_register_kernels(ktune::Autotuner& tuner);

namespace ktune {
// Its type, for programs that load a plugin themselves.
using RegisterKernelsFn = Status (*)(Autotuner&);
}  // namespace ktune
