#include "tools/tune_early_wave.h"

#include <utility>

#include "autotune/autotuner.h"
#include "base/dylib.h"
#include "base/format.h"
#include "base/fs.h"
#include "base/timeline.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/sim/sim_backend.h"
#include "tools/tune_request.h"

namespace ktune::cli {

namespace {

// NVML's entry points used here (nvml.h; nvmlDevice_t is an opaque pointer, 0 is NVML_SUCCESS).
struct Nvml {
  using Dev = void*;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*count)(unsigned*) = nullptr;
  int (*handle)(unsigned, Dev*) = nullptr;
  int (*name)(Dev, char*, unsigned) = nullptr;
  int (*cc)(Dev, int*, int*) = nullptr;
  int (*cores)(Dev, unsigned*) = nullptr;
  Status bind(const DynLib& lib) {
    KTUNE_RETURN_IF_ERROR(lib.bind(init, "nvmlInit_v2"));
    KTUNE_RETURN_IF_ERROR(lib.bind(shutdown, "nvmlShutdown"));
    KTUNE_RETURN_IF_ERROR(lib.bind(count, "nvmlDeviceGetCount_v2"));
    KTUNE_RETURN_IF_ERROR(lib.bind(handle, "nvmlDeviceGetHandleByIndex_v2"));
    KTUNE_RETURN_IF_ERROR(lib.bind(name, "nvmlDeviceGetName"));
    KTUNE_RETURN_IF_ERROR(lib.bind(cc, "nvmlDeviceGetCudaComputeCapability"));
    return lib.bind(cores, "nvmlDeviceGetNumGpuCores");
  }
};

// A device that only describes itself: the early wave's engine compiles and never runs anything
// (GemmOp::precompile). It reports the predicted vendor, unlike the simulated one it builds on.
class PredictedBackend : public SimBackend {
 public:
  explicit PredictedBackend(const DeviceInfo& d) : SimBackend(options(d)), device_(d) {}
  Vendor vendor() const override { return device_.vendor; }
  Expected<std::vector<DeviceInfo>> devices() override {
    std::vector<DeviceInfo> all(size_t(device_.ordinal) + 1, device_);
    for (size_t i = 0; i < all.size(); ++i) all[i].ordinal = static_cast<int>(i);
    return all;
  }

 private:
  static SimOptions options(const DeviceInfo& d) {
    SimOptions o;
    o.device = d;
    o.device_count = d.ordinal + 1;
    return o;
  }
  DeviceInfo device_;
};

}  // namespace

std::vector<NvmlGpu> nvmlGpus() {
  std::vector<NvmlGpu> out;
  auto lib = DynLib::open({"libnvidia-ml.so.1", "libnvidia-ml.so"}, "NVML");
  Nvml n;
  if (!lib.ok() || !n.bind(*lib).ok() || n.init() != 0) return out;
  unsigned count = 0;
  if (n.count(&count) == 0) {
    for (unsigned i = 0; i < count; ++i) {
      Nvml::Dev d = nullptr;
      NvmlGpu g;
      char buf[96] = {};
      if (n.handle(i, &d) != 0 || n.name(d, buf, sizeof(buf) - 1) != 0 ||
          n.cc(d, &g.cc_major, &g.cc_minor) != 0 || n.cores(d, &g.cores) != 0) {
        out.clear();  // one GPU unknown: no prediction (which one is the driver's is unknown)
        break;
      }
      g.name = buf;
      out.push_back(g);
    }
  }
  n.shutdown();
  return out;
}

std::optional<DeviceInfo> predictDevice(const std::vector<NvmlGpu>& gpus, int ordinal) {
  if (gpus.empty() || ordinal < 0 || size_t(ordinal) >= gpus.size()) return std::nullopt;
  const NvmlGpu& g = gpus.front();
  for (const NvmlGpu& o : gpus)
    if (o.name != g.name || o.cc_major != g.cc_major || o.cc_minor != g.cc_minor ||
        o.cores != g.cores)
      return std::nullopt;
  // Hopper's per-SM and per-block limits (the CUDA programming guide's table for 9.0).
  if (g.cc_major != 9 || g.cc_minor != 0 || g.cores == 0 || g.cores % 128 != 0) return std::nullopt;
  DeviceInfo d;
  d.vendor = Vendor::kNvidia;
  d.ordinal = ordinal;
  d.name = g.name;
  d.cc_major = g.cc_major;
  d.cc_minor = g.cc_minor;
  d.arch = cudaArchName(g.cc_major, g.cc_minor);
  d.multiprocessors = static_cast<int>(g.cores / 128);
  d.warp_size = 32;
  d.shared_per_block = 48 << 10;
  d.shared_per_block_optin = 227 << 10;
  d.shared_per_sm = 228 << 10;
  d.regs_per_block = d.regs_per_sm = 64 << 10;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  return d;
}

std::string predictionMiss(const DeviceInfo& p, const DeviceInfo& r) {
  if (p.vendor != r.vendor) return "vendor";
  if (p.name != r.name) return "name";
  if (p.arch != r.arch || p.cc_major != r.cc_major || p.cc_minor != r.cc_minor) return "arch";
  if (p.multiprocessors != r.multiprocessors) return "multiprocessors";
  if (p.warp_size != r.warp_size) return "warp_size";
  if (p.shared_per_block != r.shared_per_block ||
      p.shared_per_block_optin != r.shared_per_block_optin || p.shared_per_sm != r.shared_per_sm)
    return "shared memory";
  if (p.regs_per_block != r.regs_per_block || p.regs_per_sm != r.regs_per_sm) return "registers";
  if (p.max_threads_per_block != r.max_threads_per_block ||
      p.max_threads_per_sm != r.max_threads_per_sm || p.max_blocks_per_sm != r.max_blocks_per_sm)
    return "threads";
  return "";
}

EarlyWave::~EarlyWave() {
  if (thread_.joinable()) thread_.join();
}

void EarlyWave::start(const Options& opts, const DeviceInfo& device, const gemm::GemmShape& shape,
                      GemmOp::OpOptions gopts, bool skip_recorded,
                      std::shared_ptr<Compiler> compiler) {
  if (started()) return;
  thread_ = std::thread([=, this] { run(opts, device, shape, gopts, skip_recorded, compiler); });
}

void EarlyWave::predictFromNvml(const Options& opts, const gemm::GemmShape& shape,
                                GemmOp::OpOptions gopts, bool skip_recorded) {
  if (started()) return;
  // Before the driver starts, on this thread: NVML waits for a cuInit running beside it (the
  // tuner's or its worker's), so it answered only after them on the GPU host (bench/NOTES.md).
  std::vector<NvmlGpu> gpus = nvmlGpus();
  std::optional<DeviceInfo> d = predictDevice(gpus, opts.device);
  timelineMark("nvml",
               d ? d->name + " " + d->arch : strprintf("no prediction (%zu GPUs)", gpus.size()));
  if (d) pending_ = [=, this] { start(opts, *d, shape, gopts, skip_recorded); };
}

void EarlyWave::go() {
  if (pending_) std::exchange(pending_, nullptr)();
}

bool storeHoldsObjects(const std::string& dir) {
  auto shards = listDir(joinPath(dir, "objects"));
  if (!shards.ok()) return false;
  for (const std::string& s : *shards) {
    auto entries = listDir(joinPath(joinPath(dir, "objects"), s));
    if (s.size() == 2 && entries.ok() && !entries->empty()) return true;
  }
  return false;
}

void EarlyWave::run(const Options& opts, const DeviceInfo& device, const gemm::GemmShape& shape,
                    const GemmOp::OpOptions& gopts, bool skip_recorded,
                    const std::shared_ptr<Compiler>& compiler) {
  {
    std::lock_guard<std::mutex> l(mu_);
    predicted_ = device;
  }
  EngineOptions eo;
  eo.options = opts;
  eo.options.isolate = false;  // nothing runs: no worker, no context
  eo.options.isolate_explicit = true;
  eo.options.background = false;
  eo.compiler = compiler;
  auto engine = Engine::create(std::make_shared<PredictedBackend>(device), eo);
  if (!engine.ok()) {
    timelineMark("early_wave_failed", engine.status().message());
    return;
  }
  auto op = GemmOp::create(std::shared_ptr<Engine>(std::move(*engine)), gopts);
  if (!op.ok()) {
    timelineMark("early_wave_failed", op.status().message());
    return;
  }
  std::shared_ptr<GemmOp> keep(std::move(*op));  // holds its engine
  keep_ = keep;
  if (skip_recorded && keep->fetchRecorded(shape)) {
    timelineMark("early_wave_skipped", "the database holds the key");
    return;
  }
  timelineMark("early_wave_started", strprintf("%d SMs", device.multiprocessors));
  auto n = keep->precompile(shape);
  compiled_ = n.ok() ? *n : 0;
  timelineMark("early_wave_done", strprintf("%zu compiled", compiled_.load()));
}

size_t EarlyWave::awaitCompiled() {
  if (thread_.joinable()) thread_.join();
  done_ = true;
  return compiled_.load();
}

void EarlyWave::check(const DeviceInfo& real) const {
  std::optional<DeviceInfo> p;
  {
    std::lock_guard<std::mutex> l(mu_);
    p = predicted_;
  }
  if (!p) return;
  const std::string miss = predictionMiss(*p, real);
  timelineMark("early_wave_device", miss.empty() ? "as predicted" : "differs: " + miss);
}

void startEarlyWave(EarlyWave& wave, const Options& opts, const TuneRequest& t) {
  if (!opts.early_wave || t.op != "gemm" || !t.from_file.empty() || t.gemm_cases.empty() ||
      opts.backend == "sim" || opts.backend == "hip" || !opts.remote_cache.empty())
    return;
  for (const char* f : {"--no-gpu", "--no-lookahead", "--devices"})
    if (t.args.has(f)) return;
  // Cold stores only: with code objects in the store the first wave is mostly store hits, and a
  // warm run would only pay NVML's ~20 ms before the driver.
  if (storeHoldsObjects(opts.cache_dir.empty() ? Options::defaultCacheDir() : opts.cache_dir))
    return;
  // The tuner's options as makeTuner sets them (cmd_tune.cc), and its GemmOp's (runGemm).
  Options o = opts;
  if (!o.compile_processes_explicit) o.compile_processes = true;
  if (t.args.has("--search")) o.search = t.args.get("--search");
  if (t.args.has("--budget")) o.budget_s = t.budget_s;
  wave.predictFromNvml(o, t.gemm_cases.front().shape, tuneOpOptions(o, t), !measuresAgain(o, t));
}

}  // namespace ktune::cli
