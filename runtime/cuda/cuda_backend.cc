#include "runtime/cuda/cuda_backend.h"

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/launch_check.h"

namespace ktune {

namespace {

using namespace cuda_detail;

// The context ktune last made current on this thread (see the header: one compare per launch).
thread_local CUcontext t_current_ctx = nullptr;
// The calling thread's stand-in for the legacy default stream (setThreadStream), or null.
thread_local CUstream t_thread_stream = nullptr;

#define KTUNE_CU(call_expr, name)                                   \
  do {                                                              \
    CUresult _ktune_r = (call_expr);                                \
    if (_ktune_r != CUDA_SUCCESS) return cuError(api_, _ktune_r, name); \
  } while (0)

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(Driver* d) : d_(d), api_(d->api) {}

  Vendor vendor() const override { return Vendor::kNvidia; }
  std::string name() const override { return "cuda"; }
  std::string version() const override { return cudaVersionString(d_->driver_version); }

  Expected<std::vector<DeviceInfo>> devices() override {
    std::vector<DeviceInfo> out;
    for (const auto& slot : d_->devices) {
      KTUNE_ASSIGN_OR_RETURN(DeviceInfo info, readDeviceInfo(*d_, *slot));
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
    if (t_thread_stream != nullptr) {  // never the legacy stream: see setThreadStream
      KTUNE_CU(api_.cuMemcpyHtoDAsync(dst, src, bytes, t_thread_stream), "cuMemcpyHtoDAsync");
      KTUNE_CU(api_.cuStreamSynchronize(t_thread_stream), "cuStreamSynchronize");
      return Status::Ok();
    }
    KTUNE_CU(api_.cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
    return Status::Ok();
  }

  Status copyToHost(void* dst, DevicePtr src, size_t bytes) override {
    if (bytes == 0) return Status::Ok();
    if (dst == nullptr || src == 0) return nullCopy("copyToHost");
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    if (t_thread_stream != nullptr) {  // never the legacy stream: see setThreadStream
      KTUNE_CU(api_.cuMemcpyDtoHAsync(dst, src, bytes, t_thread_stream), "cuMemcpyDtoHAsync");
      KTUNE_CU(api_.cuStreamSynchronize(t_thread_stream), "cuStreamSynchronize");
      return Status::Ok();
    }
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
    f->programmatic = mod->slot->programmatic;
    f->name = name;
    FunctionHandle h{f.get()};
    mod->functions.push_back(std::move(f));
    return h;
  }

  Expected<FunctionAttributes> attributes(FunctionHandle f) override {
    auto* fn = static_cast<CudaFunction*>(f.p);
    if (fn == nullptr) return Status::InvalidArgument("attributes: null function");
    KTUNE_RETURN_IF_ERROR(bind(fn->ctx));
    return readFunctionAttributes(api_, fn->fn);
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

  Status launch(FunctionHandle f, Dim3 grid, Dim3 block, size_t dynamic_shared, void** args,
                StreamHandle s) override {
    return launchWith(f, grid, block, dynamic_shared, args, s, 0);
  }

  // Hot path: no allocation, no lock, no string unless it fails. kLaunchProgrammaticWait is a
  // programmatic dependent launch where the device and driver have it (sm_90+, cuLaunchKernelEx;
  // captured into a graph it becomes a programmatic edge), an ordinary launch otherwise.
  Status launchWith(FunctionHandle f, Dim3 grid, Dim3 block, size_t dynamic_shared, void** args,
                    StreamHandle s, unsigned flags) override {
    auto* fn = static_cast<CudaFunction*>(f.p);
    if (__builtin_expect(fn == nullptr, 0)) return Status::InvalidArgument("launch: null function");
    Status st = checkLaunch(grid, block, dynamic_shared, *fn->limits);
    if (__builtin_expect(!st.ok(), 0)) return st;
    if (__builtin_expect(t_current_ctx != fn->ctx, 0)) KTUNE_RETURN_IF_ERROR(bind(fn->ctx));
    CUresult r;
    if ((flags & kLaunchProgrammaticWait) && fn->programmatic) {
      CUlaunchAttribute attr{};
      attr.id = kLaunchAttrProgrammaticStreamSerialization;
      attr.value.programmatic_stream_serialization_allowed = 1;
      CUlaunchConfig cfg{grid.x, grid.y, grid.z, block.x, block.y, block.z,
                         static_cast<unsigned>(dynamic_shared), stream(s), &attr, 1};
      r = api_.cuLaunchKernelEx(&cfg, fn->fn, args, nullptr);
    } else {
      r = api_.cuLaunchKernel(fn->fn, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                              static_cast<unsigned>(dynamic_shared), stream(s), args, nullptr);
    }
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

  Expected<int> maxActiveClusters(FunctionHandle f, Dim3 cluster, int block_threads,
                                  size_t dynamic_shared) override {
    auto* fn = static_cast<CudaFunction*>(f.p);
    if (fn == nullptr) return Status::InvalidArgument("maxActiveClusters: null function");
    if (api_.cuOccupancyMaxActiveClusters == nullptr)
      return Status::Unsupported("maxActiveClusters: the CUDA driver has no "
                                 "cuOccupancyMaxActiveClusters (drivers before 11.8)");
    if (block_threads <= 0 || cluster.x * cluster.y * cluster.z == 0)
      return Status::InvalidArgument("maxActiveClusters: empty block or cluster");
    KTUNE_RETURN_IF_ERROR(bind(fn->ctx));
    // The grid is one cluster: the driver only needs it to be a multiple of the cluster's shape.
    CUlaunchAttribute attr{};
    attr.id = kLaunchAttrClusterDimension;
    attr.value.cluster_dim = {cluster.x, cluster.y, cluster.z};
    CUlaunchConfig cfg{cluster.x, cluster.y, cluster.z, static_cast<unsigned>(block_threads), 1u,
                       1u, static_cast<unsigned>(dynamic_shared), nullptr, &attr, 1};
    int clusters = 0;
    KTUNE_CU(api_.cuOccupancyMaxActiveClusters(&clusters, fn->fn, &cfg),
             "cuOccupancyMaxActiveClusters");
    return clusters;
  }

  Status checkError() override {
    // Never synchronises: cuStreamQuery returns a sticky kernel fault if one has happened and
    // CUDA_ERROR_NOT_READY while work is still running.
    KTUNE_RETURN_IF_ERROR(ensureCurrent());
    CUresult r = api_.cuStreamQuery(t_thread_stream);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY) return Status::Ok();
    return cuError(api_, r, "checkError (cuStreamQuery)", Code::kLaunchError);
  }

  Expected<bool> isCapturing(StreamHandle s) override {
    if (api_.cuStreamIsCapturing == nullptr) return false;
    int status = 0;  // CU_STREAM_CAPTURE_STATUS_NONE / _ACTIVE / _INVALIDATED
    CUresult r = api_.cuStreamIsCapturing(stream(s), &status);
    // CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (906): the legacy stream while another stream captures
    // in global mode. Anything done on it now would break that capture: treat it as capturing.
    if (r == 906) return true;
    if (r != CUDA_SUCCESS) return cuError(api_, r, "cuStreamIsCapturing", Code::kLaunchError);
    return status != 0;
  }

  bool lazyLoading() override {
    int mode = 0;  // CU_MODULE_EAGER_LOADING = 1, CU_MODULE_LAZY_LOADING = 2
    if (api_.cuModuleGetLoadingMode == nullptr || api_.cuModuleGetLoadingMode(&mode) != CUDA_SUCCESS)
      return true;
    return mode != 1;
  }

  Status relaxCaptureMode() override {
    if (api_.cuThreadExchangeStreamCaptureMode == nullptr) return Status::Ok();
    int mode = 2;  // CU_STREAM_CAPTURE_MODE_RELAXED
    KTUNE_CU(api_.cuThreadExchangeStreamCaptureMode(&mode), "cuThreadExchangeStreamCaptureMode");
    return Status::Ok();
  }

  Status setThreadStream(StreamHandle s) override {
    t_thread_stream = static_cast<CUstream>(s.p);
    return Status::Ok();
  }

  Expected<TensorMap> encodeTensorMap2D(const TensorMap2DDesc& d) override {
    return encodeTiled2D(api_, d);
  }

 private:
  // The default stream ({}) is the legacy stream, or the calling thread's own (setThreadStream).
  static CUstream stream(StreamHandle s) {
    return s.p != nullptr ? static_cast<CUstream>(s.p) : t_thread_stream;
  }
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
      int cc_major = 0;
      slot.programmatic = api_.cuLaunchKernelEx != nullptr &&
                          api_.cuDeviceGetAttribute(&cc_major, kAttrComputeCapabilityMajor,
                                                    slot.dev) == CUDA_SUCCESS &&
                          cc_major >= 9;
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

  static thread_local DeviceSlot* t_current_slot;

  Driver* d_;
  const CudaApi& api_;
};

thread_local DeviceSlot* CudaBackend::t_current_slot = nullptr;

#undef KTUNE_CU

}  // namespace

Expected<std::unique_ptr<Backend>> openCudaBackend() {
  const auto& d = driver();
  if (!d.ok()) return d.status();
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(*d));
}

}  // namespace ktune
