// The HIP runtime connection (hip_runtime.h) and the pure helpers of hip_backend.h.
#include "runtime/hip/hip_runtime.h"

#include <cstring>
#include <initializer_list>

#include "runtime/driver_common.h"

namespace ktune {
namespace hip_detail {

std::string errorText(const HipApi& api, hipError_t r) {
  const char* name = api.hipGetErrorName ? api.hipGetErrorName(r) : nullptr;
  const char* desc = api.hipGetErrorString ? api.hipGetErrorString(r) : nullptr;
  return driver_common::resultText(r, "hipError_t", name, desc);
}

Status hipErr(const HipApi& api, hipError_t r, const char* call, Code fallback,
              const std::string& detail) {
  return driver_common::callError(hipResultCode(r, fallback), call, errorText(api, r), detail);
}

namespace {

template <typename F>
Status resolve(const DynLib& lib, std::initializer_list<const char*> names, F& out) {
  for (const char* n : names) {
    auto s = lib.symbol(n);
    if (s.ok()) {
      out = reinterpret_cast<F>(*s);
      return Status::Ok();
    }
  }
  return Status::Unavailable(std::string("HIP runtime ") + lib.path() + " lacks " +
                             *names.begin() + "; install a ROCm 5.0 or newer HIP runtime");
}

Expected<std::unique_ptr<Runtime>> loadRuntime() {
  auto rt = std::make_unique<Runtime>();
  KTUNE_ASSIGN_OR_RETURN(
      rt->lib, DynLib::open({"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"},
                            "HIP runtime (libamdhip64.so)"));
  HipApi& a = rt->api;
  const DynLib& L = rt->lib;
#define KTUNE_RESOLVE(field, ...) KTUNE_RETURN_IF_ERROR(resolve(L, {__VA_ARGS__}, a.field))
  KTUNE_RESOLVE(hipInit, "hipInit");
  KTUNE_RESOLVE(hipRuntimeGetVersion, "hipRuntimeGetVersion");
  KTUNE_RESOLVE(hipGetErrorName, "hipGetErrorName");
  KTUNE_RESOLVE(hipGetErrorString, "hipGetErrorString");
  KTUNE_RESOLVE(hipGetDeviceCount, "hipGetDeviceCount");
  KTUNE_RESOLVE(hipSetDevice, "hipSetDevice");
  KTUNE_RESOLVE(hipDeviceGetAttribute, "hipDeviceGetAttribute");
  KTUNE_RESOLVE(hipDeviceGetName, "hipDeviceGetName");
  KTUNE_RESOLVE(hipDeviceTotalMem, "hipDeviceTotalMem");
  KTUNE_RESOLVE(hipDeviceGetPCIBusId, "hipDeviceGetPCIBusId");
  KTUNE_RESOLVE(hipMalloc, "hipMalloc");
  KTUNE_RESOLVE(hipFree, "hipFree");
  KTUNE_RESOLVE(hipMemcpyHtoD, "hipMemcpyHtoD");
  KTUNE_RESOLVE(hipMemcpyDtoH, "hipMemcpyDtoH");
  KTUNE_RESOLVE(hipMemcpyDtoDAsync, "hipMemcpyDtoDAsync");
  KTUNE_RESOLVE(hipMemsetD8Async, "hipMemsetD8Async");
  KTUNE_RESOLVE(hipMemsetD32Async, "hipMemsetD32Async");
  KTUNE_RESOLVE(hipStreamCreate, "hipStreamCreate");
  KTUNE_RESOLVE(hipStreamDestroy, "hipStreamDestroy");
  KTUNE_RESOLVE(hipStreamSynchronize, "hipStreamSynchronize");
  KTUNE_RESOLVE(hipStreamQuery, "hipStreamQuery");
  KTUNE_RESOLVE(hipEventCreate, "hipEventCreate");
  KTUNE_RESOLVE(hipEventDestroy, "hipEventDestroy");
  KTUNE_RESOLVE(hipEventRecord, "hipEventRecord");
  KTUNE_RESOLVE(hipEventSynchronize, "hipEventSynchronize");
  KTUNE_RESOLVE(hipEventElapsedTime, "hipEventElapsedTime");
  KTUNE_RESOLVE(hipModuleLoadData, "hipModuleLoadData");
  KTUNE_RESOLVE(hipModuleUnload, "hipModuleUnload");
  KTUNE_RESOLVE(hipModuleGetFunction, "hipModuleGetFunction");
  KTUNE_RESOLVE(hipFuncGetAttribute, "hipFuncGetAttribute");
  KTUNE_RESOLVE(hipModuleLaunchKernel, "hipModuleLaunchKernel");
  KTUNE_RESOLVE(hipModuleOccupancyMaxActiveBlocksPerMultiprocessor,
                "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor");
#undef KTUNE_RESOLVE
  // ROCm 6 exports the new-layout properties call as ...R0600; 5.x has only the old name.
  if (auto s = L.symbol("hipGetDevicePropertiesR0600"); s.ok()) {
    a.hipGetDeviceProperties = reinterpret_cast<decltype(a.hipGetDeviceProperties)>(*s);
    rt->props_r0600 = true;
  } else {
    KTUNE_RETURN_IF_ERROR(resolve(L, {"hipGetDeviceProperties"}, a.hipGetDeviceProperties));
  }

  if (a.hipRuntimeGetVersion(&rt->runtime_version) != hipSuccess) rt->runtime_version = 0;
  int major = rt->runtime_version / 10000000;
  // hipInit fails with hipErrorNoDevice / hipErrorInsufficientDriver when there is no GPU or no
  // amdgpu kernel driver (/dev/kfd); report that as "no AMD GPU", not as a missing runtime.
  hipError_t init = a.hipInit(0);
  int count = 0;
  hipError_t r = a.hipGetDeviceCount(&count);
  if (init != hipSuccess || r != hipSuccess || count <= 0) {
    std::string why = "hipGetDeviceCount: " +
                      (r != hipSuccess ? errorText(a, r) : std::to_string(count) + " devices");
    if (init != hipSuccess) why += "; hipInit: " + errorText(a, init);
    return Status::Unavailable("HIP runtime found but no AMD GPU (" + L.path() + " " +
                               hipVersionString(rt->runtime_version) + "; " + why + ")");
  }
  KTUNE_ASSIGN_OR_RETURN(rt->attrs, hipAttributeTable(major));
  for (int i = 0; i < count; ++i) {
    auto slot = std::make_unique<DeviceSlot>();
    slot->ordinal = i;
    const HipAttributeTable& t = rt->attrs;
    const int ids[8] = {t.max_block_dim_x, t.max_block_dim_y, t.max_block_dim_z,
                        t.max_grid_dim_x,  t.max_grid_dim_y,  t.max_grid_dim_z,
                        t.max_threads_per_block, t.max_shared_per_block};
    int v[8] = {};
    for (int k = 0; k < 8; ++k) {
      r = a.hipDeviceGetAttribute(&v[k], ids[k], i);
      if (r != hipSuccess) return hipErr(a, r, "hipDeviceGetAttribute", Code::kUnavailable);
    }
    for (int k = 0; k < 3; ++k) slot->limits.max_block[k] = static_cast<unsigned>(v[k]);
    for (int k = 0; k < 3; ++k) slot->limits.max_grid[k] = static_cast<unsigned>(v[3 + k]);
    slot->limits.max_threads_per_block = static_cast<unsigned>(v[6]);
    // AMD has no opt-in: the LDS a workgroup may use is the per-block maximum.
    slot->limits.max_dynamic_shared = static_cast<uint64_t>(v[7]);
    rt->devices.push_back(std::move(slot));
  }
  return rt;
}

}  // namespace

// Intentionally leaked, like the library.
const Expected<Runtime*>& runtime() { return driver_common::loadOnce<Runtime, loadRuntime>(); }

}  // namespace hip_detail

std::string hipArchFromGcnArchName(const std::string& name) {
  if (!Arch(name).isAmd()) return {};
  return name.substr(0, name.find(':'));
}

std::string hipVersionString(int v) {
  return std::to_string(v / 10000000) + "." + std::to_string((v / 100000) % 100) + "." +
         std::to_string(v % 100000);
}

Expected<HipAttributeTable> hipAttributeTable(int major) {
  if (major < 5) {
    return Status::Unsupported("HIP runtime major version " + std::to_string(major) +
                               " is not supported (need ROCm 5.0 or newer)");
  }
  // Identical in ROCm 5.x and 6.x/7.x for every attribute below (see hip_backend.h).
  HipAttributeTable t{};
  t.clock_rate = 5;
  t.l2_cache_size = 19;
  t.max_blocks_per_mp = 25;
  t.max_block_dim_x = 26;
  t.max_block_dim_y = 27;
  t.max_block_dim_z = 28;
  t.max_grid_dim_x = 29;
  t.max_grid_dim_y = 30;
  t.max_grid_dim_z = 31;
  t.max_threads_per_block = 56;
  t.max_threads_per_mp = 57;
  t.memory_bus_width = 59;
  t.memory_clock_rate = 60;
  t.multiprocessor_count = 63;
  t.max_registers_per_block = 71;
  t.max_registers_per_mp = 72;
  t.max_shared_per_block = 74;
  t.shared_per_block_optin = 75;
  t.shared_per_mp = 76;
  t.warp_size = 87;
  t.max_shared_per_mp_amd = 10002;
  return t;
}

Code hipResultCode(int r, Code fallback) {
  switch (r) {
    case 0: return Code::kOk;
    case 214:  // ECCNotCorrectable
    case 700:  // IllegalAddress
    case 710:  // Assert
    case 719:  // LaunchFailure
      return Code::kDeviceFault;
    case 702: return Code::kTimeout;  // LaunchTimeOut
    case 2:    // OutOfMemory
    case 701:  // LaunchOutOfResources
    case 720:  // CooperativeLaunchTooLarge
      return Code::kOutOfResources;
    case 3:    // NotInitialized
    case 4:    // Deinitialized
    case 35:   // InsufficientDriver
    case 100:  // NoDevice
      return Code::kUnavailable;
    case 218:  // InvalidKernelFile
      return Code::kCompileError;
    case 209:  // NoBinaryForGpu
    case 801:  // NotSupported
      return Code::kUnsupported;
    case 500: return Code::kNotFound;
    case 1:    // InvalidValue
    case 9:    // InvalidConfiguration
    case 17:   // InvalidDevicePointer
    case 98:   // InvalidDeviceFunction
    case 101:  // InvalidDevice
    case 200:  // InvalidImage
    case 201:  // InvalidContext
    case 400:  // InvalidHandle
      return fallback == Code::kLaunchError ? Code::kLaunchError : Code::kInvalidArgument;
    default: return fallback;
  }
}

}  // namespace ktune
