#include "runtime/sim/sim_backend.h"
#include "runtime/sim/sim_backend_parts.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <sstream>

namespace ktune {

namespace {
bool toInt(const std::string& s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}
constexpr DevicePtr kBase = 0x7e5100000000ull;  // recognisable fake addresses
}  // namespace

int64_t SimLaunch::define(const std::string& name, int64_t fallback) const {
  if (!defines) return fallback;
  for (const auto& [k, v] : *defines) {
    int64_t x;
    if (k == name) return toInt(v, &x) ? x : fallback;
  }
  return fallback;
}

Expected<SimImage> parseSimImage(const std::string& binary) {
  static const std::string kMagic = "ktune-sim-code-object 1\n";
  if (binary.compare(0, kMagic.size(), kMagic) != 0) {
    return Status::InvalidArgument(
        "sim backend: not a sim code object (compile with SimCompiler for the sim backend)");
  }
  SimImage img;
  std::istringstream in(binary.substr(kMagic.size()));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    int64_t v = 0;
    auto valueOf = [&](const char* prefix) -> const char* {
      size_t n = std::strlen(prefix);
      return line.compare(0, n, prefix) == 0 ? line.c_str() + n : nullptr;
    };
    if (const char* s = valueOf("entry=")) {
      img.entry = s;
    } else if (const char* s = valueOf("arch=")) {
      img.arch = s;
    } else if (const char* s = valueOf("define ")) {
      std::string kv = s;
      size_t eq = kv.find('=');
      if (eq == std::string::npos) return Status::Corrupt("sim code object: bad define '" + kv + "'");
      img.defines.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (const char* s = valueOf("registers=")) {
      if (!toInt(s, &v)) return Status::Corrupt("sim code object: bad line '" + line + "'");
      img.registers = static_cast<int>(v);
    } else if (const char* s = valueOf("shared=")) {
      if (!toInt(s, &v)) return Status::Corrupt("sim code object: bad line '" + line + "'");
      img.shared_bytes = v;
    } else if (const char* s = valueOf("local=")) {
      if (!toInt(s, &v)) return Status::Corrupt("sim code object: bad line '" + line + "'");
      img.local_bytes = v;
    } else if (valueOf("module=")) {
      // Names a generated module (per-config sources): nothing the simulation uses.
    } else if (const char* s = valueOf("max_threads=")) {
      if (!toInt(s, &v)) return Status::Corrupt("sim code object: bad line '" + line + "'");
      img.max_threads = static_cast<int>(v);
    } else {
      return Status::Corrupt("sim code object: unknown line '" + line + "'");
    }
  }
  if (img.entry.empty()) return Status::Corrupt("sim code object: no entry");
  std::sort(img.defines.begin(), img.defines.end());
  return img;
}

SimBackend::SimBackend(SimOptions opts)
    : opts_(std::move(opts)), next_addr_(kBase), rng_(opts_.seed) {
  opts_.device_count = std::max(opts_.device_count, 1);
  for (int i = 0; i < opts_.device_count; ++i) default_streams_.push_back(std::make_unique<Stream>());
  opts_.device.vendor = Vendor::kSimulated;
  if (opts_.device.name.empty()) opts_.device.name = "ktune simulated device";
  if (opts_.device.arch.empty()) opts_.device.arch = "sim";
  if (opts_.device.driver_version.empty()) opts_.device.driver_version = "sim-1";
}

SimBackend::~SimBackend() = default;

std::unique_ptr<SimBackend> makeSimBackend(SimOptions opts) {
  return std::make_unique<SimBackend>(std::move(opts));
}

void SimBackend::registerKernel(const std::string& name, SimKernel k) {
  std::lock_guard<std::mutex> l(mu_);
  kernels_[name] = std::make_shared<SimKernel>(std::move(k));
}

Status SimBackend::rangeCheck(DevicePtr p, size_t bytes, const char* what, unsigned char** host) {
  auto it = mem_.upper_bound(p);
  if (it == mem_.begin()) {
    return Status::InvalidArgument(std::string(what) + ": address 0x" + [&] {
      std::ostringstream o;
      o << std::hex << p;
      return o.str();
    }() + " is not in any allocation");
  }
  --it;
  size_t off = p - it->first;
  if (off > it->second.size() || bytes > it->second.size() - off) {
    return Status::InvalidArgument(std::string(what) + ": " + std::to_string(bytes) +
                                   " bytes at offset " + std::to_string(off) +
                                   " overrun an allocation of " +
                                   std::to_string(it->second.size()) + " bytes");
  }
  *host = it->second.data() + off;
  return Status::Ok();
}

void* SimBackend::hostPtr(DevicePtr p) {
  std::lock_guard<std::mutex> l(mu_);
  unsigned char* h = nullptr;
  return rangeCheck(p, 0, "hostPtr", &h).ok() ? h : nullptr;
}

size_t SimBackend::bytesAvailable(DevicePtr p) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = mem_.upper_bound(p);
  if (it == mem_.begin()) return 0;
  --it;
  size_t off = p - it->first;
  return off <= it->second.size() ? it->second.size() - off : 0;
}

int64_t SimBackend::launchCount(const std::string& entry) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = launch_counts_.find(entry);
  return it == launch_counts_.end() ? 0 : it->second;
}

int64_t SimBackend::programmaticLaunchCount(const std::string& entry) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = programmatic_counts_.find(entry);
  return it == programmatic_counts_.end() ? 0 : it->second;
}

int64_t SimBackend::totalLaunches() const {
  std::lock_guard<std::mutex> l(mu_);
  return total_launches_;
}

int64_t SimBackend::memsetCount() const {
  std::lock_guard<std::mutex> l(mu_);
  return memset_count_;
}

int64_t SimBackend::memsetBytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return memset_bytes_;
}

double SimBackend::streamClockMs(StreamHandle s) {
  std::lock_guard<std::mutex> l(mu_);
  return stream(s)->clock_ms;
}

double SimBackend::deviceClockMs(int ordinal) const {
  std::lock_guard<std::mutex> l(mu_);
  if (ordinal < 0 || ordinal >= int(default_streams_.size())) return 0;
  return default_streams_[size_t(ordinal)]->clock_ms;
}

SimBackend::Stream* SimBackend::stream(StreamHandle s) {
  return s.p ? static_cast<Stream*>(s.p) : default_streams_[size_t(current_)].get();
}

void SimBackend::advance(Stream* st, double ms) {
  if (opts_.noise > 0 && ms > 0) {
    std::normal_distribution<double> n(0.0, opts_.noise);
    ms *= std::max(0.05, 1.0 + n(rng_));
  }
  st->clock_ms += ms;
}

Expected<std::vector<DeviceInfo>> SimBackend::devices() {
  return std::vector<DeviceInfo>(size_t(opts_.device_count), opts_.device);
}

Status SimBackend::setDevice(int ordinal) {
  if (ordinal < 0 || ordinal >= opts_.device_count) {
    return Status::NotFound("sim backend has " + std::to_string(opts_.device_count) +
                            " device(s), asked for ordinal " + std::to_string(ordinal));
  }
  std::lock_guard<std::mutex> l(mu_);
  current_ = ordinal;
  return Status::Ok();
}

namespace {
thread_local bool t_capture_relaxed = false;
}  // namespace

void SimBackend::setCapturing(StreamHandle s, bool on) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = std::find(capturing_.begin(), capturing_.end(), s.p);
  if (on && it == capturing_.end()) capturing_.push_back(s.p);
  if (!on && it != capturing_.end()) capturing_.erase(it);
}

int64_t SimBackend::captureViolations() const {
  std::lock_guard<std::mutex> l(mu_);
  return capture_violations_;
}

Expected<bool> SimBackend::isCapturing(StreamHandle s) {
  std::lock_guard<std::mutex> l(mu_);
  return std::find(capturing_.begin(), capturing_.end(), s.p) != capturing_.end();
}

Status SimBackend::relaxCaptureMode() {
  t_capture_relaxed = true;
  return Status::Ok();
}

Status SimBackend::captureGuard(const char* what) {
  if (t_capture_relaxed) return Status::Ok();
  std::lock_guard<std::mutex> l(mu_);
  if (capturing_.empty()) return Status::Ok();
  ++capture_violations_;
  return Status::Unsupported(std::string("sim: ") + what + " during a stream capture");
}

Expected<DevicePtr> SimBackend::alloc(size_t bytes) {
  KTUNE_RETURN_IF_ERROR(captureGuard("alloc"));
  if (bytes == 0) return Status::InvalidArgument("alloc(0): size must be positive");
  KTUNE_RETURN_IF_ERROR(lostContext());
  std::lock_guard<std::mutex> l(mu_);
  if (opts_.device.global_mem_bytes > 0) {
    int64_t used = 0;
    for (auto& [a, v] : mem_) used += static_cast<int64_t>(v.size());
    if (used + static_cast<int64_t>(bytes) > opts_.device.global_mem_bytes) {
      return Status::OutOfResources("sim alloc of " + std::to_string(bytes) +
                                    " bytes exceeds the simulated device memory");
    }
  }
  DevicePtr p = next_addr_;
  next_addr_ += (bytes + 255) / 256 * 256 + 256;  // a gap so overruns never hit a neighbour
  mem_[p].assign(bytes, 0xcd);  // not zero: uninitialised memory is garbage on a GPU too
  return p;
}

Status SimBackend::free(DevicePtr p) {
  KTUNE_RETURN_IF_ERROR(captureGuard("free"));
  if (p == 0) return Status::Ok();
  std::lock_guard<std::mutex> l(mu_);
  auto it = mem_.find(p);
  if (it == mem_.end()) {
    return Status::InvalidArgument("free: address is not the start of an allocation");
  }
  mem_.erase(it);
  return Status::Ok();
}

Status SimBackend::copyToDevice(DevicePtr dst, const void* src, size_t bytes) {
  KTUNE_RETURN_IF_ERROR(captureGuard("copyToDevice"));
  std::lock_guard<std::mutex> l(mu_);
  unsigned char* h = nullptr;
  KTUNE_RETURN_IF_ERROR(rangeCheck(dst, bytes, "copyToDevice", &h));
  if (bytes) std::memcpy(h, src, bytes);
  return Status::Ok();
}

Status SimBackend::copyToHost(void* dst, DevicePtr src, size_t bytes) {
  KTUNE_RETURN_IF_ERROR(captureGuard("copyToHost"));
  std::lock_guard<std::mutex> l(mu_);
  unsigned char* h = nullptr;
  KTUNE_RETURN_IF_ERROR(rangeCheck(src, bytes, "copyToHost", &h));
  if (bytes) std::memcpy(dst, h, bytes);
  return Status::Ok();
}

Status SimBackend::copyDeviceToDevice(DevicePtr dst, DevicePtr src, size_t bytes,
                                      StreamHandle s) {
  std::lock_guard<std::mutex> l(mu_);
  unsigned char *d = nullptr, *h = nullptr;
  KTUNE_RETURN_IF_ERROR(rangeCheck(dst, bytes, "copyDeviceToDevice (dst)", &d));
  KTUNE_RETURN_IF_ERROR(rangeCheck(src, bytes, "copyDeviceToDevice (src)", &h));
  if (bytes) std::memmove(d, h, bytes);
  if (opts_.memory_bytes_per_ms > 0) advance(stream(s), 2.0 * bytes / opts_.memory_bytes_per_ms);
  return Status::Ok();
}

Status SimBackend::memset8(DevicePtr dst, uint8_t value, size_t bytes, StreamHandle s) {
  std::lock_guard<std::mutex> l(mu_);
  unsigned char* d = nullptr;
  KTUNE_RETURN_IF_ERROR(rangeCheck(dst, bytes, "memset8", &d));
  if (bytes) std::memset(d, value, bytes);
  if (opts_.memory_bytes_per_ms > 0) advance(stream(s), bytes / opts_.memory_bytes_per_ms);
  ++memset_count_;
  memset_bytes_ += static_cast<int64_t>(bytes);
  return Status::Ok();
}

Status SimBackend::memset32(DevicePtr dst, uint32_t value, size_t count, StreamHandle s) {
  std::lock_guard<std::mutex> l(mu_);
  unsigned char* d = nullptr;
  if (dst % 4) return Status::InvalidArgument("memset32: destination is not 4-byte aligned");
  KTUNE_RETURN_IF_ERROR(rangeCheck(dst, count * 4, "memset32", &d));
  for (size_t i = 0; i < count; ++i) std::memcpy(d + 4 * i, &value, 4);
  if (opts_.memory_bytes_per_ms > 0) advance(stream(s), 4.0 * count / opts_.memory_bytes_per_ms);
  ++memset_count_;
  memset_bytes_ += static_cast<int64_t>(4 * count);
  return Status::Ok();
}

Expected<StreamHandle> SimBackend::createStream() { return StreamHandle{new Stream}; }

Status SimBackend::destroyStream(StreamHandle s) {
  delete static_cast<Stream*>(s.p);
  return Status::Ok();
}

Status SimBackend::synchronize(StreamHandle) {
  KTUNE_RETURN_IF_ERROR(captureGuard("synchronize"));
  return lostContext();
}

Status SimBackend::lostContext() const {
  std::lock_guard<std::mutex> l(mu_);
  return lost_;
}

Expected<EventHandle> SimBackend::createEvent() { return EventHandle{new Event}; }

Status SimBackend::destroyEvent(EventHandle e) {
  delete static_cast<Event*>(e.p);
  return Status::Ok();
}

Status SimBackend::recordEvent(EventHandle e, StreamHandle s) {
  if (!e.p) return Status::InvalidArgument("recordEvent: null event");
  std::lock_guard<std::mutex> l(mu_);
  auto* ev = static_cast<Event*>(e.p);
  ev->t_ms = stream(s)->clock_ms;
  ev->recorded = true;
  return Status::Ok();
}

Status SimBackend::synchronizeEvent(EventHandle e) {
  KTUNE_RETURN_IF_ERROR(captureGuard("synchronizeEvent"));
  if (!e.p) return Status::InvalidArgument("synchronizeEvent: null event");
  return Status::Ok();
}

Expected<float> SimBackend::elapsedMs(EventHandle start, EventHandle end) {
  if (!start.p || !end.p) return Status::InvalidArgument("elapsedMs: null event");
  std::lock_guard<std::mutex> l(mu_);
  auto* a = static_cast<Event*>(start.p);
  auto* b = static_cast<Event*>(end.p);
  if (!a->recorded || !b->recorded) {
    return Status::InvalidArgument("elapsedMs: an event was never recorded");
  }
  return static_cast<float>(b->t_ms - a->t_ms);
}

}  // namespace ktune
