#include "runtime/cuda/cuda_backend.h"

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/dylib.h"
#include "runtime/backend.h"
#include "runtime/launch_check.h"

namespace ktune {

// ---- The few driver-API declarations we need (values from CUDA 13.0 cuda.h). --------------------
namespace {

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
  std::string name;
};

// The context ktune last made current on this thread (see the header: one compare per launch).
thread_local CUcontext t_current_ctx = nullptr;

std::string errorText(const CudaApi& api, CUresult r) {
  const char* name = nullptr;
  const char* desc = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = nullptr;
  if (api.cuGetErrorString == nullptr || api.cuGetErrorString(r, &desc) != CUDA_SUCCESS) {
    desc = nullptr;
  }
  std::string s = name ? name : "CUresult " + std::to_string(r);
  if (desc) s += std::string(": ") + desc;
  return s;
}

// "cuModuleLoadData: CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed". Cold path.
[[gnu::noinline, gnu::cold]] Status cuError(const CudaApi& api, CUresult r, const char* call,
                                             Code fallback = Code::kInternal,
                                             const std::string& detail = {}) {
  std::string msg = std::string(call) + ": " + errorText(api, r);
  if (!detail.empty()) msg += "\n" + detail;
  return Status(cudaResultCode(r, fallback), std::move(msg));
}

#define KTUNE_CU(call_expr, name)                                   \
  do {                                                              \
    CUresult _ktune_r = (call_expr);                                \
    if (_ktune_r != CUDA_SUCCESS) return cuError(api_, _ktune_r, name); \
  } while (0)

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
  if (!resolve(L, gp2, gp1, want, "cuTensorMapEncodeTiled", {"cuTensorMapEncodeTiled"},
               a.cuTensorMapEncodeTiled)
           .ok())
    a.cuTensorMapEncodeTiled = nullptr;
#undef KTUNE_RESOLVE

  CUresult r = a.cuInit(0);
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

// The process-wide driver connection (see the header for why it is never torn down).
const Expected<Driver*>& driver() {
  static const Expected<Driver*> d = []() -> Expected<Driver*> {
    auto loaded = loadDriver();
    if (!loaded.ok()) return loaded.status();
    return std::move(loaded).value().release();  // intentionally leaked
  }();
  return d;
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(Driver* d) : d_(d), api_(d->api) {}

  Vendor vendor() const override { return Vendor::kNvidia; }
  std::string name() const override { return "cuda"; }
  std::string version() const override { return cudaVersionString(d_->driver_version); }

  Expected<std::vector<DeviceInfo>> devices() override {
    std::vector<DeviceInfo> out;
    for (const auto& slot : d_->devices) {
      KTUNE_ASSIGN_OR_RETURN(DeviceInfo info, readInfo(*slot));
      out.push_back(std::move(info));
    }
    return out;
  }

  Status setDevice(int ordinal) override {
    if (ordinal < 0 || ordinal >= static_cast<int>(d_->devices.size())) {
      return Status::InvalidArgument("setDevice: CUDA device ordinal " + std::to_string(ordinal) +
                                     " out of range (" + std::to_string(d_->devices.size()) +
                                     " devices)");
    }
    DeviceSlot& slot = *d_->devices[ordinal];
    KTUNE_RETURN_IF_ERROR(retain(slot));
    // Always re-bind: the caller may be resynchronising after other code changed the context.
    KTUNE_CU(api_.cuCtxSetCurrent(slot.ctx), "cuCtxSetCurrent");
    t_current_ctx = slot.ctx;
    t_current_slot = &slot;
    return Status::Ok();
  }

  Expected<DevicePtr> alloc(size_t bytes) override {
    if (bytes == 0) return Status::InvalidArgument("alloc: size is 0; allocate at least 1 byte");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    CUdeviceptr p = 0;
    CUresult r = api_.cuMemAlloc(&p, bytes);
    if (r != CUDA_SUCCESS) {
      return cuError(api_, r, "cuMemAlloc", Code::kInternal,
                     "requested " + std::to_string(bytes) + " bytes");
    }
    return static_cast<DevicePtr>(p);
  }

  Status free(DevicePtr p) override {
    if (p == 0) return Status::Ok();
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_CU(api_.cuMemFree(p), "cuMemFree");
    return Status::Ok();
  }

  Status copyToDevice(DevicePtr dst, const void* src, size_t bytes) override {
    if (bytes == 0) return Status::Ok();
    if (dst == 0 || src == nullptr) return nullCopy("copyToDevice");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_CU(api_.cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
    return Status::Ok();
  }

  Status copyToHost(void* dst, DevicePtr src, size_t bytes) override {
    if (bytes == 0) return Status::Ok();
    if (dst == nullptr || src == 0) return nullCopy("copyToHost");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_CU(api_.cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
    return Status::Ok();
  }

  Status copyDeviceToDevice(DevicePtr dst, DevicePtr src, size_t bytes, StreamHandle s) override {
    if (bytes == 0) return Status::Ok();
    if (dst == 0 || src == 0) return nullCopy("copyDeviceToDevice");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_CU(api_.cuMemcpyDtoDAsync(dst, src, bytes, stream(s)), "cuMemcpyDtoDAsync");
    return Status::Ok();
  }

  Status memset8(DevicePtr dst, uint8_t value, size_t bytes, StreamHandle s) override {
    if (bytes == 0) return Status::Ok();
    if (dst == 0) return Status::InvalidArgument("memset8: null device pointer");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_CU(api_.cuMemsetD8Async(dst, value, bytes, stream(s)), "cuMemsetD8Async");
    return Status::Ok();
  }

  Status memset32(DevicePtr dst, uint32_t value, size_t count, StreamHandle s) override {
    if (count == 0) return Status::Ok();
    if (dst == 0) return Status::InvalidArgument("memset32: null device pointer");
    if (dst % 4 != 0) {
      return Status::InvalidArgument("memset32: device pointer is not 4-byte aligned");
    }
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_CU(api_.cuMemsetD32Async(dst, value, count, stream(s)), "cuMemsetD32Async");
    return Status::Ok();
  }

  Expected<StreamHandle> createStream() override {
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    CUstream st = nullptr;
    // Blocking stream (flags 0): ordered with the legacy default stream, which the synchronous
    // copies use, so a copy never overtakes a launch on a ktune stream.
    KTUNE_CU(api_.cuStreamCreate(&st, 0), "cuStreamCreate");
    return StreamHandle{st};
  }

  Status destroyStream(StreamHandle s) override {
    if (s.p == nullptr) return Status::Ok();  // the default stream is not destroyed
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_CU(api_.cuStreamDestroy(stream(s)), "cuStreamDestroy");
    return Status::Ok();
  }

  Status synchronize(StreamHandle s) override {
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_CU(api_.cuStreamSynchronize(stream(s)), "cuStreamSynchronize");
    return Status::Ok();
  }

  Expected<EventHandle> createEvent() override {
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    CUevent e = nullptr;
    KTUNE_CU(api_.cuEventCreate(&e, 0), "cuEventCreate");  // timing enabled
    return EventHandle{e};
  }

  Status destroyEvent(EventHandle e) override {
    if (e.p == nullptr) return Status::Ok();
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_CU(api_.cuEventDestroy(event(e)), "cuEventDestroy");
    return Status::Ok();
  }

  Status recordEvent(EventHandle e, StreamHandle s) override {
    if (e.p == nullptr) return Status::InvalidArgument("recordEvent: null event");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_CU(api_.cuEventRecord(event(e), stream(s)), "cuEventRecord");
    return Status::Ok();
  }

  Status synchronizeEvent(EventHandle e) override {
    if (e.p == nullptr) return Status::InvalidArgument("synchronizeEvent: null event");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_CU(api_.cuEventSynchronize(event(e)), "cuEventSynchronize");
    return Status::Ok();
  }

  Expected<float> elapsedMs(EventHandle start, EventHandle end) override {
    if (start.p == nullptr || end.p == nullptr) {
      return Status::InvalidArgument("elapsedMs: null event");
    }
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    float ms = 0;
    CUresult r = api_.cuEventElapsedTime(&ms, event(start), event(end));
    if (r == CUDA_ERROR_NOT_READY) {
      // The end event is still pending: wait for it rather than make every caller do so.
      KTUNE_CU(api_.cuEventSynchronize(event(end)), "cuEventSynchronize");
      r = api_.cuEventElapsedTime(&ms, event(start), event(end));
    }
    if (r != CUDA_SUCCESS) {
      return cuError(api_, r, "cuEventElapsedTime", Code::kInternal,
                     "both events must have been recorded (recordEvent) on this device");
    }
    return ms;
  }

  Expected<ModuleHandle> loadModule(const std::string& image) override {
    if (image.empty()) return Status::InvalidArgument("loadModule: empty code object");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    // c_str() is NUL-terminated, which PTX text needs; cubin/fatbin carry their own size.
    std::vector<char> log(16 * 1024, '\0');
    int opts[2] = {kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes};
    void* vals[2] = {log.data(), reinterpret_cast<void*>(static_cast<uintptr_t>(log.size()))};
    CUmodule m = nullptr;
    CUresult r = api_.cuModuleLoadDataEx(&m, image.c_str(), 2, opts, vals);
    if (r != CUDA_SUCCESS) {
      log.back() = '\0';
      std::string detail = log.data();
      bool looks_ptx = image.find(".version") != std::string::npos &&
                       image.compare(0, 4, "\x7f" "ELF") != 0;
      if (looks_ptx && !detail.empty()) detail = "PTX JIT log: " + detail;
      return cuError(api_, r, "cuModuleLoadData", Code::kInternal, detail);
    }
    auto* mod = new CudaModule();
    mod->mod = m;
    mod->slot = t_current_slot;
    return ModuleHandle{mod};
  }

  Status unloadModule(ModuleHandle m) override {
    if (m.p == nullptr) return Status::Ok();
    std::unique_ptr<CudaModule> mod(static_cast<CudaModule*>(m.p));
    KTUNE_RETURN_IF_ERROR(bind(mod->slot->ctx));
    KTUNE_CU(api_.cuModuleUnload(mod->mod), "cuModuleUnload");
    return Status::Ok();
  }

  Expected<FunctionHandle> getFunction(ModuleHandle m, const std::string& name) override {
    if (m.p == nullptr) return Status::InvalidArgument("getFunction: null module");
    if (name.empty()) return Status::InvalidArgument("getFunction: empty function name");
    auto* mod = static_cast<CudaModule*>(m.p);
    std::lock_guard<std::mutex> lock(mod->mu);
    for (const auto& f : mod->functions) {
      if (f->name == name) return FunctionHandle{f.get()};
    }
    KTUNE_RETURN_IF_ERROR(bind(mod->slot->ctx));
    CUfunction fn = nullptr;
    CUresult r = api_.cuModuleGetFunction(&fn, mod->mod, name.c_str());
    if (r == CUDA_ERROR_NOT_FOUND) {
      return Status::NotFound("getFunction: no kernel named '" + name +
                              "' in the module (use the mangled name, or declare it extern \"C\")");
    }
    if (r != CUDA_SUCCESS) return cuError(api_, r, "cuModuleGetFunction");
    auto f = std::make_unique<CudaFunction>();
    f->fn = fn;
    f->ctx = mod->slot->ctx;
    f->limits = &mod->slot->limits;
    f->name = name;
    FunctionHandle h{f.get()};
    mod->functions.push_back(std::move(f));
    return h;
  }

  Expected<FunctionAttributes> attributes(FunctionHandle f) override {
    auto* fn = static_cast<CudaFunction*>(f.p);
    if (fn == nullptr) return Status::InvalidArgument("attributes: null function");
    KTUNE_RETURN_IF_ERROR(bind(fn->ctx));
    FunctionAttributes a;
    int v = 0;
    KTUNE_CU(api_.cuFuncGetAttribute(&v, kFuncNumRegs, fn->fn), "cuFuncGetAttribute(NUM_REGS)");
    a.num_regs = v;
    KTUNE_CU(api_.cuFuncGetAttribute(&v, kFuncSharedSizeBytes, fn->fn),
             "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
    a.static_shared_bytes = v;
    KTUNE_CU(api_.cuFuncGetAttribute(&v, kFuncLocalSizeBytes, fn->fn),
             "cuFuncGetAttribute(LOCAL_SIZE_BYTES)");
    a.local_bytes = v;
    KTUNE_CU(api_.cuFuncGetAttribute(&v, kFuncMaxThreadsPerBlock, fn->fn),
             "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)");
    a.max_threads_per_block = v;
    KTUNE_CU(api_.cuFuncGetAttribute(&v, kFuncMaxDynamicSharedSizeBytes, fn->fn),
             "cuFuncGetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    a.max_dynamic_shared_bytes = v;
    KTUNE_CU(api_.cuFuncGetAttribute(&v, kFuncPtxVersion, fn->fn),
             "cuFuncGetAttribute(PTX_VERSION)");
    a.ptx_version = v;
    KTUNE_CU(api_.cuFuncGetAttribute(&v, kFuncBinaryVersion, fn->fn),
             "cuFuncGetAttribute(BINARY_VERSION)");
    a.binary_version = v;
    return a;
  }

  Status setMaxDynamicShared(FunctionHandle f, int64_t bytes) override {
    auto* fn = static_cast<CudaFunction*>(f.p);
    if (fn == nullptr) return Status::InvalidArgument("setMaxDynamicShared: null function");
    if (bytes < 0) return Status::InvalidArgument("setMaxDynamicShared: negative size");
    KTUNE_RETURN_IF_ERROR(bind(fn->ctx));
    int static_bytes = 0;
    KTUNE_CU(api_.cuFuncGetAttribute(&static_bytes, kFuncSharedSizeBytes, fn->fn),
             "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
    uint64_t limit = fn->limits->max_dynamic_shared;
    if (static_cast<uint64_t>(bytes) + static_cast<uint64_t>(static_bytes) > limit) {
      return Status::OutOfResources(
          "setMaxDynamicShared: " + std::to_string(bytes) + " bytes dynamic + " +
          std::to_string(static_bytes) + " bytes static shared memory exceed the device's " +
          std::to_string(limit) + " bytes per block (opt-in limit)");
    }
    KTUNE_CU(api_.cuFuncSetAttribute(fn->fn, kFuncMaxDynamicSharedSizeBytes,
                                     static_cast<int>(bytes)),
             "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    return Status::Ok();
  }

  // Hot path: no allocation, no lock, no string unless it fails.
  Status launch(FunctionHandle f, Dim3 grid, Dim3 block, size_t dynamic_shared, void** args,
                StreamHandle s) override {
    auto* fn = static_cast<CudaFunction*>(f.p);
    if (__builtin_expect(fn == nullptr, 0)) return Status::InvalidArgument("launch: null function");
    Status st = checkLaunch(grid, block, dynamic_shared, *fn->limits);
    if (__builtin_expect(!st.ok(), 0)) return st;
    if (__builtin_expect(t_current_ctx != fn->ctx, 0)) KTUNE_RETURN_IF_ERROR(bind(fn->ctx));
    CUresult r = api_.cuLaunchKernel(fn->fn, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                     static_cast<unsigned>(dynamic_shared), stream(s), args,
                                     nullptr);
    if (__builtin_expect(r == CUDA_SUCCESS, 1)) return st;
    return launchError(fn, r, grid, block, dynamic_shared);
  }

  Expected<int> occupancyBlocksPerSm(FunctionHandle f, int block_threads,
                                     size_t dynamic_shared) override {
    auto* fn = static_cast<CudaFunction*>(f.p);
    if (fn == nullptr) return Status::InvalidArgument("occupancyBlocksPerSm: null function");
    if (block_threads <= 0 ||
        static_cast<unsigned>(block_threads) > fn->limits->max_threads_per_block) {
      return Status::InvalidArgument(
          "occupancyBlocksPerSm: block of " + std::to_string(block_threads) +
          " threads; must be in [1, " + std::to_string(fn->limits->max_threads_per_block) + "]");
    }
    KTUNE_RETURN_IF_ERROR(bind(fn->ctx));
    int blocks = 0;
    KTUNE_CU(api_.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn->fn, block_threads,
                                                               dynamic_shared),
             "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    return blocks;
  }

  Status checkError() override {
    // Never synchronises: cuStreamQuery returns a sticky kernel fault if one has happened and
    // CUDA_ERROR_NOT_READY while work is still running.
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    CUresult r = api_.cuStreamQuery(nullptr);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY) return Status::Ok();
    return cuError(api_, r, "checkError (cuStreamQuery)", Code::kLaunchError);
  }

  Expected<TensorMap> encodeTensorMap2D(const TensorMap2DDesc& d) override {
    if (api_.cuTensorMapEncodeTiled == nullptr)
      return Status::Unsupported("this CUDA driver has no cuTensorMapEncodeTiled (needs 12.0+)");
    KTUNE_RETURN_IF_ERROR(checkTensorMap2D(d));
    // CUtensorMapDataType UINT8/UINT16/UINT32 (a copy engine: the bits are moved, not converted),
    // CUtensorMapSwizzle NONE/32B/64B/128B = 0..3, L2 promotion 256B = 3, OOB fill zeros = 0.
    const int dtype = d.elem_bytes == 1 ? 0 : d.elem_bytes == 2 ? 1 : 2;
    const int swizzle = d.swizzle_bytes == 0 ? 0 : d.swizzle_bytes == 32 ? 1 : d.swizzle_bytes == 64 ? 2 : 3;
    const unsigned long long dims[2] = {d.cols, d.rows};
    const unsigned long long strides[1] = {d.row_stride_bytes};
    const unsigned box[2] = {d.box_cols, d.box_rows};
    const unsigned elem_strides[2] = {1, 1};
    TensorMap m;
    CUresult r = api_.cuTensorMapEncodeTiled(&m, dtype, 2, reinterpret_cast<void*>(d.base), dims,
                                             strides, box, elem_strides, /*interleave*/ 0, swizzle,
                                             /*l2 promotion 256B*/ 3, /*oob fill zeros*/ 0);
    if (r != CUDA_SUCCESS)
      return cuError(api_, r, "cuTensorMapEncodeTiled", Code::kInvalidArgument);
    return m;
  }

 private:
  static CUstream stream(StreamHandle s) { return static_cast<CUstream>(s.p); }
  static CUevent event(EventHandle e) { return static_cast<CUevent>(e.p); }

  static Status nullCopy(const char* what) {
    return Status::InvalidArgument(std::string(what) + ": null source or destination pointer");
  }

  [[gnu::noinline, gnu::cold]] Status launchError(const CudaFunction* fn, CUresult r, Dim3 g,
                                                  Dim3 b, size_t shm) {
    return cuError(api_, r, "cuLaunchKernel", Code::kLaunchError,
                   "kernel '" + fn->name + "' grid (" + std::to_string(g.x) + ", " +
                       std::to_string(g.y) + ", " + std::to_string(g.z) + ") block (" +
                       std::to_string(b.x) + ", " + std::to_string(b.y) + ", " +
                       std::to_string(b.z) + ") dynamic shared " + std::to_string(shm) + " bytes");
  }

  // Retains the primary context of `slot` once per process and reads its launch limits.
  Status retain(DeviceSlot& slot) {
    std::call_once(slot.retain_once, [&] {
      CUresult r = api_.cuDevicePrimaryCtxRetain(&slot.ctx, slot.dev);
      if (r != CUDA_SUCCESS) {
        slot.retain_status = cuError(api_, r, "cuDevicePrimaryCtxRetain", Code::kUnavailable);
        return;
      }
      int v[8] = {};
      const int attrs[8] = {kAttrMaxBlockDimX, kAttrMaxBlockDimY,        kAttrMaxBlockDimZ,
                            kAttrMaxGridDimX,  kAttrMaxGridDimY,         kAttrMaxGridDimZ,
                            kAttrMaxThreadsPerBlock, kAttrMaxSharedMemoryPerBlockOptin};
      for (int i = 0; i < 8; ++i) {
        r = api_.cuDeviceGetAttribute(&v[i], attrs[i], slot.dev);
        if (r != CUDA_SUCCESS) {
          slot.retain_status = cuError(api_, r, "cuDeviceGetAttribute");
          return;
        }
      }
      for (int i = 0; i < 3; ++i) slot.limits.max_block[i] = static_cast<unsigned>(v[i]);
      for (int i = 0; i < 3; ++i) slot.limits.max_grid[i] = static_cast<unsigned>(v[3 + i]);
      slot.limits.max_threads_per_block = static_cast<unsigned>(v[6]);
      slot.limits.max_dynamic_shared = static_cast<uint64_t>(v[7]);
    });
    return slot.retain_status;
  }

  // Makes `ctx` current on this thread unless ktune already did.
  Status bind(CUcontext ctx) {
    if (t_current_ctx == ctx) return Status::Ok();
    KTUNE_CU(api_.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    t_current_ctx = ctx;
    t_current_slot = nullptr;
    for (const auto& s : d_->devices) {
      if (s->ctx == ctx) t_current_slot = s.get();
    }
    return Status::Ok();
  }

  // Calls that act on "the current device" bind device 0 when this thread has not chosen one.
  Status ensureCurrent() {
    if (t_current_ctx != nullptr && t_current_slot != nullptr) return Status::Ok();
    return setDevice(0);
  }

  Expected<DeviceInfo> readInfo(DeviceSlot& slot) {
    DeviceInfo info;
    info.vendor = Vendor::kNvidia;
    info.ordinal = slot.ordinal;
    char buf[256] = {};
    KTUNE_CU(api_.cuDeviceGetName(buf, sizeof(buf) - 1, slot.dev), "cuDeviceGetName");
    info.name = buf;
    auto get = [&](int attr, const char* what, auto& out) -> Status {
      int v = 0;
      CUresult r = api_.cuDeviceGetAttribute(&v, attr, slot.dev);
      if (r != CUDA_SUCCESS) return cuError(api_, r, what);
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
    KTUNE_CU(api_.cuDeviceTotalMem(&total, slot.dev), "cuDeviceTotalMem");
    info.global_mem_bytes = static_cast<int64_t>(total);
    char bus[64] = {};
    if (api_.cuDeviceGetPCIBusId(bus, sizeof(bus) - 1, slot.dev) == CUDA_SUCCESS) {
      info.pci_bus_id = bus;
    }
    info.driver_version = cudaVersionString(d_->driver_version);
    return info;
  }

  static thread_local DeviceSlot* t_current_slot;

  Driver* d_;
  const CudaApi& api_;
};

thread_local DeviceSlot* CudaBackend::t_current_slot = nullptr;

#undef KTUNE_CU

}  // namespace

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

Expected<std::unique_ptr<Backend>> openCudaBackend() {
  const auto& d = driver();
  if (!d.ok()) return d.status();
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(*d));
}

}  // namespace ktune
