// ktune::Autotuner, Kernel and SimLaunchView: the public handles over the engine (autotune/).
#include <atomic>
#include <utility>

#include "api/internal.h"
#include "autotune/isolation.h"
#include "base/version.h"
#include "ktune/version.hpp"
#include "compiler/sim/sim_compiler.h"
#include "compiler/store/store.h"
#include "remote/shared.h"

namespace ktune {
namespace api {

// The device the simulated backend describes: a fictional GPU with the usual CUDA-like launch
// limits, so launch rules are checked the way a real device would check them.
DeviceInfo simulatedDevice() {
  DeviceInfo d;
  d.name = "ktune simulated device";
  d.arch = "sim";
  d.multiprocessors = 16;
  d.warp_size = 32;
  d.shared_per_block = 48 * 1024;
  d.shared_per_block_optin = 96 * 1024;
  d.shared_per_sm = 96 * 1024;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.l2_bytes = 1 << 20;
  return d;
}

}  // namespace api

const char* version() { return KTUNE_VERSION; }

Autotuner::Autotuner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Autotuner::~Autotuner() = default;

Expected<std::unique_ptr<Autotuner>> Autotuner::create(const TunerOptions& options) {
  auto impl = std::make_unique<Impl>();
  EngineOptions eo;
  eo.options = options;
  if (options.backend == "sim") {
    SimOptions so;
    so.device = api::simulatedDevice();
    impl->sim = std::make_shared<SimBackend>(so);
    impl->backend = impl->sim;
    eo.compiler = std::make_shared<SimCompiler>();
    eo.ir_compiler = eo.compiler;  // per-config modules of every language become sim binaries
  } else {
    KTUNE_ASSIGN_OR_RETURN(auto b, openBackend(options.backend));
    impl->backend = std::shared_ptr<Backend>(std::move(b));
  }
  // KTUNE_REMOTE_CACHE / options.remote_cache: the shared cache and leases, as the CLI uses them
  // (without a remote the engine keeps its default: this process's cache only). A URL that is not
  // redis:// would otherwise leave the process silently without its shared cache.
  if (!options.remote_cache.empty()) {
    auto url = parseRemoteUrl(options.remote_cache);
    if (!url.ok()) return url.status().withContext("remote_cache");
    eo.shared = remote::makeSharedTuning(options);
  }
  KTUNE_ASSIGN_OR_RETURN(auto t, Engine::create(impl->backend, std::move(eo)));
  impl->tuner = std::shared_ptr<Engine>(std::move(t));
  return std::unique_ptr<Autotuner>(new Autotuner(std::move(impl)));
}

void Autotuner::waitBackground() { impl_->tuner->waitBackground(); }
uint64_t Autotuner::backgroundTuned() const { return impl_->tuner->backgroundTuned(); }

Expected<Kernel> Autotuner::addKernel(const KernelSpec& spec) {
  KTUNE_ASSIGN_OR_RETURN(auto data, api::parseKernelSpec(spec));
  KTUNE_RETURN_IF_ERROR(api::addFamily(*this, api::toTypedSpec(data)).status());
  static std::atomic<unsigned> next_plan_slot{0};
  auto k = std::make_shared<Kernel::Impl>();
  KTUNE_ASSIGN_OR_RETURN(k->family, impl_->tuner->family<api::DataProblem>(data->spec.name));
  k->data = std::move(data);
  k->plan_slot = next_plan_slot.fetch_add(1, std::memory_order_relaxed);
  return Kernel(std::move(k));
}

Expected<KeyReport> Autotuner::report(const std::string& family, const std::string& key) const {
  TuningDatabase* db = impl_->tuner->database(family);
  if (!db) return Status::NotFound("family '" + family + "' is not registered on this tuner");
  auto e = db->lookup(key);
  if (!e) return Status::NotFound("family '" + family + "': key '" + key + "' was not tuned");
  return reportOf(family, std::move(*e), "database");
}

Expected<std::string> Autotuner::exportDatabase(const std::string& family) const {
  TuningDatabase* db = impl_->tuner->database(family);
  if (!db) return Status::NotFound("family '" + family + "' is not registered on this tuner");
  return db->exportJson();
}

Status Autotuner::importDatabase(const std::string& family, const std::string& json) {
  return impl_->tuner->importDatabase(family, json);
}

Status Autotuner::removeKey(const std::string& family, const std::string& key) {
  TuningDatabase* db = impl_->tuner->database(family);
  if (!db) return Status::NotFound("family '" + family + "' is not registered on this tuner");
  return db->remove(key);
}

std::string Autotuner::cacheDir() const { return impl_->tuner->store().dir(); }
Status Autotuner::clearCache() { return impl_->tuner->store().clear(); }
Expected<std::string> Autotuner::workerPath() const {
  return findWorkerExecutable(impl_->tuner->options().options.worker_path);
}
std::string Autotuner::backendName() const { return impl_->backend->name(); }
std::string Autotuner::deviceName() const { return impl_->tuner->device().name; }
std::string Autotuner::arch() const { return impl_->tuner->device().arch; }

Expected<DevicePtr> Autotuner::alloc(size_t bytes) { return impl_->backend->alloc(bytes); }
Status Autotuner::free(DevicePtr p) { return impl_->backend->free(p); }
Status Autotuner::copyToDevice(DevicePtr dst, const void* src, size_t bytes) {
  return impl_->backend->copyToDevice(dst, src, bytes);
}
Status Autotuner::copyToHost(void* dst, DevicePtr src, size_t bytes) {
  return impl_->backend->copyToHost(dst, src, bytes);
}
Expected<StreamHandle> Autotuner::createStream() { return impl_->backend->createStream(); }
Status Autotuner::destroyStream(StreamHandle s) { return impl_->backend->destroyStream(s); }
Status Autotuner::synchronize(StreamHandle s) { return impl_->backend->synchronize(s); }

Status Autotuner::registerSimKernel(const std::string& entry, SimKernelFns fns) {
  if (!impl_->sim)
    return Status::Unsupported("registerSimKernel: the tuner runs on backend '" +
                               impl_->backend->name() + "', not 'sim'");
  SimKernel k;
  if (fns.run) {
    k.run = [run = std::move(fns.run)](const SimLaunch& l) {
      SimLaunchView::Impl impl{&l};
      return run(SimLaunchView(&impl));
    };
  }
  if (fns.cost) {
    k.cost = [cost = std::move(fns.cost)](const SimLaunch& l) {
      SimLaunchView::Impl impl{&l};
      return cost(SimLaunchView(&impl));
    };
  }
  impl_->sim->registerKernel(entry, std::move(k));
  return Status::Ok();
}

// ---------------------------------------------------------------- Kernel

namespace {

// The calling thread's last plain launch of a few kernels (a loop over a model's layers calls
// several in turn): a call whose key and launch-rule arguments (DataFamily::plan_args) equal the
// last call's launches the same function with the same dims, the parameters pointing into the
// caller's values, without the key, the lookup, the launch rule or the packing. The slow path
// makes the plans; LaunchPlan says when one is stale.
struct CallPlan {
  static constexpr size_t kMaxInts = 16;
  LaunchPlan plan;
  int64_t ints[kMaxInts];
};
constexpr unsigned kPlansPerThread = 8;
thread_local CallPlan t_call_plans[kPlansPerThread];

int64_t intOf(const Value& v) { return v.type == ArgType::kI32 ? v.v.i32 : v.v.i64; }

// Launches `args` through the thread's plan when it holds for them (true; *st is the launch's).
bool launchIfPlanned(const Kernel::Impl& k, const Value* args, size_t count, StreamHandle stream,
                   Status* st) {
  const api::DataFamily& f = *k.data;
  CallPlan& t = t_call_plans[k.plan_slot % kPlansPerThread];
  if (count != f.spec.args.size() || (count > 0 && !args) || !k.family.planCurrent(t.plan))
    return false;
  for (size_t j = 0; j < f.plan_args.size(); ++j) {
    const Value& a = args[f.plan_args[j]];
    if (a.type != f.spec.args[f.plan_args[j]].type || intOf(a) != t.ints[j]) return false;
  }
  void* params[api::DataFamily::kMaxArgs];
  for (size_t i = 0; i < count; ++i) {
    if (args[i].type != f.spec.args[i].type) return false;  // the slow path says which
    // Every member of Value's union starts at its address: the parameter's bytes.
    params[i] = const_cast<void*>(static_cast<const void*>(&args[i].v));
  }
  *st = k.family.launchPlanned(t.plan, params, stream);
  return true;
}

void keepPlan(const Kernel::Impl& k, const Value* args, const LaunchPlan& plan) {
  const api::DataFamily& f = *k.data;
  if (plan.family == 0 || f.plan_args.size() > CallPlan::kMaxInts) return;
  CallPlan& t = t_call_plans[k.plan_slot % kPlansPerThread];
  t.plan = plan;
  for (size_t j = 0; j < f.plan_args.size(); ++j) t.ints[j] = intOf(args[f.plan_args[j]]);
}

}  // namespace

Status Kernel::operator()(const Value* args, size_t count, StreamHandle stream) const {
  if (!impl_) return Status::InvalidArgument("call of an empty ktune::Kernel");
  Status st;
  if (launchIfPlanned(*impl_, args, count, stream, &st)) return st;
  KTUNE_RETURN_IF_ERROR(impl_->data->checkArgs(args, count));
  LaunchPlan plan;
  const api::DataProblem p{args, count};
  st = impl_->family(p, stream, &plan);
  if (st.ok()) keepPlan(*impl_, args, plan);
  return st;
}

bool Kernel::callPlanned(const Value* args, size_t count, StreamHandle stream,
                         Status* status) const {
  return impl_ && status && launchIfPlanned(*impl_, args, count, stream, status);
}

Expected<KeyReport> Kernel::tune(const Value* args, size_t count, StreamHandle stream) const {
  if (!impl_) return Status::InvalidArgument("tune() on an empty ktune::Kernel");
  KTUNE_RETURN_IF_ERROR(impl_->data->checkArgs(args, count));
  const api::DataProblem p{args, count};
  KTUNE_ASSIGN_OR_RETURN(TuneReport r, impl_->family.tune(p, stream));
  return KeyReport(std::move(r));  // the run's statistics stay in the engine
}

Expected<std::string> Kernel::key(const Value* args, size_t count) const {
  if (!impl_) return Status::InvalidArgument("key() on an empty ktune::Kernel");
  KTUNE_RETURN_IF_ERROR(impl_->data->checkArgs(args, count));
  const api::DataProblem p{args, count};
  return impl_->family.key(p);
}

const std::string& Kernel::name() const {
  static const std::string kEmpty;
  return impl_ ? impl_->data->spec.name : kEmpty;
}

// ---------------------------------------------------------------- SimLaunchView

unsigned SimLaunchView::grid(int i) const {
  const Dim3& d = impl_->launch->grid;
  return i == 0 ? d.x : i == 1 ? d.y : i == 2 ? d.z : 0;
}
unsigned SimLaunchView::block(int i) const {
  const Dim3& d = impl_->launch->block;
  return i == 0 ? d.x : i == 1 ? d.y : i == 2 ? d.z : 0;
}
size_t SimLaunchView::sharedBytes() const { return impl_->launch->dynamic_shared; }
int64_t SimLaunchView::knob(const std::string& name, int64_t fallback) const {
  return impl_->launch->define(name, fallback);
}
const void* SimLaunchView::arg(size_t i) const { return impl_->launch->args[i]; }
void* SimLaunchView::hostPtr(DevicePtr p) const { return impl_->launch->backend->hostPtr(p); }
size_t SimLaunchView::bytesAvailable(DevicePtr p) const {
  return impl_->launch->backend->bytesAvailable(p);
}

}  // namespace ktune
