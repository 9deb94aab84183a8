#include "templates/rowwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "templates/embedded.h"

namespace ktune::rowwise {

Expected<RowDType> parseDType(std::string_view s) {
  if (s == "f32" || s == "fp32" || s == "float32" || s == "float") return RowDType::kF32;
  if (s == "f16" || s == "fp16" || s == "float16" || s == "half") return RowDType::kF16;
  if (s == "bf16" || s == "bfloat16") return RowDType::kBF16;
  return Status::InvalidArgument("unknown row-wise dtype '" + std::string(s) +
                                 "' (expected f32, f16 or bf16)");
}

RowwiseLimits limitsFor(const DeviceInfo& dev) {
  RowwiseLimits l;
  if (dev.warp_size > 0) l.warp_size = dev.warp_size;
  if (dev.max_threads_per_block > 0) l.max_threads_per_block = dev.max_threads_per_block;
  l.backend = dev.vendor == Vendor::kAmd ? "hip" : "cuda";
  return l;
}

Expected<RowwiseLimits> limitsForArch(std::string_view arch) {
  RowwiseLimits l;
  l.max_threads_per_block = 1024;
  const Arch a(arch);
  if (a.isNvidia()) {
    l.warp_size = 32;
    l.backend = "cuda";
    return l;
  }
  // GFX9 (CDNA, GCN) runs wave64; GFX10-12 (RDNA) wave32.
  if (a.isAmd() && a.generation() >= 9 && a.generation() <= 12) {
    l.warp_size = a.generation() == 9 ? 64 : 32;
    l.backend = "hip";
    return l;
  }
  return Status::Unsupported("row-wise kernels: unknown arch '" + std::string(arch) +
                             "' (expected sm_XX or gfxXXX)");
}

namespace {

using Defines = std::vector<std::pair<std::string, std::string>>;

std::string str(int64_t v) { return std::to_string(v); }

// True when a [rows x cols] view with row stride `stride` (elements of `esize` bytes) spans more
// than 2^60 bytes: no such tensor can exist, and byte counts derived from it (traffic, snapshots,
// overlap checks) would overflow int64, which is undefined behaviour.
bool spanTooLarge(int64_t rows, int64_t stride, int64_t cols, int64_t esize) {
  int64_t t = 0;
  return __builtin_mul_overflow(rows - 1, stride, &t) || __builtin_add_overflow(t, cols, &t) ||
         __builtin_mul_overflow(t, esize, &t) || t > (int64_t(1) << 60);
}

std::vector<int64_t> warpMultiples(const RowwiseLimits& l, int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  for (int64_t t = l.warp_size; t <= std::min<int64_t>(hi, l.max_threads_per_block); t *= 2) {
    if (t >= lo) out.push_back(t);
  }
  return out;
}

// Element counts for 16- and 8-byte accesses (>= 1).
std::vector<int64_t> vecChoices(RowDType t) {
  const int64_t s = static_cast<int64_t>(sizeOf(t));
  return {16 / s, 8 / s};
}

void addCommonConstraints(ConfigSpace& sp, RowDType t, const RowwiseLimits& l,
                          const char* rows_param) {
  const int64_t esize = static_cast<int64_t>(sizeOf(t));
  const int64_t warp = l.warp_size, maxt = l.max_threads_per_block;
  const std::string rp = rows_param;
  sp.constrain("THREADS % warp_size(" + str(warp) + ") == 0",
               [warp](const Config& c) { return c.getInt("THREADS") % warp == 0; });
  sp.constrain("VEC * sizeof(dtype) <= 16", [esize](const Config& c) {
    const int64_t v = c.getInt("VEC");
    return v >= 1 && (v & (v - 1)) == 0 && v * esize <= 16;
  });
  if (!rp.empty()) {
    sp.constrain("THREADS * " + rp + " <= max_threads_per_block(" + str(maxt) + ")",
                 [maxt, rp](const Config& c) {
                   return c.getInt("THREADS") * c.getInt(rp, 1) <= maxt;
                 });
  }
}

int64_t gcd64(int64_t a, int64_t b) { return std::gcd(a < 0 ? -a : a, b < 0 ? -b : b); }

// Largest VEC <= want whose byte width divides every byte offset in `offsets` (0 divides
// nothing away: gcd(0, x) = x).
int64_t lowerVec(int64_t want, int64_t esize, const std::vector<int64_t>& offsets) {
  int64_t g = 0;
  for (int64_t o : offsets) g = gcd64(g, o);
  int64_t v = std::max<int64_t>(want, 1);
  while (v > 1 && g != 0 && g % (v * esize) != 0) v /= 2;
  return v;
}

unsigned clampGrid(int64_t v, int64_t cap) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(v, cap)));
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// RMSNorm
// ---------------------------------------------------------------------------------------------
std::string_view rmsNormSource() { return templates::embeddedSource(kRmsNormSource); }

ConfigSpace rmsNormSpace(RowDType dtype, const RowwiseLimits& limits) {
  ConfigSpace sp;
  sp.addInts("VEC", vecChoices(dtype));
  sp.addInts("THREADS", warpMultiples(limits, limits.warp_size, 1024));
  sp.addInts("ROWS_PER_BLOCK", {1, 2, 4});
  sp.addInts("OCC", {0, 1});
  addCommonConstraints(sp, dtype, limits, "ROWS_PER_BLOCK");
  // Static shared memory: red[2][ROWS_PER_BLOCK][THREADS / warp] floats.
  const int64_t warp = limits.warp_size;
  sp.sharedBytes([warp](const Config& c) {
    return 2 * c.getInt("ROWS_PER_BLOCK", 1) * std::max<int64_t>(1, c.getInt("THREADS") / warp) *
           4;
  });
  return sp;
}

Config rmsNormDefaultConfig(RowDType dtype, const RowwiseLimits& limits) {
  // The shape of the NVIDIA sweep's winners (bench/NOTES.md): 8 warps per row, one row per block.
  return Config{{"VEC", int64_t(16 / sizeOf(dtype))},
                {"THREADS", int64_t(std::min(256, limits.max_threads_per_block))},
                {"ROWS_PER_BLOCK", int64_t(1)},
                {"OCC", int64_t(0)}};
}

static int64_t orCols(int64_t stride, int64_t cols) { return stride > 0 ? stride : cols; }

static std::vector<int64_t> rmsOffsets(const RmsNormProblem& p) {
  const int64_t esize = static_cast<int64_t>(sizeOf(p.dtype));
  std::vector<int64_t> offs = {p.x_misalign, p.y_misalign};
  if (p.rows > 1) {
    offs.push_back(orCols(p.x_stride, p.cols) * esize);
    offs.push_back(orCols(p.y_stride, p.cols) * esize);
  }
  if (p.has_weight) offs.push_back(p.w_misalign);
  if (p.has_residual) {
    offs.push_back(p.r_misalign);
    offs.push_back(p.ro_misalign);
    if (p.rows > 1) {
      offs.push_back(orCols(p.r_stride, p.cols) * esize);
      offs.push_back(orCols(p.ro_stride, p.cols) * esize);
    }
  }
  return offs;
}

int64_t alignmentBytes(const RmsNormProblem& p) {
  return lowerVec(16, 1, rmsOffsets(p));
}

Defines rmsNormDefines(const Config& c, const RmsNormProblem& p) {
  const int64_t esize = static_cast<int64_t>(sizeOf(p.dtype));
  const int64_t threads = c.getInt("THREADS", 256);
  const int64_t vec = lowerVec(c.getInt("VEC", 16 / esize), esize, rmsOffsets(p));
  const int64_t nv = p.cols / vec;
  int64_t niter = std::max<int64_t>(1, ceilDiv(nv, threads));
  if (niter > kRmsNormMaxRegisterVectors) niter = 0;
  return {{"DTYPE", str(static_cast<int>(p.dtype))},
          {"VEC", str(vec)},
          {"THREADS", str(threads)},
          {"ROWS_PER_BLOCK", str(c.getInt("ROWS_PER_BLOCK", 1))},
          {"OCC", str(c.getInt("OCC", 0))},
          {"NITER", str(niter)},
          {"HAS_WEIGHT", p.has_weight ? "1" : "0"},
          {"HAS_RESIDUAL", p.has_residual ? "1" : "0"}};
}

LaunchShape rmsNormLaunch(const Config& c, const RmsNormProblem& p, const DeviceInfo&) {
  const int64_t rpb = c.getInt("ROWS_PER_BLOCK", 1);
  LaunchShape s;
  s.block = Dim3{static_cast<unsigned>(c.getInt("THREADS", 256)), static_cast<unsigned>(rpb), 1};
  s.grid = Dim3{clampGrid(ceilDiv(p.rows, rpb), 0x7fffffff), 1, 1};
  return s;
}

// What every row-wise problem is checked for first: a known dtype, rows and the row length (`len`,
// called `len_name`) > 0, and the row length below 2^31 (before anything multiplies it).
static Status checkRowShape(const char* op, RowDType dtype, int64_t rows, const char* len_name,
                            int64_t len) {
  const std::string o(op);
  if (static_cast<int>(dtype) < 0 || static_cast<int>(dtype) > 2)
    return Status::InvalidArgument(o + ": unknown dtype value " +
                                   std::to_string(static_cast<int>(dtype)));
  if (rows <= 0 || len <= 0)
    return Status::InvalidArgument(o + ": rows and " + len_name + " must be > 0 (got rows=" +
                                   str(rows) + ", " + len_name + "=" + str(len) + ")");
  if (len > (int64_t(1) << 31) - 1)
    return Status::InvalidArgument(o + ": " + len_name + "=" + str(len) + " exceeds 2^31-1");
  return Status::Ok();
}

Status validate(const RmsNormProblem& p) {
  KTUNE_RETURN_IF_ERROR(checkRowShape("rmsnorm", p.dtype, p.rows, "cols", p.cols));
  auto checkStride = [&](int64_t s, const char* what) -> Status {
    if (s != 0 && s < p.cols)
      return Status::InvalidArgument(std::string("rmsnorm: ") + what + "=" + str(s) +
                                     " is smaller than cols=" + str(p.cols) +
                                     " (rows would overlap; use 0 for contiguous)");
    if (s < 0) return Status::InvalidArgument(std::string("rmsnorm: negative ") + what);
    return Status::Ok();
  };
  KTUNE_RETURN_IF_ERROR(checkStride(p.x_stride, "x_stride"));
  KTUNE_RETURN_IF_ERROR(checkStride(p.y_stride, "y_stride"));
  if (p.has_residual) {
    KTUNE_RETURN_IF_ERROR(checkStride(p.r_stride, "r_stride"));
    KTUNE_RETURN_IF_ERROR(checkStride(p.ro_stride, "ro_stride"));
  }
  if (!(p.eps >= 0.f) || !std::isfinite(p.eps))
    return Status::InvalidArgument("rmsnorm: eps must be finite and >= 0");
  const int64_t e = static_cast<int64_t>(sizeOf(p.dtype));
  for (int64_t s : {p.x_stride, p.y_stride, p.has_residual ? p.r_stride : 0,
                    p.has_residual ? p.ro_stride : 0}) {
    if (spanTooLarge(p.rows, orCols(s, p.cols), p.cols, e))
      return Status::InvalidArgument("rmsnorm: rows=" + str(p.rows) + " x row stride " +
                                     str(orCols(s, p.cols)) +
                                     " overflows a 64-bit byte count (> 2^60 bytes); check the "
                                     "sizes and strides");
  }
  return Status::Ok();
}

RmsNormStrides kernelStrides(const RmsNormProblem& p) {
  return {orCols(p.x_stride, p.cols), orCols(p.y_stride, p.cols), orCols(p.r_stride, p.cols),
          orCols(p.ro_stride, p.cols)};
}

int64_t rmsNormBytes(const RmsNormProblem& p) {
  const int64_t e = static_cast<int64_t>(sizeOf(p.dtype));
  int64_t b = 2 * p.rows * p.cols * e;
  if (p.has_residual) b += 2 * p.rows * p.cols * e;
  if (p.has_weight) b += p.cols * e;
  return b;
}

void rmsNormReference(const RmsNormProblem& p, const double* x, const double* w, const double* r,
                      double* y, double* r_out) {
  const int64_t xs = orCols(p.x_stride, p.cols), ys = orCols(p.y_stride, p.cols);
  const int64_t rs = orCols(p.r_stride, p.cols), ros = orCols(p.ro_stride, p.cols);
  std::vector<double> s(static_cast<size_t>(p.cols));
  for (int64_t i = 0; i < p.rows; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < p.cols; ++j) {
      double v = x[i * xs + j];
      if (p.has_residual) {
        v = roundTo(p.dtype, v + r[i * rs + j]);
        r_out[i * ros + j] = v;
      }
      s[j] = v;
      ss += v * v;
    }
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(p.cols) + double(p.eps));
    for (int64_t j = 0; j < p.cols; ++j) {
      y[i * ys + j] = s[j] * inv * (p.has_weight ? w[j] : 1.0);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// SiLU·Mul
// ---------------------------------------------------------------------------------------------
std::string_view siluMulSource() { return templates::embeddedSource(kSiluMulSource); }

ConfigSpace siluMulSpace(RowDType dtype, const RowwiseLimits& limits) {
  ConfigSpace sp;
  sp.addInts("VEC", vecChoices(dtype));
  sp.addInts("THREADS", warpMultiples(limits, 128, 1024));
  sp.addInts("UNROLL", {1, 2, 4});
  sp.addInts("ROWS_PER_BLOCK", {1, 2, 4});
  addCommonConstraints(sp, dtype, limits, "");
  sp.constrain("UNROLL * ROWS_PER_BLOCK <= 4", [](const Config& c) {
    return c.getInt("UNROLL") * c.getInt("ROWS_PER_BLOCK") <= 4;
  });
  // NVIDIA: x's loads with an L2 evict_first policy (read once; the output's lines stay in the
  // L2). Measured to help the small shapes and to cost about 1-2% at the large ones, so it is the
  // tuner's choice. AMD has no such knob until a measurement says what a nontemporal load does.
  if (limits.backend == "cuda") sp.addInts("LOAD_HINT", {0, 1});
  return sp;
}

Config siluMulDefaultConfig(RowDType dtype, const RowwiseLimits& limits) {
  // AMD: the MI300X guide's advice for memory-bound kernels is 16-byte accesses
  // (global_load_dwordx4) and whole waves; no AMD sweep exists to say otherwise, so the NVIDIA
  // sweep's winners' 8-byte accesses are not carried over. 4 waves of 64 lanes per block.
  if (limits.backend == "hip")
    return Config{{"VEC", int64_t(16 / sizeOf(dtype))},
                  {"THREADS", int64_t(std::min(256, limits.max_threads_per_block))},
                  {"UNROLL", int64_t(1)},
                  {"ROWS_PER_BLOCK", int64_t(1)}};
  // NVIDIA: 16-byte accesses in small blocks, plain loads: in the NVIDIA sweep this config is within
  // 2% of the best at the small and the large shapes (bench/NOTES.md; before the stores were made
  // whole, 16-byte configs ran at half speed and 8-byte ones were the default).
  return Config{{"VEC", int64_t(16 / sizeOf(dtype))},
                {"THREADS", int64_t(std::max(128, limits.warp_size * 2))},
                {"UNROLL", int64_t(1)},
                {"ROWS_PER_BLOCK", int64_t(1)},
                {"LOAD_HINT", int64_t(0)}};
}

static std::vector<int64_t> siluOffsets(const SiluMulProblem& p) {
  const int64_t esize = static_cast<int64_t>(sizeOf(p.dtype));
  std::vector<int64_t> offs = {p.x_misalign, p.out_misalign, p.d * esize};
  if (p.rows > 1) {
    offs.push_back((p.x_stride > 0 ? p.x_stride : 2 * p.d) * esize);
    offs.push_back((p.out_stride > 0 ? p.out_stride : p.d) * esize);
  }
  return offs;
}

int64_t alignmentBytes(const SiluMulProblem& p) { return lowerVec(16, 1, siluOffsets(p)); }

Defines siluMulDefines(const Config& c, const SiluMulProblem& p) {
  const int64_t esize = static_cast<int64_t>(sizeOf(p.dtype));
  const int64_t vec = lowerVec(c.getInt("VEC", 16 / esize), esize, siluOffsets(p));
  return {{"DTYPE", str(static_cast<int>(p.dtype))},
          {"VEC", str(vec)},
          {"THREADS", str(c.getInt("THREADS", 256))},
          {"UNROLL", str(c.getInt("UNROLL", 1))},
          {"ROWS_PER_BLOCK", str(c.getInt("ROWS_PER_BLOCK", 1))},
          {"LOAD_HINT", str(c.getInt("LOAD_HINT", 0))}};
}

LaunchShape siluMulLaunch(const Config& c, const SiluMulProblem& p, const DeviceInfo&) {
  // The grid must match the VEC actually compiled in (siluMulDefines may lower it).
  const auto defs = siluMulDefines(c, p);
  int64_t vec = 1;
  for (const auto& [k, v] : defs) {
    if (k == "VEC") vec = std::stoll(v);
  }
  const int64_t threads = c.getInt("THREADS", 256), unroll = c.getInt("UNROLL", 1);
  const int64_t rpb = c.getInt("ROWS_PER_BLOCK", 1);
  LaunchShape s;
  s.block = Dim3{static_cast<unsigned>(threads), 1, 1};
  s.grid = Dim3{clampGrid(ceilDiv(ceilDiv(p.d, vec), threads * unroll), 0x7fffffff),
                clampGrid(ceilDiv(p.rows, rpb), 65535), 1};
  return s;
}

Status validate(const SiluMulProblem& p) {
  KTUNE_RETURN_IF_ERROR(checkRowShape("silu_mul", p.dtype, p.rows, "d", p.d));  // before any 2*d
  if (p.x_stride != 0 && p.x_stride < 2 * p.d)
    return Status::InvalidArgument("silu_mul: x_stride=" + str(p.x_stride) + " < 2*d=" +
                                   str(2 * p.d) + " (x rows hold [gate | up]; use 0 for contiguous)");
  if (p.out_stride != 0 && p.out_stride < p.d)
    return Status::InvalidArgument("silu_mul: out_stride=" + str(p.out_stride) + " < d=" +
                                   str(p.d));
  if (p.x_stride < 0 || p.out_stride < 0)
    return Status::InvalidArgument("silu_mul: negative stride");
  const int64_t e = static_cast<int64_t>(sizeOf(p.dtype));
  if (spanTooLarge(p.rows, p.x_stride > 0 ? p.x_stride : 2 * p.d, 2 * p.d, e) ||
      spanTooLarge(p.rows, p.out_stride > 0 ? p.out_stride : p.d, p.d, e))
    return Status::InvalidArgument("silu_mul: rows=" + str(p.rows) + " x row stride overflows a "
                                   "64-bit byte count (> 2^60 bytes); check the sizes and strides");
  return Status::Ok();
}

SiluMulStrides kernelStrides(const SiluMulProblem& p) {
  return {p.x_stride > 0 ? p.x_stride : 2 * p.d, p.out_stride > 0 ? p.out_stride : p.d};
}

int64_t siluMulBytes(const SiluMulProblem& p) {
  return 3 * p.rows * p.d * static_cast<int64_t>(sizeOf(p.dtype));
}

void siluMulReference(const SiluMulProblem& p, const double* x, double* out) {
  const int64_t xs = p.x_stride > 0 ? p.x_stride : 2 * p.d;
  const int64_t os = p.out_stride > 0 ? p.out_stride : p.d;
  for (int64_t i = 0; i < p.rows; ++i) {
    for (int64_t j = 0; j < p.d; ++j) {
      const double g = x[i * xs + j], u = x[i * xs + p.d + j];
      out[i * os + j] = g / (1.0 + std::exp(-g)) * u;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Copy
// ---------------------------------------------------------------------------------------------
std::string_view copySource() { return templates::embeddedSource(kCopySource); }

ConfigSpace copySpace(const RowwiseLimits& limits) {
  ConfigSpace sp;
  sp.addInts("THREADS", warpMultiples(limits, 128, 1024));
  sp.addInts("UNROLL", {1, 2, 4, 8});
  return sp;
}

Config copyDefaultConfig(const RowwiseLimits& limits) {
  return Config{{"THREADS", int64_t(std::min(512, limits.max_threads_per_block))},
                {"UNROLL", int64_t(4)}};
}

Defines copyDefines(const Config& c) {
  return {{"THREADS", str(c.getInt("THREADS", 512))}, {"UNROLL", str(c.getInt("UNROLL", 4))}};
}

LaunchShape copyLaunch(const Config& c, int64_t n_bytes, const DeviceInfo& dev) {
  const int64_t threads = c.getInt("THREADS", 512), unroll = c.getInt("UNROLL", 4);
  int64_t cap = 0x7fffffff;
  if (dev.multiprocessors > 0 && dev.max_threads_per_sm > 0) {
    // One full wave of resident blocks; the kernel's grid-stride loop does the rest.
    cap = int64_t(dev.multiprocessors) * std::max<int64_t>(1, dev.max_threads_per_sm / threads);
  }
  LaunchShape s;
  s.block = Dim3{static_cast<unsigned>(threads), 1, 1};
  s.grid = Dim3{clampGrid(ceilDiv(ceilDiv(n_bytes, 16), threads * unroll), cap), 1, 1};
  return s;
}

// ---------------------------------------------------------------------------------------------
// Host conversions
// ---------------------------------------------------------------------------------------------
double roundTo(RowDType t, double v) {
  switch (t) {
    case RowDType::kF32: return static_cast<double>(static_cast<float>(v));
    case RowDType::kF16: return halfToFloat(floatToHalf(static_cast<float>(v)));
    case RowDType::kBF16: return bf16ToFloat(floatToBf16(static_cast<float>(v)));
    default: return v;  // the row-wise kernels take f32, f16 and bf16 only
  }
}

std::vector<unsigned char> pack(RowDType t, const std::vector<double>& v) {
  std::vector<unsigned char> out(v.size() * sizeOf(t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == RowDType::kF32) {
      const float f = static_cast<float>(v[i]);
      std::memcpy(out.data() + 4 * i, &f, 4);
    } else {
      const uint16_t b = t == RowDType::kF16 ? floatToHalf(static_cast<float>(v[i]))
                                             : floatToBf16(static_cast<float>(v[i]));
      std::memcpy(out.data() + 2 * i, &b, 2);
    }
  }
  return out;
}

std::vector<double> unpack(RowDType t, const void* bytes, size_t n) {
  std::vector<double> out(n);
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < n; ++i) {
    if (t == RowDType::kF32) {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      out[i] = f;
    } else {
      uint16_t b;
      std::memcpy(&b, p + 2 * i, 2);
      out[i] = t == RowDType::kF16 ? halfToFloat(b) : bf16ToFloat(b);
    }
  }
  return out;
}

}  // namespace ktune::rowwise
