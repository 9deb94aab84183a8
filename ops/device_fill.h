// fillRandom's values generated on the device (ops/buffers.h): the same splitmix64 sequence, the
// same double arithmetic (each multiply and add rounded on its own, as the host computes them) and
// the same float / fp16 / bf16 rounding, so a device fill is the host fill bit for bit and a
// problem rebuilt elsewhere (the isolation worker, the verifier's reference) sees the same data.
// A 4096-wide GEMM's three operands (~50 M elements) took ~50 ms on the host's threads plus their
// copies, per new key and in both the tuner and its isolation worker; on the device it is one
// launch of well under a millisecond.
//
// Off until enableDeviceFill. Only NVIDIA devices and the f32, f16 and bf16 element types;
// anything else, and every fill before the kernel is ready, stays on the host.
#pragma once

#include <cstdint>
#include <string>

#include "base/dtype.h"
#include "base/status.h"
#include "runtime/backend.h"

namespace ktune {

class Compiler;
class CodeObjectStore;

// From now on fillRandom on backend `b` (one device; the calling thread's, as for fillRandom)
// generates on the device. The kernel's code object comes from `store` when it holds it (a file
// read); otherwise it is compiled on a thread of its own and put there, and the fills until it is
// ready stay on the host (a cold run pays no compile on its critical path). `compiler`, `store`
// (may be null: then no store) and `b` must outlive the setting: call disableDeviceFill() before
// they go. Replaces an earlier setting. Thread-safe.
void enableDeviceFill(Backend& b, Compiler& compiler, CodeObjectStore* store,
                      const DeviceInfo& device);
// Waits for a compile in flight, unloads the kernel, turns the device fill off.
void disableDeviceFill();
// Waits for a compile in flight (tests: the fills after it are the device's).
void awaitDeviceFill();

// The device fill of fillRandom's contract, when it is on for `b`, supports `t` and its kernel is
// ready: true with *st the launch's status (synchronised); false when the host must fill.
bool deviceFillRandom(Backend& b, DevicePtr dst, DType t, int64_t count, uint64_t seed, double lo,
                      double span, Status* st);

// Whether the kernel is loaded or ready to load (tests and the timeline).
bool deviceFillReady();

// The kernel's source (tests compile it).
const char* deviceFillSource();

}  // namespace ktune
