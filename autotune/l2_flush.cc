#include "autotune/l2_flush.h"

#include "autotune/l2_flush_store.h"

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>

namespace ktune {

namespace {

// Grid-stride 16-byte reads folded into one value per thread, stored only for an impossible
// value so the loads stay live and nothing is written.
constexpr const char* kReadSource = R"(
#include "prelude.cuh"
KTUNE_KERNEL KTUNE_LAUNCH_BOUNDS(THREADS, 0) void ktune_flush_read(
    const ktune::Vec<unsigned, 4>* p, long long nv, unsigned* sink) {
  unsigned acc = 0;
  const long long stride = (long long)ktune::gdim_x() * THREADS;
  for (long long i = (long long)ktune::bid_x() * THREADS + ktune::tid_x(); i < nv; i += stride) {
    const ktune::Vec<unsigned, 4> v = p[i];
    acc ^= v[0] ^ v[1] ^ v[2] ^ v[3];
  }
  if (acc == 0x9e3779b9u) sink[ktune::tid_x()] = acc;
}
)";

std::mutex store_mu;
std::weak_ptr<CodeObjectStore> flush_store;  // setFlushKernelStore

// The read kernel's code object, compiled once per process per compiler, version and arch
// (successes only: a failed compile is retried by the next L2Flush), through the code-object
// store when a Engine gave one (a store hit costs a file read, not a compile).
Expected<std::shared_ptr<const CodeObject>> compiledReadKernel(Compiler& compiler,
                                                               const std::string& arch) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const CodeObject>> cache;
  const std::string key = compiler.name() + "\n" + compiler.version() + "\n" + arch;
  {
    std::lock_guard<std::mutex> l(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  std::shared_ptr<CodeObjectStore> store;
  {
    std::lock_guard<std::mutex> l(store_mu);
    store = flush_store.lock();
  }
  CompileRequest r;
  r.source = kReadSource;
  r.source_name = std::string(L2Flush::kReadEntry) + ".cu";
  r.entry = L2Flush::kReadEntry;
  r.defines = {{"THREADS", std::to_string(L2Flush::kReadThreads)}};
  r.arch = arch;
  KTUNE_ASSIGN_OR_RETURN(CodeObject co, store ? store->getOrCompile(compiler, r) : compiler.compile(r));
  auto shared = std::make_shared<const CodeObject>(std::move(co));
  std::lock_guard<std::mutex> l(mu);
  return cache.emplace(key, std::move(shared)).first->second;
}

std::atomic<bool> fallback_said{false};

}  // namespace

void setFlushKernelStore(std::weak_ptr<CodeObjectStore> store) {
  std::lock_guard<std::mutex> l(store_mu);
  flush_store = std::move(store);
}

const char* flushKindName(FlushKind k) { return k == FlushKind::kRead ? "read" : "memset"; }

std::optional<FlushKind> parseFlushKind(std::string_view s) {
  if (s == "read") return FlushKind::kRead;
  if (s == "memset") return FlushKind::kMemset;
  return std::nullopt;
}

unsigned residentGrid(const DeviceInfo& dev, int threads) {
  const int per_sm = dev.max_threads_per_sm > 0 ? std::max(1, dev.max_threads_per_sm / threads) : 4;
  return static_cast<unsigned>(std::max(1, dev.multiprocessors) * per_sm);
}

L2Flush::L2Flush(Backend& backend, Compiler* compiler, DeviceInfo device, std::ostream* log)
    : backend_(backend), compiler_(compiler), device_(std::move(device)), log_(log) {}

L2Flush::~L2Flush() {
  if (buf_) (void)backend_.free(buf_);
  if (sink_) (void)backend_.free(sink_);
  if (module_.p) (void)backend_.unloadModule(module_);
}

Compiler* L2Flush::compilerFor(const Backend& backend, Compiler& compiler) {
  return backend.vendor() == Vendor::kSimulated ? nullptr : &compiler;
}

Status L2Flush::prepareRead() {
  if (read_ == ReadState::kReady) return Status::Ok();
  if (read_ == ReadState::kFailed) return read_error_;
  auto load = [&]() -> Status {
    if (!compiler_) return Status::Unavailable("no compiler for the read flush kernel");
    KTUNE_ASSIGN_OR_RETURN(auto co, compiledReadKernel(*compiler_, device_.arch));
    KTUNE_ASSIGN_OR_RETURN(module_, backend_.loadModule(co->binary));
    const std::string entry = co->lowered_entry.empty() ? kReadEntry : co->lowered_entry;
    KTUNE_ASSIGN_OR_RETURN(fn_, backend_.getFunction(module_, entry));
    if (!sink_) {
      KTUNE_ASSIGN_OR_RETURN(sink_, backend_.alloc(4096));
    }
    return Status::Ok();
  };
  Status st = load();
  read_ = st.ok() ? ReadState::kReady : ReadState::kFailed;
  read_error_ = st.withContext("L2 read flush");
  return read_error_;
}

Status L2Flush::ensureBuffer(int64_t bytes) {
  if (buf_ && buf_bytes_ >= bytes) return Status::Ok();
  if (buf_) {
    (void)backend_.free(buf_);
    buf_ = 0;
  }
  KTUNE_ASSIGN_OR_RETURN(buf_, backend_.alloc(static_cast<size_t>(bytes)));
  buf_bytes_ = bytes;
  buf_filled_ = false;
  return Status::Ok();
}

Status L2Flush::launchRead(int64_t bytes, StreamHandle stream) {
  if (!buf_filled_) {
    // Any content will do for a read; written once, before the first flush's events.
    KTUNE_RETURN_IF_ERROR(backend_.memset8(buf_, 0x5a, static_cast<size_t>(buf_bytes_), stream));
    buf_filled_ = true;
  }
  KernelArgs a;
  a.add(buf_).add(static_cast<long long>(bytes / 16)).add(sink_);
  return backend_.launch(fn_, Dim3{residentGrid(device_, kReadThreads), 1, 1},
                         Dim3{unsigned(kReadThreads), 1, 1}, 0, a.data(), stream);
}

Expected<FlushKind> L2Flush::flush(FlushKind kind, int64_t bytes, StreamHandle stream) {
  bytes = std::max<int64_t>(bytes / 16 * 16, 16);
  KTUNE_RETURN_IF_ERROR(ensureBuffer(bytes));
  if (kind == FlushKind::kRead) {
    Status st = prepareRead();
    if (st.ok()) {
      KTUNE_RETURN_IF_ERROR(launchRead(bytes, stream));
      return FlushKind::kRead;
    }
    // No compiler given is the intended memset path; a failure is worth one line per process.
    if (compiler_ && !fallback_said.exchange(true)) {
      (log_ ? *log_ : std::cerr) << "ktune: the L2 flush falls back to a memset (dirty lines): "
                                 << st.toString() << "\n";
    }
  }
  KTUNE_RETURN_IF_ERROR(backend_.memset8(buf_, 0, static_cast<size_t>(bytes), stream));
  return FlushKind::kMemset;
}

}  // namespace ktune
