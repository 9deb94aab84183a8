// The simulated backend's modules, functions, launches and occupancy model (see sim_backend.h).
#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/sim/sim_backend.h"
#include "runtime/sim/sim_backend_parts.h"

namespace ktune {

Expected<ModuleHandle> SimBackend::loadModule(const std::string& image) {
  KTUNE_RETURN_IF_ERROR(captureGuard("loadModule"));
  KTUNE_RETURN_IF_ERROR(lostContext());
  KTUNE_ASSIGN_OR_RETURN(SimImage img, parseSimImage(image));
  std::shared_ptr<SimKernel> k;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = kernels_.find(img.entry);
    if (it != kernels_.end()) k = it->second;
  }
  if (k && k->on_load) {
    KTUNE_RETURN_IF_ERROR(k->on_load(img.defines).withContext("sim loadModule(" + img.entry + ")"));
  }
  auto owned = std::make_unique<Module>(Module{std::move(img)});
  Module* m = owned.get();
  std::lock_guard<std::mutex> l(mu_);
  modules_.push_back(std::move(owned));
  return ModuleHandle{m};
}

Status SimBackend::unloadModule(ModuleHandle m) {
  if (!m.p) return Status::Ok();
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = modules_.begin(); it != modules_.end(); ++it) {
    if (it->get() == m.p) {
      modules_.erase(it);
      return Status::Ok();
    }
  }
  return Status::InvalidArgument("unloadModule: not a module of this simulated backend");
}

Expected<FunctionHandle> SimBackend::getFunction(ModuleHandle m, const std::string& name) {
  if (!m.p) return Status::InvalidArgument("getFunction: null module");
  auto* mod = static_cast<Module*>(m.p);
  if (mod->image.entry != name) {
    return Status::NotFound("sim module has no function '" + name + "' (it holds '" +
                            mod->image.entry + "')");
  }
  std::lock_guard<std::mutex> l(mu_);
  auto it = kernels_.find(name);
  if (it == kernels_.end()) {
    return Status::NotFound("no simulated kernel registered as '" + name +
                            "' (SimBackend::registerKernel)");
  }
  functions_.push_back(std::make_unique<Function>(Function{mod, it->second, -1}));
  return FunctionHandle{functions_.back().get()};
}

Expected<FunctionAttributes> SimBackend::attributes(FunctionHandle fh) {
  if (!fh.p) return Status::InvalidArgument("attributes: null function");
  auto* f = static_cast<Function*>(fh.p);
  FunctionAttributes a;
  a.num_regs = f->module->image.registers;
  a.static_shared_bytes = f->module->image.shared_bytes;
  a.local_bytes = f->module->image.local_bytes;
  a.max_threads_per_block = f->module->image.max_threads > 0 ? f->module->image.max_threads
                                                             : opts_.device.max_threads_per_block;
  a.max_dynamic_shared_bytes =
      f->max_dynamic_shared >= 0 ? f->max_dynamic_shared
                                 : std::max<int64_t>(0, opts_.device.shared_per_block -
                                                            a.static_shared_bytes);
  return a;
}

Status SimBackend::setMaxDynamicShared(FunctionHandle fh, int64_t bytes) {
  if (!fh.p) return Status::InvalidArgument("setMaxDynamicShared: null function");
  auto* f = static_cast<Function*>(fh.p);
  int64_t limit = opts_.device.shared_per_block_optin;
  if (limit > 0 && bytes + f->module->image.shared_bytes > limit) {
    return Status::OutOfResources("setMaxDynamicShared: " + std::to_string(bytes) +
                                  " dynamic + " + std::to_string(f->module->image.shared_bytes) +
                                  " static bytes exceed the opt-in limit " + std::to_string(limit));
  }
  f->max_dynamic_shared = bytes;
  return Status::Ok();
}

Status SimBackend::launchWith(FunctionHandle fh, Dim3 grid, Dim3 block, size_t dynamic_shared,
                              void** args, StreamHandle s, unsigned flags) {
  if ((flags & kLaunchProgrammaticWait) && fh.p) {
    std::lock_guard<std::mutex> l(mu_);
    ++programmatic_counts_[static_cast<Function*>(fh.p)->module->image.entry];
  }
  return launch(fh, grid, block, dynamic_shared, args, s);
}

Status SimBackend::launch(FunctionHandle fh, Dim3 grid, Dim3 block, size_t dynamic_shared,
                          void** args, StreamHandle s) {
  if (!fh.p) return Status::InvalidArgument("launch: null function");
  KTUNE_RETURN_IF_ERROR(lostContext());
  auto* f = static_cast<Function*>(fh.p);
  const DeviceInfo& d = opts_.device;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0) {
    return Status::InvalidArgument("launch: grid and block dimensions must be positive");
  }
  int64_t threads = int64_t(block.x) * block.y * block.z;
  int max_threads = f->module->image.max_threads > 0 ? f->module->image.max_threads
                                                     : d.max_threads_per_block;
  if (max_threads > 0 && threads > max_threads) {
    return Status::LaunchError("launch: " + std::to_string(threads) +
                               " threads per block exceed the limit " +
                               std::to_string(max_threads));
  }
  int64_t dyn_limit = f->max_dynamic_shared >= 0
                          ? f->max_dynamic_shared
                          : (d.shared_per_block > 0 ? d.shared_per_block -
                                                          f->module->image.shared_bytes
                                                    : -1);
  if (dyn_limit >= 0 && static_cast<int64_t>(dynamic_shared) > dyn_limit) {
    return Status::OutOfResources("launch: " + std::to_string(dynamic_shared) +
                                  " bytes of dynamic shared memory exceed the limit " +
                                  std::to_string(dyn_limit) + " (setMaxDynamicShared first?)");
  }
  SimLaunch L;
  L.grid = grid;
  L.block = block;
  L.dynamic_shared = dynamic_shared;
  L.args = args;
  L.backend = this;
  L.entry = f->module->image.entry;
  L.defines = &f->module->image.defines;
  {
    std::lock_guard<std::mutex> l(mu_);
    ++launch_counts_[L.entry];
    ++total_launches_;
  }
  Status st = f->kernel->run ? f->kernel->run(L) : Status::Ok();
  double cost = f->kernel->cost ? f->kernel->cost(L) : opts_.default_cost_ms;
  std::lock_guard<std::mutex> l(mu_);
  if (!st.ok() && (st.code() == Code::kDeviceFault || st.code() == Code::kTimeout)) {
    sticky_ = st;  // asynchronous failure: reported by checkError() as on a GPU
    if (opts_.faults_lose_context && st.code() == Code::kDeviceFault && lost_.ok()) lost_ = st;
  }
  if (st.code() == Code::kTimeout) cost = std::max(cost, 1e3);
  advance(stream(s), cost);
  return st;
}

Expected<int> SimBackend::occupancyBlocksPerSm(FunctionHandle fh, int block_threads,
                                               size_t dynamic_shared) {
  if (!fh.p) return Status::InvalidArgument("occupancyBlocksPerSm: null function");
  if (block_threads <= 0) return Status::InvalidArgument("occupancy: block_threads must be > 0");
  auto* f = static_cast<Function*>(fh.p);
  const DeviceInfo& d = opts_.device;
  int64_t blocks = d.max_blocks_per_sm > 0 ? d.max_blocks_per_sm : 1 << 20;
  if (d.max_threads_per_sm > 0) blocks = std::min<int64_t>(blocks, d.max_threads_per_sm / block_threads);
  int64_t shared = f->module->image.shared_bytes + static_cast<int64_t>(dynamic_shared);
  if (d.shared_per_sm > 0 && shared > 0) blocks = std::min(blocks, d.shared_per_sm / shared);
  int64_t regs = int64_t(f->module->image.registers) * block_threads;
  if (d.regs_per_sm > 0 && regs > 0) blocks = std::min(blocks, d.regs_per_sm / regs);
  return static_cast<int>(std::max<int64_t>(blocks, 0));
}

Expected<int> SimBackend::maxActiveClusters(FunctionHandle fh, Dim3 cluster, int block_threads,
                                            size_t dynamic_shared) {
  const int64_t size = int64_t(cluster.x) * cluster.y * cluster.z;
  if (size <= 0) return Status::InvalidArgument("maxActiveClusters: empty cluster");
  KTUNE_ASSIGN_OR_RETURN(const int per_sm, occupancyBlocksPerSm(fh, block_threads, dynamic_shared));
  if (size > 8) return 0;
  const int64_t sms = std::max(opts_.device.multiprocessors, 1);
  const int64_t gpc = opts_.sms_per_gpc > 0 ? std::min<int64_t>(opts_.sms_per_gpc, sms) : sms;
  const int64_t whole = sms / gpc, rest = sms % gpc;
  return static_cast<int>(whole * (gpc * per_sm / size) + rest * per_sm / size);
}

Status SimBackend::checkError() {
  std::lock_guard<std::mutex> l(mu_);
  if (!lost_.ok()) return lost_;
  Status s = sticky_;
  sticky_ = Status();
  return s;
}

}  // namespace ktune
