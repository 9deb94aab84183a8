#include "autotune/side_kernel.h"

#include "base/timeline.h"
#include "compiler/store/store.h"

namespace ktune {

void SideKernel::enableLocked(std::unique_lock<std::mutex>& l, Backend& backend, Compiler& compiler,
                              CodeObjectStore* store, const DeviceInfo& device,
                              const CompileRequest& req, const char* mark) {
  resetLocked(l);
  if (backend.vendor() != Vendor::kNvidia || device.arch.empty()) return;
  b = &backend;
  dev = device;
  if (store) {
    auto got = store->get(codeObjectKey(req, compiler.name(), compiler.version()));
    if (got.ok()) {
      co = std::make_shared<const CodeObject>(std::move(got).value());
      return;
    }
  }
  // Not in the store: compiled beside the run (the caller's work until then is the host's).
  compiling = std::thread([this, &compiler, store, req, mark] {
    auto got = store ? store->getOrCompile(compiler, req) : compiler.compile(req);
    std::lock_guard<std::mutex> g(mu);
    if (got.ok()) co = std::make_shared<const CodeObject>(std::move(got).value());
    else failed = true;
    timelineMark(mark, got.ok() ? "ok" : got.status().toString());
  });
}

void SideKernel::joinLocked(std::unique_lock<std::mutex>& l) {
  if (!compiling.joinable()) return;
  std::thread t = std::move(compiling);
  l.unlock();  // the compile thread takes the lock to publish its result
  t.join();
  l.lock();
}

void SideKernel::resetLocked(std::unique_lock<std::mutex>& l) {
  joinLocked(l);
  if (module.p && b) (void)b->unloadModule(module);
  module = {};
  fn = {};
  co.reset();
  failed = false;
  b = nullptr;
}

bool SideKernel::loadLocked(const std::string& entry, Status* why) {
  if (fn.p) return true;
  if (failed || !co) return false;
  auto m = b->loadModule(co->binary);
  if (!m.ok()) {
    failed = true;
    if (why) *why = m.status();
    return false;
  }
  auto f = b->getFunction(*m, co->lowered_entry.empty() ? entry : co->lowered_entry);
  if (!f.ok()) {
    (void)b->unloadModule(*m);
    failed = true;
    if (why) *why = f.status();
    return false;
  }
  module = *m;
  fn = *f;
  return true;
}

}  // namespace ktune
