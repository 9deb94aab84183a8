// ktune — the value types shared by every public header: device addresses and streams.
#pragma once

#include <cstdint>

namespace ktune {

// A device address (CUdeviceptr / hipDeviceptr_t / a simulated address); 0 is null.
using DevicePtr = uint64_t;

// A stream of the tuner's backend (CUstream / hipStream_t as void*); p == nullptr is the
// default stream. Owned by the caller.
struct StreamHandle {
  void* p = nullptr;
};

}  // namespace ktune
