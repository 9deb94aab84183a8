// The problem/buffer toolkit of the ops, the CLI and the benches: device buffers owned together,
// and one deterministic random fill (the same values in every process and on every platform, so a
// problem rebuilt from its JSON by the isolation worker or offline tuning sees the caller's data
// pattern, and two runs of a benchmark compare on the same inputs).
#pragma once

#include <cstdint>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "runtime/backend.h"

namespace ktune {

// Fills `count` elements of type t at dst with values in [lo, hi) from `seed` (splitmix64; fp16 and
// bf16 rounded on the host), copied in chunks so a large operand never needs a host copy of
// itself. Errors: the backend's copy.
Status fillRandom(Backend& b, DevicePtr dst, DType t, int64_t count, uint64_t seed,
                  double lo = -1.0, double hi = 1.0);

// A process that fills many problems on one device, one after the other (the isolation worker:
// each key's problem is built anew, and the LLM suite's keys share their N x K), can keep each
// (dtype, seed, range)'s largest fill on the device: fillRandom of a count the kept fill covers is
// then a device-to-device copy of its prefix (the values are the same: element i depends on the
// seed and i only). Off by default, since it holds device memory for as long as it is on;
// keepRandomFills(&b) turns it on for backend b (one device), keepRandomFills(nullptr) frees what
// is kept and turns it off. The backend must outlive the setting. Thread-safe.
void keepRandomFills(Backend* b);
// Bytes of device memory the kept fills hold (0 when off).
size_t keptRandomFillBytes();

// Device allocations freed together when the object goes (the backend must outlive it).
class DeviceBuffers {
 public:
  explicit DeviceBuffers(Backend& b) : b_(&b) {}
  ~DeviceBuffers();
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;
  Expected<DevicePtr> alloc(size_t bytes);
  // `count` elements of t filled by fillRandom.
  Expected<DevicePtr> random(DType t, int64_t count, uint64_t seed);
  Backend& backend() const { return *b_; }

 private:
  Backend* b_;
  std::vector<DevicePtr> ptrs_;
};

// The split-K scratch of the GEMM kernels: a float workspace and 32-bit tile counters, grown on
// demand and zeroed when (re)allocated (the kernels leave them zero again). The owner locks around
// it, never uses it from two streams at once, and calls release() before the backend goes.
// Outgrown buffers are kept (retired) until release(), not freed: a CUDA graph captured before
// the growth still holds their addresses, and its replay would write freed memory.
struct SplitKScratch {
  DevicePtr workspace = 0, counters = 0;
  int64_t workspace_bytes = 0, counter_count = 0;
  std::vector<DevicePtr> retired;

  // At least `bytes` of workspace and `count` counters; what it allocates is zeroed on `stream`.
  // True when it allocated (the caller synchronises if the zeroing must be done before other
  // streams use it). Errors: the backend's.
  Expected<bool> ensure(Backend& b, int64_t bytes, int64_t count, StreamHandle stream = {});
  void release(Backend& b);
};

}  // namespace ktune
