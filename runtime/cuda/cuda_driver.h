// The CUDA driver connection behind CudaBackend (cuda_backend.cc): the few driver-API types and
// entry points ktune uses (values from CUDA 13.0's cuda.h; no CUDA header at build time), the
// per-device slots, and the process-wide driver loaded once with dlopen (see cuda_backend.h for
// why it is never torn down). Internal to runtime/cuda.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/dylib.h"
#include "base/status.h"
#include "runtime/backend.h"
#include "runtime/launch_check.h"

namespace ktune::cuda_detail {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // NOLINT: the driver's own type (64-bit on all hosts)
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;

// CUdevice_attribute
enum : int {
  kAttrMaxThreadsPerBlock = 1,
  kAttrMaxBlockDimX = 2,
  kAttrMaxBlockDimY = 3,
  kAttrMaxBlockDimZ = 4,
  kAttrMaxGridDimX = 5,
  kAttrMaxGridDimY = 6,
  kAttrMaxGridDimZ = 7,
  kAttrMaxSharedMemoryPerBlock = 8,
  kAttrWarpSize = 10,
  kAttrMaxRegistersPerBlock = 12,
  kAttrClockRate = 13,
  kAttrMultiprocessorCount = 16,
  kAttrMemoryClockRate = 36,
  kAttrGlobalMemoryBusWidth = 37,
  kAttrL2CacheSize = 38,
  kAttrMaxThreadsPerMultiprocessor = 39,
  kAttrComputeCapabilityMajor = 75,
  kAttrComputeCapabilityMinor = 76,
  kAttrMaxSharedMemoryPerMultiprocessor = 81,
  kAttrMaxRegistersPerMultiprocessor = 82,
  kAttrMaxSharedMemoryPerBlockOptin = 97,
  kAttrMaxBlocksPerMultiprocessor = 106,
};

// CUfunction_attribute
enum : int {
  kFuncMaxThreadsPerBlock = 0,
  kFuncSharedSizeBytes = 1,
  kFuncLocalSizeBytes = 3,
  kFuncNumRegs = 4,
  kFuncPtxVersion = 5,
  kFuncBinaryVersion = 6,
  kFuncMaxDynamicSharedSizeBytes = 8,
};

// CUjit_option
enum : int { kJitErrorLogBuffer = 5, kJitErrorLogBufferSizeBytes = 6 };

// cuGetProcAddress flags: legacy default-stream semantics, matching the un-suffixed dlsym names.
constexpr unsigned long long kProcAddressLegacyStream = 1;  // NOLINT
// The cuda.h whose prototypes we copied; never ask the driver for a newer ABI than this.
constexpr int kHeaderCudaVersion = 13000;

// cuLaunchKernelEx's arguments (cuda.h's CUlaunchAttribute / CUlaunchConfig layouts).
constexpr int kLaunchAttrClusterDimension = 4;
constexpr int kLaunchAttrProgrammaticStreamSerialization = 6;
struct alignas(8) CUlaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    struct {
      unsigned x, y, z;
    } cluster_dim;
    int programmatic_stream_serialization_allowed;
  } value;
};
static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute must match cuda.h");
struct CUlaunchConfig {
  unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes;
  CUstream stream;
  CUlaunchAttribute* attrs;
  unsigned num_attrs;
};

static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig must match cuda.h");

// Driver entry points, resolved once. Signatures are CUDA 13.0's (unchanged since 11.x for these).
struct CudaApi {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice);
  CUresult (*cuDeviceGetPCIBusId)(char*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream*, unsigned int);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamQuery)(CUstream);
  CUresult (*cuEventCreate)(CUevent*, unsigned int);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned int, int*, void**);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncGetAttribute)(int*, int, CUfunction);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t);
  // Optional: null when absent (isCapturing then says no, relaxCaptureMode does nothing).
  CUresult (*cuStreamIsCapturing)(CUstream, int*);
  CUresult (*cuThreadExchangeStreamCaptureMode)(int*);
  // Optional (CUDA 11.7+ drivers): null when absent (lazyLoading then says yes: the safe answer).
  CUresult (*cuModuleGetLoadingMode)(int*);
  // Optional (CUDA 11.8+ drivers): null when absent; launchWith then launches with cuLaunchKernel.
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
  // Optional (CUDA 11.8+ drivers): null when absent; maxActiveClusters then says so.
  CUresult (*cuOccupancyMaxActiveClusters)(int*, CUfunction, const CUlaunchConfig*);
  // Optional (CUDA 12.0+ drivers): null when absent; encodeTensorMap2D then says so.
  CUresult (*cuTensorMapEncodeTiled)(void*, int, unsigned, void*, const unsigned long long*,
                                     const unsigned long long*, const unsigned*, const unsigned*,
                                     int, int, int, int);
};

struct DeviceSlot {
  CUdevice dev = 0;
  int ordinal = 0;
  std::once_flag retain_once;
  Status retain_status;
  CUcontext ctx = nullptr;  // primary context, retained once, never released
  LaunchLimits limits;
  // Compute capability 9.0+ and a driver with cuLaunchKernelEx: programmatic dependent launches.
  bool programmatic = false;
};

struct Driver {
  DynLib lib;
  CudaApi api{};
  int driver_version = 0;
  std::vector<std::unique_ptr<DeviceSlot>> devices;
};

struct CudaModule {
  CUmodule mod = nullptr;
  DeviceSlot* slot = nullptr;
  std::mutex mu;
  std::vector<std::unique_ptr<struct CudaFunction>> functions;
};

struct CudaFunction {
  CUfunction fn = nullptr;
  CUcontext ctx = nullptr;
  const LaunchLimits* limits = nullptr;
  bool programmatic = false;  // its device's DeviceSlot::programmatic
  std::string name;
};

// "CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed" (the driver's name and description).
std::string errorText(const CudaApi& api, CUresult r);
// "cuModuleLoadData: CUDA_ERROR_INVALID_PTX: ..." with the Code of cudaResultCode(). Cold path.
[[gnu::noinline, gnu::cold]] Status cuError(const CudaApi& api, CUresult r, const char* call,
                                             Code fallback = Code::kInternal,
                                             const std::string& detail = {});
// The DeviceInfo of one device slot (name, compute capability, limits, memory, PCI bus id).
Expected<DeviceInfo> readDeviceInfo(const Driver& d, const DeviceSlot& slot);
// A loaded function's attributes (registers, static / local / max dynamic shared bytes, max
// threads per block, PTX and binary versions); its context must be current.
Expected<FunctionAttributes> readFunctionAttributes(const CudaApi& api, CUfunction fn);
// A 2D tiled TMA descriptor, 3-D with planes > 1 (cuTensorMapEncodeTiled), after
// checkTensorMap2D; Unsupported when the driver has no cuTensorMapEncodeTiled (before 12.0).
Expected<TensorMap> encodeTiled2D(const CudaApi& api, const TensorMap2DDesc& d);
// The process-wide driver connection: loaded on first use, never torn down. Thread-safe.
const Expected<Driver*>& driver();

}  // namespace ktune::cuda_detail
