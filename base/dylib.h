// Run-time loading of vendor libraries (libcuda, libnvrtc, libamdhip64, comgr, cuBLASLt).
// ktune never links them, so one binary runs with either vendor's stack, or with none.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace ktune {

class DynLib {
 public:
  DynLib() = default;
  ~DynLib();
  DynLib(DynLib&& o) noexcept : handle_(o.handle_), path_(std::move(o.path_)) { o.handle_ = nullptr; }
  DynLib& operator=(DynLib&& o) noexcept;
  DynLib(const DynLib&) = delete;
  DynLib& operator=(const DynLib&) = delete;

  // Tries each name in turn (dlopen with RTLD_NOW | RTLD_LOCAL). The error lists every name tried
  // with dlerror()'s reason, e.g. "no CUDA driver (libcuda.so.1) found: ...".
  static Expected<DynLib> open(const std::vector<std::string>& names, const std::string& what);
  // Resolves a symbol; kUnavailable naming the symbol and library when absent.
  Expected<void*> symbol(const char* name) const;
  // Resolves into a typed function pointer; returns false if absent.
  template <typename F>
  Status bind(F& fn, const char* name) const {
    auto s = symbol(name);
    if (!s.ok()) return s.status();
    fn = reinterpret_cast<F>(*s);
    return Status::Ok();
  }
  const std::string& path() const { return path_; }
  bool loaded() const { return handle_ != nullptr; }

 private:
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace ktune

// A library's entry points listed once, as an X-macro: LIST(X) holds one X(return type, name,
// (parameter types)) per function. Inside a struct, KTUNE_DYLIB_ENTRY_POINTS(LIST) declares the
// function pointers (null until bound) and bindEntryPoints(lib, prefix), which resolves each one
// as prefix + name and returns the first missing symbol's error.
#define KTUNE_DYLIB_POINTER(ret, name, params) ret(*name) params = nullptr;
#define KTUNE_DYLIB_BIND(ret, name, params) \
  KTUNE_RETURN_IF_ERROR(lib.bind(name, (std::string(prefix) + #name).c_str()));
#define KTUNE_DYLIB_ENTRY_POINTS(LIST)                                                \
  LIST(KTUNE_DYLIB_POINTER)                                                           \
  ::ktune::Status bindEntryPoints(const ::ktune::DynLib& lib, const char* prefix) { \
    LIST(KTUNE_DYLIB_BIND)                                                            \
    return ::ktune::Status::Ok();                                                     \
  }

