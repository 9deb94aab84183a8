#include "runtime/hip/hip_backend.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/hip/hip_runtime.h"

namespace ktune {
namespace {

using namespace hip_detail;  // NOLINT: the runtime's types, internal to runtime/hip

// gcnArchName offsets in hipDeviceProp_t (see the header for how they were obtained).
constexpr size_t kGcnArchNameOffsetR0000 = 396;  // ROCm 5.x hipDeviceProp_t
constexpr size_t kGcnArchNameOffsetR0600 = 1160;  // ROCm 6.x hipDeviceProp_tR0600
constexpr size_t kGcnArchNameSize = 256;
// Both structs are < 1.5 KiB; the buffer leaves room for growth so the runtime never writes past.
constexpr size_t kPropBufferSize = 16 * 1024;

// The device ktune last made current on this thread (-1: none). One compare per launch.
thread_local int t_current_device = -1;

#define KTUNE_HIP(call_expr, name)                                    \
  do {                                                                \
    hipError_t _ktune_r = (call_expr);                                \
    if (_ktune_r != hipSuccess) return hipErr(api_, _ktune_r, name);  \
  } while (0)

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

Expected<std::unique_ptr<Backend>> openHipBackend() {
  const auto& rt = runtime();
  if (!rt.ok()) return rt.status();
  return std::unique_ptr<Backend>(std::make_unique<HipBackend>(*rt));
}

}  // namespace ktune
