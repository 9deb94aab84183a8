// hipBLASLt as the GEMM op's vendor candidates on AMD, against a fake libhipblaslt (CI has no AMD
// GPU and no ROCm 6): the fake is C source compiled at test time with the system C compiler; it
// records every descriptor, preference and matmul call, returns a fixed list of algorithms from
// its heuristic, and can hand each matmul to a hook the test installs. Checked:
//  - the wrapper: the column-major view (hipBLASLt's enum values, A and B swapped), workspace
//    preference, algorithm ids that round-trip (16 opaque bytes + max_workspace_bytes), runs that
//    pass the chosen algorithm and the workspace, heuristic #0 as the default, errors as values,
//    no descriptor leaked;
//  - the GEMM op on a simulated gfx942 device: the heuristic's algorithms are tuning candidates
//    beside the JIT MFMA configs, verified and timed (the hook launches a simulated kernel that
//    computes the GEMM, with a cost per algorithm), the fastest one wins and is recorded as
//    "hipblaslt", and a new process-like op launches it again from the database by its id.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <stdlib.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "ops/gemm.h"
#include "ops/gemm_vendor.h"
#include "ops/vendor/hipblaslt.h"
#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"
#include "tests/support/tools.h"
#include "tools/sim_gpu.h"

namespace ktune {
namespace {

constexpr const char* kFakeHipBlasLt = R"C(
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
typedef struct { uint8_t data[16]; size_t max_workspace_bytes; } Algo;
typedef struct { Algo algo; size_t workspaceSize; int state; float wavesCount; int reserved[4]; } Result;
typedef struct { int compute, scale, transa, transb, bias_type; uint32_t epilogue; const void* bias; } Desc;
typedef struct { int type; uint64_t rows, cols; int64_t ld; } Layout;
typedef int (*Hook)(const uint8_t* algo, const void* a, const void* b, void* d, void* stream);

int fake_live = 0, fake_handles = 0, fake_requested = 0, fake_matmuls = 0, fake_algos = 3;
int fake_heuristics = 0;
int fake_matmul_status = 0;
Desc fake_desc;
Layout fake_layout[3];
uint64_t fake_pref_workspace = 0;
Algo fake_last_algo;
const void *fake_last_a, *fake_last_b, *fake_last_c;
void *fake_last_d, *fake_last_ws, *fake_last_stream;
size_t fake_last_ws_size = 0;
float fake_last_alpha = 0, fake_last_beta = 0;
Hook fake_matmul_hook = 0;

int hipblasLtCreate(void** h) { static int handle; *h = &handle; ++fake_handles; return 0; }
int hipblasLtDestroy(void* h) { (void)h; --fake_handles; return 0; }
int hipblasLtMatmulDescCreate(Desc** d, int compute, int scale) {
  *d = (Desc*)calloc(1, sizeof(Desc));
  (*d)->compute = compute; (*d)->scale = scale; (*d)->transa = (*d)->transb = 111;
  (*d)->epilogue = 1; (*d)->bias_type = -1;
  ++fake_live; return 0;
}
int hipblasLtMatmulDescDestroy(Desc* d) { free(d); --fake_live; return 0; }
int hipblasLtMatmulDescSetAttribute(Desc* d, int attr, const void* buf, size_t n) {
  switch (attr) {
    case 0: if (n != 4) return 7; memcpy(&d->transa, buf, 4); return 0;
    case 1: if (n != 4) return 7; memcpy(&d->transb, buf, 4); return 0;
    case 2: if (n != 4) return 7; memcpy(&d->epilogue, buf, 4); return 0;
    case 3: if (n != sizeof(void*)) return 7; memcpy(&d->bias, buf, n); return 0;
    case 4: if (n != 4) return 7; memcpy(&d->bias_type, buf, 4); return 0;
    default: return 7;
  }
}
int hipblasLtMatrixLayoutCreate(Layout** l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
  if (ld < (int64_t)rows) return 7; /* column-major: ld >= rows */
  *l = (Layout*)calloc(1, sizeof(Layout));
  (*l)->type = type; (*l)->rows = rows; (*l)->cols = cols; (*l)->ld = ld;
  ++fake_live; return 0;
}
int hipblasLtMatrixLayoutDestroy(Layout* l) { free(l); --fake_live; return 0; }
int hipblasLtMatmulPreferenceCreate(uint64_t** p) { *p = (uint64_t*)calloc(1, 8); ++fake_live; return 0; }
int hipblasLtMatmulPreferenceDestroy(uint64_t* p) { free(p); --fake_live; return 0; }
int hipblasLtMatmulPreferenceSetAttribute(uint64_t* p, int attr, const void* buf, size_t n) {
  if (attr != 1 || n != 8) return 7;
  memcpy(p, buf, 8); return 0;
}
int hipblasLtMatmulAlgoGetHeuristic(void* h, Desc* d, Layout* a, Layout* b, Layout* c, Layout* dd,
                                    uint64_t* pref, int requested, Result* res, int* found) {
  (void)h; (void)dd;
  fake_desc = *d; fake_layout[0] = *a; fake_layout[1] = *b; fake_layout[2] = *c;
  fake_pref_workspace = *pref; fake_requested = requested; ++fake_heuristics;
  int n = requested < fake_algos ? requested : fake_algos;
  for (int i = 0; i < n; ++i) {
    memset(&res[i], 0, sizeof(Result));
    for (int j = 0; j < 16; ++j) res[i].algo.data[j] = (uint8_t)(0xA0 + 16 * i + j);
    res[i].algo.data[15] = (uint8_t)i;
    res[i].algo.max_workspace_bytes = (size_t)(i + 1) << 20;
    res[i].workspaceSize = (size_t)i * 4096;
    res[i].wavesCount = 1.0f;
  }
  *found = n;
  return 0;
}
int hipblasLtMatmul(void* h, Desc* d, const float* alpha, const void* A, Layout* la, const void* B,
                    Layout* lb, const float* beta, const void* C, Layout* lc, void* D, Layout* ld,
                    const Algo* algo, void* ws, size_t ws_size, void* stream) {
  (void)h; (void)la; (void)lb; (void)lc; (void)ld;
  fake_desc = *d;
  fake_last_algo = *algo; fake_last_a = A; fake_last_b = B; fake_last_c = C; fake_last_d = D;
  fake_last_ws = ws; fake_last_ws_size = ws_size; fake_last_stream = stream;
  fake_last_alpha = *alpha; fake_last_beta = *beta;
  ++fake_matmuls;
  if (fake_matmul_hook) return fake_matmul_hook(algo->data, A, B, D, stream);
  return fake_matmul_status;
}
)C";

using Hook = int (*)(const uint8_t*, const void*, const void*, void*, void*);
struct Algo16 {  // hipblasLtMatmulAlgo_t
  uint8_t data[16];
  size_t max_ws;
};

// A private temp directory (mkdtemp), "" on failure.
std::string tempDir(const char* prefix) {
  std::string t = std::string("/tmp/") + prefix + "XXXXXX";
  return ::mkdtemp(t.data()) ? t : std::string();
}

// The fake, built once per process into a private directory and dlopen'ed; its globals are read
// and written through dlsym.
class FakeLib {
 public:
  static FakeLib& get() {
    static FakeLib f;
    return f;
  }
  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }
  template <class T>
  T& var(const char* name) {
    return *static_cast<T*>(::dlsym(handle_, name));
  }

 private:
  FakeLib() {
    std::string cc = findProgram("cc");
    if (cc.empty()) cc = findProgram("gcc");
    if (cc.empty()) {
      error_ = "no C compiler to build the fake libhipblaslt";
      return;
    }
    const std::string dir = tempDir("ktune-fake-hipblaslt-");
    if (dir.empty()) {
      error_ = "mkdtemp failed";
      return;
    }
    const std::string src = dir + "/fake.c";
    path_ = dir + "/libhipblaslt.so";
    if (!writeFileAtomic(src, kFakeHipBlasLt).ok()) error_ = "cannot write " + src;
    auto r = runProcess({cc, "-shared", "-fPIC", "-O1", "-o", path_, src}, "", 60000);
    if (error_.empty() && (!r.ok() || r->exit_code != 0))
      error_ = "building the fake failed: " + (r.ok() ? r->err : r.status().toString());
    if (error_.empty()) handle_ = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (error_.empty() && !handle_) error_ = ::dlerror();
  }
  std::string path_, error_;
  void* handle_ = nullptr;
};

#define NEED_FAKE()                                                          \
  FakeLib& fake = FakeLib::get();                                            \
  if (!fake.error().empty()) KTUNE_SKIP_WITHOUT_TOOL(fake.error())

cublaslt::LtProblem ntProblem() {  // C[16][4096] = A[16][1024] * B[4096][1024]^T + bias
  cublaslt::LtProblem p;
  p.trans_b = true;
  p.ab = cublaslt::LtType::kBF16;
  p.c = cublaslt::LtType::kF32;
  p.m = 16;
  p.n = 4096;
  p.k = 1024;
  p.lda = 1024;
  p.ldb = 1024;
  p.ldc = 4096;
  p.bias = true;
  p.alpha = 1.5f;
  p.beta = 0.25f;
  return p;
}

TEST(HipBlasLt, HeuristicSeesTheColumnMajorViewWithHipEnumValues) {
  NEED_FAKE();
  auto lt = vendor::HipBlasLt::open({fake.path()});
  ASSERT_TRUE(lt.ok()) << lt.status().toString();
  EXPECT_NE((*lt)->version().find(fake.path()), std::string::npos);
  auto algos = (*lt)->heuristics(ntProblem(), 8, 32 << 20);
  ASSERT_TRUE(algos.ok()) << algos.status().toString();
  ASSERT_EQ(algos->size(), 3u);
  EXPECT_EQ(fake.var<int>("fake_requested"), 8);
  EXPECT_EQ(fake.var<uint64_t>("fake_pref_workspace"), uint64_t(32) << 20);
  struct Desc { int compute, scale, transa, transb, bias_type; uint32_t epilogue; const void* bias; };
  struct Layout { int type; uint64_t rows, cols; int64_t ld; };
  const Desc& d = fake.var<Desc>("fake_desc");
  EXPECT_EQ(d.compute, 2);    // HIPBLAS_COMPUTE_32F
  EXPECT_EQ(d.scale, 0);      // HIP_R_32F
  EXPECT_EQ(d.transa, 112);   // the library's A is our B [N][K]: transposed
  EXPECT_EQ(d.transb, 111);   // its B is our A [M][K]: K x M column-major, not transposed
  EXPECT_EQ(d.epilogue, 4u);  // HIPBLASLT_EPILOGUE_BIAS
  EXPECT_EQ(d.bias_type, 0);  // bias in C's type (f32)
  const Layout* l = &fake.var<Layout>("fake_layout");
  EXPECT_EQ(l[0].type, 14);  // HIP_R_16BF
  EXPECT_EQ(l[0].rows, 1024u);
  EXPECT_EQ(l[0].cols, 4096u);
  EXPECT_EQ(l[1].rows, 1024u);
  EXPECT_EQ(l[1].cols, 16u);
  EXPECT_EQ(l[2].type, 0);
  EXPECT_EQ(l[2].rows, 4096u);
  EXPECT_EQ(l[2].cols, 16u);
  EXPECT_EQ(l[2].ld, 4096);
  const auto& a1 = (*algos)[1];
  EXPECT_EQ(a1.index, 1);
  EXPECT_EQ(a1.data[0], 0xB0);
  EXPECT_EQ(a1.max_workspace_bytes, uint64_t(2) << 20);
  EXPECT_EQ(a1.workspace_bytes, 4096);
  EXPECT_EQ(fake.var<int>("fake_live"), 0) << "descriptors leaked";
}

TEST(HipBlasLt, AlgorithmIdsRoundTripAndRejectDefects) {
  vendor::HipLtAlgo a;
  a.index = 5;
  for (int i = 0; i < 16; ++i) a.data[size_t(i)] = uint8_t(i * 17);
  a.max_workspace_bytes = 0x0123456789abcdefULL;
  const std::string id = a.id();
  EXPECT_EQ(id.rfind("hipblaslt:idx=5:algo=00112233", 0), 0u) << id;
  auto b = vendor::HipLtAlgo::parse(id);
  ASSERT_TRUE(b.ok()) << b.status().toString();
  EXPECT_EQ(b->index, 5);
  EXPECT_EQ(b->data, a.data);
  EXPECT_EQ(b->max_workspace_bytes, a.max_workspace_bytes);
  for (const std::string& bad : {std::string("cublaslt:idx=1:algo=00"), std::string("hipblaslt:idx=x:algo=00"),
                                id.substr(0, id.size() - 2), id.substr(0, id.size() - 1) + "g",
                                std::string("hipblaslt:idx=1")})
    EXPECT_EQ(vendor::HipLtAlgo::parse(bad).status().code(), Code::kInvalidArgument) << bad;
}

TEST(HipBlasLt, RunPassesTheAlgorithmAndWorkspaceAndReportsErrors) {
  NEED_FAKE();
  auto lt = vendor::HipBlasLt::open({fake.path()});
  ASSERT_TRUE(lt.ok()) << lt.status().toString();
  const auto p = ntProblem();
  auto algos = (*lt)->heuristics(p, 4, 1 << 20);
  ASSERT_TRUE(algos.ok());
  auto chosen = vendor::HipLtAlgo::parse((*algos)[2].id());
  ASSERT_TRUE(chosen.ok());
  ASSERT_TRUE((*lt)->run(p, &*chosen, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 1 << 20, StreamHandle{(void*)0x77}).ok());
  const Algo16& got = fake.var<Algo16>("fake_last_algo");
  EXPECT_EQ(0, std::memcmp(got.data, (*algos)[2].data.data(), 16));
  EXPECT_EQ(got.max_ws, size_t(3) << 20);
  EXPECT_EQ(fake.var<const void*>("fake_last_a"), (const void*)0x2000);  // our B
  EXPECT_EQ(fake.var<const void*>("fake_last_b"), (const void*)0x1000);  // our A
  EXPECT_EQ(fake.var<void*>("fake_last_d"), (void*)0x3000);
  EXPECT_EQ(fake.var<void*>("fake_last_ws"), (void*)0x5000);
  EXPECT_EQ(fake.var<size_t>("fake_last_ws_size"), size_t(1) << 20);
  EXPECT_EQ(fake.var<void*>("fake_last_stream"), (void*)0x77);
  EXPECT_FLOAT_EQ(fake.var<float>("fake_last_alpha"), 1.5f);
  EXPECT_FLOAT_EQ(fake.var<float>("fake_last_beta"), 0.25f);
  // No algorithm: the heuristic's first choice (the vendor default).
  ASSERT_TRUE((*lt)->run(p, nullptr, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 1 << 20).ok());
  EXPECT_EQ(fake.var<Algo16>("fake_last_algo").data[15], 0);
  EXPECT_EQ(fake.var<Algo16>("fake_last_algo").data[0], 0xA0);
  vendor::HipLtAlgo big = (*algos)[1];  // needs 4096 B
  EXPECT_EQ((*lt)->run(p, &big, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 100).code(), Code::kInvalidArgument);
  EXPECT_EQ((*lt)->run(p, nullptr, 0, 0x2000, 0x3000, 0x4000, 0x5000, 100).code(), Code::kInvalidArgument);
  fake.var<int>("fake_matmul_status") = 7;
  Status s = (*lt)->run(p, &*chosen, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 1 << 20);
  fake.var<int>("fake_matmul_status") = 0;
  EXPECT_EQ(s.code(), Code::kLaunchError);
  EXPECT_NE(s.message().find("hipblasStatus 7"), std::string::npos) << s.message();
  EXPECT_EQ(fake.var<int>("fake_live"), 0) << "descriptors leaked";
}

// ----- the GEMM op on a simulated gfx942 device -----

DeviceInfo mi300Like() {
  DeviceInfo d;
  d.name = "sim MI300X-like";
  d.arch = "gfx942";
  d.multiprocessors = 304;
  d.warp_size = 64;
  d.max_threads_per_block = 1024;
  d.shared_per_block = 64 << 10;
  d.shared_per_sm = 64 << 10;
  d.l2_bytes = 1 << 16;  // the L2 flush buffer is host memory here
  return d;
}

// What the hook needs to turn a hipblasLtMatmul into a simulated launch.
struct VendorSim {
  SimBackend* backend = nullptr;
  FunctionHandle fn{};
  gemm::GemmShape shape;
  std::map<int, double> cost_ms;  // per algorithm index
};
VendorSim g_sim;

// hipblasLtMatmul -> the simulated kernel "fake_hipblaslt_gemm" with the GEMM family's argument
// list (our A is the library's B), so cli::simGemm computes the real result on the stream.
int matmulHook(const uint8_t* algo, const void* a, const void* b, void* d, void* stream) {
  const auto& s = g_sim.shape;
  KernelArgs args;
  args.add(DevicePtr(reinterpret_cast<uintptr_t>(b))).add(DevicePtr(reinterpret_cast<uintptr_t>(a)));
  args.add(DevicePtr(reinterpret_cast<uintptr_t>(d))).add(DevicePtr(0)).add(DevicePtr(0)).add(DevicePtr(0));
  args.add(int32_t(s.m)).add(int32_t(s.n)).add(int32_t(s.k));
  args.add(int64_t(s.lda)).add(int64_t(s.ldb)).add(int64_t(s.ldc)).add(s.alpha).add(s.beta);
  args.add(int32_t(algo[15]));
  Status st = g_sim.backend->launch(g_sim.fn, Dim3{1, 1, 1}, Dim3{64, 1, 1}, 0, args.data(), StreamHandle{stream});
  return st.ok() ? 0 : 13;  // HIPBLAS_STATUS_EXECUTION_FAILED
}

TEST(HipBlasLtGemmOp, AlgorithmsAreCandidatesOnASimulatedGfx942AndTheFastestIsRecalled) {
  NEED_FAKE();
  const std::string dir = tempDir("ktune-hipblaslt-op-");
  ASSERT_FALSE(dir.empty());
  SimOptions so;
  so.device = mi300Like();
  auto backend = std::make_shared<SimBackend>(so);
  auto compiler = std::make_shared<SimCompiler>([](const CompileRequest&) {
    SimCompileDecision d;
    d.resources.vgpr = 128;
    d.resources.registers = 128;
    return d;
  });
  // Costs within the early-rejection margin of the best (1.15x), so every candidate is timed in
  // full: the JIT MFMA configs at 0.55 ms, the library's algorithms at 0.54 / 0.5 / 0.56 ms.
  SimKernel jit;
  jit.run = cli::simGemm;
  jit.cost = [](const SimLaunch&) { return 0.55; };
  backend->registerKernel(gemm::entryName(gemm::KernelKind::kMfma), jit);
  SimKernel lib;  // the fake library's "kernels": the real result, a cost per algorithm
  lib.run = cli::simGemm;
  lib.cost = [](const SimLaunch& l) { return g_sim.cost_ms.at(l.arg<int32_t>(14)); };
  backend->registerKernel("fake_hipblaslt_gemm", lib);
  g_sim = VendorSim{};
  g_sim.backend = backend.get();
  g_sim.shape = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16, 48, 80, 64);
  g_sim.cost_ms = {{0, 0.54}, {1, 0.5}, {2, 0.56}};
  CompileRequest req;
  req.source = "fake";
  req.entry = "fake_hipblaslt_gemm";
  req.arch = "gfx942";
  req.defines = gemm::defines(gemm::KernelKind::kMfma,
                              gemm::curatedConfigs(gemm::KernelKind::kMfma, g_sim.shape).front(), g_sim.shape);
  auto co = compiler->compile(req);
  ASSERT_TRUE(co.ok());
  auto mod = backend->loadModule(co->binary);
  ASSERT_TRUE(mod.ok());
  auto fn = backend->getFunction(*mod, "fake_hipblaslt_gemm");
  ASSERT_TRUE(fn.ok());
  g_sim.fn = *fn;
  fake.var<Hook>("fake_matmul_hook") = matmulHook;

  bool answers = true;  // Options::vendor_answers
  auto run = [&](bool tuning, std::string* winner, std::string* source, std::vector<CandidateResult>* cands) {
    EngineOptions o;
    o.options.cache_dir = dir;
    o.options.vendor_answers = answers;
    o.options.tuning = tuning;
    o.options.warmup_ms = 0.1;
    o.options.rep_ms = 0.5;
    o.options.vendor_algos = 3;
    o.compiler = compiler;
    auto tuner = Engine::create(backend, o);
    ASSERT_TRUE(tuner.ok()) << tuner.status().toString();
    GemmOp::OpOptions go;
    go.hipblaslt_paths = {fake.path()};
    auto op = GemmOp::create(std::shared_ptr<Engine>(std::move(*tuner)), go);
    ASSERT_TRUE(op.ok()) << op.status().toString();
    EXPECT_EQ((*op)->vendorLibrary(), "hipblaslt");
    auto call = makeGemmProblem(*backend, backend->options().device, g_sim.shape, 3);
    ASSERT_TRUE(call.ok()) << call.status().toString();
    if (tuning) {
      auto rep = (*op)->tune(**call);
      ASSERT_TRUE(rep.ok()) << rep.status().toString();
      *winner = rep->winner;
      *source = rep->winner_source;
      *cands = rep->candidates;
      return;
    }
    auto sel = (*op)->lookup(**call);
    ASSERT_TRUE(sel.ok()) << sel.status().toString();
    const int before = fake.var<int>("fake_matmuls");
    ASSERT_TRUE((**op)(**call).ok());
    EXPECT_EQ(fake.var<int>("fake_matmuls"), before + 1) << "the recalled winner is not hipBLASLt's";
    *winner = fake.var<Algo16>("fake_last_algo").data[15] == 1 ? "idx1" : "other";
  };
  std::string winner, source;
  std::vector<CandidateResult> cands;
  run(true, &winner, &source, &cands);
  int jit_ok = 0, vendor_ok = 0;
  for (const auto& c : cands) {
    if (c.source == "jit" && c.status == Code::kOk) ++jit_ok;
    if (c.source == "hipblaslt") {
      EXPECT_EQ(c.status, Code::kOk) << c.config << ": " << c.reason;
      ++vendor_ok;
    }
  }
  EXPECT_GT(jit_ok, 0) << "no JIT MFMA config was verified and timed";
  EXPECT_EQ(vendor_ok, 3);
  EXPECT_EQ(source, "hipblaslt");
  EXPECT_EQ(winner.rfind("hipblaslt:idx=1:", 0), 0u) << winner;
  std::string recalled, unused;
  run(false, &recalled, &unused, &cands);
  EXPECT_EQ(recalled, "idx1");
  // The library's answers were kept beside the code objects (ops/vendor_answers.h): a next
  // process tuning the key with a fresh database asks the heuristic nothing (not for the
  // candidates, not for the reference, which runs the kept default) and races the same three.
  auto kept = listDir(dir + "/vendor");
  ASSERT_TRUE(kept.ok() && !kept->empty());
  auto fresh = [&](int* asked) {
    ASSERT_EQ(std::system(("rm -rf '" + dir + "/db'").c_str()), 0);
    const int h0 = fake.var<int>("fake_heuristics");
    run(true, &winner, &source, &cands);
    *asked = fake.var<int>("fake_heuristics") - h0;
    EXPECT_EQ(winner.rfind("hipblaslt:idx=1:", 0), 0u) << winner;
    int n = 0;
    for (const auto& c : cands) n += c.source == "hipblaslt" && c.status == Code::kOk ? 1 : 0;
    EXPECT_EQ(n, 3);
  };
  int asked = -1;
  fresh(&asked);
  EXPECT_EQ(asked, 0) << "the kept answers were not used";
  answers = false;  // KTUNE_VENDOR_ANSWERS=0: the library is asked again
  fresh(&asked);
  EXPECT_GE(asked, 2) << "candidates and reference";
  answers = true;  // a kept file that is not this key's answer is a miss, and is replaced
  for (const auto& f : *kept)
    ASSERT_TRUE(writeFileAtomic(dir + "/vendor/" + f, "{\"key\":\"other\",\"candidates\":[]}").ok());
  fresh(&asked);
  EXPECT_GE(asked, 1);
  fresh(&asked);
  EXPECT_EQ(asked, 0);
  fake.var<Hook>("fake_matmul_hook") = nullptr;
  EXPECT_EQ(fake.var<int>("fake_live"), 0) << "descriptors leaked";
}

}  // namespace
}  // namespace ktune
