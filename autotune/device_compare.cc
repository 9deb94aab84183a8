#include "autotune/device_compare.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <vector>

#include "autotune/side_kernel.h"
#include "base/format.h"
#include "base/timeline.h"
#include "templates/embedded.h"

namespace ktune {

namespace {

constexpr const char* kEntry = "ktune_verify_compare";
constexpr int kThreads = 256;
constexpr size_t kResultBytes = 5 * sizeof(unsigned long long);

int kindOf(DType t) {
  switch (t) {
    case DType::kF32: case DType::kTF32: return 0;
    case DType::kF16: return 1;
    case DType::kBF16: return 2;
    case DType::kF64: return 3;
    default: return -1;
  }
}

struct Cmp {
  SideKernel k;          // the kernel; k.mu guards the rest too
  DevicePtr result = 0;  // the kernel's five words
  bool checked = false;  // passed its planted cases (k.failed: did not)
};
Cmp& cmp() {
  static Cmp c;
  return c;
}

CompileRequest request(const std::string& arch) {
  CompileRequest r;
  r.source = deviceCompareSource();
  r.source_name = std::string(kEntry) + ".cu";
  r.entry = kEntry;
  r.defines = {{"THREADS", std::to_string(kThreads)}, {"KTUNE_VERIFY_DEVICE", "1"}};
  r.arch = arch;
  return r;
}

// One comparison on the device (c.k.mu held, the kernel loaded).
Expected<VerifyResult> runLocked(Cmp& c, DevicePtr out, DevicePtr trusted, DType t, int64_t rows,
                                 int64_t cols, int64_t ld, Tolerance tol, StreamHandle stream) {
  Backend& b = *c.k.b;
  const DeviceInfo& dev = c.k.dev;
  const int per_sm = dev.max_threads_per_sm > 0 ? std::max(1, dev.max_threads_per_sm / kThreads) : 4;
  const int64_t cap = int64_t(std::max(1, dev.multiprocessors)) * per_sm;
  const int64_t blocks = std::max<int64_t>(
      1, std::min(cap, ld == cols ? (rows * cols + kThreads - 1) / kThreads : rows));
  KTUNE_RETURN_IF_ERROR(b.memset8(c.result, 0, 4 * sizeof(unsigned long long), stream));
  KTUNE_RETURN_IF_ERROR(
      b.memset8(c.result + 4 * sizeof(unsigned long long), 0xff, sizeof(unsigned long long), stream));
  KernelArgs a;
  a.add(out).add(trusted).add(static_cast<long long>(rows)).add(static_cast<long long>(cols))
      .add(static_cast<long long>(ld)).add(kindOf(t)).add(tol.atol).add(tol.rtol).add(c.result);
  KTUNE_RETURN_IF_ERROR(b.launch(c.k.fn, Dim3{unsigned(blocks), 1, 1},
                                 Dim3{unsigned(kThreads), 1, 1}, 0, a.data(), stream)
                            .withContext("verifier: the device comparison"));
  KTUNE_RETURN_IF_ERROR(b.synchronize(stream).withContext("verifier: the device comparison"));
  unsigned long long w[5];
  KTUNE_RETURN_IF_ERROR(b.copyToHost(w, c.result, kResultBytes).withContext("verifier: its result"));
  VerifyResult r;
  r.tol = tol;
  r.checked = rows * cols;
  r.mismatches = static_cast<int64_t>(w[0]);
  r.nans = static_cast<int64_t>(w[1]);
  std::memcpy(&r.max_abs_error, &w[2], sizeof(double));
  std::memcpy(&r.max_rel_error, &w[3], sizeof(double));
  r.ok = r.mismatches == 0;
  if (w[4] != ~0ull) {  // the first mismatch's two values, read as the host reads them
    r.first_bad = static_cast<int64_t>(w[4]);
    const int64_t row = r.first_bad / cols, col = r.first_bad % cols;
    const DevicePtr off = static_cast<DevicePtr>(row * ld + col) * sizeOf(t);
    unsigned char vo[8], vr[8];
    KTUNE_RETURN_IF_ERROR(b.copyToHost(vo, out + off, sizeOf(t)).withContext("verifier: output"));
    KTUNE_RETURN_IF_ERROR(b.copyToHost(vr, trusted + off, sizeOf(t)).withContext("verifier: trusted"));
    r.first_bad_out = loadAsDouble(vo, t, 0);
    r.first_bad_ref = loadAsDouble(vr, t, 0);
  }
  return r;
}

bool sameResult(const VerifyResult& a, const VerifyResult& b) {
  auto same = [](double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); };
  return a.ok == b.ok && a.checked == b.checked && a.mismatches == b.mismatches &&
         a.nans == b.nans && a.max_abs_error == b.max_abs_error &&
         a.max_rel_error == b.max_rel_error && a.first_bad == b.first_bad &&
         same(a.first_bad_out, b.first_bad_out) && same(a.first_bad_ref, b.first_bad_ref) &&
         a.summary() == b.summary();
}

// The planted cases (c.k.mu held, the kernel loaded): every type contiguous, and bf16 in padded
// rows, against the host comparison of the same elements. An error when any differs.
Status checkLocked(Cmp& c) {
  Backend& b = *c.k.b;
  struct Case { DType t; int64_t rows, cols, ld; bool specials; };
  const Case cases[] = {{DType::kF32, 1, 3001, 3001, true}, {DType::kF16, 3, 1000, 1000, true},
                        {DType::kBF16, 7, 513, 513, true},  {DType::kF64, 1, 2049, 2049, true},
                        {DType::kBF16, 5, 301, 307, true},  {DType::kBF16, 4, 700, 700, false},
                        {DType::kF32, 3, 250, 260, false}};
  uint32_t seed = 1;
  for (const Case& k : cases) {
    std::vector<unsigned char> o, r;
    plantedCompareCase(k.t, k.rows * k.ld, seed++, k.specials, &o, &r);
    const Tolerance tol = toleranceFor(k.t, 4096);
    auto po = b.alloc(o.size());
    if (!po.ok()) return po.status();
    auto pr = b.alloc(r.size());
    if (!pr.ok()) { (void)b.free(*po); return pr.status(); }
    Status st = b.copyToDevice(*po, o.data(), o.size());
    if (st.ok()) st = b.copyToDevice(*pr, r.data(), r.size());
    Expected<VerifyResult> dv = Status::Internal("not run");
    if (st.ok()) dv = runLocked(c, *po, *pr, k.t, k.rows, k.cols, k.ld, tol, {});
    (void)b.free(*po);
    (void)b.free(*pr);
    KTUNE_RETURN_IF_ERROR(st);
    if (!dv.ok()) return dv.status();
    // The host's view: the rows' real columns, packed.
    const size_t es = sizeOf(k.t), row_bytes = static_cast<size_t>(k.cols) * es;
    std::vector<unsigned char> ho(static_cast<size_t>(k.rows) * row_bytes), hr(ho.size());
    for (int64_t i = 0; i < k.rows; ++i) {
      std::memcpy(ho.data() + i * row_bytes, o.data() + i * k.ld * es, row_bytes);
      std::memcpy(hr.data() + i * row_bytes, r.data() + i * k.ld * es, row_bytes);
    }
    const VerifyResult hv = compareHostTrusted(ho.data(), hr.data(), k.t, k.rows * k.cols, tol);
    if (!sameResult(*dv, hv))
      return Status::Internal(strprintf("device comparison differs from the host's on %s %lldx%lld: "
                                        "device %s / host %s", dtypeName(k.t), (long long)k.rows,
                                        (long long)k.cols, dv->summary().c_str(),
                                        hv.summary().c_str()));
  }
  return Status::Ok();
}

// Loads and checks the kernel once (c.k.mu held): false when not ready or failed.
bool loadLocked(Cmp& c) {
  if (c.checked) return true;
  if (c.k.failed || !c.k.co) return false;
  auto fail = [&c](const Status& st) {
    c.k.failed = true;
    timelineMark("device_compare_checked", st.toString());
    return false;
  };
  Status why = Status::Ok();
  if (!c.k.loadLocked(kEntry, &why)) return fail(why);
  auto res = c.k.b->alloc(kResultBytes);
  if (!res.ok()) return fail(res.status());
  c.result = *res;
  if (Status st = checkLocked(c); !st.ok()) return fail(st);
  c.checked = true;
  timelineMark("device_compare_checked", "ok");
  return true;
}

void resetLocked(Cmp& c, std::unique_lock<std::mutex>& l) {
  c.k.joinLocked(l);
  if (c.k.b && c.result) (void)c.k.b->free(c.result);
  c.result = 0;
  c.checked = false;
  c.k.resetLocked(l);
}

}  // namespace

std::string deviceCompareSource() {
  return std::string(templates::embeddedSource("verify_compare.cuh"));
}

void enableDeviceCompare(Backend& b, Compiler& compiler, CodeObjectStore* store,
                         const DeviceInfo& device) {
  Cmp& c = cmp();
  std::unique_lock<std::mutex> l(c.k.mu);
  resetLocked(c, l);
  c.k.enableLocked(l, b, compiler, store, device, request(device.arch), "device_compare_compiled");
}

void disableDeviceCompare() {
  Cmp& c = cmp();
  std::unique_lock<std::mutex> l(c.k.mu);
  resetLocked(c, l);
}

void awaitDeviceCompare() {
  Cmp& c = cmp();
  std::unique_lock<std::mutex> l(c.k.mu);
  c.k.joinLocked(l);
}

bool deviceCompareReady() {
  Cmp& c = cmp();
  std::lock_guard<std::mutex> l(c.k.mu);
  return c.checked || (c.k.co && !c.k.failed);
}

bool deviceCompareChecked() {
  Cmp& c = cmp();
  std::lock_guard<std::mutex> l(c.k.mu);
  return c.checked;
}

bool deviceCompareToTrusted(Backend& b, DevicePtr out, DevicePtr trusted, DType t, int64_t rows,
                            int64_t cols, int64_t ld, Tolerance tol, Expected<VerifyResult>* res,
                            StreamHandle stream) {
  if (kindOf(t) < 0 || rows <= 0 || cols <= 0 || ld < cols) return false;
  Cmp& c = cmp();
  std::lock_guard<std::mutex> l(c.k.mu);
  if (c.k.b != &b || !loadLocked(c)) return false;
  const auto t0 = std::chrono::steady_clock::now();
  *res = runLocked(c, out, trusted, t, rows, cols, ld, tol, stream);
  if (timelineOn())
    timelineMark("verify_device",
                 strprintf("%.3f ms | %lld x %lld ld %lld", std::chrono::duration<double, std::milli>(
                                                                std::chrono::steady_clock::now() - t0)
                                                                .count(),
                           (long long)rows, (long long)cols, (long long)ld));
  return true;
}

void plantedCompareCase(DType t, int64_t n, uint32_t seed, bool specials,
                        std::vector<unsigned char>* out, std::vector<unsigned char>* trusted) {
  std::mt19937 g(seed);
  std::normal_distribution<double> d(0, 8);
  std::uniform_real_distribution<double> u(0, 1);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const Tolerance tol = toleranceFor(t, 4096);
  out->assign(static_cast<size_t>(n) * sizeOf(t), 0);
  trusted->assign(out->size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    double e = d(g);
    // Errors around the tolerance: some elements on each side of it after the type's rounding.
    const double scale = specials ? 3 : 1e-3;  // without specials: well inside the tolerance
    double o = e + (u(g) - 0.5) * scale * (tol.atol + tol.rtol * std::fabs(e));
    const double x = !specials ? 1 : i % 101 == 7 ? 0.005 : u(g);  // a NaN in every 101
    if (x < 0.01) o = nan;                // NaN where the trusted value is finite
    else if (x < 0.02) o = (x < 0.015 ? inf : -inf);
    else if (x < 0.025) e = nan;          // a value where NaN was expected
    else if (x < 0.03) o = e = nan;       // both NaN: fine
    else if (x < 0.035) o = e = inf;      // equal infinities
    else if (x < 0.04) e = -inf, o = x < 0.0375 ? inf : 1;
    else if (x < 0.05) e = 1e-3 * e, o = 2 * e;  // small values: near or below atol
    storeFromDouble(out->data(), t, i, o);
    storeFromDouble(trusted->data(), t, i, e);
  }
}

}  // namespace ktune
