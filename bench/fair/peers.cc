#include "bench/fair/peers.h"

#include <algorithm>

#include "autotune/compile_pool.h"
#include "autotune/family.h"
#include "ops/buffers.h"
#include "templates/rowwise.h"

namespace ktune {

namespace {

constexpr const char* kRead2Write1Source = R"(
#include "prelude.cuh"
KTUNE_KERNEL KTUNE_LAUNCH_BOUNDS(THREADS, 0) void ktune_read2_write1(
    ktune::Vec<unsigned, 4>* out, const ktune::Vec<unsigned, 4>* a,
    const ktune::Vec<unsigned, 4>* b, long long nv) {
  const long long stride = (long long)ktune::gdim_x() * THREADS;
  for (long long i = (long long)ktune::bid_x() * THREADS + ktune::tid_x(); i < nv; i += stride) {
    const ktune::Vec<unsigned, 4> x = a[i], y = b[i];
    ktune::Vec<unsigned, 4> r;
#pragma unroll
    for (int k = 0; k < 4; ++k) r[k] = x[k] + y[k];
    out[i] = r;
  }
}
)";

}  // namespace

StreamPeers::StreamPeers(Backend& backend, Compiler& compiler, DeviceInfo device)
    : backend_(backend), compiler_(compiler), device_(std::move(device)) {}

StreamPeers::~StreamPeers() {
  for (auto& [name, b] : buffers_) (void)backend_.free(b.first);
  if (e0_.p) (void)backend_.destroyEvent(e0_);
  if (e1_.p) (void)backend_.destroyEvent(e1_);
  for (ModuleHandle m : modules_) (void)backend_.unloadModule(m);
}

Expected<std::unique_ptr<StreamPeers>> StreamPeers::create(Backend& backend, Compiler& compiler,
                                                           const DeviceInfo& device) {
  std::unique_ptr<StreamPeers> p(new StreamPeers(backend, compiler, device));
  p->flush_ = std::make_unique<L2Flush>(backend, &compiler, device);
  KTUNE_RETURN_IF_ERROR(p->flush_->prepareRead());  // the peers never fall back to a memset
  p->flush_bytes_ = std::max<int64_t>(2 * device.l2_bytes, 64 << 20) / 16 * 16;
  KTUNE_ASSIGN_OR_RETURN(p->e0_, backend.createEvent());
  KTUNE_ASSIGN_OR_RETURN(p->e1_, backend.createEvent());
  return p;
}

Expected<FunctionHandle> StreamPeers::kernel(const std::string& source, const std::string& entry,
                                             const Defines& defines) {
  const std::string key = variantKey(entry, defines);
  if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
  CompileRequest r;
  r.source = source;
  r.source_name = entry + ".cu";
  r.entry = entry;
  r.defines = defines;
  r.arch = device_.arch;
  KTUNE_ASSIGN_OR_RETURN(CodeObject co, compiler_.compile(r));
  KTUNE_ASSIGN_OR_RETURN(ModuleHandle m, backend_.loadModule(co.binary));
  modules_.push_back(m);
  KTUNE_ASSIGN_OR_RETURN(FunctionHandle f,
                         backend_.getFunction(m, co.lowered_entry.empty() ? entry : co.lowered_entry));
  kernels_[key] = f;
  return f;
}

Expected<DevicePtr> StreamPeers::buffer(const std::string& name, int64_t bytes) {
  auto it = buffers_.find(name);
  if (it != buffers_.end() && it->second.second >= bytes) return it->second.first;
  if (it != buffers_.end()) {
    KTUNE_RETURN_IF_ERROR(backend_.free(it->second.first));
    buffers_.erase(it);
  }
  KTUNE_ASSIGN_OR_RETURN(DevicePtr p, backend_.alloc(static_cast<size_t>(bytes)));
  buffers_[name] = {p, bytes};
  KTUNE_RETURN_IF_ERROR(fillRandom(backend_, p, DType::kF32, bytes / 4, name.size() * 7 + 1));
  return p;
}

Status StreamPeers::flushL2(StreamHandle stream) {
  return flush_->flush(FlushKind::kRead, flush_bytes_, stream).status();
}

Expected<double> StreamPeers::timeOnceMs(const std::function<Status()>& launch, StreamHandle stream) {
  KTUNE_RETURN_IF_ERROR(flushL2(stream));
  KTUNE_RETURN_IF_ERROR(backend_.recordEvent(e0_, stream));
  KTUNE_RETURN_IF_ERROR(launch());
  KTUNE_RETURN_IF_ERROR(backend_.recordEvent(e1_, stream));
  KTUNE_RETURN_IF_ERROR(backend_.synchronizeEvent(e1_));
  KTUNE_ASSIGN_OR_RETURN(float ms, backend_.elapsedMs(e0_, e1_));
  return static_cast<double>(ms);
}

Expected<std::vector<double>> StreamPeers::samplesMs(const std::function<Status()>& launch, int reps,
                                                     StreamHandle stream) {
  for (int i = 0; i < 3; ++i) KTUNE_RETURN_IF_ERROR(launch());
  std::vector<double> out;
  for (int i = 0; i < reps; ++i) {
    KTUNE_ASSIGN_OR_RETURN(double ms, timeOnceMs(launch, stream));
    out.push_back(ms);
  }
  return out;
}

Expected<fair::Interval> StreamPeers::bandwidth(const Peer& peer, int reps) {
  KTUNE_ASSIGN_OR_RETURN(std::vector<double> ms, samplesMs(peer.launch, reps));
  for (double& x : ms) x = x > 0 ? double(peer.bytes) / (x * 1e-3) : 0;
  return fair::medianInterval(std::move(ms));
}

Expected<StreamPeers::Peer> StreamPeers::copyPeer(int64_t bytes_moved, int reps) {
  const int64_t n = std::max<int64_t>(bytes_moved / 2, 1 << 20) / 16 * 16;
  KTUNE_ASSIGN_OR_RETURN(DevicePtr src, buffer("copy_src", n));
  KTUNE_ASSIGN_OR_RETURN(DevicePtr dst, buffer("copy_dst", n));
  const auto lim = rowwise::limitsFor(device_);
  const auto cs = rowwise::copySpace(lim).enumerate(lim.backend).accepted;
  // Compile the configs not loaded yet in parallel (the compiler is thread-safe), load serially.
  std::vector<Expected<CodeObject>> out(cs.size(), Status::Internal("not compiled"));
  CompilePool::parallelFor(cs.size(), CompilePool::threadsFor(cs.size(), 0, false), [&](size_t i) {
    if (kernels_.count(variantKey(rowwise::kCopyEntry, rowwise::copyDefines(cs[i])))) return;
    CompileRequest r;
    r.source = std::string(rowwise::copySource());
    r.source_name = rowwise::kCopySource;
    r.entry = rowwise::kCopyEntry;
    r.defines = rowwise::copyDefines(cs[i]);
    r.arch = device_.arch;
    out[i] = compiler_.compile(r);
  });
  std::vector<Peer> cands;
  for (size_t i = 0; i < cs.size(); ++i) {
    const std::string key = variantKey(rowwise::kCopyEntry, rowwise::copyDefines(cs[i]));
    if (!kernels_.count(key)) {
      if (!out[i].ok()) continue;
      auto m = backend_.loadModule(out[i]->binary);
      if (!m.ok()) continue;
      modules_.push_back(*m);
      auto fn = backend_.getFunction(*m, out[i]->lowered_entry.empty() ? rowwise::kCopyEntry
                                                                        : out[i]->lowered_entry);
      if (!fn.ok()) continue;
      kernels_[key] = *fn;
    }
    const Expected<FunctionHandle> f = kernels_[key];
    const auto l = rowwise::copyLaunch(cs[i], n, device_);
    auto args = std::make_shared<KernelArgs>();
    args->add(dst).add(src).add(static_cast<long long>(n));
    Backend* b = &backend_;
    const FunctionHandle fn = *f;
    cands.push_back({[b, fn, l, args] { return b->launch(fn, l.grid, l.block, 0, args->data()); },
                     std::string(rowwise::kCopyEntry) + " " + cs[i].toString(), 2 * n});
  }
  Backend* b = &backend_;
  cands.push_back({[b, dst, src, n] { return b->copyDeviceToDevice(dst, src, size_t(n)); },
                   "memcpyDtoD", 2 * n});
  return fastest(cands, reps, "no copy peer could be timed");
}

Expected<StreamPeers::Peer> StreamPeers::read2Write1Peer(int64_t bytes_moved, int reps) {
  const int64_t n = std::max<int64_t>(bytes_moved / 3, 1 << 20) / 16 * 16;
  KTUNE_ASSIGN_OR_RETURN(DevicePtr a, buffer("r2w1_a", n));
  KTUNE_ASSIGN_OR_RETURN(DevicePtr b2, buffer("r2w1_b", n));
  KTUNE_ASSIGN_OR_RETURN(DevicePtr o, buffer("r2w1_out", n));
  std::vector<Peer> cands;
  for (int threads : {256, 512, 1024}) {
    if (threads > rowwise::limitsFor(device_).max_threads_per_block) continue;
    auto f = kernel(kRead2Write1Source, kRead2Write1Entry, {{"THREADS", std::to_string(threads)}});
    if (!f.ok()) continue;
    auto args = std::make_shared<KernelArgs>();
    args->add(o).add(a).add(b2).add(static_cast<long long>(n / 16));
    Backend* b = &backend_;
    const FunctionHandle fn = *f;
    const Dim3 grid{residentGrid(device_, threads), 1, 1}, block{unsigned(threads), 1, 1};
    cands.push_back({[b, fn, grid, block, args] { return b->launch(fn, grid, block, 0, args->data()); },
                     "read2write1 THREADS=" + std::to_string(threads), 3 * n});
  }
  return fastest(cands, reps, "no read-2/write-1 peer could be compiled and timed");
}

Expected<StreamPeers::Peer> StreamPeers::fastest(const std::vector<Peer>& cands, int reps,
                                                 const char* none) {
  double best = -1;
  const Peer* winner = nullptr;
  for (const Peer& p : cands) {
    auto ms = samplesMs(p.launch, reps);
    if (!ms.ok()) continue;
    const double med = fair::medianInterval(*ms).median;
    if (best < 0 || med < best) {
      best = med;
      winner = &p;
    }
  }
  if (!winner) return Status::Unavailable(none);
  return *winner;
}

}  // namespace ktune
