#include "base/dylib.h"

#include <dlfcn.h>

namespace ktune {

DynLib::~DynLib() {
  // Vendor libraries register atexit handlers and threads; unloading them is unsafe. Keep loaded.
  handle_ = nullptr;
}

DynLib& DynLib::operator=(DynLib&& o) noexcept {
  handle_ = o.handle_;
  path_ = std::move(o.path_);
  o.handle_ = nullptr;
  return *this;
}

Expected<DynLib> DynLib::open(const std::vector<std::string>& names, const std::string& what) {
  std::string tried;
  for (const auto& n : names) {
    void* h = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      DynLib lib;
      lib.handle_ = h;
      lib.path_ = n;
      return lib;
    }
    const char* err = ::dlerror();
    if (!tried.empty()) tried += "; ";
    tried += err ? err : n;
  }
  return Status::Unavailable("no " + what + " found (" + tried + ")");
}

Expected<void*> DynLib::symbol(const char* name) const {
  if (!handle_) return Status::Unavailable(std::string("library not loaded, cannot resolve ") + name);
  ::dlerror();
  void* p = ::dlsym(handle_, name);
  if (!p) return Status::Unavailable(std::string("symbol ") + name + " not found in " + path_);
  return p;
}

}  // namespace ktune
