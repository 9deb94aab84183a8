// CI (no GPU): the GEMM op's problem as JSON — what offline tuning records and what the isolation
// worker rebuilds (args_json / make_problem): the round trip, hostile or corrupt JSON, the rebuilt
// buffers (sizes, alignment, deterministic random data, freed with the problem), and that the
// built-in ops a worker serves include "gemm" on a device with GEMM kernels.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "base/dtype.h"
#include "ops/builtin.h"
#include "ops/gemm.h"
#include "base/fs.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"

namespace ktune {
namespace {

using gemm::Activation;
using gemm::ElemType;
using gemm::Layout;

// A device the GEMM op accepts (an Ampere-class NVIDIA GPU), numbers for this test only.
DeviceInfo nvidiaLikeDevice(int64_t mem_bytes) {
  DeviceInfo d;
  d.vendor = Vendor::kNvidia;
  d.name = "simulated sm_80";
  d.arch = "sm_80";
  d.cc_major = 8;
  d.multiprocessors = 108;
  d.warp_size = 32;
  d.shared_per_block = 48 * 1024;
  d.shared_per_block_optin = 163 * 1024;
  d.shared_per_sm = 164 * 1024;
  d.regs_per_block = 65536;
  d.regs_per_sm = 65536;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  d.l2_bytes = 40 << 20;
  d.global_mem_bytes = mem_bytes;
  return d;
}

// The simulated backend, reporting an NVIDIA device (SimBackend itself always says kSimulated),
// so the GEMM op registers on it. Kernels launch only where a test registers one (the reference).
class NvidiaLikeSim : public SimBackend {
 public:
  explicit NvidiaLikeSim(int64_t mem_bytes) : SimBackend(simOptions(mem_bytes)) {}
  Vendor vendor() const override { return Vendor::kNvidia; }
  Expected<std::vector<DeviceInfo>> devices() override {
    KTUNE_ASSIGN_OR_RETURN(auto devs, SimBackend::devices());
    for (auto& d : devs) d.vendor = Vendor::kNvidia;
    return devs;
  }

 private:
  static SimOptions simOptions(int64_t mem_bytes) {
    SimOptions o;
    o.device = nvidiaLikeDevice(mem_bytes);
    return o;
  }
};

gemm::GemmShape oddShape() {
  auto s = gemm::denseShape(Layout::kTN, ElemType::kF16, ElemType::kF32, 33, 65, 17);
  s.lda = 40;  // TN: A is K x M, so lda >= M = 33
  s.ldb = 80;  // B is K x N: ldb >= N = 65
  s.ldc = 72;
  s.alpha = 0.1f;  // not exact in binary: the float must come back bit for bit
  s.beta = -0.25f;
  s.has_bias = true;
  s.act = Activation::kGelu;
  s.aligned16 = false;
  return s;
}

void expectSameShape(const gemm::GemmShape& a, const gemm::GemmShape& b) {
  EXPECT_EQ(a.layout, b.layout);
  EXPECT_EQ(a.ab, b.ab);
  EXPECT_EQ(a.c, b.c);
  EXPECT_EQ(a.m, b.m);
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.k, b.k);
  EXPECT_EQ(a.lda, b.lda);
  EXPECT_EQ(a.ldb, b.ldb);
  EXPECT_EQ(a.ldc, b.ldc);
  EXPECT_EQ(floatBits(a.alpha), floatBits(b.alpha));
  EXPECT_EQ(floatBits(a.beta), floatBits(b.beta));
  EXPECT_EQ(a.has_bias, b.has_bias);
  EXPECT_EQ(a.act, b.act);
  EXPECT_EQ(a.aligned16, b.aligned16);
  EXPECT_EQ(gemm::shapeKey(a), gemm::shapeKey(b));
}

TEST(GemmProblemJson, RoundTripKeepsEveryField) {
  const auto s = oddShape();
  const std::string text = gemmCallToJson(GemmCall{s, {}});
  EXPECT_EQ(text.find("0x"), std::string::npos);
  auto back = gemmShapeFromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().toString() << "\n" << text;
  expectSameShape(s, *back);

  // Written by hand (a background-mode first call's cost): the text json::dump() gives.
  EXPECT_EQ(nlohmann::json::parse(text).dump(), text);
  auto nt = gemm::denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 256, 256, 256);
  nt.alpha = 0.1f;
  nt.beta = 1e-20f;
  EXPECT_EQ(nlohmann::json::parse(gemmCallToJson(GemmCall{nt, {}})).dump(),
            gemmCallToJson(GemmCall{nt, {}}));
  auto nt_back = gemmShapeFromJson(gemmCallToJson(GemmCall{nt, {}}));
  ASSERT_TRUE(nt_back.ok()) << nt_back.status().toString();
  expectSameShape(nt, *nt_back);
}

TEST(GemmProblemJson, RecordsTheAlignmentOfTheBuffersNotThePointers) {
  auto s = gemm::denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 16, 64, 64);
  const std::string unaligned =
      gemmCallToJson(GemmCall{s, GemmBuffers{0x7f001002, 0x7f002000, 0x7f003000, 0}});
  EXPECT_EQ(unaligned.find(std::to_string(0x7f001002)), std::string::npos) << unaligned;
  auto u = gemmShapeFromJson(unaligned);
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->aligned16);
  auto a = gemmShapeFromJson(
      gemmCallToJson(GemmCall{s, GemmBuffers{0x7f001000, 0x7f002000, 0x7f003000, 0}}));
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->aligned16);
}

TEST(GemmProblemJson, OptionalFieldsDefaultToADenseShape) {
  auto s = gemmShapeFromJson(R"({"layout":"NN","ab":"bf16","c":"bf16","m":8,"n":16,"k":32})");
  ASSERT_TRUE(s.ok()) << s.status().toString();
  expectSameShape(gemm::denseShape(Layout::kNN, ElemType::kBF16, ElemType::kBF16, 8, 16, 32), *s);
  // tuneFromFile passes the recorded line minus family/key/date; unknown fields are ignored.
  EXPECT_TRUE(gemmShapeFromJson(
                  R"({"layout":"NT","ab":"f16","c":"f16","m":1,"n":1,"k":1,"note":"hand-edited"})")
                  .ok());
}

// Each hostile line fails with kInvalidArgument and a message naming `mention`.
TEST(GemmProblemJson, HostileOrCorruptJsonGivesClearErrors) {
  const std::string base = R"("layout":"NT","ab":"bf16","c":"bf16")";
  const std::string mnk = R"("m":64,"n":64,"k":64)";
  struct Case {
    std::string text, mention;
  };
  const std::vector<Case> cases = {
      {"", "not a JSON object"},
      {"{\"m\":", "not a JSON object"},
      {"[1,2,3]", "not a JSON object"},
      {"\"NT\"", "not a JSON object"},
      {"{" + mnk + R"(,"ab":"bf16","c":"bf16"})", "'layout' is missing"},
      {"{" + base + R"(,"n":64,"k":64})", "'m' is missing"},
      {"{" + base + R"(,"m":null,"n":64,"k":64})", "'m' is missing"},
      {"{" + base + R"(,"m":-4,"n":64,"k":64})", "'m' must be in [1, 2147483647]"},
      {"{" + base + R"(,"m":0,"n":64,"k":64})", "'m' must be in"},
      {"{" + base + R"(,"m":64,"n":2147483648,"k":64})", "'n' must be in"},
      {"{" + base + R"(,"m":64,"n":64,"k":18446744073709551615})", "'k' value"},
      {"{" + base + R"(,"m":64,"n":64,"k":99999999999999999999999})", "'k' must be an integer"},
      {"{" + base + R"(,"m":1e300,"n":64,"k":64})", "'m' must be an integer"},
      {"{" + base + R"(,"m":64.5,"n":64,"k":64})", "'m' must be an integer"},
      {"{" + base + R"(,"m":"64","n":64,"k":64})", "'m' must be an integer"},
      {"{" + base + R"(,"m":true,"n":64,"k":64})", "'m' must be an integer"},
      {"{" + base + "," + mnk + R"(,"lda":-1})", "'lda' must be in"},
      {"{" + base + "," + mnk + R"(,"lda":9223372036854775807})", "'lda' must be in"},
      {"{" + base + "," + mnk + R"(,"lda":16})", "lda=16 is shorter than a row of A"},
      {"{" + base + "," + mnk + R"(,"ldc":8})", "ldc=8 is shorter"},
      {R"({"layout":"XY","ab":"bf16","c":"bf16",)" + mnk + "}", "'layout' must be one of"},
      {R"({"layout":1,"ab":"bf16","c":"bf16",)" + mnk + "}", "'layout' must be a string"},
      {R"({"layout":"NT","ab":"int8","c":"bf16",)" + mnk + "}", "'ab' must be one of"},
      {R"({"layout":"NT","ab":"f32","c":"f32",)" + mnk + "}", "f32 inputs are not supported"},
      {"{" + base + "," + mnk + R"(,"alpha":"x"})", "'alpha' must be a number"},
      {"{" + base + "," + mnk + R"(,"alpha":1e300})", "'alpha' must be a finite float"},
      {"{" + base + "," + mnk + R"(,"beta":-1e39})", "'beta' must be a finite float"},
      {"{" + base + "," + mnk + R"(,"bias":"yes"})", "'bias' must be true or false"},
      {"{" + base + "," + mnk + R"(,"aligned16":1})", "'aligned16' must be true or false"},
      {"{" + base + "," + mnk + R"(,"act":"relu"})", "'act' must be one of"},
      // A huge leading dimension whose span overflows int64 (validate's overflow guard).
      {"{" + base + R"(,"m":2147483647,"n":64,"k":64,"lda":1152921504606846976})", "2^60 bytes"},
  };
  for (const auto& c : cases) {
    auto r = gemmShapeFromJson(c.text);
    ASSERT_FALSE(r.ok()) << "accepted: " << c.text;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << c.text;
    EXPECT_NE(r.status().message().find(c.mention), std::string::npos)
        << "input: " << c.text << "\nmessage: " << r.status().message()
        << "\nexpected: " << c.mention;
  }
}

// ---------------------------------------------------------------------------------------------
// The rebuilt buffers (simulated backend: host memory behind device addresses)
// ---------------------------------------------------------------------------------------------

std::vector<unsigned char> readBack(SimBackend& b, DevicePtr p, size_t bytes) {
  std::vector<unsigned char> out(bytes);
  EXPECT_TRUE(b.copyToHost(out.data(), p, bytes).ok());
  return out;
}

TEST(GemmProblemBuffers, SizesAlignmentAndDeterministicData) {
  NvidiaLikeSim sim(int64_t(1) << 30);
  const auto s = oddShape();  // aligned16 = false, bias, f16 in, f32 out
  const int64_t a_elems = gemm::storedRowsA(s) * s.lda, b_elems = gemm::storedRowsB(s) * s.ldb;
  DevicePtr a_ptr = 0;
  std::vector<unsigned char> a_data;
  {
    auto p = makeGemmProblem(sim, sim.options().device, s);
    ASSERT_TRUE(p.ok()) << p.status().toString();
    const GemmCall& call = **p;
    EXPECT_FALSE(call.shape.aligned16);
    EXPECT_EQ(call.buf.a % 16, 2u) << "A must start 2 bytes into a 16-byte boundary";
    EXPECT_EQ(call.buf.b % 16, 0u);
    EXPECT_GE(sim.bytesAvailable(call.buf.a), size_t(a_elems * 2));
    EXPECT_GE(sim.bytesAvailable(call.buf.b), size_t(b_elems * 2));
    EXPECT_GE(sim.bytesAvailable(call.buf.c), size_t(s.m * s.ldc * 4));
    ASSERT_NE(call.buf.bias, 0u);
    EXPECT_GE(sim.bytesAvailable(call.buf.bias), size_t(s.n * 4));
    a_data = readBack(sim, call.buf.a, size_t(a_elems) * 2);
    // Values in [-1, 1], random (not constant), every element written (no 0xcd garbage).
    double lo = 2, hi = -2;
    for (int64_t i = 0; i < a_elems; ++i) {
      const double v = loadAsDouble(a_data.data(), DType::kF16, i);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    EXPECT_GE(lo, -1.0);
    EXPECT_LE(hi, 1.0);
    EXPECT_LT(lo, -0.5);
    EXPECT_GT(hi, 0.5);
    const auto c = readBack(sim, call.buf.c, size_t(s.m * s.ldc) * 4);
    for (int64_t i = 0; i < s.m * s.ldc; ++i) {
      const double v = loadAsDouble(c.data(), DType::kF32, i);
      ASSERT_TRUE(v >= -1.0 && v <= 1.0) << "C[" << i << "] = " << v;
    }
    EXPECT_NE(readBack(sim, call.buf.a, 64), readBack(sim, call.buf.b, 64));
    a_ptr = call.buf.a;
    // The same shape again (another worker, a later batch): identical data.
    auto q = makeGemmProblem(sim, sim.options().device, s);
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(readBack(sim, (*q)->buf.a, size_t(a_elems) * 2), a_data);
    EXPECT_EQ(readBack(sim, (*q)->buf.c, 256), readBack(sim, call.buf.c, 256));
  }
  // Freed with the problem.
  EXPECT_EQ(sim.hostPtr(a_ptr), nullptr);

  auto aligned = s;
  aligned.aligned16 = true;
  auto p = makeGemmProblem(sim, sim.options().device, aligned);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->buf.a % 16, 0u);
  EXPECT_TRUE((*p)->shape.aligned16);
}

TEST(GemmProblemBuffers, TooLargeForTheDeviceIsOutOfResourcesAndLeaksNothing) {
  NvidiaLikeSim sim(int64_t(1) << 20);  // 1 MiB device
  auto s = gemm::denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 1024, 1024, 1024);
  auto p = makeGemmProblem(sim, sim.options().device, s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kOutOfResources) << p.status().toString();
  EXPECT_NE(p.status().message().find("smaller shape"), std::string::npos);
  // A and B fit, C does not: the allocator refuses midway, and A and B are freed again.
  // A: 20000 x 8, B: 64 x 8, C: 20000 x 64 bf16 (2.56 MB > 1 MiB).
  auto s2 = gemm::denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 20000, 64, 8);
  DeviceInfo lies = sim.options().device;
  lies.global_mem_bytes = 0;  // unknown: the backend's own allocation error must surface
  auto q = makeGemmProblem(sim, lies, s2);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), Code::kOutOfResources) << q.status().toString();
  auto r = sim.alloc(size_t(1) << 20);  // everything was given back: the whole device is free
  EXPECT_TRUE(r.ok()) << r.status().toString();
  if (r.ok()) (void)sim.free(*r);
}

// ---------------------------------------------------------------------------------------------
// The family: args_json / make_problem on the op, and the worker's registration
// ---------------------------------------------------------------------------------------------

struct TmpDir {
  std::string path;
  TmpDir() {
    char t[] = "/tmp/ktune-gemm-problem-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TmpDir() { (void)removeTree(path); }
};

std::shared_ptr<Engine> makeTuner(std::shared_ptr<Backend> backend, const std::string& dir) {
  EngineOptions o;
  o.options.cache_dir = dir;
  o.options.vendor_algos = 0;  // no cuBLASLt (the simulated device has no CUDA context)
  o.compiler = std::make_shared<SimCompiler>();
  auto t = Engine::create(std::move(backend), o);
  EXPECT_TRUE(t.ok()) << t.status().toString();
  return t.ok() ? std::shared_ptr<Engine>(std::move(t).value()) : nullptr;
}

// GemmOp::create takes what Engine::create returns (a unique_ptr) as well as a shared tuner
// (issue 12: it took only a shared_ptr).
TEST(GemmProblemFamily, CreateTakesTheTunerThatTunerCreateReturns) {
  TmpDir dir;
  auto sim = std::make_shared<NvidiaLikeSim>(int64_t(1) << 30);
  EngineOptions o;
  o.options.cache_dir = dir.path;
  o.options.vendor_algos = 0;
  o.compiler = std::make_shared<SimCompiler>();
  Expected<std::unique_ptr<Engine>> t = Engine::create(sim, o);
  ASSERT_TRUE(t.ok()) << t.status().toString();
  auto op = GemmOp::create(**t);
  ASSERT_TRUE(op.ok()) << op.status().toString();
  EXPECT_NE((*t)->database("gemm"), nullptr);
}

TEST(GemmProblemFamily, MakeProblemRebuildsACallWithTheSameKey) {
  TmpDir dir;
  auto sim = std::make_shared<NvidiaLikeSim>(int64_t(1) << 30);
  auto tuner = makeTuner(sim, dir.path);
  ASSERT_NE(tuner, nullptr);
  auto op = GemmOp::create(tuner);
  ASSERT_TRUE(op.ok()) << op.status().toString();
  for (bool aligned : {true, false}) {
    auto s = gemm::denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 256, 256, 256);
    // The caller's call: buffers of its own (only their addresses matter for the key).
    auto mine = makeGemmProblem(*sim, sim->options().device, s, 99);
    ASSERT_TRUE(mine.ok());
    GemmCall caller = **mine;
    if (!aligned) caller.buf.a += 2;
    auto want = (*op)->lookup(caller);
    ASSERT_TRUE(want.ok()) << want.status().toString();

    auto rebuilt = tuner->makeProblem("gemm", gemmCallToJson(caller));
    ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().toString();
    const GemmCall& call = *static_cast<const GemmCall*>(rebuilt->get());
    EXPECT_NE(call.buf.a, caller.buf.a);
    EXPECT_EQ(call.shape.aligned16, aligned);
    auto got = (*op)->lookup(call);
    ASSERT_TRUE(got.ok()) << got.status().toString();
    EXPECT_EQ(got->key, want->key);
  }
  auto bad =
      tuner->makeProblem("gemm", R"({"layout":"NT","ab":"bf16","c":"bf16","m":-1,"n":2,"k":2})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'m'"), std::string::npos);
}

// A rebuilt problem (the isolation worker's, offline tuning's) has its reference computed by
// make_problem, before any candidate: computed at the first verification, the reference's one-time
// cost (a JIT compile where the vendor refuses the pointers) fell in the first candidate's watchdog
// window in the worker, which killed every candidate of a misaligned key as hung on a loaded
// machine. The reference starts from C's snapshot (beta != 0), and a second rebuild of the key
// reuses it.
TEST(GemmProblemFamily, MakeProblemComputesTheReferenceBeforeAnyCandidate) {
  TmpDir dir;
  auto sim = std::make_shared<NvidiaLikeSim>(int64_t(1) << 30);
  std::vector<unsigned char> c_at_launch;
  SimKernel ref;
  ref.run = [&c_at_launch](const SimLaunch& L) {
    const DevicePtr c = L.arg<DevicePtr>(2);
    const auto* h = static_cast<const unsigned char*>(L.backend->hostPtr(c));
    if (!h) return Status::DeviceFault("reference C not allocated");
    c_at_launch.assign(h, h + 64 * 80 * 2);
    return Status::Ok();
  };
  sim->registerKernel("ktune_gemm_mma", ref);  // the JIT default: no vendor library here
  auto tuner = makeTuner(sim, dir.path);
  ASSERT_NE(tuner, nullptr);
  auto op = GemmOp::create(tuner);
  ASSERT_TRUE(op.ok()) << op.status().toString();
  auto s = gemm::denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 64, 80, 64);
  s.beta = 0.5f;
  s.aligned16 = false;
  const std::string args = gemmCallToJson(GemmCall{s, {}});
  auto p = tuner->makeProblem("gemm", args);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(sim->launchCount("ktune_gemm_mma"), 1) << "the reference ran in make_problem";
  const GemmCall& call = *static_cast<const GemmCall*>(p->get());
  std::vector<unsigned char> c(c_at_launch.size());
  ASSERT_TRUE(sim->copyToHost(c.data(), call.buf.c, c.size()).ok());
  EXPECT_EQ(c_at_launch, c) << "the reference started from the problem's C (its snapshot)";
  auto again = tuner->makeProblem("gemm", args);
  ASSERT_TRUE(again.ok()) << again.status().toString();
  EXPECT_EQ(sim->launchCount("ktune_gemm_mma"), 1) << "one reference per key";

  // A later process (a restarted worker) on the same cache: the reference kernel comes from the
  // code-object store, it is not compiled again.
  EngineOptions o;
  o.options.cache_dir = dir.path;
  o.options.vendor_algos = 0;
  auto cc = std::make_shared<SimCompiler>();
  o.compiler = cc;
  auto later = Engine::create(sim, o);
  ASSERT_TRUE(later.ok()) << later.status().toString();
  std::shared_ptr<Engine> t2(std::move(later).value());
  auto op2 = GemmOp::create(t2);
  ASSERT_TRUE(op2.ok()) << op2.status().toString();
  ASSERT_TRUE(t2->makeProblem("gemm", args).ok());
  EXPECT_EQ(sim->launchCount("ktune_gemm_mma"), 2) << "the later process's own reference";
  EXPECT_EQ(cc->compileCount(), 0) << "the reference kernel is a store hit";
}

TEST(GemmProblemFamily, WorkerRegistrationServesGemmOnAGemmDevice) {
  TmpDir dir;
  auto tuner = makeTuner(std::make_shared<NvidiaLikeSim>(int64_t(1) << 30), dir.path);
  ASSERT_NE(tuner, nullptr);
  auto ops = registerBuiltinOps(tuner);
  ASSERT_TRUE(ops.ok()) << ops.status().toString();
  ASSERT_NE(ops->gemm, nullptr) << (ops->notes.empty() ? "" : ops->notes.front());
  EXPECT_NE(tuner->database("gemm"), nullptr);
  EXPECT_TRUE(ops->rowwise);
  EXPECT_NE(tuner->database("rmsnorm_bf16"), nullptr);
  // What the worker does with a batch's args: rebuild the problem.
  auto p = tuner->makeProblem(
      "gemm",
      gemmCallToJson(GemmCall{
          gemm::denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 64, 64, 64), {}}));
  EXPECT_TRUE(p.ok()) << p.status().toString();
}

TEST(GemmProblemFamily, WorkerRegistrationSkipsASimulatedDevice) {
  TmpDir dir;
  SimOptions o;
  o.device = nvidiaLikeDevice(int64_t(1) << 30);  // SimBackend reports it as kSimulated
  auto tuner = makeTuner(std::make_shared<SimBackend>(o), dir.path);
  ASSERT_NE(tuner, nullptr);
  auto ops = registerBuiltinOps(tuner);
  ASSERT_TRUE(ops.ok()) << ops.status().toString();
  EXPECT_EQ(ops->gemm, nullptr);
  EXPECT_FALSE(ops->rowwise);
  ASSERT_FALSE(ops->notes.empty());
  EXPECT_NE(ops->notes.front().find("simulated"), std::string::npos);
  EXPECT_EQ(tuner->database("gemm"), nullptr);
  EXPECT_FALSE(registerBuiltinOps(nullptr).ok());
}

}  // namespace
}  // namespace ktune
