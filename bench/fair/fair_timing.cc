#include "bench/fair/fair_timing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/dylib.h"

namespace ktune::fair {

double Interval::relHalfWidth() const {
  return median != 0 ? (hi - lo) / 2.0 / std::abs(median) : 0.0;
}

namespace {

// P(X <= j) for X ~ binomial(n, 1/2), summed in log space so large n does not overflow.
double binomCdfHalf(int n, int j) {
  double p = 0;
  for (int i = 0; i <= j; ++i)
    p += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) -
                  n * std::log(2.0));
  return p;
}

}  // namespace

Interval medianInterval(std::vector<double> s, double confidence) {
  Interval out;
  out.n = static_cast<int>(s.size());
  if (s.empty()) return out;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  out.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  out.lo = s.front();
  out.hi = s.back();
  // Largest k (1-based) with coverage 1 - 2 * P(X <= k - 1) >= confidence: [x(k), x(n - k + 1)].
  const double alpha = 1.0 - confidence;
  int k = 0;
  for (int c = 1; c <= static_cast<int>(n) / 2; ++c) {
    if (2.0 * binomCdfHalf(static_cast<int>(n), c - 1) <= alpha) k = c;
    else break;
  }
  if (k > 0) {
    out.lo = s[static_cast<size_t>(k - 1)];
    out.hi = s[n - static_cast<size_t>(k)];
    out.exact = true;
  }
  return out;
}

Interval ratioInterval(const std::vector<double>& num, const std::vector<double>& den,
                       double confidence) {
  std::vector<double> r;
  for (size_t i = 0; i < std::min(num.size(), den.size()); ++i)
    if (num[i] > 0 && den[i] > 0) r.push_back(num[i] / den[i]);
  return medianInterval(std::move(r), confidence);
}

std::vector<int> interleavedOrder(int variants, int round) {
  std::vector<int> order;
  if (variants <= 0) return order;
  const int first = ((round % variants) + variants) % variants;
  for (int i = 0; i < variants; ++i) order.push_back((first + i) % variants);
  return order;
}

std::string GpuClocks::toString() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "sm %d MHz, mem %d MHz, %.1f W, %d C", sm_mhz, mem_mhz, power_w,
                temp_c);
  return buf;
}

namespace {

// The NVML entry points used (nvml.h: stable C ABI; nvmlDevice_t is an opaque pointer).
struct Nvml {
  DynLib lib;
  int (*init)() = nullptr;
  int (*handleByIndex)(unsigned, void**) = nullptr;
  int (*clockInfo)(void*, int, unsigned*) = nullptr;
  int (*powerUsage)(void*, unsigned*) = nullptr;
  int (*temperature)(void*, int, unsigned*) = nullptr;
  Status status = Status::Ok();
};
constexpr int kNvmlClockSm = 1, kNvmlClockMem = 2, kNvmlTemperatureGpu = 0;

Nvml& nvml() {
  static Nvml* n = [] {
    auto* x = new Nvml;
    auto lib = DynLib::open({"libnvidia-ml.so.1", "libnvidia-ml.so"}, "NVML (libnvidia-ml)");
    if (!lib.ok()) {
      x->status = lib.status();
      return x;
    }
    x->lib = std::move(lib).value();
    Status s = x->lib.bind(x->init, "nvmlInit_v2");
    if (s.ok()) s = x->lib.bind(x->handleByIndex, "nvmlDeviceGetHandleByIndex_v2");
    if (s.ok()) s = x->lib.bind(x->clockInfo, "nvmlDeviceGetClockInfo");
    if (s.ok()) s = x->lib.bind(x->powerUsage, "nvmlDeviceGetPowerUsage");
    if (s.ok()) s = x->lib.bind(x->temperature, "nvmlDeviceGetTemperature");
    if (s.ok() && x->init() != 0) s = Status::Unavailable("nvmlInit_v2 failed (no NVIDIA driver?)");
    x->status = s;
    return x;
  }();
  return *n;
}

}  // namespace

Expected<GpuClocks> readGpuClocks(int index) {
  Nvml& n = nvml();
  if (!n.status.ok()) return n.status;
  void* dev = nullptr;
  if (index < 0 || n.handleByIndex(static_cast<unsigned>(index), &dev) != 0)
    return Status::Unavailable("NVML has no GPU " + std::to_string(index));
  GpuClocks c;
  unsigned v = 0;
  if (n.clockInfo(dev, kNvmlClockSm, &v) == 0) c.sm_mhz = static_cast<int>(v);
  if (n.clockInfo(dev, kNvmlClockMem, &v) == 0) c.mem_mhz = static_cast<int>(v);
  if (n.powerUsage(dev, &v) == 0) c.power_w = v / 1000.0;  // NVML reports milliwatts
  if (n.temperature(dev, kNvmlTemperatureGpu, &v) == 0) c.temp_c = static_cast<int>(v);
  return c;
}

std::string clocksLine(const Expected<GpuClocks>& before, const Expected<GpuClocks>& after) {
  auto one = [](const Expected<GpuClocks>& c) {
    return c.ok() ? c->toString() : "unavailable (" + c.status().message() + ")";
  };
  return "clocks before: " + one(before) + "; after: " + one(after);
}

}  // namespace ktune::fair
