#include "autotune/verifier.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "base/format.h"
#include "base/timeline.h"
#include "templates/kernels/verify_compare.cuh"

namespace ktune {

namespace {
// Unit roundoff (half an ulp at 1.0) of the format values are rounded to.
double unitRoundoff(DType t) {
  switch (t) {
    case DType::kF16: case DType::kTF32: return std::ldexp(1.0, -11);
    case DType::kBF16: return std::ldexp(1.0, -8);
    case DType::kF64: return std::ldexp(1.0, -53);
    case DType::kF32: return std::ldexp(1.0, -24);
    default: return 0.5;  // integers: only rounding of the conversion
  }
}

std::string fmt(double v) { return strprintf("%.3g", v); }

// The comparison of n elements: out(i) against ref(i), both as doubles, by the rule the device
// comparison shares (templates/kernels/verify_compare.cuh).
VerifyResult toResult(const verify_rule::Acc& a, int64_t n, Tolerance tol) {
  VerifyResult r;
  r.tol = tol;
  r.checked = n;
  r.mismatches = a.mismatches;
  r.nans = a.nans;
  r.max_abs_error = a.max_abs;
  r.max_rel_error = a.max_rel;
  r.first_bad = a.first_bad;
  r.first_bad_out = a.first_out;
  r.first_bad_ref = a.first_ref;
  r.ok = r.mismatches == 0;
  return r;
}
template <class Out, class Ref>
VerifyResult compareLoop(int64_t n, Tolerance tol, Out out, Ref ref) {
  verify_rule::Acc a;
  verify_rule::init(a);
  for (int64_t i = 0; i < n; ++i) verify_rule::element(a, out(i), ref(i), tol.atol, tol.rtol, i);
  return toResult(a, n, tol);
}

template <class Ref>
VerifyResult compareImpl(const void* out, DType t, const Ref* ref, int64_t n, Tolerance tol) {
  return compareLoop(n, tol, [&](int64_t i) { return loadAsDouble(out, t, i); },
                     [&](int64_t i) { return static_cast<double>(ref[i]); });
}

// Element loads inlined per type (loadAsDouble's values): the per-element switch and call, and a
// double copy of the reference, were most of a verification's host time (~5 ns an element: 5-10
// ms for a 4096-wide GEMM's sampled rows, 17-27 ms for a 28672-wide one, per check).
template <class T>
T loadRaw(const unsigned char* b, int64_t i) {
  T v;
  std::memcpy(&v, b + sizeof(T) * i, sizeof(T));
  return v;
}
const float* halfTable() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = halfToFloat(static_cast<uint16_t>(h));
    return t;
  }();
  return table.data();
}
// Large comparisons in up to kCompareThreads contiguous pieces at once, merged into what one pass
// gives: counts summed, maxima of the maxima, the first mismatch of the first piece that has one.
constexpr int kCompareThreads = 4;
constexpr int64_t kComparePiece = int64_t(1) << 18;
template <class Load>
VerifyResult compareSame(const unsigned char* a, const unsigned char* r, int64_t n, Tolerance tol,
                         Load load) {
  auto piece = [&](int64_t begin, int64_t end) {
    return compareLoop(end - begin, tol, [&](int64_t i) { return load(a, begin + i); },
                       [&](int64_t i) { return load(r, begin + i); });
  };
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t k = std::min<int64_t>({kCompareThreads, hw, n / kComparePiece});
  if (k <= 1) return piece(0, n);
  std::vector<VerifyResult> parts(static_cast<size_t>(k));
  std::vector<std::thread> threads;
  for (int64_t j = 1; j < k; ++j)
    threads.emplace_back([&, j] { parts[j] = piece(n * j / k, n * (j + 1) / k); });
  parts[0] = piece(0, n / k);
  for (auto& t : threads) t.join();
  VerifyResult m = parts[0];
  m.checked = n;
  for (int64_t j = 1; j < k; ++j) {
    const VerifyResult& p = parts[j];
    m.mismatches += p.mismatches;
    m.nans += p.nans;
    m.max_abs_error = std::max(m.max_abs_error, p.max_abs_error);
    m.max_rel_error = std::max(m.max_rel_error, p.max_rel_error);
    if (m.first_bad < 0 && p.first_bad >= 0) {
      m.first_bad = n * j / k + p.first_bad;
      m.first_bad_out = p.first_bad_out;
      m.first_bad_ref = p.first_bad_ref;
    }
  }
  m.ok = m.mismatches == 0;
  return m;
}
// The calling thread's read-back buffer `which` (0: the output, 1: the trusted one), at least
// `bytes` long, kept between checks up to kScratchKeep bytes: a fresh zeroed vector per check
// faulted in and cleared megabytes each time.
constexpr size_t kScratchKeep = size_t(64) << 20;
struct Scratch {
  std::vector<unsigned char> own;  // a larger one, freed with it
  unsigned char* p = nullptr;
};
Scratch hostScratch(int which, size_t bytes) {
  thread_local std::vector<unsigned char> kept[2];
  Scratch s;
  if (bytes > kScratchKeep) {
    s.own.resize(bytes);
    s.p = s.own.data();
  } else {
    if (kept[which].size() < bytes) kept[which].resize(bytes);
    s.p = kept[which].data();
  }
  return s;
}
}  // namespace

Tolerance toleranceFor(DType out, int64_t reduction_len) {
  double compute = out == DType::kTF32 ? unitRoundoff(DType::kTF32) : unitRoundoff(DType::kF32);
  if (out == DType::kF64) compute = unitRoundoff(DType::kF64);
  double k = std::sqrt(static_cast<double>(std::max<int64_t>(reduction_len, 1)));
  double rtol = 2 * unitRoundoff(out) + 2 * compute * k;
  return {rtol, rtol};
}

std::string VerifyResult::summary() const {
  std::string s;
  if (ok) {
    s = "ok: " + std::to_string(checked) + " checked";
  } else {
    s = std::to_string(mismatches) + " of " + std::to_string(checked) + " mismatch";
    if (nans) s += " (" + std::to_string(nans) + " NaN/Inf)";
    s += "; first at [" + std::to_string(first_bad) + "]: got " + fmt(first_bad_out) +
         ", expected " + fmt(first_bad_ref);
  }
  s += "; max abs " + fmt(max_abs_error) + ", max rel " + fmt(max_rel_error) + " (atol " +
       fmt(tol.atol) + ", rtol " + fmt(tol.rtol) + ")";
  return s;
}

Status VerifyResult::toStatus() const {
  return ok ? Status::Ok() : Status::WrongResult("wrong result: " + summary());
}

VerifyResult compareHost(const void* out, DType t, const double* ref, int64_t n, Tolerance tol) {
  return compareImpl(out, t, ref, n, tol);
}
VerifyResult compareHost(const void* out, DType t, const float* ref, int64_t n, Tolerance tol) {
  return compareImpl(out, t, ref, n, tol);
}

VerifyResult compareHostTrusted(const void* out, const void* trusted, DType t, int64_t n,
                                Tolerance tol) {
  const auto* a = static_cast<const unsigned char*>(out);
  const auto* r = static_cast<const unsigned char*>(trusted);
  switch (t) {
    case DType::kF32: case DType::kTF32:
      return compareSame(a, r, n, tol, [](const unsigned char* b, int64_t i) {
        return static_cast<double>(loadRaw<float>(b, i));
      });
    case DType::kF64:
      return compareSame(a, r, n, tol, [](const unsigned char* b, int64_t i) {
        return loadRaw<double>(b, i);
      });
    case DType::kBF16:
      return compareSame(a, r, n, tol, [](const unsigned char* b, int64_t i) {
        return static_cast<double>(bf16ToFloat(loadRaw<uint16_t>(b, i)));
      });
    case DType::kF16: {
      const float* h = halfTable();
      return compareSame(a, r, n, tol, [h](const unsigned char* b, int64_t i) {
        return static_cast<double>(h[loadRaw<uint16_t>(b, i)]);
      });
    }
    default:
      return compareSame(a, r, n, tol, [t](const unsigned char* b, int64_t i) {
        return loadAsDouble(b, t, i);
      });
  }
}

Expected<VerifyResult> compareDevice(Backend& b, DevicePtr out, DType t,
                                     const std::vector<double>& ref, Tolerance tol) {
  std::vector<unsigned char> host(ref.size() * sizeOf(t));
  if (!host.empty()) {
    KTUNE_RETURN_IF_ERROR(b.copyToHost(host.data(), out, host.size())
                              .withContext("verifier: reading the output"));
  }
  return compareHost(host.data(), t, ref.data(), static_cast<int64_t>(ref.size()), tol);
}

Expected<VerifyResult> compareDeviceToTrusted(Backend& b, DevicePtr out, DevicePtr trusted,
                                              DType t, int64_t n, Tolerance tol) {
  if (n < 0) return Status::InvalidArgument("verifier: negative element count");
  size_t bytes = static_cast<size_t>(n) * sizeOf(t);
  Scratch sa = hostScratch(0, bytes), sr = hostScratch(1, bytes);
  unsigned char *a = sa.p, *r = sr.p;
  if (bytes) {
    KTUNE_RETURN_IF_ERROR(b.copyToHost(a, out, bytes).withContext("verifier: output"));
    KTUNE_RETURN_IF_ERROR(
        b.copyToHost(r, trusted, bytes).withContext("verifier: trusted output"));
  }
  return compareHostTrusted(a, r, t, n, tol);
}

std::vector<int64_t> sampleRows(int64_t rows, int64_t max_rows) {
  std::vector<int64_t> out;
  if (rows <= 0) return out;
  if (rows <= max_rows) {
    for (int64_t r = 0; r < rows; ++r) out.push_back(r);
    return out;
  }
  for (int64_t r = 0; r < 8; ++r) out.push_back(r);
  // An odd step visits every residue modulo any power of two (tile sizes) as it goes.
  const int64_t step = ((rows - 16 + max_rows - 17) / (max_rows - 16)) | 1;
  for (int64_t r = 8 + step / 2; r < rows - 8; r += step) out.push_back(r);
  for (int64_t r = rows - 8; r < rows; ++r) out.push_back(r);
  return out;
}

std::vector<int64_t> tileBoundaryRows(int64_t rows, int64_t tile, int64_t random_rows,
                                      uint64_t seed) {
  std::vector<int64_t> out;
  if (rows <= 0) return out;
  tile = std::max<int64_t>(tile, 1);
  if (rows <= 4 * tile) return sampleRows(rows, rows);
  out.push_back(0);
  out.push_back(rows - 1);
  for (int64_t b = tile; b < rows; b += tile) {
    out.push_back(b - 1);
    out.push_back(b);
  }
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < random_rows; ++i) out.push_back(static_cast<int64_t>(rng() % rows));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {
// The listed rows of `out` and `trusted` (row_bytes each, `ld` elements apart) gathered into
// `stage` (the outputs' rows, then the trusted ones) with asynchronous device-to-device copies,
// then read back into `a` and `r` in one copy each: one synchronisation per check instead of two
// per row (512 synchronous row copies made verification the largest part of a GEMM tuning run).
// Runs of consecutive rows are one copy each where rows are not padded (ld == cols): a 4096-wide
// GEMM's check gathered 162 rows, most of them tile-boundary pairs, in 324 copies. `copies` counts
// them; `gathered` is when the last one was issued (the timeline's split).
Status gatherRows(Backend& b, DevicePtr stage, DevicePtr out, DevicePtr trusted, DType t,
                  int64_t cols, int64_t ld, const std::vector<int64_t>& rows, unsigned char* a,
                  unsigned char* r, int& copies, std::chrono::steady_clock::time_point& gathered) {
  const size_t row_bytes = static_cast<size_t>(cols) * sizeOf(t), half = rows.size() * row_bytes;
  Status st = Status::Ok();
  for (size_t i = 0; i < rows.size() && st.ok();) {
    size_t j = i + 1;
    while (ld == cols && j < rows.size() && rows[j] == rows[j - 1] + 1) ++j;
    const DevicePtr off = static_cast<DevicePtr>(rows[i]) * static_cast<DevicePtr>(ld) * sizeOf(t);
    const size_t bytes = (j - i) * row_bytes;
    st = b.copyDeviceToDevice(stage + i * row_bytes, out + off, bytes);
    if (st.ok()) st = b.copyDeviceToDevice(stage + half + i * row_bytes, trusted + off, bytes);
    copies += 2;
    i = j;
  }
  gathered = std::chrono::steady_clock::now();
  if (st.ok()) st = b.copyToHost(a, stage, half);
  if (st.ok()) st = b.copyToHost(r, stage + half, half);
  return st.withContext("verifier: gathering sampled rows");
}

// The fallback without a staging buffer: each listed row copied back on its own.
Status copyRowsBack(Backend& b, DevicePtr out, DevicePtr trusted, DType t, int64_t cols,
                    int64_t ld, const std::vector<int64_t>& rows, unsigned char* a,
                    unsigned char* r) {
  const size_t row_bytes = static_cast<size_t>(cols) * sizeOf(t);
  for (size_t i = 0; i < rows.size(); ++i) {
    const DevicePtr off = static_cast<DevicePtr>(rows[i]) * static_cast<DevicePtr>(ld) * sizeOf(t);
    KTUNE_RETURN_IF_ERROR(b.copyToHost(a + i * row_bytes, out + off, row_bytes)
                              .withContext("verifier: output row " + std::to_string(rows[i])));
    KTUNE_RETURN_IF_ERROR(b.copyToHost(r + i * row_bytes, trusted + off, row_bytes)
                              .withContext("verifier: trusted row " + std::to_string(rows[i])));
  }
  return Status::Ok();
}
}  // namespace

Expected<VerifyResult> compareDeviceRowsToTrusted(Backend& b, DevicePtr out, DevicePtr trusted,
                                                  DType t, int64_t cols, int64_t ld,
                                                  const std::vector<int64_t>& rows, Tolerance tol,
                                                  DevicePtr stage_buf, size_t stage_bytes) {
  if (cols < 0 || ld < cols) return Status::InvalidArgument("verifier: bad cols/ld");
  const size_t n = rows.size() * static_cast<size_t>(cols);
  const size_t need = verifyStageBytes(t, cols, rows.size()), half = need / 2;
  Scratch sa = hostScratch(0, half), sr = hostScratch(1, half);
  unsigned char *a = sa.p, *r = sr.p;
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  // The caller's staging buffer, or one of this check's own (row by row when none can be had).
  const bool own = half > 0 && stage_bytes < need;
  auto stage = half == 0 ? Expected<DevicePtr>(Status::InvalidArgument("empty"))
               : own     ? b.alloc(need)
                         : Expected<DevicePtr>(stage_buf);
  if (!stage.ok()) {
    KTUNE_RETURN_IF_ERROR(copyRowsBack(b, out, trusted, t, cols, ld, rows, a, r));
    return compareHostTrusted(a, r, t, static_cast<int64_t>(n), tol);
  }
  const auto t1 = Clock::now();
  int copies = 0;
  Clock::time_point t2;
  Status st = gatherRows(b, *stage, out, trusted, t, cols, ld, rows, a, r, copies, t2);
  const auto t3 = Clock::now();
  if (own) (void)b.free(*stage);
  KTUNE_RETURN_IF_ERROR(st);
  const auto t4 = Clock::now();
  VerifyResult v = compareHostTrusted(a, r, t, static_cast<int64_t>(n), tol);
  if (timelineOn()) {
    auto ms = [](auto x, auto y) {
      return std::chrono::duration<double, std::milli>(y - x).count();
    };
    timelineMark("verify_rows", strprintf("alloc %.2f gather %.2f (%d copies) read %.2f free %.2f "
                                          "compare %.2f | %zu rows x %lld", ms(t0, t1), ms(t1, t2),
                                          copies, ms(t2, t3), ms(t3, t4), ms(t4, Clock::now()),
                                          rows.size(), static_cast<long long>(cols)));
  }
  return v;
}

Status poisonNaN(Backend& b, DevicePtr p, DType t, int64_t count, StreamHandle s) {
  if (count < 0) return Status::InvalidArgument("poisonNaN: negative element count");
  if (count == 0) return Status::Ok();
  switch (t) {
    case DType::kF32: case DType::kTF32:
      return b.memset32(p, 0x7fc00000u, static_cast<size_t>(count), s);
    case DType::kF64: return b.memset32(p, 0x7ff80000u, static_cast<size_t>(count) * 2, s)
                          .withContext("poisonNaN f64");  // 0x7ff800007ff80000 is a NaN
    case DType::kF16: case DType::kBF16: {
      uint32_t pat = t == DType::kF16 ? 0x7e007e00u : 0x7fc07fc0u;
      size_t pairs = static_cast<size_t>(count) / 2;
      if (pairs) KTUNE_RETURN_IF_ERROR(b.memset32(p, pat, pairs, s));
      if (count % 2) {
        uint16_t last = static_cast<uint16_t>(pat & 0xffffu);
        KTUNE_RETURN_IF_ERROR(b.synchronize(s));
        return b.copyToDevice(p + pairs * 4, &last, 2);
      }
      return Status::Ok();
    }
    default:
      return Status::Unsupported(std::string("poisonNaN: ") + dtypeName(t) +
                                 " has no NaN; poison integer outputs with a sentinel instead");
  }
}

Status poisonNaNHost(void* p, DType t, int64_t count) {
  if (!isFloating(t)) {
    return Status::Unsupported(std::string("poisonNaNHost: ") + dtypeName(t) + " has no NaN");
  }
  for (int64_t i = 0; i < count; ++i) storeFromDouble(p, t, i, std::nan(""));
  return Status::Ok();
}

}  // namespace ktune
