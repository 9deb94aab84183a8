// The C interface between ktune._ktune_torch (built against torch's C++ headers, only where torch
// is installed at build time) and the tuned call's launcher in ktune._ktune (which never includes
// torch). _ktune_torch.api() returns a capsule named kTorchApiCapsule holding a KtuneTorchApi;
// ktune._ktune.set_torch_api(capsule, raw_stream_getter) installs it for every launcher.
#pragma once

#include <Python.h>

#include <cstdint>

namespace ktune::py_ext {

inline constexpr const char* kTorchApiCapsule = "ktune._ktune_torch.api";
inline constexpr uint32_t kTorchApiVersion = 1;

struct KtuneTorchApi {
  uint32_t version;  // kTorchApiVersion
  // 1 and *out = tensor.data_ptr() for an exact torch.Tensor / nn.Parameter while no torch
  // function mode is active (what Tensor.data_ptr() returns there); 0, no Python error set, for
  // anything else (the caller then calls data_ptr() itself). Needs the GIL.
  int (*data_ptr)(PyObject* o, uint64_t* out);
  // 1 and *out = torch's current CUDA stream on `device` (what
  // torch._C._cuda_getCurrentRawStream(device) returns); 0, no Python error set, on failure.
  int (*current_stream)(int device, uint64_t* out);
};

}  // namespace ktune::py_ext
