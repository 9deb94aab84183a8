// A kernel of the library's own that a run uses beside its candidates (ops/device_fill.*: the
// inputs generated on the device; autotune/device_compare.*: the output check on the device). Its
// code object is read from the code-object store when the store holds it, otherwise compiled on a
// thread of its own (and put in the store) while the run goes on; it is loaded on its first use.
// Until it is ready, and for good once it failed to compile or load, the caller does that work on
// the host. One object per kernel, process-wide; every member is used with `mu` held (the *Locked
// functions take the caller's lock, and release it only while they wait for the compile thread).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "compiler/compiler.h"
#include "runtime/backend.h"

namespace ktune {

class CodeObjectStore;

struct SideKernel {
  std::mutex mu;
  Backend* b = nullptr;  // the backend it is enabled on (null: off)
  DeviceInfo dev;
  std::thread compiling;                 // a store miss's compile
  std::shared_ptr<const CodeObject> co;  // set once compiled or read
  ModuleHandle module{};
  FunctionHandle fn{};
  bool failed = false;  // not compiled or not loaded (or the caller's check failed): host work

  // Replaces an earlier setting (resetLocked), then, on an NVIDIA device with an arch, takes
  // `req`'s code object from `store` (may be null) or starts its compile; `mark` names the
  // timeline mark the compile thread sets when it ends. `compiler`, `store` and `b` must outlive
  // the setting.
  void enableLocked(std::unique_lock<std::mutex>& l, Backend& b, Compiler& compiler,
                    CodeObjectStore* store, const DeviceInfo& device, const CompileRequest& req,
                    const char* mark);
  // Waits for a compile in flight.
  void joinLocked(std::unique_lock<std::mutex>& l);
  // joinLocked, then unloads the module and forgets the setting (off).
  void resetLocked(std::unique_lock<std::mutex>& l);
  // Loads the module and `entry` (the code object's lowered name when it has one) on a thread
  // bound to the device: false when not ready or failed (failed is then set, with *why).
  bool loadLocked(const std::string& entry, Status* why = nullptr);
};

}  // namespace ktune
