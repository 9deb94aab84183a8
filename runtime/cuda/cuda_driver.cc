// The CUDA driver connection (cuda_driver.h) and the pure helpers of cuda_backend.h.
#include "runtime/cuda/cuda_driver.h"

#include <cstring>
#include <initializer_list>

#include "runtime/cuda/cuda_backend.h"
#include "runtime/driver_common.h"
#include "base/timeline.h"

namespace ktune {
namespace cuda_detail {

std::string errorText(const CudaApi& api, CUresult r) {
  const char* name = nullptr;
  const char* desc = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = nullptr;
  if (api.cuGetErrorString == nullptr || api.cuGetErrorString(r, &desc) != CUDA_SUCCESS) {
    desc = nullptr;
  }
  return driver_common::resultText(r, "CUresult", name, desc);
}

Status cuError(const CudaApi& api, CUresult r, const char* call, Code fallback,
               const std::string& detail) {
  return driver_common::callError(cudaResultCode(r, fallback), call, errorText(api, r), detail);
}

namespace {

// Resolves one entry point: cuGetProcAddress(base name, ABI version) first, then dlsym of each
// explicit symbol name in turn.
template <typename F>
Status resolve(const DynLib& lib, void* get_proc_v2, void* get_proc_v1, int version,
               const char* base, std::initializer_list<const char*> dlsym_names, F& out) {
  void* fn = nullptr;
  if (get_proc_v2 != nullptr) {
    using GetProcV2 = CUresult (*)(const char*, void**, int, unsigned long long, int*);  // NOLINT
    int query = 0;
    if (reinterpret_cast<GetProcV2>(get_proc_v2)(base, &fn, version, kProcAddressLegacyStream,
                                                 &query) != CUDA_SUCCESS ||
        query != 0) {
      fn = nullptr;
    }
  } else if (get_proc_v1 != nullptr) {
    using GetProcV1 = CUresult (*)(const char*, void**, int, unsigned long long);  // NOLINT
    if (reinterpret_cast<GetProcV1>(get_proc_v1)(base, &fn, version, kProcAddressLegacyStream) !=
        CUDA_SUCCESS) {
      fn = nullptr;
    }
  }
  for (const char* n : dlsym_names) {
    if (fn != nullptr) break;
    auto s = lib.symbol(n);
    if (s.ok()) fn = *s;
  }
  if (fn == nullptr) {
    return Status::Unavailable(std::string("CUDA driver ") + lib.path() + " lacks " + base +
                               "; update the NVIDIA driver");
  }
  out = reinterpret_cast<F>(fn);
  return Status::Ok();
}

Expected<std::unique_ptr<Driver>> loadDriver() {
  auto d = std::make_unique<Driver>();
  KTUNE_ASSIGN_OR_RETURN(d->lib, DynLib::open({"libcuda.so.1", "libcuda.so"},
                                               "CUDA driver (libcuda.so.1)"));
  CudaApi& a = d->api;
  // cuDriverGetVersion is ABI-stable and callable before cuInit; it picks the ABI we ask for.
  KTUNE_RETURN_IF_ERROR(d->lib.bind(a.cuDriverGetVersion, "cuDriverGetVersion"));
  if (a.cuDriverGetVersion(&d->driver_version) != CUDA_SUCCESS) d->driver_version = 0;
  int want = d->driver_version > 0 && d->driver_version < kHeaderCudaVersion ? d->driver_version
                                                                             : kHeaderCudaVersion;
  void* gp2 = nullptr;
  void* gp1 = nullptr;
  if (auto s = d->lib.symbol("cuGetProcAddress_v2"); s.ok()) gp2 = *s;
  if (auto s = d->lib.symbol("cuGetProcAddress"); s.ok()) gp1 = *s;
  const DynLib& L = d->lib;
#define KTUNE_RESOLVE(field, ...) \
  KTUNE_RETURN_IF_ERROR(resolve(L, gp2, gp1, want, #field, {__VA_ARGS__}, a.field))
  KTUNE_RESOLVE(cuInit, "cuInit");
  KTUNE_RESOLVE(cuGetErrorName, "cuGetErrorName");
  KTUNE_RESOLVE(cuGetErrorString, "cuGetErrorString");
  KTUNE_RESOLVE(cuDeviceGetCount, "cuDeviceGetCount");
  KTUNE_RESOLVE(cuDeviceGet, "cuDeviceGet");
  KTUNE_RESOLVE(cuDeviceGetName, "cuDeviceGetName");
  KTUNE_RESOLVE(cuDeviceGetAttribute, "cuDeviceGetAttribute");
  KTUNE_RESOLVE(cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  KTUNE_RESOLVE(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId");
  KTUNE_RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  KTUNE_RESOLVE(cuCtxSetCurrent, "cuCtxSetCurrent");
  KTUNE_RESOLVE(cuMemAlloc, "cuMemAlloc_v2");
  KTUNE_RESOLVE(cuMemFree, "cuMemFree_v2");
  KTUNE_RESOLVE(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  KTUNE_RESOLVE(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  KTUNE_RESOLVE(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  KTUNE_RESOLVE(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  KTUNE_RESOLVE(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  KTUNE_RESOLVE(cuMemsetD8Async, "cuMemsetD8Async");
  KTUNE_RESOLVE(cuMemsetD32Async, "cuMemsetD32Async");
  KTUNE_RESOLVE(cuStreamCreate, "cuStreamCreate");
  KTUNE_RESOLVE(cuStreamDestroy, "cuStreamDestroy_v2");
  KTUNE_RESOLVE(cuStreamSynchronize, "cuStreamSynchronize");
  KTUNE_RESOLVE(cuStreamQuery, "cuStreamQuery");
  KTUNE_RESOLVE(cuEventCreate, "cuEventCreate");
  KTUNE_RESOLVE(cuEventDestroy, "cuEventDestroy_v2");
  KTUNE_RESOLVE(cuEventRecord, "cuEventRecord");
  KTUNE_RESOLVE(cuEventSynchronize, "cuEventSynchronize");
  // CUDA 13 renamed cuEventElapsedTime to _v2 (same signature); 12.x drivers have only the old one.
  KTUNE_RESOLVE(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
  KTUNE_RESOLVE(cuModuleLoadDataEx, "cuModuleLoadDataEx");
  KTUNE_RESOLVE(cuModuleUnload, "cuModuleUnload");
  KTUNE_RESOLVE(cuModuleGetFunction, "cuModuleGetFunction");
  KTUNE_RESOLVE(cuFuncGetAttribute, "cuFuncGetAttribute");
  KTUNE_RESOLVE(cuFuncSetAttribute, "cuFuncSetAttribute");
  KTUNE_RESOLVE(cuLaunchKernel, "cuLaunchKernel");
  KTUNE_RESOLVE(cuOccupancyMaxActiveBlocksPerMultiprocessor,
                "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (!resolve(L, gp2, gp1, want, "cuStreamIsCapturing", {"cuStreamIsCapturing"},
               a.cuStreamIsCapturing)
           .ok())
    a.cuStreamIsCapturing = nullptr;
  if (!resolve(L, gp2, gp1, want, "cuThreadExchangeStreamCaptureMode",
               {"cuThreadExchangeStreamCaptureMode"}, a.cuThreadExchangeStreamCaptureMode)
           .ok())
    a.cuThreadExchangeStreamCaptureMode = nullptr;
  if (!resolve(L, gp2, gp1, want, "cuModuleGetLoadingMode", {"cuModuleGetLoadingMode"},
               a.cuModuleGetLoadingMode)
           .ok())
    a.cuModuleGetLoadingMode = nullptr;
  if (!resolve(L, gp2, gp1, want, "cuLaunchKernelEx", {"cuLaunchKernelEx"}, a.cuLaunchKernelEx)
           .ok())
    a.cuLaunchKernelEx = nullptr;
  if (!resolve(L, gp2, gp1, want, "cuOccupancyMaxActiveClusters", {"cuOccupancyMaxActiveClusters"},
               a.cuOccupancyMaxActiveClusters)
           .ok())
    a.cuOccupancyMaxActiveClusters = nullptr;
  if (!resolve(L, gp2, gp1, want, "cuTensorMapEncodeTiled", {"cuTensorMapEncodeTiled"},
               a.cuTensorMapEncodeTiled)
           .ok())
    a.cuTensorMapEncodeTiled = nullptr;
#undef KTUNE_RESOLVE

  CUresult r = a.cuInit(0);
  timelineMark("cuinit");  // what of a tuning run's open_gpu is the driver's own start
  if (r != CUDA_SUCCESS) {
    return Status::Unavailable("CUDA driver found but no CUDA device (cuInit: " +
                               errorText(a, r) + ")");
  }
  int count = 0;
  r = a.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count <= 0) {
    return Status::Unavailable(
        "CUDA driver found but no CUDA device (cuDeviceGetCount: " +
        (r != CUDA_SUCCESS ? errorText(a, r) : std::string("0 devices")) + ")");
  }
  for (int i = 0; i < count; ++i) {
    auto slot = std::make_unique<DeviceSlot>();
    slot->ordinal = i;
    r = a.cuDeviceGet(&slot->dev, i);
    if (r != CUDA_SUCCESS) return cuError(a, r, "cuDeviceGet", Code::kUnavailable);
    d->devices.push_back(std::move(slot));
  }
  return d;
}

}  // namespace

// The device's name, limits and attributes, read once per devices() call.
Expected<DeviceInfo> readDeviceInfo(const Driver& d, const DeviceSlot& slot) {
  const CudaApi& api = d.api;
  DeviceInfo info;
  info.vendor = Vendor::kNvidia;
  info.ordinal = slot.ordinal;
  char buf[256] = {};
  if (CUresult r = api.cuDeviceGetName(buf, sizeof(buf) - 1, slot.dev); r != CUDA_SUCCESS) {
    return cuError(api, r, "cuDeviceGetName");
  }
  info.name = buf;
  auto get = [&](int attr, const char* what, auto& out) -> Status {
    int v = 0;
    CUresult r = api.cuDeviceGetAttribute(&v, attr, slot.dev);
    if (r != CUDA_SUCCESS) return cuError(api, r, what);
    out = v;
    return Status::Ok();
  };
  KTUNE_RETURN_IF_ERROR(get(kAttrComputeCapabilityMajor, "cuDeviceGetAttribute(CC major)",
                            info.cc_major));
  KTUNE_RETURN_IF_ERROR(get(kAttrComputeCapabilityMinor, "cuDeviceGetAttribute(CC minor)",
                            info.cc_minor));
  info.arch = cudaArchName(info.cc_major, info.cc_minor);
  KTUNE_RETURN_IF_ERROR(get(kAttrMultiprocessorCount, "cuDeviceGetAttribute(SM count)",
                            info.multiprocessors));
  KTUNE_RETURN_IF_ERROR(get(kAttrWarpSize, "cuDeviceGetAttribute(warp size)", info.warp_size));
  KTUNE_RETURN_IF_ERROR(get(kAttrMaxSharedMemoryPerBlock,
                            "cuDeviceGetAttribute(shared per block)", info.shared_per_block));
  KTUNE_RETURN_IF_ERROR(get(kAttrMaxSharedMemoryPerBlockOptin,
                            "cuDeviceGetAttribute(shared per block opt-in)",
                            info.shared_per_block_optin));
  KTUNE_RETURN_IF_ERROR(get(kAttrMaxSharedMemoryPerMultiprocessor,
                            "cuDeviceGetAttribute(shared per SM)", info.shared_per_sm));
  KTUNE_RETURN_IF_ERROR(get(kAttrMaxRegistersPerBlock, "cuDeviceGetAttribute(regs per block)",
                            info.regs_per_block));
  KTUNE_RETURN_IF_ERROR(get(kAttrMaxRegistersPerMultiprocessor,
                            "cuDeviceGetAttribute(regs per SM)", info.regs_per_sm));
  KTUNE_RETURN_IF_ERROR(get(kAttrMaxThreadsPerBlock, "cuDeviceGetAttribute(threads per block)",
                            info.max_threads_per_block));
  KTUNE_RETURN_IF_ERROR(get(kAttrMaxThreadsPerMultiprocessor,
                            "cuDeviceGetAttribute(threads per SM)", info.max_threads_per_sm));
  KTUNE_RETURN_IF_ERROR(get(kAttrMaxBlocksPerMultiprocessor,
                            "cuDeviceGetAttribute(blocks per SM)", info.max_blocks_per_sm));
  KTUNE_RETURN_IF_ERROR(get(kAttrL2CacheSize, "cuDeviceGetAttribute(L2 size)", info.l2_bytes));
  // Clocks and bus width are informational (newer drivers may stop reporting some): 0 if absent.
  (void)get(kAttrClockRate, "clock", info.clock_khz);
  (void)get(kAttrMemoryClockRate, "memory clock", info.mem_clock_khz);
  (void)get(kAttrGlobalMemoryBusWidth, "bus width", info.mem_bus_width_bits);
  size_t total = 0;
  if (CUresult r = api.cuDeviceTotalMem(&total, slot.dev); r != CUDA_SUCCESS) {
    return cuError(api, r, "cuDeviceTotalMem");
  }
  info.global_mem_bytes = static_cast<int64_t>(total);
  char bus[64] = {};
  if (api.cuDeviceGetPCIBusId(bus, sizeof(bus) - 1, slot.dev) == CUDA_SUCCESS) {
    info.pci_bus_id = bus;
  }
  info.driver_version = cudaVersionString(d.driver_version);
  return info;
}

// The process-wide driver connection (see the header for why it is never torn down).
const Expected<Driver*>& driver() { return driver_common::loadOnce<Driver, loadDriver>(); }

Expected<FunctionAttributes> readFunctionAttributes(const CudaApi& api, CUfunction fn) {
  FunctionAttributes a;
  const auto get = [&](int attr, const char* call, auto* field) -> Status {
    int v = 0;
    if (CUresult r = api.cuFuncGetAttribute(&v, attr, fn); r != CUDA_SUCCESS)
      return cuError(api, r, call);
    *field = v;
    return Status::Ok();
  };
  KTUNE_RETURN_IF_ERROR(get(kFuncNumRegs, "cuFuncGetAttribute(NUM_REGS)", &a.num_regs));
  KTUNE_RETURN_IF_ERROR(get(kFuncSharedSizeBytes, "cuFuncGetAttribute(SHARED_SIZE_BYTES)",
                            &a.static_shared_bytes));
  KTUNE_RETURN_IF_ERROR(get(kFuncLocalSizeBytes, "cuFuncGetAttribute(LOCAL_SIZE_BYTES)",
                            &a.local_bytes));
  KTUNE_RETURN_IF_ERROR(get(kFuncMaxThreadsPerBlock, "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)",
                            &a.max_threads_per_block));
  KTUNE_RETURN_IF_ERROR(get(kFuncMaxDynamicSharedSizeBytes,
                            "cuFuncGetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                            &a.max_dynamic_shared_bytes));
  KTUNE_RETURN_IF_ERROR(get(kFuncPtxVersion, "cuFuncGetAttribute(PTX_VERSION)", &a.ptx_version));
  KTUNE_RETURN_IF_ERROR(get(kFuncBinaryVersion, "cuFuncGetAttribute(BINARY_VERSION)",
                            &a.binary_version));
  return a;
}

Expected<TensorMap> encodeTiled2D(const CudaApi& api, const TensorMap2DDesc& d) {
  if (api.cuTensorMapEncodeTiled == nullptr)
    return Status::Unsupported("this CUDA driver has no cuTensorMapEncodeTiled (needs 12.0+)");
  KTUNE_RETURN_IF_ERROR(checkTensorMap2D(d));
  // CUtensorMapDataType UINT8/UINT16/UINT32 (a copy engine: the bits are moved, not converted),
  // CUtensorMapSwizzle NONE/32B/64B/128B = 0..3, CUtensorMapL2promotion NONE/64B/128B/256B =
  // 0..3, OOB fill zeros = 0.
  const int dtype = d.elem_bytes == 1 ? 0 : d.elem_bytes == 2 ? 1 : 2;
  const int swizzle = d.swizzle_bytes == 0 ? 0 : d.swizzle_bytes == 32 ? 1 : d.swizzle_bytes == 64 ? 2 : 3;
  const int l2 = d.l2_promotion_bytes == 0 ? 0 : d.l2_promotion_bytes == 64 ? 1
               : d.l2_promotion_bytes == 128 ? 2 : 3;
  // planes > 1: a third dimension (TensorMap2DDesc).
  const unsigned rank = d.planes > 1 ? 3 : 2;
  const unsigned long long dims[3] = {d.cols, d.rows, d.planes};
  const unsigned long long strides[2] = {d.row_stride_bytes, d.plane_stride_bytes};
  const unsigned box[3] = {d.box_cols, d.box_rows, d.box_planes};
  const unsigned elem_strides[3] = {1, 1, 1};
  TensorMap m;
  CUresult r = api.cuTensorMapEncodeTiled(&m, dtype, rank, reinterpret_cast<void*>(d.base), dims,
                                          strides, box, elem_strides, /*interleave*/ 0, swizzle, l2,
                                          /*oob fill zeros*/ 0);
  if (r != CUDA_SUCCESS) return cuError(api, r, "cuTensorMapEncodeTiled", Code::kInvalidArgument);
  return m;
}

}  // namespace cuda_detail

std::string cudaArchName(int cc_major, int cc_minor) {
  std::string s = "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
  if (cc_major == 9 && cc_minor == 0) s += "a";
  return s;
}

std::string cudaVersionString(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

Code cudaResultCode(int r, Code fallback) {
  switch (r) {
    case 0: return Code::kOk;
    // Kernel faults: sticky, the context is unusable afterwards.
    case 214:  // ECC_UNCORRECTABLE
    case 700:  // ILLEGAL_ADDRESS
    case 710:  // ASSERT
    case 714:  // HARDWARE_STACK_ERROR
    case 715:  // ILLEGAL_INSTRUCTION
    case 716:  // MISALIGNED_ADDRESS
    case 717:  // INVALID_ADDRESS_SPACE
    case 718:  // INVALID_PC
    case 719:  // LAUNCH_FAILED
    case 721:  // TENSOR_MEMORY_LEAK
      return Code::kDeviceFault;
    case 702:  // LAUNCH_TIMEOUT
    case 909:  // TIMEOUT
      return Code::kTimeout;
    case 2:    // OUT_OF_MEMORY
    case 701:  // LAUNCH_OUT_OF_RESOURCES
    case 720:  // COOPERATIVE_LAUNCH_TOO_LARGE
      return Code::kOutOfResources;
    case 3:    // NOT_INITIALIZED
    case 4:    // DEINITIALIZED
    case 34:   // STUB_LIBRARY
    case 35:   // INSUFFICIENT_DRIVER
    case 46:   // DEVICE_UNAVAILABLE
    case 100:  // NO_DEVICE
    case 802:  // SYSTEM_NOT_READY
    case 803:  // SYSTEM_DRIVER_MISMATCH
    case 804:  // COMPAT_NOT_SUPPORTED_ON_DEVICE
      return Code::kUnavailable;
    case 218:  // INVALID_PTX
    case 221:  // JIT_COMPILER_NOT_FOUND
    case 223:  // JIT_COMPILATION_DISABLED
      return Code::kCompileError;
    case 209:  // NO_BINARY_FOR_GPU
    case 222:  // UNSUPPORTED_PTX_VERSION
    case 801:  // NOT_SUPPORTED
      return Code::kUnsupported;
    case 500:  // NOT_FOUND
      return Code::kNotFound;
    case 1:    // INVALID_VALUE
    case 101:  // INVALID_DEVICE
    case 200:  // INVALID_IMAGE
    case 201:  // INVALID_CONTEXT
    case 400:  // INVALID_HANDLE
      return fallback == Code::kLaunchError ? Code::kLaunchError : Code::kInvalidArgument;
    default: return fallback;
  }
}

}  // namespace ktune
