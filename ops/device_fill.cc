#include "ops/device_fill.h"

#include <algorithm>
#include <mutex>

#include "autotune/side_kernel.h"

namespace ktune {

namespace {

// Element i of fillRandom: z = splitmix64 of the state seed + (i + 1) x the increment, u = the top
// 53 bits x 2^-53, v = lo + span x u in double with the multiply and the add rounded each (the
// host's SSE arithmetic; a fused multiply-add would round once), then the host's conversions:
// double -> float to nearest even, and for bf16 / fp16 the integer rounding of base/dtype.
constexpr const char* kFillSource = R"(
#include "prelude.cuh"
KTUNE_DEVICE unsigned short ktune_fill_half(float f) {
  const unsigned x = __float_as_uint(f);
  const unsigned sign = (x >> 16) & 0x8000u, absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);
  if (absx >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);
  if (absx < 0x38800000u) {
    if (absx < 0x33000000u) return (unsigned short)sign;
    const int e = (int)(absx >> 23);
    const unsigned m = (absx & 0x7fffffu) | 0x800000u;
    const int shift = 126 - e;
    unsigned q = m >> shift;
    const unsigned rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return (unsigned short)(sign | q);
  }
  const unsigned r = absx - 0x38000000u;
  unsigned q = r >> 13;
  const unsigned rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;
  return (unsigned short)(sign | q);
}
KTUNE_DEVICE unsigned short ktune_fill_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
KTUNE_KERNEL KTUNE_LAUNCH_BOUNDS(THREADS, 0) void ktune_fill_random(
    void* dst, long long count, int kind, unsigned long long seed, double lo, double span) {
  const long long stride = (long long)ktune::gdim_x() * THREADS;
  for (long long i = (long long)ktune::bid_x() * THREADS + ktune::tid_x(); i < count; i += stride) {
    unsigned long long z = seed + (unsigned long long)(i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const double u = (double)(z >> 11) * 0x1p-53;
    const float v = __double2float_rn(__dadd_rn(lo, __dmul_rn(span, u)));
    if (kind == 0) ((float*)dst)[i] = v;
    else ((unsigned short*)dst)[i] = kind == 1 ? ktune_fill_half(v) : ktune_fill_bf16(v);
  }
}
)";
constexpr const char* kFillEntry = "ktune_fill_random";
constexpr int kFillThreads = 256;

int kindOf(DType t) {
  switch (t) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kBF16: return 2;
    default: return -1;
  }
}

SideKernel& fill() {
  static SideKernel f;
  return f;
}

CompileRequest request(const std::string& arch) {
  CompileRequest r;
  r.source = kFillSource;
  r.source_name = std::string(kFillEntry) + ".cu";
  r.entry = kFillEntry;
  r.defines = {{"THREADS", std::to_string(kFillThreads)}};
  r.arch = arch;
  return r;
}

}  // namespace

const char* deviceFillSource() { return kFillSource; }

void enableDeviceFill(Backend& b, Compiler& compiler, CodeObjectStore* store,
                      const DeviceInfo& device) {
  SideKernel& f = fill();
  std::unique_lock<std::mutex> l(f.mu);
  f.enableLocked(l, b, compiler, store, device, request(device.arch), "device_fill_compiled");
}

void disableDeviceFill() {
  SideKernel& f = fill();
  std::unique_lock<std::mutex> l(f.mu);
  f.resetLocked(l);
}

void awaitDeviceFill() {
  SideKernel& f = fill();
  std::unique_lock<std::mutex> l(f.mu);
  f.joinLocked(l);
}

bool deviceFillReady() {
  SideKernel& f = fill();
  std::lock_guard<std::mutex> l(f.mu);
  return f.fn.p || (f.co && !f.failed);
}

bool deviceFillRandom(Backend& b, DevicePtr dst, DType t, int64_t count, uint64_t seed, double lo,
                      double span, Status* st) {
  const int kind = kindOf(t);
  if (kind < 0 || count <= 0) return false;
  SideKernel& f = fill();
  std::lock_guard<std::mutex> l(f.mu);
  if (f.b != &b || !f.loadLocked(kFillEntry)) return false;
  const int per_sm = f.dev.max_threads_per_sm > 0 ? std::max(1, f.dev.max_threads_per_sm / kFillThreads) : 4;
  const int64_t blocks = std::min<int64_t>((count + kFillThreads - 1) / kFillThreads,
                                           int64_t(std::max(1, f.dev.multiprocessors)) * per_sm);
  KernelArgs a;
  a.add(dst).add(static_cast<long long>(count)).add(kind).add(static_cast<unsigned long long>(seed))
      .add(lo).add(span);
  *st = b.launch(f.fn, Dim3{unsigned(blocks), 1, 1}, Dim3{unsigned(kFillThreads), 1, 1}, 0, a.data());
  if (st->ok()) *st = b.synchronize();
  return true;
}

}  // namespace ktune
