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
  // Several entry points in order: bindAll(prefix, fn1, "name1", fn2, "name2", ...) resolves
  // prefix + name into each function pointer; the first missing symbol's error.
  template <typename F, typename... Rest>
  Status bindAll(const char* prefix, F& fn, const char* name, Rest&&... rest) const {
    KTUNE_RETURN_IF_ERROR(bind(fn, (std::string(prefix) + name).c_str()));
    if constexpr (sizeof...(Rest) > 0) {
      return bindAll(prefix, std::forward<Rest>(rest)...);
    } else {
      return Status::Ok();
    }
  }
  const std::string& path() const { return path_; }
  bool loaded() const { return handle_ != nullptr; }

 private:
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace ktune
