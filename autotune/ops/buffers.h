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

}  // namespace ktune
