#include "runtime/hip/hip_backend.h"

#include <cstdlib>
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

// ---- The few HIP declarations we need (values checked against ROCm 5.2 and 6.x headers). --------
namespace {

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

// gcnArchName offsets in hipDeviceProp_t (see the header for how they were obtained).
constexpr size_t kGcnArchNameOffsetR0000 = 396;  // ROCm 5.x hipDeviceProp_t
constexpr size_t kGcnArchNameOffsetR0600 = 1160;  // ROCm 6.x hipDeviceProp_tR0600
constexpr size_t kGcnArchNameSize = 256;
// Both structs are < 1.5 KiB; the buffer leaves room for growth so the runtime never writes past.
constexpr size_t kPropBufferSize = 16 * 1024;

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

// The device ktune last made current on this thread (-1: none). One compare per launch.
thread_local int t_current_device = -1;

std::string errorText(const HipApi& api, hipError_t r) {
  const char* name = api.hipGetErrorName ? api.hipGetErrorName(r) : nullptr;
  const char* desc = api.hipGetErrorString ? api.hipGetErrorString(r) : nullptr;
  std::string s = name ? name : "hipError_t " + std::to_string(r);
  if (desc && (name == nullptr || std::strcmp(desc, name) != 0)) s += std::string(": ") + desc;
  return s;
}

[[gnu::noinline, gnu::cold]] Status hipErr(const HipApi& api, hipError_t r, const char* call,
                                            Code fallback = Code::kInternal,
                                            const std::string& detail = {}) {
  std::string msg = std::string(call) + ": " + errorText(api, r);
  if (!detail.empty()) msg += "\n" + detail;
  return Status(hipResultCode(r, fallback), std::move(msg));
}

#define KTUNE_HIP(call_expr, name)                                    \
  do {                                                                \
    hipError_t _ktune_r = (call_expr);                                \
    if (_ktune_r != hipSuccess) return hipErr(api_, _ktune_r, name);  \
  } while (0)

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

const Expected<Runtime*>& runtime() {
  static const Expected<Runtime*> rt = []() -> Expected<Runtime*> {
    auto loaded = loadRuntime();
    if (!loaded.ok()) return loaded.status();
    return std::move(loaded).value().release();  // intentionally leaked, like the library
  }();
  return rt;
}

// Finds the "gfx..." architecture name in a hipDeviceProp_t of unknown exact layout.
std::string archFromProps(const unsigned char* buf, size_t size, size_t expected_offset) {
  auto at = [&](size_t off) -> std::string {
    if (off + 3 > size || std::memcmp(buf + off, "gfx", 3) != 0) return {};
    size_t n = 0;
    while (off + n < size && n < kGcnArchNameSize && buf[off + n] != 0) ++n;
    return hipArchFromGcnArchName(std::string(reinterpret_cast<const char*>(buf + off), n));
  };
  if (std::string s = at(expected_offset); !s.empty()) return s;
  for (size_t off = 0; off + 3 <= size; ++off) {
    if (std::string s = at(off); !s.empty()) return s;
  }
  return {};
}

class HipBackend final : public Backend {
 public:
  explicit HipBackend(Runtime* rt) : rt_(rt), api_(rt->api) {}

  Vendor vendor() const override { return Vendor::kAmd; }
  std::string name() const override { return "hip"; }
  std::string version() const override { return hipVersionString(rt_->runtime_version); }

  Expected<std::vector<DeviceInfo>> devices() override {
    std::vector<DeviceInfo> out;
    for (const auto& slot : rt_->devices) {
      KTUNE_ASSIGN_OR_RETURN(DeviceInfo info, readInfo(slot->ordinal));
      out.push_back(std::move(info));
    }
    return out;
  }

  Status setDevice(int ordinal) override {
    if (ordinal < 0 || ordinal >= static_cast<int>(rt_->devices.size())) {
      return Status::InvalidArgument("setDevice: HIP device ordinal " + std::to_string(ordinal) +
                                     " out of range (" + std::to_string(rt_->devices.size()) +
                                     " devices)");
    }
    KTUNE_HIP(api_.hipSetDevice(ordinal), "hipSetDevice");
    t_current_device = ordinal;
    return Status::Ok();
  }

  Expected<DevicePtr> alloc(size_t bytes) override {
    if (bytes == 0) return Status::InvalidArgument("alloc: size is 0; allocate at least 1 byte");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    void* p = nullptr;
    hipError_t r = api_.hipMalloc(&p, bytes);
    if (r != hipSuccess) {
      return hipErr(api_, r, "hipMalloc", Code::kInternal,
                    "requested " + std::to_string(bytes) + " bytes");
    }
    return reinterpret_cast<DevicePtr>(p);
  }

  Status free(DevicePtr p) override {
    if (p == 0) return Status::Ok();
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_HIP(api_.hipFree(ptr(p)), "hipFree");
    return Status::Ok();
  }

  Status copyToDevice(DevicePtr dst, const void* src, size_t bytes) override {
    if (bytes == 0) return Status::Ok();
    if (dst == 0 || src == nullptr) return nullCopy("copyToDevice");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_HIP(api_.hipMemcpyHtoD(ptr(dst), const_cast<void*>(src), bytes), "hipMemcpyHtoD");
    return Status::Ok();
  }

  Status copyToHost(void* dst, DevicePtr src, size_t bytes) override {
    if (bytes == 0) return Status::Ok();
    if (dst == nullptr || src == 0) return nullCopy("copyToHost");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_HIP(api_.hipMemcpyDtoH(dst, ptr(src), bytes), "hipMemcpyDtoH");
    return Status::Ok();
  }

  Status copyDeviceToDevice(DevicePtr dst, DevicePtr src, size_t bytes, StreamHandle s) override {
    if (bytes == 0) return Status::Ok();
    if (dst == 0 || src == 0) return nullCopy("copyDeviceToDevice");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_HIP(api_.hipMemcpyDtoDAsync(ptr(dst), ptr(src), bytes, stream(s)),
              "hipMemcpyDtoDAsync");
    return Status::Ok();
  }

  Status memset8(DevicePtr dst, uint8_t value, size_t bytes, StreamHandle s) override {
    if (bytes == 0) return Status::Ok();
    if (dst == 0) return Status::InvalidArgument("memset8: null device pointer");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_HIP(api_.hipMemsetD8Async(ptr(dst), value, bytes, stream(s)), "hipMemsetD8Async");
    return Status::Ok();
  }

  Status memset32(DevicePtr dst, uint32_t value, size_t count, StreamHandle s) override {
    if (count == 0) return Status::Ok();
    if (dst == 0) return Status::InvalidArgument("memset32: null device pointer");
    if (dst % 4 != 0) {
      return Status::InvalidArgument("memset32: device pointer is not 4-byte aligned");
    }
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    int v;
    std::memcpy(&v, &value, sizeof(v));
    KTUNE_HIP(api_.hipMemsetD32Async(ptr(dst), v, count, stream(s)), "hipMemsetD32Async");
    return Status::Ok();
  }

  Expected<StreamHandle> createStream() override {
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    hipStream_t st = nullptr;
    KTUNE_HIP(api_.hipStreamCreate(&st), "hipStreamCreate");  // blocking, like the CUDA backend
    return StreamHandle{st};
  }

  Status destroyStream(StreamHandle s) override {
    if (s.p == nullptr) return Status::Ok();
    KTUNE_HIP(api_.hipStreamDestroy(stream(s)), "hipStreamDestroy");
    return Status::Ok();
  }

  Status synchronize(StreamHandle s) override {
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_HIP(api_.hipStreamSynchronize(stream(s)), "hipStreamSynchronize");
    return Status::Ok();
  }

  Expected<EventHandle> createEvent() override {
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    hipEvent_t e = nullptr;
    KTUNE_HIP(api_.hipEventCreate(&e), "hipEventCreate");
    return EventHandle{e};
  }

  Status destroyEvent(EventHandle e) override {
    if (e.p == nullptr) return Status::Ok();
    KTUNE_HIP(api_.hipEventDestroy(event(e)), "hipEventDestroy");
    return Status::Ok();
  }

  Status recordEvent(EventHandle e, StreamHandle s) override {
    if (e.p == nullptr) return Status::InvalidArgument("recordEvent: null event");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    KTUNE_HIP(api_.hipEventRecord(event(e), stream(s)), "hipEventRecord");
    return Status::Ok();
  }

  Status synchronizeEvent(EventHandle e) override {
    if (e.p == nullptr) return Status::InvalidArgument("synchronizeEvent: null event");
    KTUNE_HIP(api_.hipEventSynchronize(event(e)), "hipEventSynchronize");
    return Status::Ok();
  }

  Expected<float> elapsedMs(EventHandle start, EventHandle end) override {
    if (start.p == nullptr || end.p == nullptr) {
      return Status::InvalidArgument("elapsedMs: null event");
    }
    float ms = 0;
    hipError_t r = api_.hipEventElapsedTime(&ms, event(start), event(end));
    if (r == hipErrorNotReady) {
      KTUNE_HIP(api_.hipEventSynchronize(event(end)), "hipEventSynchronize");
      r = api_.hipEventElapsedTime(&ms, event(start), event(end));
    }
    if (r != hipSuccess) {
      return hipErr(api_, r, "hipEventElapsedTime", Code::kInternal,
                    "both events must have been recorded (recordEvent) on this device");
    }
    return ms;
  }

  Expected<ModuleHandle> loadModule(const std::string& image) override {
    if (image.empty()) return Status::InvalidArgument("loadModule: empty code object");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    hipModule_t m = nullptr;
    hipError_t r = api_.hipModuleLoadData(&m, image.data());
    if (r != hipSuccess) {
      return hipErr(api_, r, "hipModuleLoadData", Code::kInternal,
                    "the code object must be an AMDGPU ELF (hsaco) or offload bundle for this "
                    "device's architecture");
    }
    auto* mod = new HipModule();
    mod->mod = m;
    mod->device = t_current_device;
    return ModuleHandle{mod};
  }

  Status unloadModule(ModuleHandle m) override {
    if (m.p == nullptr) return Status::Ok();
    std::unique_ptr<HipModule> mod(static_cast<HipModule*>(m.p));
    KTUNE_RETURN_IF_ERROR(bind(mod->device));
    KTUNE_HIP(api_.hipModuleUnload(mod->mod), "hipModuleUnload");
    return Status::Ok();
  }

  Expected<FunctionHandle> getFunction(ModuleHandle m, const std::string& name) override {
    if (m.p == nullptr) return Status::InvalidArgument("getFunction: null module");
    if (name.empty()) return Status::InvalidArgument("getFunction: empty function name");
    auto* mod = static_cast<HipModule*>(m.p);
    std::lock_guard<std::mutex> lock(mod->mu);
    for (const auto& f : mod->functions) {
      if (f->name == name) return FunctionHandle{f.get()};
    }
    KTUNE_RETURN_IF_ERROR(bind(mod->device));
    hipFunction_t fn = nullptr;
    hipError_t r = api_.hipModuleGetFunction(&fn, mod->mod, name.c_str());
    if (r == hipErrorNotFound) {
      return Status::NotFound("getFunction: no kernel named '" + name +
                              "' in the module (use the mangled name, or declare it extern \"C\")");
    }
    if (r != hipSuccess) return hipErr(api_, r, "hipModuleGetFunction");
    auto f = std::make_unique<HipFunction>();
    f->fn = fn;
    f->device = mod->device;
    f->limits = &rt_->devices[mod->device]->limits;
    f->name = name;
    FunctionHandle h{f.get()};
    mod->functions.push_back(std::move(f));
    return h;
  }

  Expected<FunctionAttributes> attributes(FunctionHandle f) override {
    auto* fn = static_cast<HipFunction*>(f.p);
    if (fn == nullptr) return Status::InvalidArgument("attributes: null function");
    KTUNE_RETURN_IF_ERROR(bind(fn->device));
    FunctionAttributes a;
    int v = 0;
    KTUNE_HIP(api_.hipFuncGetAttribute(&v, kFuncNumRegs, fn->fn), "hipFuncGetAttribute(NUM_REGS)");
    a.num_regs = v;
    KTUNE_HIP(api_.hipFuncGetAttribute(&v, kFuncSharedSizeBytes, fn->fn),
              "hipFuncGetAttribute(SHARED_SIZE_BYTES)");
    a.static_shared_bytes = v;
    KTUNE_HIP(api_.hipFuncGetAttribute(&v, kFuncLocalSizeBytes, fn->fn),
              "hipFuncGetAttribute(LOCAL_SIZE_BYTES)");
    a.local_bytes = v;
    KTUNE_HIP(api_.hipFuncGetAttribute(&v, kFuncMaxThreadsPerBlock, fn->fn),
              "hipFuncGetAttribute(MAX_THREADS_PER_BLOCK)");
    a.max_threads_per_block = v;
    // No opt-in on AMD: whatever LDS the static allocation leaves is available dynamically.
    a.max_dynamic_shared_bytes =
        static_cast<int64_t>(fn->limits->max_dynamic_shared) - a.static_shared_bytes;
    if (api_.hipFuncGetAttribute(&v, kFuncPtxVersion, fn->fn) == hipSuccess) a.ptx_version = v;
    if (api_.hipFuncGetAttribute(&v, kFuncBinaryVersion, fn->fn) == hipSuccess) {
      a.binary_version = v;
    }
    return a;
  }

  Status setMaxDynamicShared(FunctionHandle f, int64_t bytes) override {
    auto* fn = static_cast<HipFunction*>(f.p);
    if (fn == nullptr) return Status::InvalidArgument("setMaxDynamicShared: null function");
    if (bytes < 0) return Status::InvalidArgument("setMaxDynamicShared: negative size");
    KTUNE_RETURN_IF_ERROR(bind(fn->device));
    int static_bytes = 0;
    KTUNE_HIP(api_.hipFuncGetAttribute(&static_bytes, kFuncSharedSizeBytes, fn->fn),
              "hipFuncGetAttribute(SHARED_SIZE_BYTES)");
    uint64_t limit = fn->limits->max_dynamic_shared;
    if (static_cast<uint64_t>(bytes) + static_cast<uint64_t>(static_bytes) > limit) {
      return Status::OutOfResources(
          "setMaxDynamicShared: " + std::to_string(bytes) + " bytes dynamic + " +
          std::to_string(static_bytes) + " bytes static LDS exceed the device's " +
          std::to_string(limit) + " bytes per workgroup");
    }
    // Nothing to raise: AMD has no per-function opt-in; the check above is the whole contract.
    return Status::Ok();
  }

  Status launch(FunctionHandle f, Dim3 grid, Dim3 block, size_t dynamic_shared, void** args,
                StreamHandle s) override {
    auto* fn = static_cast<HipFunction*>(f.p);
    if (__builtin_expect(fn == nullptr, 0)) return Status::InvalidArgument("launch: null function");
    Status st = checkLaunch(grid, block, dynamic_shared, *fn->limits);
    if (__builtin_expect(!st.ok(), 0)) return st;
    if (__builtin_expect(t_current_device != fn->device, 0)) {
      KTUNE_RETURN_IF_ERROR(bind(fn->device));
    }
    hipError_t r = api_.hipModuleLaunchKernel(fn->fn, grid.x, grid.y, grid.z, block.x, block.y,
                                              block.z, static_cast<unsigned>(dynamic_shared),
                                              stream(s), args, nullptr);
    if (__builtin_expect(r == hipSuccess, 1)) return st;
    return launchError(fn, r, grid, block, dynamic_shared);
  }

  Expected<int> occupancyBlocksPerSm(FunctionHandle f, int block_threads,
                                     size_t dynamic_shared) override {
    auto* fn = static_cast<HipFunction*>(f.p);
    if (fn == nullptr) return Status::InvalidArgument("occupancyBlocksPerSm: null function");
    if (block_threads <= 0 ||
        static_cast<unsigned>(block_threads) > fn->limits->max_threads_per_block) {
      return Status::InvalidArgument(
          "occupancyBlocksPerSm: block of " + std::to_string(block_threads) +
          " threads; must be in [1, " + std::to_string(fn->limits->max_threads_per_block) + "]");
    }
    KTUNE_RETURN_IF_ERROR(bind(fn->device));
    int blocks = 0;
    KTUNE_HIP(api_.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn->fn,
                                                                      block_threads,
                                                                      dynamic_shared),
              "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor");
    return blocks;
  }

  Status checkError() override {
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    hipError_t r = api_.hipStreamQuery(nullptr);
    if (r == hipSuccess || r == hipErrorNotReady) return Status::Ok();
    return hipErr(api_, r, "checkError (hipStreamQuery)", Code::kLaunchError);
  }

 private:
  static hipStream_t stream(StreamHandle s) { return static_cast<hipStream_t>(s.p); }
  static hipEvent_t event(EventHandle e) { return static_cast<hipEvent_t>(e.p); }
  static void* ptr(DevicePtr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

  static Status nullCopy(const char* what) {
    return Status::InvalidArgument(std::string(what) + ": null source or destination pointer");
  }

  [[gnu::noinline, gnu::cold]] Status launchError(const HipFunction* fn, hipError_t r, Dim3 g,
                                                  Dim3 b, size_t shm) {
    return hipErr(api_, r, "hipModuleLaunchKernel", Code::kLaunchError,
                  "kernel '" + fn->name + "' grid (" + std::to_string(g.x) + ", " +
                      std::to_string(g.y) + ", " + std::to_string(g.z) + ") block (" +
                      std::to_string(b.x) + ", " + std::to_string(b.y) + ", " +
                      std::to_string(b.z) + ") dynamic LDS " + std::to_string(shm) + " bytes");
  }

  Status bind(int device) {
    if (t_current_device == device) return Status::Ok();
    KTUNE_HIP(api_.hipSetDevice(device), "hipSetDevice");
    t_current_device = device;
    return Status::Ok();
  }

  Status ensureCurrent() {
    if (t_current_device >= 0) return Status::Ok();
    return setDevice(0);
  }

  Expected<DeviceInfo> readInfo(int ordinal) {
    DeviceInfo info;
    info.vendor = Vendor::kAmd;
    info.ordinal = ordinal;
    char buf[256] = {};
    KTUNE_HIP(api_.hipDeviceGetName(buf, sizeof(buf) - 1, ordinal), "hipDeviceGetName");
    info.name = buf;
    const HipAttributeTable& t = rt_->attrs;
    auto get = [&](int attr, const char* what, auto& out) -> Status {
      int v = 0;
      hipError_t r = api_.hipDeviceGetAttribute(&v, attr, ordinal);
      if (r != hipSuccess) return hipErr(api_, r, what);
      out = v;
      return Status::Ok();
    };
    KTUNE_RETURN_IF_ERROR(get(t.multiprocessor_count, "hipDeviceGetAttribute(CU count)",
                              info.multiprocessors));
    KTUNE_RETURN_IF_ERROR(get(t.warp_size, "hipDeviceGetAttribute(wavefront size)",
                              info.warp_size));
    KTUNE_RETURN_IF_ERROR(get(t.max_shared_per_block, "hipDeviceGetAttribute(LDS per block)",
                              info.shared_per_block));
    KTUNE_RETURN_IF_ERROR(get(t.max_threads_per_block,
                              "hipDeviceGetAttribute(threads per block)",
                              info.max_threads_per_block));
    KTUNE_RETURN_IF_ERROR(get(t.l2_cache_size, "hipDeviceGetAttribute(L2 size)", info.l2_bytes));
    // The rest is best effort: ROCm reports some CUDA-only attributes as 0 or not at all.
    (void)get(t.max_threads_per_mp, "", info.max_threads_per_sm);
    (void)get(t.max_registers_per_block, "", info.regs_per_block);
    (void)get(t.max_registers_per_mp, "", info.regs_per_sm);
    (void)get(t.max_blocks_per_mp, "", info.max_blocks_per_sm);
    (void)get(t.clock_rate, "", info.clock_khz);
    (void)get(t.memory_clock_rate, "", info.mem_clock_khz);
    (void)get(t.memory_bus_width, "", info.mem_bus_width_bits);
    if (get(t.max_shared_per_mp_amd, "", info.shared_per_sm).ok() && info.shared_per_sm == 0) {
      (void)get(t.shared_per_mp, "", info.shared_per_sm);
    }
    // No opt-in on AMD: report the per-block LDS limit so callers can use one field everywhere.
    info.shared_per_block_optin = info.shared_per_block;
    size_t total = 0;
    KTUNE_HIP(api_.hipDeviceTotalMem(&total, ordinal), "hipDeviceTotalMem");
    info.global_mem_bytes = static_cast<int64_t>(total);
    char bus[64] = {};
    if (api_.hipDeviceGetPCIBusId(bus, sizeof(bus) - 1, ordinal) == hipSuccess) {
      info.pci_bus_id = bus;
    }
    // Architecture from gcnArchName (see the header for the layout handling).
    std::vector<unsigned char> props(kPropBufferSize, 0);
    KTUNE_HIP(api_.hipGetDeviceProperties(props.data(), ordinal), "hipGetDeviceProperties");
    size_t offset = rt_->props_r0600 || rt_->runtime_version / 10000000 >= 6
                        ? kGcnArchNameOffsetR0600
                        : kGcnArchNameOffsetR0000;
    info.arch = archFromProps(props.data(), props.size(), offset);
    if (info.arch.empty()) {
      return Status::Unsupported("hipGetDeviceProperties returned no gcnArchName (\"gfx...\") for "
                                 "device " + std::to_string(ordinal) + " (HIP runtime " +
                                 hipVersionString(rt_->runtime_version) +
                                 "); this HIP version's hipDeviceProp_t layout is not supported");
    }
    info.driver_version = hipVersionString(rt_->runtime_version);
    return info;
  }

  Runtime* rt_;
  const HipApi& api_;
};

#undef KTUNE_HIP

}  // namespace

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

Expected<std::unique_ptr<Backend>> openHipBackend() {
  const auto& rt = runtime();
  if (!rt.ok()) return rt.status();
  return std::unique_ptr<Backend>(std::make_unique<HipBackend>(*rt));
}

}  // namespace ktune
