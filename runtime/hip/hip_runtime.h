// The HIP runtime connection behind HipBackend (hip_backend.cc): the few HIP declarations ktune
// uses (values checked against ROCm 5.2 and 6.x headers; no HIP header at build time), the
// per-device slots, and the process-wide runtime loaded once with dlopen. Internal to runtime/hip.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/dylib.h"
#include "base/status.h"
#include "runtime/hip/hip_backend.h"
#include "runtime/launch_check.h"

namespace ktune::hip_detail {

using hipError_t = int;
using hipModule_t = struct ihipModule_t*;
using hipFunction_t = struct ihipModuleSymbol_t*;
using hipStream_t = struct ihipStream_t*;
using hipEvent_t = struct ihipEvent_t*;

constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorNotFound = 500;
constexpr hipError_t hipErrorNotReady = 600;

// hipFunction_attribute (same numbering as CUfunction_attribute in 5.x and 6.x).
enum : int {
  kFuncMaxThreadsPerBlock = 0,
  kFuncSharedSizeBytes = 1,
  kFuncLocalSizeBytes = 3,
  kFuncNumRegs = 4,
  kFuncPtxVersion = 5,
  kFuncBinaryVersion = 6,
};

struct HipApi {
  hipError_t (*hipInit)(unsigned int);
  hipError_t (*hipRuntimeGetVersion)(int*);
  const char* (*hipGetErrorName)(hipError_t);
  const char* (*hipGetErrorString)(hipError_t);
  hipError_t (*hipGetDeviceCount)(int*);
  hipError_t (*hipSetDevice)(int);
  hipError_t (*hipDeviceGetAttribute)(int*, int, int);
  hipError_t (*hipDeviceGetName)(char*, int, int);
  hipError_t (*hipDeviceTotalMem)(size_t*, int);
  hipError_t (*hipDeviceGetPCIBusId)(char*, int, int);
  hipError_t (*hipGetDeviceProperties)(void*, int);  // R0600 when available, else 5.x layout
  hipError_t (*hipMalloc)(void**, size_t);
  hipError_t (*hipFree)(void*);
  hipError_t (*hipMemcpyHtoD)(void*, void*, size_t);
  hipError_t (*hipMemcpyDtoH)(void*, void*, size_t);
  hipError_t (*hipMemcpyDtoDAsync)(void*, void*, size_t, hipStream_t);
  hipError_t (*hipMemsetD8Async)(void*, unsigned char, size_t, hipStream_t);
  hipError_t (*hipMemsetD32Async)(void*, int, size_t, hipStream_t);
  hipError_t (*hipStreamCreate)(hipStream_t*);
  hipError_t (*hipStreamDestroy)(hipStream_t);
  hipError_t (*hipStreamSynchronize)(hipStream_t);
  hipError_t (*hipStreamQuery)(hipStream_t);
  hipError_t (*hipEventCreate)(hipEvent_t*);
  hipError_t (*hipEventDestroy)(hipEvent_t);
  hipError_t (*hipEventRecord)(hipEvent_t, hipStream_t);
  hipError_t (*hipEventSynchronize)(hipEvent_t);
  hipError_t (*hipEventElapsedTime)(float*, hipEvent_t, hipEvent_t);
  hipError_t (*hipModuleLoadData)(hipModule_t*, const void*);
  hipError_t (*hipModuleUnload)(hipModule_t);
  hipError_t (*hipModuleGetFunction)(hipFunction_t*, hipModule_t, const char*);
  hipError_t (*hipFuncGetAttribute)(int*, int, hipFunction_t);
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, unsigned, unsigned, hipStream_t, void**, void**);
  hipError_t (*hipModuleOccupancyMaxActiveBlocksPerMultiprocessor)(int*, hipFunction_t, int,
                                                                   size_t);
};

struct DeviceSlot {
  int ordinal = 0;
  LaunchLimits limits;
};

struct Runtime {
  DynLib lib;
  HipApi api{};
  int runtime_version = 0;
  bool props_r0600 = false;
  HipAttributeTable attrs{};
  std::vector<std::unique_ptr<DeviceSlot>> devices;
};

struct HipFunction {
  hipFunction_t fn = nullptr;
  int device = 0;
  const LaunchLimits* limits = nullptr;
  std::string name;
};

struct HipModule {
  hipModule_t mod = nullptr;
  int device = 0;
  std::mutex mu;
  std::vector<std::unique_ptr<HipFunction>> functions;
};

// "hipErrorInvalidValue: invalid argument" (the runtime's name and description).
std::string errorText(const HipApi& api, hipError_t r);
// "hipMalloc: hipErrorOutOfMemory: ..." with the Code of hipResultCode(). Cold path.
[[gnu::noinline, gnu::cold]] Status hipErr(const HipApi& api, hipError_t r, const char* call,
                                            Code fallback = Code::kInternal,
                                            const std::string& detail = {});
// The process-wide runtime: loaded on first use, never torn down (like the library). Thread-safe.
const Expected<Runtime*>& runtime();

}  // namespace ktune::hip_detail
