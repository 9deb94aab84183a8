// Row-wise kernels on a real GPU: every config of the RMSNorm and SiLU·Mul spaces (bf16 with
// every feature on; fp32/fp16 and the other RMSNorm variants over the whole space too, on the
// shapes where their defines differ) against the float64 references, on odd shapes, random
// data, outputs poisoned with NaN first. Plus runtime-misaligned pointers (scalar path) and the
// copy peer. Needs only the runtime, the compiler and the templates (not the tuning engine).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "compiler/compiler.h"
#include "runtime/backend.h"
#include "templates/rowwise.h"

namespace ktune::rowwise {
namespace {

using Defines = std::vector<std::pair<std::string, std::string>>;

struct Gpu {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Compiler> compiler;
  DeviceInfo dev;
  std::string skip;  // non-empty: why there is no GPU
};

Gpu& gpu() {
  static Gpu* g = [] {
    auto* g = new Gpu;
    auto b = openBackend("auto");
    if (!b.ok()) {
      g->skip = b.status().toString();
      return g;
    }
    auto devs = (*b)->devices();
    if (!devs.ok() || devs->empty()) {
      g->skip = devs.ok() ? "no device" : devs.status().toString();
      return g;
    }
    if (auto st = (*b)->setDevice(0); !st.ok()) {
      g->skip = st.toString();
      return g;
    }
    g->dev = (*devs)[0];
    auto c = compilerForArch(g->dev.arch);
    if (!c.ok()) {
      g->skip = "no compiler for " + g->dev.arch + ": " + c.status().toString();
      return g;
    }
    g->backend = std::move(*b);
    g->compiler = std::move(*c);
    return g;
  }();
  return *g;
}

#define REQUIRE_GPU()                                              \
  do {                                                             \
    if (!gpu().skip.empty()) GTEST_SKIP() << "no GPU: " << gpu().skip; \
    ASSERT_TRUE(gpu().backend->setDevice(0).ok());                 \
  } while (0)

// Compiled + loaded kernels, keyed by (source, defines); compiled in parallel.
class KernelCache {
 public:
  struct Item {
    std::string source, entry, what;
    Defines defines;
  };
  // Compiles everything not yet cached, on all hardware threads.
  void compileAll(const std::vector<Item>& items) {
    std::vector<const Item*> todo;
    for (const auto& it : items) {
      if (!fns_.count(keyOf(it))) todo.push_back(&it);
    }
    std::vector<Expected<CodeObject>> out(todo.size(), Status::Internal("not compiled"));
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i; (i = next++) < todo.size();) {
        CompileRequest r;
        r.source = todo[i]->source;
        r.source_name = todo[i]->what;
        r.entry = todo[i]->entry;
        r.defines = todo[i]->defines;
        r.arch = gpu().dev.arch;
        out[i] = gpu().compiler->compile(r);
      }
    };
    const unsigned n = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < n; ++t) ts.emplace_back(worker);
    for (auto& t : ts) t.join();
    for (size_t i = 0; i < todo.size(); ++i) {
      ASSERT_TRUE(out[i].ok()) << todo[i]->what << ": " << out[i].status().toString();
      auto m = gpu().backend->loadModule(out[i]->binary);
      ASSERT_TRUE(m.ok()) << m.status().toString();
      auto f = gpu().backend->getFunction(*m, out[i]->lowered_entry.empty() ? todo[i]->entry
                                                                           : out[i]->lowered_entry);
      ASSERT_TRUE(f.ok()) << f.status().toString();
      fns_[keyOf(*todo[i])] = *f;
    }
  }
  FunctionHandle get(const Item& it) const {
    auto f = fns_.find(keyOf(it));
    return f == fns_.end() ? FunctionHandle{} : f->second;
  }

 private:
  static std::string keyOf(const Item& it) {
    std::string k = it.entry;
    for (const auto& [a, b] : it.defines) k += "|" + a + "=" + b;
    return k;
  }
  std::map<std::string, FunctionHandle> fns_;
};

KernelCache& cache() {
  static KernelCache c;
  return c;
}

std::vector<double> randomValues(size_t n, double lo, double hi, uint64_t seed, RowDType t) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = roundTo(t, u(rng));
  return v;
}

double epsOf(RowDType t) {
  return t == RowDType::kF32 ? std::ldexp(1.0, -23) : t == RowDType::kF16 ? std::ldexp(1.0, -10)
                                                                          : std::ldexp(1.0, -7);
}

// Device buffer with RAII free.
struct Buf {
  DevicePtr p = 0;
  size_t bytes = 0;
  explicit Buf(size_t n) : bytes(n) {
    auto r = gpu().backend->alloc(std::max<size_t>(n, 16));
    if (r.ok()) p = *r;
  }
  ~Buf() {
    if (p) (void)gpu().backend->free(p);
  }
};

// Compares n elements; returns "" or a description of the first mismatch.
std::string compare(RowDType t, const std::vector<unsigned char>& got, const std::vector<double>& ref,
                    double tol_scale) {
  const auto g = unpack(t, got.data(), ref.size());
  const double rtol = 2 * epsOf(t) + 1e-5;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(g[i] - ref[i]);
    if (!(err <= rtol * (std::fabs(ref[i]) + tol_scale))) {
      std::ostringstream os;
      os << "element " << i << ": got " << g[i] << ", want " << ref[i] << " (|err| " << err << ")";
      return os.str();
    }
  }
  return "";
}

struct Shape {
  int64_t rows, cols;
};
const Shape kShapes[] = {{1, 1}, {3, 7}, {17, 1000}, {33, 4097}, {128, 8192}};

// ------------------------------------------------------------------------------------------
// RMSNorm
// ------------------------------------------------------------------------------------------
struct RmsCase {
  RmsNormProblem p;
  Config c;
  int misalign_elems = 0;  // offset every pointer by this many elements (runtime scalar path)
};

KernelCache::Item rmsItem(const RmsCase& k) {
  RmsNormProblem q = k.p;
  return {std::string(rmsNormSource()), kRmsNormEntry,
          "rmsnorm " + std::string(name(q.dtype)) + " " + k.c.toString(), rmsNormDefines(k.c, q)};
}

// Runs all cases of one problem (same buffers); returns failures.
void runRms(const RmsNormProblem& p, const std::vector<RmsCase>& cases, int misalign) {
  auto& B = *gpu().backend;
  const size_t es = sizeOf(p.dtype);
  const size_t n = size_t(p.rows * p.cols);
  const uint64_t seed = uint64_t(p.rows * 131 + p.cols);
  auto x = randomValues(n, -2, 2, seed, p.dtype);
  auto r = randomValues(n, -2, 2, seed + 1, p.dtype);
  auto w = randomValues(size_t(p.cols), 0.5, 1.5, seed + 2, p.dtype);
  std::vector<double> y_ref(n), ro_ref(n);
  rmsNormReference(p, x.data(), w.data(), r.data(), y_ref.data(), ro_ref.data());
  const size_t off = size_t(misalign) * es;
  Buf bx(n * es + off), br(n * es + off), bw(size_t(p.cols) * es + off), by(n * es + off),
      bro(n * es + off);
  ASSERT_TRUE(bx.p && br.p && bw.p && by.p && bro.p) << "device alloc failed";
  ASSERT_TRUE(B.copyToDevice(bx.p + off, pack(p.dtype, x).data(), n * es).ok());
  ASSERT_TRUE(B.copyToDevice(br.p + off, pack(p.dtype, r).data(), n * es).ok());
  ASSERT_TRUE(B.copyToDevice(bw.p + off, pack(p.dtype, w).data(), size_t(p.cols) * es).ok());
  std::vector<unsigned char> got(n * es);
  KernelArgs args;
  for (const auto& k : cases) {
    ASSERT_TRUE(B.memset8(by.p, 0xff, by.bytes).ok());  // NaN in every dtype
    ASSERT_TRUE(B.memset8(bro.p, 0xff, bro.bytes).ok());
    auto f = cache().get(rmsItem(k));
    ASSERT_NE(f.p, nullptr);
    const auto l = rmsNormLaunch(k.c, p, gpu().dev);
    args.clear();
    const DevicePtr y = by.p + off, xx = bx.p + off, ww = bw.p + off, rr = br.p + off,
                    ro = bro.p + off;
    const long long rows = p.rows, cols = p.cols;
    const auto st = kernelStrides(p);
    args.add(y).add(xx).add(ww).add(rr).add(ro).add(rows).add(cols).add((long long)st.x)
        .add((long long)st.y).add((long long)st.r).add((long long)st.ro).add(p.eps);
    ASSERT_TRUE(B.launch(f, l.grid, l.block, l.shared, args.data()).ok());
    ASSERT_TRUE(B.synchronize().ok()) << k.c.toString();
    const std::string what = std::string(name(p.dtype)) + " " + std::to_string(p.rows) + "x" +
                             std::to_string(p.cols) + " w=" + std::to_string(p.has_weight) +
                             " r=" + std::to_string(p.has_residual) + " mis=" +
                             std::to_string(misalign) + " " + k.c.toString();
    ASSERT_TRUE(B.copyToHost(got.data(), y, n * es).ok());
    // y is O(1): scale the tolerance by 1 so tiny outputs are compared absolutely.
    std::string bad = compare(p.dtype, got, y_ref, 1.0);
    EXPECT_EQ(bad, "") << "y: " << what;
    if (p.has_residual) {
      ASSERT_TRUE(B.copyToHost(got.data(), ro, n * es).ok());
      bad = compare(p.dtype, got, ro_ref, 0.0);
      EXPECT_EQ(bad, "") << "r_out: " << what;
    }
  }
}

void rmsSweep(RowDType dt, bool weight, bool residual, bool all_configs) {
  const auto lim = limitsFor(gpu().dev);
  auto configs = rmsNormSpace(dt, lim).enumerate(lim.backend).accepted;
  if (!all_configs) {
    // A spread: the default, the extremes of THREADS and ROWS_PER_BLOCK, both VECs.
    std::vector<Config> pick = {rmsNormDefaultConfig(dt, lim)};
    for (size_t i = 0; i < configs.size(); i += 7) pick.push_back(configs[i]);
    configs = pick;
  }
  for (const auto& s : kShapes) {
    RmsNormProblem p;
    p.dtype = dt;
    p.rows = s.rows;
    p.cols = s.cols;
    p.has_weight = weight;
    p.has_residual = residual;
    p.eps = 1e-5f;
    std::vector<RmsCase> cases;
    std::vector<KernelCache::Item> items;
    for (const auto& c : configs) {
      cases.push_back({p, c, 0});
      items.push_back(rmsItem(cases.back()));
    }
    cache().compileAll(items);
    if (::testing::Test::HasFatalFailure()) return;
    runRms(p, cases, 0);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(RowwiseGpu, RmsNormBf16EveryConfigWeightResidual) {
  REQUIRE_GPU();
  rmsSweep(RowDType::kBF16, true, true, true);
}
TEST(RowwiseGpu, RmsNormBf16EveryConfigWeightOnly) {
  REQUIRE_GPU();
  rmsSweep(RowDType::kBF16, true, false, true);
}
TEST(RowwiseGpu, RmsNormF32EveryConfig) {
  REQUIRE_GPU();
  rmsSweep(RowDType::kF32, true, true, true);
}
TEST(RowwiseGpu, RmsNormF16EveryConfig) {
  REQUIRE_GPU();
  rmsSweep(RowDType::kF16, true, false, true);
}
TEST(RowwiseGpu, RmsNormNoWeightVariants) {
  REQUIRE_GPU();
  rmsSweep(RowDType::kBF16, false, false, false);
  rmsSweep(RowDType::kF16, false, true, false);
}

// Pointers offset by one element although the kernel was compiled with 16-byte vectors: every
// row must take the runtime scalar path and still be right.
TEST(RowwiseGpu, RmsNormMisalignedPointersTakeScalarPath) {
  REQUIRE_GPU();
  const auto lim = limitsFor(gpu().dev);
  for (auto dt : {RowDType::kBF16, RowDType::kF32}) {
    RmsNormProblem p;
    p.dtype = dt;
    p.rows = 33;
    p.cols = 4096;
    p.has_residual = true;
    std::vector<RmsCase> cases;
    std::vector<KernelCache::Item> items;
    for (int64_t t : {lim.warp_size * 2, lim.warp_size * 8}) {
      Config c = rmsNormDefaultConfig(dt, lim);
      c.set("THREADS", t);
      cases.push_back({p, c, 1});
      items.push_back(rmsItem(cases.back()));
    }
    cache().compileAll(items);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    runRms(p, cases, 1);
  }
}

// ------------------------------------------------------------------------------------------
// SiLU·Mul
// ------------------------------------------------------------------------------------------
KernelCache::Item siluItem(const SiluMulProblem& p, const Config& c) {
  return {std::string(siluMulSource()), kSiluMulEntry,
          "silu_mul " + std::string(name(p.dtype)) + " " + c.toString(), siluMulDefines(c, p)};
}

void runSilu(const SiluMulProblem& p, const std::vector<Config>& configs, int misalign) {
  auto& B = *gpu().backend;
  const size_t es = sizeOf(p.dtype);
  const size_t nx = size_t(p.rows * 2 * p.d), no = size_t(p.rows * p.d);
  auto x = randomValues(nx, -4, 4, uint64_t(p.rows * 7 + p.d), p.dtype);
  std::vector<double> ref(no);
  siluMulReference(p, x.data(), ref.data());
  const size_t off = size_t(misalign) * es;
  Buf bx(nx * es + off), bo(no * es + off);
  ASSERT_TRUE(bx.p && bo.p);
  ASSERT_TRUE(B.copyToDevice(bx.p + off, pack(p.dtype, x).data(), nx * es).ok());
  std::vector<unsigned char> got(no * es);
  KernelArgs args;
  for (const auto& c : configs) {
    ASSERT_TRUE(B.memset8(bo.p, 0xff, bo.bytes).ok());
    auto f = cache().get(siluItem(p, c));
    ASSERT_NE(f.p, nullptr);
    const auto l = siluMulLaunch(c, p, gpu().dev);
    const long long rows = p.rows, d = p.d;
    const auto st = kernelStrides(p);
    args.clear();
    args.add(DevicePtr(bo.p + off)).add(DevicePtr(bx.p + off)).add(rows).add(d)
        .add((long long)st.x).add((long long)st.out);
    ASSERT_TRUE(B.launch(f, l.grid, l.block, l.shared, args.data()).ok());
    ASSERT_TRUE(B.synchronize().ok()) << c.toString();
    ASSERT_TRUE(B.copyToHost(got.data(), bo.p + off, no * es).ok());
    EXPECT_EQ(compare(p.dtype, got, ref, 1.0), "")
        << name(p.dtype) << " " << p.rows << "x" << p.d << " mis=" << misalign << " "
        << c.toString();
  }
}

void siluSweep(RowDType dt) {
  const auto lim = limitsFor(gpu().dev);
  const auto configs = siluMulSpace(dt, lim).enumerate(lim.backend).accepted;
  // d = cols of the odd shapes; x is [rows, 2d].
  for (const auto& s : kShapes) {
    SiluMulProblem p;
    p.dtype = dt;
    p.rows = s.rows;
    p.d = s.cols;
    std::vector<KernelCache::Item> items;
    for (const auto& c : configs) items.push_back(siluItem(p, c));
    cache().compileAll(items);
    if (::testing::Test::HasFatalFailure()) return;
    runSilu(p, configs, 0);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(RowwiseGpu, SiluMulBf16EveryConfig) {
  REQUIRE_GPU();
  siluSweep(RowDType::kBF16);
}
TEST(RowwiseGpu, SiluMulF32EveryConfig) {
  REQUIRE_GPU();
  siluSweep(RowDType::kF32);
}
TEST(RowwiseGpu, SiluMulF16EveryConfig) {
  REQUIRE_GPU();
  siluSweep(RowDType::kF16);
}

TEST(RowwiseGpu, SiluMulMisalignedPointersTakeScalarPath) {
  REQUIRE_GPU();
  const auto lim = limitsFor(gpu().dev);
  SiluMulProblem p;
  p.rows = 9;
  p.d = 1024;
  const std::vector<Config> cs = {siluMulDefaultConfig(p.dtype, lim),
                                  Config{{"VEC", 8}, {"THREADS", 128}, {"UNROLL", 1},
                                         {"ROWS_PER_BLOCK", 4}}};
  std::vector<KernelCache::Item> items;
  for (const auto& c : cs) items.push_back(siluItem(p, c));
  cache().compileAll(items);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  runSilu(p, cs, 1);
}

// ------------------------------------------------------------------------------------------
// Copy peer
// ------------------------------------------------------------------------------------------
TEST(RowwiseGpu, CopyEveryConfigOddSizes) {
  REQUIRE_GPU();
  auto& B = *gpu().backend;
  const auto lim = limitsFor(gpu().dev);
  const auto configs = copySpace(lim).enumerate(lim.backend).accepted;
  std::vector<KernelCache::Item> items;
  for (const auto& c : configs)
    items.push_back({std::string(copySource()), kCopyEntry, "copy " + c.toString(), copyDefines(c)});
  cache().compileAll(items);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  for (int64_t n : {int64_t(1), int64_t(17), int64_t(4097), int64_t(1) << 20, (int64_t(3) << 20) + 5}) {
    std::vector<unsigned char> src(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    std::mt19937 rng(static_cast<unsigned>(n));
    for (auto& b : src) b = static_cast<unsigned char>(rng());
    Buf bs(size_t(n) + 1), bd(size_t(n) + 1);
    for (size_t i = 0; i < configs.size(); ++i) {
      for (int mis : {0, 1}) {
        ASSERT_TRUE(B.memset8(bd.p, 0xa5, bd.bytes).ok());
        ASSERT_TRUE(B.copyToDevice(bs.p + mis, src.data(), size_t(n)).ok());
        auto l = copyLaunch(configs[i], n, gpu().dev);
        KernelArgs a;
        a.add(DevicePtr(bd.p + mis)).add(DevicePtr(bs.p + mis)).add((long long)n);
        ASSERT_TRUE(B.launch(cache().get(items[i]), l.grid, l.block, 0, a.data()).ok());
        ASSERT_TRUE(B.synchronize().ok());
        ASSERT_TRUE(B.copyToHost(got.data(), bd.p + mis, size_t(n)).ok());
        EXPECT_TRUE(got == src) << "n=" << n << " mis=" << mis << " " << configs[i].toString();
      }
    }
  }
}

}  // namespace
}  // namespace ktune::rowwise

