#include "templates/gemm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "base/format.h"
#include "templates/embedded.h"
#include "templates/gemm/kernel.h"

namespace ktune::gemm {

namespace {

using detail::KernelDesc;
using detail::transA;
using detail::transB;

const KernelDesc& desc(KernelKind k) {
  switch (k) {
    case KernelKind::kSkinny: return detail::skinnyKernel();
    case KernelKind::kMfma: return detail::mfmaKernel();
    case KernelKind::kWgmma: return detail::wgmmaKernel();
    case KernelKind::kTma: return detail::tmaKernel();
    case KernelKind::kDecode: return detail::decodeKernel();
    default: return detail::mmaKernel();
  }
}

constexpr KernelKind kAllKinds[] = {KernelKind::kMma,   KernelKind::kSkinny, KernelKind::kMfma,
                                    KernelKind::kWgmma, KernelKind::kTma,    KernelKind::kDecode};

double activate(double v, Activation a) {
  switch (a) {
    case Activation::kSilu: return v / (1.0 + std::exp(-v));
    case Activation::kGelu: return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    default: return v;
  }
}

// The kernel's source with its `#include "NAME"` lines replaced by the embedded files they name:
// "gemm_common.cuh" is templates/gemm/common.cuh, "gemm_hopper.cuh" templates/gemm/hopper.cuh (the
// sm_90 primitives of the tma and decode kinds), any other NAME a file of the kernel's own folder
// (expanded recursively). Other includes (the compilers' prelude.cuh) stay as they are.
std::string buildKernelSource(KernelKind k) {
  const std::string main = desc(k).source;
  const std::string dir = main.substr(0, main.rfind('/') + 1);
  return expandIncludes(templates::embeddedSource(main.c_str()), [&](std::string_view name) {
    const std::string file = name == "gemm_common.cuh"   ? "gemm/common.cuh"
                             : name == "gemm_hopper.cuh" ? "gemm/hopper.cuh"
                                                         : dir + std::string(name);
    return templates::embeddedSource(file.c_str());
  });
}

}  // namespace

namespace detail {

Status checkSplitSlices(const Config& c, const GemmShape& s, int64_t granule,
                        const std::string& suffix) {
  const int64_t split = knob(c, "SPLIT_K");
  if (split <= 1) return Status::Ok();
  const int64_t per = ceilDiv(ceilDiv(s.k, split), granule) * granule;
  if ((split - 1) * per < s.k) return Status::Ok();
  return Status::Unsupported("SPLIT_K=" + std::to_string(split) +
                             " leaves an empty K slice for K=" + std::to_string(s.k) + suffix);
}

Status needFastPath(const GemmShape& s, const char* kernel) {
  if (fastPathOk(s)) return Status::Ok();
  return Status::Unsupported(std::string(kernel) +
                             " GEMM needs 16-byte aligned A/B with lda % 8 == 0 and ldb % 8 == 0");
}

void splitScratch(const Config& c, const GemmShape& s, int64_t counters, LaunchPlan& p) {
  if (knob(c, "SPLIT_K") <= 1) return;
  p.counters = counters;
  p.workspace_bytes = s.m * s.n * 4;
}

void tiledPlan(const Config& c, const GemmShape& s, int64_t tiles, int64_t threads, LaunchPlan& p) {
  p.grid = Dim3{static_cast<unsigned>(tiles), 1u, static_cast<unsigned>(knob(c, "SPLIT_K"))};
  p.block = Dim3{static_cast<unsigned>(threads), 1u, 1u};
  splitScratch(c, s, tiles, p);
}

}  // namespace detail

namespace {
// The name of enumerator `v` from a table in enumerator order; "?" outside it.
template <class E, size_t N>
const char* nameIn(E v, const char* const (&names)[N]) {
  const auto i = static_cast<size_t>(v);
  return i < N ? names[i] : "?";
}
constexpr const char* kLayoutNames[] = {"NN", "NT", "TN", "TT"};
constexpr const char* kActivationNames[] = {"none", "silu", "gelu", "silu_mul"};
constexpr const char* kKindNames[] = {"mma", "skinny", "mfma", "wgmma", "tma", "decode"};
}  // namespace

const char* layoutName(Layout l) { return nameIn(l, kLayoutNames); }
const char* elemTypeName(ElemType t) {
  return t == ElemType::kF16 || t == ElemType::kBF16 || t == ElemType::kF32 || isFp8(t) ? dtypeName(t)
                                                                                      : "?";
}
const char* activationName(Activation a) { return nameIn(a, kActivationNames); }
const char* kernelKindName(KernelKind k) { return nameIn(k, kKindNames); }

Expected<KernelKind> parseKernelKind(const std::string& s) {
  for (KernelKind k : kAllKinds)
    if (s == kernelKindName(k)) return k;
  return Status::InvalidArgument("unknown GEMM kernel kind '" + s +
                                 "' (expected mma, skinny, mfma, wgmma, tma or decode)");
}

Expected<Layout> parseLayout(const std::string& s) {
  for (Layout l : {Layout::kNN, Layout::kNT, Layout::kTN, Layout::kTT})
    if (s == layoutName(l)) return l;
  return Status::InvalidArgument("unknown GEMM layout '" + s + "' (expected NN, NT, TN or TT)");
}
Expected<ElemType> parseElemType(const std::string& s) {
  for (ElemType t : {ElemType::kF16, ElemType::kBF16, ElemType::kF32, ElemType::kF8E4M3,
                     ElemType::kF8E5M2})
    if (s == elemTypeName(t)) return t;
  // The other spellings of the fp8 formats (fp8e4m3, float8_e4m3fn, ...).
  auto d = parseDType(s);
  if (d.ok() && isFp8(*d)) return *d;
  return Status::InvalidArgument("unknown GEMM element type '" + s +
                                 "' (expected f16, bf16, f32, f8e4m3 or f8e5m2)");
}
Expected<Activation> parseActivation(const std::string& s) {
  for (Activation a : {Activation::kNone, Activation::kSilu, Activation::kGelu, Activation::kSiluMul})
    if (s == activationName(a)) return a;
  return Status::InvalidArgument("unknown activation '" + s +
                                 "' (expected none, silu, gelu, silu_mul)");
}
int64_t elemBytes(ElemType t) { return static_cast<int64_t>(sizeOf(t)); }

GemmShape denseShape(Layout layout, ElemType ab, ElemType c, int64_t m, int64_t n, int64_t k) {
  GemmShape s;
  s.layout = layout;
  s.ab = ab;
  s.c = c;
  s.m = m;
  s.n = n;
  s.k = k;
  s.lda = storedColsA(s);
  s.ldb = storedColsB(s);
  s.ldc = n;
  return s;
}

int64_t outCols(const GemmShape& s) { return s.act == Activation::kSiluMul ? s.n / 2 : s.n; }

int64_t storedRowsA(const GemmShape& s) { return transA(s.layout) ? s.k : s.m; }
int64_t storedColsA(const GemmShape& s) { return transA(s.layout) ? s.m : s.k; }
int64_t storedRowsB(const GemmShape& s) { return transB(s.layout) ? s.n : s.k; }
int64_t storedColsB(const GemmShape& s) { return transB(s.layout) ? s.k : s.n; }

Status validate(const GemmShape& s) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (s.m <= 0 || s.n <= 0 || s.k <= 0)
    return Status::InvalidArgument("GEMM dims must be positive, got M=" + std::to_string(s.m) +
                                   " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k));
  if (s.m > kMax || s.n > kMax || s.k > kMax)
    return Status::InvalidArgument("GEMM dims must fit in int32 (M, N, K <= 2^31-1)");
  if (s.ab == ElemType::kF32)
    return Status::InvalidArgument("GEMM inputs must be f16 or bf16 (f32 inputs are not supported; "
                                   "convert A and B first)");
  if (s.ab != ElemType::kF16 && s.ab != ElemType::kBF16 && !isFp8(s.ab))
    return Status::InvalidArgument(std::string("GEMM inputs must be f16, bf16, f8e4m3 or f8e5m2, "
                                               "got ") + dtypeName(s.ab));
  if (s.c != ElemType::kF16 && s.c != ElemType::kBF16 && s.c != ElemType::kF32)
    return Status::InvalidArgument(std::string("GEMM output must be f16, bf16 or f32, got ") +
                                   dtypeName(s.c));
  if (s.lda < storedColsA(s))
    return Status::InvalidArgument("lda=" + std::to_string(s.lda) + " is shorter than a row of A (" +
                                   std::to_string(storedColsA(s)) + " for layout " +
                                   layoutName(s.layout) + ")");
  if (s.ldb < storedColsB(s))
    return Status::InvalidArgument("ldb=" + std::to_string(s.ldb) + " is shorter than a row of B (" +
                                   std::to_string(storedColsB(s)) + " for layout " +
                                   layoutName(s.layout) + ")");
  if (s.act == Activation::kSiluMul && s.n % 2 != 0)
    return Status::InvalidArgument("act silu_mul needs an even N (the [gate; up] weight has N/2 "
                                   "rows of each), got N=" + std::to_string(s.n));
  if (s.ldc < outCols(s))
    return Status::InvalidArgument("ldc=" + std::to_string(s.ldc) + " is shorter than a row of C (" +
                                   std::to_string(outCols(s)) + ")");
  if (!std::isfinite(s.alpha) || !std::isfinite(s.beta))
    return Status::InvalidArgument("alpha and beta must be finite");
  // Byte spans of A, B, C must fit comfortably in int64: derived sizes (snapshots of C, bounds
  // checks) would otherwise overflow, which is undefined behaviour. No real tensor is > 2^60 B.
  struct View {
    const char* name;
    int64_t rows, ld, cols, esize;
  };
  for (const View& v : {View{"A", storedRowsA(s), s.lda, storedColsA(s), elemBytes(s.ab)},
                        View{"B", storedRowsB(s), s.ldb, storedColsB(s), elemBytes(s.ab)},
                        View{"C", s.m, s.ldc, outCols(s), elemBytes(s.c)}}) {
    int64_t t = 0;
    if (__builtin_mul_overflow(v.rows - 1, v.ld, &t) || __builtin_add_overflow(t, v.cols, &t) ||
        __builtin_mul_overflow(t, v.esize, &t) || t > (int64_t(1) << 60))
      return Status::InvalidArgument(std::string(v.name) + " spans more than 2^60 bytes (" +
                                     std::to_string(v.rows) + " rows, leading dimension " +
                                     std::to_string(v.ld) + "): overflow; check the leading "
                                     "dimensions");
  }
  return Status::Ok();
}

bool fastPathOk(const GemmShape& s) {
  const int64_t eb = elemBytes(s.ab);
  return s.aligned16 && (s.lda * eb) % 16 == 0 && (s.ldb * eb) % 16 == 0;
}

std::string shapeKey(const GemmShape& s) {
  std::string k = std::string(layoutName(s.layout)) + ":" + elemTypeName(s.ab) + ">" +
                  elemTypeName(s.c) + ":m=" + std::to_string(s.m) + ",n=" + std::to_string(s.n) +
                  ",k=" + std::to_string(s.k) + ":lda=" + std::to_string(s.lda) +
                  ",ldb=" + std::to_string(s.ldb) + ",ldc=" + std::to_string(s.ldc) +
                  ":bias=" + (s.has_bias ? "1" : "0") + ":act=" + activationName(s.act) +
                  ":beta=" + (s.beta != 0.0f ? "1" : "0") + ":a16=" + (s.aligned16 ? "1" : "0");
  return k;
}

const char* sourceFile(KernelKind k) { return desc(k).source; }
const char* entryName(KernelKind k) { return desc(k).entry; }

std::string_view kernelSource(KernelKind k) {
  // Built once per kind (thread-safe static initialisation), then shared.
  static const std::string kSources[] = {buildKernelSource(KernelKind::kMma),
                                         buildKernelSource(KernelKind::kSkinny),
                                         buildKernelSource(KernelKind::kMfma),
                                         buildKernelSource(KernelKind::kWgmma),
                                         buildKernelSource(KernelKind::kTma),
                                         buildKernelSource(KernelKind::kDecode)};
  return kSources[static_cast<int>(k)];
}

std::vector<KernelKind> kernelsForBackend(const std::string& backend) {
  std::vector<KernelKind> out;
  for (KernelKind k : kAllKinds)
    if (!desc(k).needs_sm90a && backend == desc(k).backend) out.push_back(k);
  return out;
}

std::vector<KernelKind> kernelsForArch(const std::string& arch) {
  const Arch a(arch);
  std::vector<KernelKind> out;
  for (KernelKind k : kAllKinds) {
    const KernelDesc& d = desc(k);
    if ((std::string_view(d.backend) == "hip") != a.isAmd()) continue;
    if (d.needs_sm90a && arch != "sm_90a") continue;
    out.push_back(k);
  }
  return out;
}

const ConfigSpace& configSpace(KernelKind k) {
  static const ConfigSpace kSpaces[] = {
      desc(KernelKind::kMma).build_space(), desc(KernelKind::kSkinny).build_space(),
      desc(KernelKind::kMfma).build_space(), desc(KernelKind::kWgmma).build_space(),
      desc(KernelKind::kTma).build_space(), desc(KernelKind::kDecode).build_space()};
  return kSpaces[static_cast<int>(desc(k).kind)];
}

int64_t sharedBytes(KernelKind k, const Config& c) { return desc(k).shared_bytes(c); }

int64_t launchSharedBytes(KernelKind k, const Config& c) {
  return desc(k).static_shared ? 0 : desc(k).shared_bytes(c);
}

Status applicable(KernelKind k, const Config& c, const GemmShape& s) {
  KTUNE_RETURN_IF_ERROR(validate(s));
  if (s.act == Activation::kSiluMul && k != KernelKind::kDecode && k != KernelKind::kTma)
    return Status::Unsupported(std::string("act silu_mul (gate/up pair) runs on the decode kernel "
                                           "(layout NT, M <= 128) and the tma kernel (K-major B) "
                                           "only, not on ") +
                               kernelKindName(k));
  // FP8 inputs have one kernel: the TMA kernel with the fp8 wgmma (tma.cuh, KT_FP8).
  if (isFp8(s.ab) && k != KernelKind::kTma)
    return Status::Unsupported(std::string("fp8 inputs run on the tma kernel only (sm_90a, layout "
                                           "NT), not on ") + kernelKindName(k));
  return desc(k).applicable(c, s);
}

std::vector<std::pair<std::string, std::string>> defines(KernelKind k, const Config& c,
                                                         const GemmShape& s) {
  std::vector<std::pair<std::string, std::string>> d;
  for (const auto& [name, value] : c.params())
    if (!isHostOnlyKnob(k, name)) d.emplace_back(name, paramValueToString(value));
  d.emplace_back("LAYOUT", std::to_string(static_cast<int>(s.layout)));
  d.emplace_back("DTYPE_AB", std::to_string(static_cast<int>(s.ab)));
  d.emplace_back("DTYPE_C", std::to_string(static_cast<int>(s.c)));
  d.emplace_back("HAS_BIAS", s.has_bias ? "1" : "0");
  d.emplace_back("ACT", std::to_string(static_cast<int>(s.act)));
  if (desc(k).extra_defines) desc(k).extra_defines(c, s, d);
  return d;
}

Expected<LaunchPlan> launchPlan(KernelKind k, const Config& c, const GemmShape& s,
                                const DeviceInfo& dev) {
  KTUNE_RETURN_IF_ERROR(configSpace(k).validate(c));
  KTUNE_RETURN_IF_ERROR(applicable(k, c, s));
  const KernelDesc& d = desc(k);
  LaunchPlan p;
  const int64_t need = d.shared_bytes(c);
  p.shared_bytes = launchSharedBytes(k, c);
  const int64_t limit = d.static_shared ? dev.shared_per_block
                                        : std::max(dev.shared_per_block_optin, dev.shared_per_block);
  if (limit > 0 && need > limit)
    return Status::OutOfResources("config " + c.toString() + " needs " +
                                  std::to_string(need) + " B shared memory > " +
                                  std::to_string(limit) + " B on " + dev.name);
  KTUNE_RETURN_IF_ERROR(d.plan(c, s, dev, p));
  return p;
}

std::vector<double> reference(const GemmShape& s, const float* a, const float* b,
                              const float* c_in, const float* bias) {
  const bool ta = transA(s.layout), tb = transB(s.layout);
  std::vector<double> acc(static_cast<size_t>(s.m * s.n));
  std::vector<double> brow(static_cast<size_t>(s.k));
  for (int64_t j = 0; j < s.n; ++j) {
    for (int64_t kk = 0; kk < s.k; ++kk) brow[kk] = tb ? b[j * s.ldb + kk] : b[kk * s.ldb + j];
    for (int64_t i = 0; i < s.m; ++i) {
      double v = 0;
      for (int64_t kk = 0; kk < s.k; ++kk)
        v += static_cast<double>(ta ? a[kk * s.lda + i] : a[i * s.lda + kk]) * brow[kk];
      acc[i * s.n + j] = s.alpha * v + (s.has_bias && bias ? bias[j] : 0.0);
    }
  }
  const int64_t cols = outCols(s);
  std::vector<double> out(static_cast<size_t>(s.m * cols));
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const double c = s.beta != 0.0f && c_in ? s.beta * static_cast<double>(c_in[i * s.ldc + j]) : 0;
      const double v = acc[i * s.n + j];
      out[i * cols + j] = s.act == Activation::kSiluMul
                              ? activate(v, Activation::kSilu) * acc[i * s.n + cols + j] + c
                              : activate(v + c, s.act);
    }
  return out;
}

}  // namespace ktune::gemm
