// The GEMM op's per-call host work, cached: TMA tensor maps keyed by pointer (TensorMapCache) and
// cuBLASLt descriptors keyed by problem (CublasLt::run), the latter against a fake libcublasLt
// built at test time (CI has no GPU). The fake counts descriptor and handle calls, so the tests
// also show that every cublasLtCreate is matched by a cublasLtDestroy.
//
// The fake is C source compiled with the system C compiler into <tmp>/libcublasLt.so.13 (soname
// libcublasLt.so.13) and dlopen'ed by absolute path first; CublasLt::open's dlopen by name then
// finds that already-loaded object by soname (as runtime_fake_cuda_test does for libcuda).
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <string>

#include "ops/gemm_host_cache.h"
#include "ops/vendor/cublaslt.h"
#include "base/fs.h"
#include "base/subprocess.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

TensorMap2DDesc desc(DevicePtr base, uint64_t rows = 128) {
  TensorMap2DDesc d;
  d.base = base;
  d.rows = rows;
  d.cols = 64;
  d.row_stride_bytes = 128;
  return d;
}

struct CountingEncoder {
  int calls = 0;
  bool fail_base_7 = false;
  TensorMapCache::Encode fn() {
    return [this](const TensorMap2DDesc& d) -> Expected<TensorMap> {
      ++calls;
      if (fail_base_7 && d.base == 7) return Status::InvalidArgument("unaligned");
      TensorMap m;
      m.opaque[0] = d.base;
      m.opaque[1] = d.rows;
      return m;
    };
  }
};

TEST(TensorMapCache, EncodesEachPointerOnce) {
  TensorMapCache cache(8);
  CountingEncoder enc;
  const gemm::TmaDescriptors d1{desc(0x1000), desc(0x2000), desc(0x3000)};
  const gemm::TmaDescriptors d2{desc(0x1100), desc(0x2100), desc(0x3100)};
  auto m1 = cache.get(d1, enc.fn());
  EXPECT_EQ(enc.calls, 3);
  EXPECT_TRUE(m1.a_ok && m1.b_ok && m1.c_ok);
  EXPECT_EQ(m1.b.opaque[0], 0x2000u);
  auto m2 = cache.get(d2, enc.fn());
  EXPECT_EQ(m2.a.opaque[0], 0x1100u);
  // Alternating pointers (a rotating caller): no more encodings.
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(cache.get(i % 2 ? d2 : d1, enc.fn()).c.opaque[0], i % 2 ? 0x3100u : 0x3000u);
  }
  EXPECT_EQ(enc.calls, 6);
  EXPECT_EQ(cache.encodes(), 6);
  // Same pointer, other shape: a different map.
  const gemm::TmaDescriptors d3{desc(0x1000, 256), desc(0x2000), desc(0x3000)};
  EXPECT_EQ(cache.get(d3, enc.fn()).a.opaque[1], 256u);
  EXPECT_EQ(enc.calls, 9);
}

TEST(TensorMapCache, FailuresAreCachedAsNotOkAndTheOldestIsEvicted) {
  TensorMapCache cache(2);
  CountingEncoder enc;
  enc.fail_base_7 = true;
  const gemm::TmaDescriptors bad{desc(7), desc(0x2000), desc(0x3000)};
  auto m = cache.get(bad, enc.fn());
  EXPECT_FALSE(m.a_ok);
  EXPECT_TRUE(m.b_ok);
  EXPECT_EQ(m.a.opaque[0], 0u);
  (void)cache.get(bad, enc.fn());
  EXPECT_EQ(enc.calls, 3);
  (void)cache.get({desc(0x10), desc(0x20), desc(0x30)}, enc.fn());
  (void)cache.get({desc(0x40), desc(0x50), desc(0x60)}, enc.fn());
  EXPECT_EQ(cache.size(), 2u);
  (void)cache.get(bad, enc.fn());  // evicted: encoded again
  EXPECT_EQ(enc.calls, 12);
}

DeviceInfo hopper() {
  DeviceInfo d;
  d.vendor = Vendor::kNvidia;
  d.arch = "sm_90a";
  d.shared_per_block = 48 * 1024;
  d.shared_per_block_optin = 227 * 1024;
  d.multiprocessors = 132;
  return d;
}

// The op's split-K scratch comes from each config's launch rule (issue 32): before, the op chose
// it by kind (SPLIT_K > 1, "decode", "tma"), so a decode config that cuts no tile still got an
// M x N workspace and the TMA split tail's slots were sized for one block per SM, not for the
// plan's grid. The rule is asked once per (config, problem).
TEST(ScratchPlanCache, AsksTheLaunchRuleOncePerConfigAndProblem) {
  const DeviceInfo dev = hopper();
  int calls = 0;
  const ScratchPlanCache::PlanFn plan = [&](const Config& c, const gemm::GemmShape& s) {
    ++calls;
    auto kind = gemm::parseKernelKind(c.getStr("KIND"));
    Config knobs;
    for (const auto& [n, v] : c.params())
      if (n != "KIND") knobs.set(n, v);
    return kind.ok() ? gemm::launchPlan(*kind, knobs, s, dev) : Expected<gemm::LaunchPlan>(kind.status());
  };
  ScratchPlanCache cache;
  const auto s = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16,
                                  16, 4096, 4096);
  Config streamk{{"KIND", std::string("decode")}, {"DC_WG", int64_t{0}}, {"DC_WARPS", int64_t{8}},
                 {"DC_NT", int64_t{1}},  {"DC_MT", int64_t{2}}, {"DC_U", int64_t{2}},
                 {"DC_DEPTH", int64_t{2}}, {"DC_PF", int64_t{1}}, {"DC_XR", int64_t{1}},
                 {"DC_GRID", int64_t{2}}};
  auto a = cache.get(streamk, s, plan);
  ASSERT_TRUE(a.ok()) << a.status().toString();
  EXPECT_EQ(a->workspace_bytes, 16 * 4096 * 4);
  EXPECT_EQ(a->counters, 4096 / 16);
  ASSERT_TRUE(cache.get(streamk, s, plan).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(cache.plans(), 1);
  // One block per tile over all of K: nothing to reduce, no scratch.
  Config whole = streamk;
  whole.set("DC_GRID", int64_t{0});
  auto b = cache.get(whole, s, plan);
  ASSERT_TRUE(b.ok()) << b.status().toString();
  EXPECT_EQ(b->workspace_bytes, 0);
  EXPECT_EQ(b->counters, 0);
  // Another problem is another entry.
  gemm::GemmShape s2 = s;
  s2.n = 8192;
  s2.ldc = 8192;
  auto c = cache.get(streamk, s2, plan);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->workspace_bytes, 16 * 8192 * 4);
  EXPECT_EQ(calls, 3);
  // The TMA kernel's split tail: one slot per block of the plan's grid (here 2 tiles x SPLIT_K 4
  // = 8 blocks), not one per SM.
  Config tma{{"KIND", std::string("tma")}, {"BLOCK_N", int64_t{128}}, {"CONSUMERS", int64_t{1}},
             {"WG_M", int64_t{1}},          {"NUM_STAGES", int64_t{4}}, {"GROUP_M", int64_t{8}},
             {"CLUSTER_M", int64_t{1}},     {"EPI_TMA", int64_t{1}},    {"SPLIT_K", int64_t{4}},
             {"PINGPONG", int64_t{0}}};
  const auto small = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16,
                                      gemm::ElemType::kBF16, 64, 256, 4096);
  auto t = cache.get(tma, small, plan);
  ASSERT_TRUE(t.ok()) << t.status().toString();
  const gemm::TmaSplitScratch want = gemm::tmaSplitScratch(tma, 8);
  EXPECT_EQ(t->workspace_bytes, want.workspace_bytes);
  EXPECT_EQ(t->counters, want.counters);
  // A refused plan is the caller's error, and not cached.
  const auto big = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16,
                                    gemm::ElemType::kBF16, 200, 4096, 4096);
  EXPECT_EQ(cache.get(streamk, big, plan).status().code(), Code::kUnsupported);
  EXPECT_EQ(cache.get(streamk, big, plan).status().code(), Code::kUnsupported);
  EXPECT_EQ(calls, 6);
}

constexpr const char* kFakeLt = R"C(
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
int fake_creates = 0, fake_destroys = 0, fake_desc_creates = 0, fake_desc_destroys = 0;
int fake_layout_creates = 0, fake_layout_destroys = 0, fake_matmuls = 0;
const void* fake_last_bias = 0;
typedef struct { uint64_t data[8]; } Algo;
typedef struct { Algo algo; size_t ws; int state; float waves; int reserved[4]; } Result;
int cublasLtCreate(void** h) { *h = malloc(8); ++fake_creates; return 0; }
int cublasLtDestroy(void* h) { free(h); ++fake_destroys; return 0; }
size_t cublasLtGetVersion(void) { return 130000; }
int cublasLtMatmulDescCreate(void** d, int c, int s) { (void)c; (void)s; *d = calloc(1, 64); ++fake_desc_creates; return 0; }
int cublasLtMatmulDescDestroy(void* d) { free(d); ++fake_desc_destroys; return 0; }
int cublasLtMatmulDescSetAttribute(void* d, int a, const void* v, size_t n) {
  if (a == 8 && n == sizeof(void*)) memcpy(d, v, n);
  return 0;
}
int cublasLtMatrixLayoutCreate(void** l, int t, uint64_t r, uint64_t c, int64_t ld) {
  (void)t; (void)r; (void)c; (void)ld; *l = malloc(8); ++fake_layout_creates; return 0;
}
int cublasLtMatrixLayoutDestroy(void* l) { free(l); ++fake_layout_destroys; return 0; }
int cublasLtMatmulPreferenceCreate(void** p) { *p = malloc(8); return 0; }
int cublasLtMatmulPreferenceDestroy(void* p) { free(p); return 0; }
int cublasLtMatmulPreferenceSetAttribute(void* p, int a, const void* v, size_t n) { (void)p; (void)a; (void)v; (void)n; return 0; }
int cublasLtMatmulAlgoGetHeuristic(void* h, void* op, void* a, void* b, void* c, void* d, void* pref,
                                   int want, Result* res, int* found) {
  (void)h; (void)op; (void)a; (void)b; (void)c; (void)d; (void)pref;
  memset(res, 0, sizeof(Result) * (size_t)want);
  *found = want < 2 ? want : 2;
  res[0].algo.data[0] = 11; if (*found > 1) res[1].algo.data[0] = 22;
  return 0;
}
int cublasLtMatmul(void* h, void* op, const void* alpha, const void* A, void* la, const void* B,
                   void* lb, const void* beta, const void* C, void* lc, void* D, void* ld,
                   const Algo* algo, void* ws, size_t wss, void* stream) {
  (void)h; (void)alpha; (void)A; (void)la; (void)B; (void)lb; (void)beta; (void)C; (void)lc;
  (void)D; (void)ld; (void)algo; (void)ws; (void)wss; (void)stream;
  memcpy(&fake_last_bias, op, sizeof(void*));
  ++fake_matmuls;
  return 0;
}
)C";

class FakeCublasLtTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string cc = findProgram("cc");
    if (cc.empty()) cc = findProgram("gcc");
    if (cc.empty()) {
      skip_reason_ = "no C compiler (cc/gcc) to build the fake libcublasLt";
      return;
    }
    char tmpl[] = "/tmp/ktune-fakelt-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_TRUE(writeFileAtomic(dir_ + "/fake_lt.c", kFakeLt).ok());
    auto r = runProcess({cc, "-shared", "-fPIC", "-O1", "-Wl,-soname,libcublasLt.so.13", "-o",
                         dir_ + "/libcublasLt.so.13", dir_ + "/fake_lt.c"},
                        "", 60000);
    ASSERT_TRUE(r.ok()) << r.status().toString();
    ASSERT_EQ(r->exit_code, 0) << r->err;
    lib_ = ::dlopen((dir_ + "/libcublasLt.so.13").c_str(), RTLD_NOW | RTLD_GLOBAL);
    ASSERT_NE(lib_, nullptr) << ::dlerror();
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) (void)removeTree(dir_);
  }
  void SetUp() override {
    if (!skip_reason_.empty()) KTUNE_SKIP_WITHOUT_TOOL(skip_reason_);
    ASSERT_NE(lib_, nullptr);
  }
  static int& fake(const char* name) { return *static_cast<int*>(::dlsym(lib_, name)); }
  static cublaslt::LtProblem problem(int64_t m) {
    cublaslt::LtProblem p;
    p.trans_b = true;
    p.m = m;
    p.n = 256;
    p.k = 128;
    p.lda = 128;
    p.ldb = 128;
    p.ldc = 256;
    return p;
  }

  static inline std::string dir_, skip_reason_;
  static inline void* lib_ = nullptr;
};

TEST_F(FakeCublasLtTest, RunBuildsDescriptorsOncePerProblem) {
  const int live0 = cublaslt::CublasLt::liveHandles();
  const int creates0 = fake("fake_creates");
  {
    auto lt = cublaslt::CublasLt::open();
    ASSERT_TRUE(lt.ok()) << lt.status().toString();
    ASSERT_EQ(fake("fake_creates"), creates0 + 1) << "the fake was not the one opened";
    EXPECT_EQ(cublaslt::CublasLt::liveHandles(), live0 + 1);
    const int descs0 = fake("fake_desc_creates"), layouts0 = fake("fake_layout_creates");
    auto algos = (*lt)->heuristics(problem(64), 2, 1 << 20);
    ASSERT_TRUE(algos.ok()) << algos.status().toString();
    ASSERT_EQ(algos->size(), 2u);
    for (int i = 0; i < 20; ++i) {
      // Pointers change every call; the problem does not.
      Status s = (*lt)->run(problem(64), &(*algos)[i % 2], 0x1000 + 256 * i, 0x2000, 0x3000, 0, 0x4000, 1 << 20);
      ASSERT_TRUE(s.ok()) << s.toString();
    }
    EXPECT_EQ((*lt)->descriptorBuilds(), 1);
    // heuristics() built (and released) one set; run() one more for the 20 calls.
    EXPECT_EQ(fake("fake_desc_creates") - descs0, 2);
    EXPECT_EQ(fake("fake_layout_creates") - layouts0, 6);
    EXPECT_EQ(fake("fake_matmuls"), 20);
    ASSERT_TRUE((*lt)->run(problem(32), &(*algos)[0], 1, 2, 3, 0, 4, 1 << 20).ok());
    EXPECT_EQ((*lt)->descriptorBuilds(), 2);
    // Bias: the pointer of each call reaches the matmul.
    cublaslt::LtProblem pb = problem(64);
    pb.bias = true;
    ASSERT_TRUE((*lt)->run(pb, &(*algos)[0], 1, 2, 3, 0x5550, 4, 1 << 20).ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(*static_cast<const void**>(::dlsym(lib_, "fake_last_bias"))), 0x5550u);
    ASSERT_TRUE((*lt)->run(pb, &(*algos)[0], 1, 2, 3, 0x6660, 4, 1 << 20).ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(*static_cast<const void**>(::dlsym(lib_, "fake_last_bias"))), 0x6660u);
    EXPECT_EQ((*lt)->descriptorBuilds(), 3);
    // A bad problem is refused before any descriptor is made.
    EXPECT_FALSE((*lt)->run(problem(0), &(*algos)[0], 1, 2, 3, 0, 4, 1 << 20).ok());
    EXPECT_EQ((*lt)->descriptorBuilds(), 3);
  }
  // Destruction releases every cached descriptor and destroys the handle.
  EXPECT_EQ(cublaslt::CublasLt::liveHandles(), live0);
  EXPECT_EQ(fake("fake_creates"), fake("fake_destroys"));
  EXPECT_EQ(fake("fake_desc_creates"), fake("fake_desc_destroys"));
  EXPECT_EQ(fake("fake_layout_creates"), fake("fake_layout_destroys"));
}

}  // namespace
}  // namespace ktune
