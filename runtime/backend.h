// ktune runtime — one interface over the CUDA driver API, the HIP module API and a simulated
// backend for CPU tests.
//
// A Backend owns one process-wide connection to a vendor driver opened with dlopen (no link-time
// dependency). Handles (streams, events, modules, functions) are opaque and owned by the caller,
// who destroys them through the same backend. With no driver or no device every call returns a
// clear kUnavailable Status ("no CUDA driver (libcuda.so.1) found"), never a crash.
// Thread safety: all methods may be called from several threads; each thread calls setDevice()
// before use (the CUDA backend binds the device's primary context to the calling thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <string>
#include <vector>

#include "base/device.h"
#include "base/status.h"
#include "ktune/types.hpp"  // DevicePtr, StreamHandle (public)

namespace ktune {

// Opaque handles; 0 / nullptr means none. Owned by the caller.
struct EventHandle { void* p = nullptr; };
struct ModuleHandle { void* p = nullptr; };
struct FunctionHandle { void* p = nullptr; };

struct FunctionAttributes {
  int num_regs = 0;                // registers (NVIDIA) / VGPRs (AMD, when the runtime reports)
  int64_t static_shared_bytes = 0;
  int64_t local_bytes = 0;         // local/scratch per thread
  int max_threads_per_block = 0;
  int64_t max_dynamic_shared_bytes = 0;
  int ptx_version = 0, binary_version = 0;
};

// Packs kernel arguments: each add() copies the value into owned storage with its alignment;
// data() is the void** array cuLaunchKernel / hipModuleLaunchKernel expect. Reuse one KernelArgs
// across launches on a hot path (clear() keeps capacity).
// The first kInlineBytes of argument bytes and kInlineArgs arguments live inside the object, and
// add() packs them with inlined stores of a constant size: no allocation and no vector
// bookkeeping per call (packing into vectors was measured to cost up to 8% of a launch,
// bench/NOTES.md, host cost). More arguments spill to the heap once. Copies and moves point
// their data() at their own storage.
class KernelArgs {
 public:
  static constexpr size_t kInlineBytes = 1024;
  static constexpr size_t kInlineArgs = 64;

  KernelArgs() = default;
  KernelArgs(const KernelArgs& o) { *this = o; }
  KernelArgs& operator=(const KernelArgs& o);
  KernelArgs(KernelArgs&& o) noexcept : KernelArgs(static_cast<const KernelArgs&>(o)) {}
  KernelArgs& operator=(KernelArgs&& o) noexcept { return *this = static_cast<const KernelArgs&>(o); }

  template <typename T>
  KernelArgs& add(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>, "kernel arguments must be trivially copyable");
    constexpr size_t align = alignof(T);
    const size_t off = (used_ + align - 1) & ~(align - 1);
    if (off + sizeof(T) <= cap_ && n_ < arg_cap_) [[likely]] {
      __builtin_memcpy(bytes_ + off, &v, sizeof(T));  // a constant size: inlined, no libc call
      offsets_[n_] = static_cast<uint32_t>(off);
      ptrs_[n_++] = bytes_ + off;
      used_ = off + sizeof(T);
      return *this;
    }
    addBytes(&v, sizeof(T), align);
    return *this;
  }
  // Runtime-sized argument (an opaque struct); align 0 means 1.
  void addBytes(const void* p, size_t size, size_t align);
  void clear() { used_ = 0; n_ = 0; }
  void** data() { return ptrs_; }
  size_t count() const { return n_; }

 private:
  // Makes room for `bytes` argument bytes and `args` arguments in all (moves to the heap).
  void grow(size_t bytes, size_t args);
  void repoint();  // ptrs_[i] = bytes_ + offsets_[i]

  alignas(64) unsigned char inline_bytes_[kInlineBytes];
  uint32_t inline_offsets_[kInlineArgs];
  void* inline_ptrs_[kInlineArgs];
  unsigned char* bytes_ = inline_bytes_;
  uint32_t* offsets_ = inline_offsets_;
  void** ptrs_ = inline_ptrs_;
  size_t cap_ = kInlineBytes, arg_cap_ = kInlineArgs;
  size_t used_ = 0, n_ = 0;
  std::vector<unsigned char> heap_bytes_;  // used once the inline storage is outgrown
  std::vector<uint32_t> heap_offsets_;
  std::vector<void*> heap_ptrs_;
};

// Bits of Backend::launchWith's `flags`: what a launch may do beyond launch().
enum LaunchFlag : unsigned {
  // The kernel runs KTUNE_PDL_WAIT() (compiler/prelude.cuh) before it reads an input or writes an
  // output, so it may start while the previous kernel on the stream still runs: a programmatic
  // dependent launch on CUDA devices of compute capability 9.0+ whose driver has cuLaunchKernelEx.
  // Elsewhere (older devices or drivers, other backends) the launch is an ordinary one.
  kLaunchProgrammaticWait = 1u << 0,
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Vendor vendor() const = 0;
  virtual std::string name() const = 0;  // "cuda", "hip", "sim"
  // Driver / runtime version string.
  virtual std::string version() const = 0;

  virtual Expected<std::vector<DeviceInfo>> devices() = 0;
  // Binds `ordinal` to the calling thread (and creates/retains its context).
  virtual Status setDevice(int ordinal) = 0;

  // Memory. alloc(0) is an error; free(0) is a no-op.
  virtual Expected<DevicePtr> alloc(size_t bytes) = 0;
  virtual Status free(DevicePtr p) = 0;
  virtual Status copyToDevice(DevicePtr dst, const void* src, size_t bytes) = 0;
  virtual Status copyToHost(void* dst, DevicePtr src, size_t bytes) = 0;
  virtual Status copyDeviceToDevice(DevicePtr dst, DevicePtr src, size_t bytes,
                                    StreamHandle s = {}) = 0;
  virtual Status memset8(DevicePtr dst, uint8_t value, size_t bytes, StreamHandle s = {}) = 0;
  virtual Status memset32(DevicePtr dst, uint32_t value, size_t count, StreamHandle s = {}) = 0;

  // Streams and events. Timing events measure device time between two records.
  virtual Expected<StreamHandle> createStream() = 0;
  virtual Status destroyStream(StreamHandle s) = 0;
  virtual Status synchronize(StreamHandle s = {}) = 0;
  virtual Expected<EventHandle> createEvent() = 0;
  virtual Status destroyEvent(EventHandle e) = 0;
  virtual Status recordEvent(EventHandle e, StreamHandle s = {}) = 0;
  virtual Status synchronizeEvent(EventHandle e) = 0;
  virtual Expected<float> elapsedMs(EventHandle start, EventHandle end) = 0;

  // Modules from a code object (cubin / hsaco bytes) and their functions.
  virtual Expected<ModuleHandle> loadModule(const std::string& image) = 0;
  virtual Status unloadModule(ModuleHandle m) = 0;
  virtual Expected<FunctionHandle> getFunction(ModuleHandle m, const std::string& name) = 0;
  virtual Expected<FunctionAttributes> attributes(FunctionHandle f) = 0;
  // Raises the dynamic shared-memory limit for `f` (needed above 48 KiB on NVIDIA).
  virtual Status setMaxDynamicShared(FunctionHandle f, int64_t bytes) = 0;
  // Launch with packed arguments (KernelArgs::data()).
  virtual Status launch(FunctionHandle f, Dim3 grid, Dim3 block, size_t dynamic_shared,
                        void** args, StreamHandle s = {}) = 0;
  // launch() with LaunchFlag bits; a backend that cannot honour a bit launches without it.
  // Default: launch() (no bit is honoured).
  virtual Status launchWith(FunctionHandle f, Dim3 grid, Dim3 block, size_t dynamic_shared,
                            void** args, StreamHandle s, unsigned flags) {
    (void)flags;
    return launch(f, grid, block, dynamic_shared, args, s);
  }
  // Resident blocks per SM/CU for this function, block size and dynamic shared memory.
  virtual Expected<int> occupancyBlocksPerSm(FunctionHandle f, int block_threads,
                                             size_t dynamic_shared) = 0;
  // Clusters of `cluster` blocks (x * y * z) of `f` that are resident on the device at once, for
  // this block size and dynamic shared memory (cuOccupancyMaxActiveClusters): the most clusters a
  // persistent kernel can launch without some of them waiting for others to finish. A kernel with
  // compiled-in cluster dimensions takes its own (`cluster` must match them). Default:
  // kUnsupported (no thread-block clusters on this backend).
  virtual Expected<int> maxActiveClusters(FunctionHandle f, Dim3 cluster, int block_threads,
                                          size_t dynamic_shared) {
    (void)f, (void)cluster, (void)block_threads, (void)dynamic_shared;
    return Status::Unsupported(name() + " backend has no thread-block clusters");
  }
  // Last asynchronous error, if any (a faulted kernel poisons the context on CUDA).
  virtual Status checkError() = 0;

  // Whether `s` is capturing into a graph (cuStreamIsCapturing): a call then must not tune,
  // synchronise, allocate or load. Default: never (no graphs on this backend).
  virtual Expected<bool> isCapturing(StreamHandle s) {
    (void)s;
    return false;
  }
  // Whether the driver loads a module's kernels lazily, on first use (cuModuleGetLoadingMode: CUDA's
  // default since 12.2): a library kernel (a vendor candidate) that has not run in this process
  // yet would then load inside a capture. Default: no (everything is loaded when it is loaded).
  virtual bool lazyLoading() { return false; }
  // Puts the calling thread in relaxed capture mode (cuThreadExchangeStreamCaptureMode), so its
  // allocations and synchronisations do not break another thread's capture. Default: no-op.
  virtual Status relaxCaptureMode() { return Status::Ok(); }
  // Makes `s` the calling thread's default stream: its synchronous copies, error checks and every
  // call given the default stream ({}) go to `s` instead of the legacy stream ({} clears it). A
  // thread working beside another thread's capture needs this: while a blocking stream captures,
  // any legacy-stream operation fails and invalidates that capture
  // (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT), whatever the capture mode. Default: no-op.
  virtual Status setThreadStream(StreamHandle s) {
    (void)s;
    return Status::Ok();
  }

  // A tensor-memory-accelerator descriptor (CUtensorMap on NVIDIA sm_90+) for a 2-D row-major
  // matrix, passed by value to kernels that load tiles with cp.async.bulk.tensor. Pure host
  // work (no device call); thread-safe. Default: kUnsupported (no TMA on this backend).
  virtual Expected<TensorMap> encodeTensorMap2D(const TensorMap2DDesc& desc) {
    (void)desc;
    return Status::Unsupported(name() + " backend has no tensor memory accelerator (TMA)");
  }
};

// A persistent grid of clusters of `cluster` blocks along x, shrunk to the clusters of `f` that
// are resident at once: grid.x = min(grid.x, maxActiveClusters(f, ...) * cluster). The grid as
// given for cluster <= 1, or where the backend has no answer (or answers 0: the launch then says
// why the kernel does not fit).
Dim3 residentClusterGrid(Backend& b, FunctionHandle f, Dim3 grid, Dim3 block, size_t dynamic_shared,
                         unsigned cluster);

// Factories. Each returns kUnavailable with the reason when the driver or device is missing.
Expected<std::unique_ptr<Backend>> openCudaBackend();
Expected<std::unique_ptr<Backend>> openHipBackend();
// Picks by name ("cuda", "hip", "sim", "auto" = first available GPU backend).
Expected<std::unique_ptr<Backend>> openBackend(const std::string& which);

}  // namespace ktune
