// Simulated backend and compiler, dtype conversions and the verifier — all on the CPU (do_bench:
// benchmarker_test.cc).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "base/dtype.h"
#include "autotune/verifier.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"
#include "tests/support/gate.h"

namespace ktune {
namespace {

DeviceInfo h100Like() {
  DeviceInfo d;
  d.name = "sim H100-like";
  d.arch = "sm_90a";
  d.multiprocessors = 132;
  d.warp_size = 32;
  d.shared_per_block = 48 * 1024;
  d.shared_per_block_optin = 227 * 1024;
  d.shared_per_sm = 228 * 1024;
  d.regs_per_sm = 65536;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  d.l2_bytes = 1 << 20;  // small, so the flush buffer stays cheap in tests
  return d;
}

CodeObject compileSim(const std::string& entry,
                      std::vector<std::pair<std::string, std::string>> defines = {}) {
  SimCompiler c;
  CompileRequest r;
  r.entry = entry;
  r.arch = "sm_90a";
  r.defines = std::move(defines);
  auto co = c.compile(r);
  EXPECT_TRUE(co.ok()) << co.status().toString();
  return *co;
}

TEST(SimBackend, ReportsSimulatedVendorAndGivenLimits) {
  SimOptions o;
  o.device = h100Like();
  o.device.vendor = Vendor::kNvidia;  // a test cannot make it pretend to be a GPU
  SimBackend b(o);
  auto d = b.devices();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)[0].vendor, Vendor::kSimulated);
  EXPECT_EQ((*d)[0].arch, "sm_90a");
  EXPECT_EQ((*d)[0].shared_per_block_optin, 227 * 1024);
  EXPECT_FALSE(b.setDevice(1).ok());
}

TEST(SimBackend, MemoryIsBoundsChecked) {
  SimBackend b;
  EXPECT_EQ(b.alloc(0).status().code(), Code::kInvalidArgument);
  auto p = b.alloc(100);
  ASSERT_TRUE(p.ok());
  std::vector<unsigned char> src(100, 7), dst(100, 0);
  ASSERT_TRUE(b.copyToDevice(*p, src.data(), 100).ok());
  ASSERT_TRUE(b.copyToHost(dst.data(), *p, 100).ok());
  EXPECT_EQ(dst, src);
  EXPECT_EQ(b.copyToDevice(*p + 50, src.data(), 51).code(), Code::kInvalidArgument);
  EXPECT_EQ(b.copyToHost(dst.data(), *p, 101).code(), Code::kInvalidArgument);
  EXPECT_EQ(b.copyToHost(dst.data(), 12345, 1).code(), Code::kInvalidArgument);
  EXPECT_EQ(b.memset32(*p, 0, 26).code(), Code::kInvalidArgument);
  ASSERT_TRUE(b.memset32(*p, 0x01020304u, 25).ok());
  EXPECT_EQ(static_cast<unsigned char*>(b.hostPtr(*p))[0], 0x04);
  EXPECT_NE(b.hostPtr(*p + 99), nullptr);
  EXPECT_EQ(b.bytesAvailable(*p + 60), 40u);
  EXPECT_TRUE(b.free(*p).ok());
  EXPECT_EQ(b.hostPtr(*p), nullptr);
  EXPECT_FALSE(b.free(*p).ok());
}

TEST(SimBackend, LaunchRunsKernelAndAdvancesClock) {
  SimBackend b;
  b.registerKernel("twice", SimKernel{
      [](const SimLaunch& L) {
        auto n = L.arg<int64_t>(0);
        auto* x = static_cast<float*>(L.backend->hostPtr(L.arg<DevicePtr>(1)));
        auto* y = static_cast<float*>(L.backend->hostPtr(L.arg<DevicePtr>(2)));
        for (int64_t i = 0; i < n; ++i) y[i] = float(L.define("SCALE", 1)) * x[i];
        return Status::Ok();
      },
      [](const SimLaunch& L) { return 0.5 / double(L.define("SCALE", 1)); }, nullptr});
  auto co = compileSim("twice", {{"SCALE", "2"}});
  auto m = b.loadModule(co.binary);
  ASSERT_TRUE(m.ok()) << m.status().toString();
  EXPECT_EQ(b.getFunction(*m, "other").status().code(), Code::kNotFound);
  auto f = b.getFunction(*m, "twice");
  ASSERT_TRUE(f.ok());
  int64_t n = 4;
  DevicePtr x = *b.alloc(16), y = *b.alloc(16);
  float xs[4] = {1, 2, 3, 4};
  ASSERT_TRUE(b.copyToDevice(x, xs, 16).ok());
  KernelArgs a;
  a.add(n).add(x).add(y);
  auto e0 = *b.createEvent(), e1 = *b.createEvent();
  ASSERT_TRUE(b.recordEvent(e0).ok());
  ASSERT_TRUE(b.launch(*f, {1}, {4}, 0, a.data()).ok());
  ASSERT_TRUE(b.recordEvent(e1).ok());
  EXPECT_FLOAT_EQ(*b.elapsedMs(e0, e1), 0.25f);
  float ys[4];
  ASSERT_TRUE(b.copyToHost(ys, y, 16).ok());
  EXPECT_EQ(ys[3], 8.0f);
  EXPECT_EQ(b.launchCount("twice"), 1);
  EXPECT_EQ(b.launch(*f, {0}, {4}, 0, a.data()).code(), Code::kInvalidArgument);
  (void)b.destroyEvent(e0);
  (void)b.destroyEvent(e1);
}

TEST(SimBackend, LimitsAndFaultInjection) {
  SimOptions o;
  o.device = h100Like();
  SimBackend b(o);
  b.registerKernel("k", SimKernel{[](const SimLaunch& L) {
                                    return L.define("FAULT") ? Status::DeviceFault("illegal address")
                                                             : Status::Ok();
                                  },
                                  nullptr,
                                  [](const auto& defs) {
                                    for (auto& [k, v] : defs)
                                      if (k == "NOLOAD") return Status::LaunchError("no image");
                                    return Status::Ok();
                                  }});
  EXPECT_EQ(b.loadModule(compileSim("k", {{"NOLOAD", "1"}}).binary).status().code(),
            Code::kLaunchError);
  EXPECT_EQ(b.loadModule("\x7f" "ELF...").status().code(), Code::kInvalidArgument);
  auto f = *b.getFunction(*b.loadModule(compileSim("k").binary), "k");
  KernelArgs a;
  EXPECT_EQ(b.launch(f, {1}, {2048}, 0, a.data()).code(), Code::kLaunchError);
  EXPECT_EQ(b.launch(f, {1}, {128}, 100 * 1024, a.data()).code(), Code::kOutOfResources);
  ASSERT_TRUE(b.setMaxDynamicShared(f, 100 * 1024).ok());
  EXPECT_TRUE(b.launch(f, {1}, {128}, 100 * 1024, a.data()).ok());
  EXPECT_EQ(b.setMaxDynamicShared(f, 300 * 1024).code(), Code::kOutOfResources);
  auto occ = b.occupancyBlocksPerSm(f, 256, 100 * 1024);
  ASSERT_TRUE(occ.ok());
  EXPECT_EQ(*occ, 2);  // 228 KiB / 100 KiB
  // Clusters: one GPC of all SMs here (sms_per_gpc 0): 2 blocks on each SM in clusters of 4.
  const int sms = b.options().device.multiprocessors;
  auto cl = b.maxActiveClusters(f, {4, 1, 1}, 256, 100 * 1024);
  ASSERT_TRUE(cl.ok()) << cl.status().toString();
  EXPECT_EQ(*cl, sms * 2 / 4);
  EXPECT_EQ(*b.maxActiveClusters(f, {16, 1, 1}, 256, 0), 0);  // over the portable 8
  EXPECT_EQ(b.maxActiveClusters(f, {0, 1, 1}, 256, 0).status().code(), Code::kInvalidArgument);
  auto ff = *b.getFunction(*b.loadModule(compileSim("k", {{"FAULT", "1"}}).binary), "k");
  EXPECT_EQ(b.launch(ff, {1}, {32}, 0, a.data()).code(), Code::kDeviceFault);
  EXPECT_EQ(b.checkError().code(), Code::kDeviceFault);
  EXPECT_TRUE(b.checkError().ok());
}

// The cluster model: a cluster's blocks share a GPC, so SMs left over in each GPC hold none.
TEST(SimBackend, ResidentClustersFitInGpcs) {
  SimOptions o;
  o.device = h100Like();  // 132 SMs, 228 KiB shared each
  o.sms_per_gpc = 18;     // 7 GPCs of 18 SMs and one of 6
  SimBackend b(o);
  b.registerKernel("k", SimKernel{});
  auto f = *b.getFunction(*b.loadModule(compileSim("k").binary), "k");
  const size_t big = 200 * 1024;  // one block per SM
  EXPECT_EQ(*b.maxActiveClusters(f, {1, 1, 1}, 384, big), 132);
  EXPECT_EQ(*b.maxActiveClusters(f, {2, 1, 1}, 384, big), 7 * 9 + 3);
  EXPECT_EQ(*b.maxActiveClusters(f, {4, 1, 1}, 384, big), 7 * 4 + 1);
  EXPECT_EQ(*b.maxActiveClusters(f, {2, 2, 1}, 384, big), 7 * 4 + 1);  // x * y * z blocks
  // A persistent grid of 33 four-block clusters (SMs / 4) runs the 29 that fit at once.
  EXPECT_EQ(residentClusterGrid(b, f, {132, 1, 1}, {384, 1, 1}, big, 4).x, 116u);
  EXPECT_EQ(residentClusterGrid(b, f, {132, 1, 1}, {384, 1, 1}, big, 2).x, 132u);
  EXPECT_EQ(residentClusterGrid(b, f, {40, 1, 1}, {384, 1, 1}, big, 4).x, 40u);
}

TEST(SimCompiler, DeterministicBinariesHookAndCounters) {
  std::atomic<int> calls{0};
  SimCompiler c([&](const CompileRequest& r) {
    ++calls;
    SimCompileDecision d;
    for (auto& [k, v] : r.defines) {
      if (k == "BAD") d.status = Status::CompileError("error: expected ';'\noptions: -DBAD=1");
    }
    d.resources.registers = 40;
    d.ignore_defines = {"UNUSED"};
    d.delay_ms = 20;
    return d;
  });
  CompileRequest r;
  r.entry = "k";
  r.arch = "sm_90a";
  r.defines = {{"A", "1"}, {"UNUSED", "1"}};
  auto a = c.compile(r);
  r.defines = {{"UNUSED", "2"}, {"A", "1"}};
  auto b = c.compile(r);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->binary, b->binary);
  EXPECT_EQ(a->format, "sim");
  EXPECT_EQ(a->resources.registers, 40);
  r.defines = {{"BAD", "1"}};
  auto bad = c.compile(r);
  EXPECT_EQ(bad.status().code(), Code::kCompileError);
  EXPECT_NE(bad.status().message().find("expected ';'"), std::string::npos);
  EXPECT_EQ(c.compileCount(), 3);
  // Two compile() calls from two threads, each held in the hook until both are inside: the
  // counter must see them running together (no sleep deciding the overlap).
  testsupport::Rendezvous both(2);
  std::atomic<bool> met{true};
  SimCompiler pair([&](const CompileRequest&) {
    if (!both.arrive(std::chrono::seconds(60))) met = false;
    return SimCompileDecision{};
  });
  std::vector<std::thread> ts;
  r.defines = {};
  for (int i = 0; i < 2; ++i) ts.emplace_back([&] { (void)pair.compile(r); });
  for (auto& t : ts) t.join();
  EXPECT_TRUE(met.load());
  EXPECT_EQ(pair.maxConcurrent(), 2);
  EXPECT_EQ(pair.compileCount(), 2);
  auto img = parseSimImage(a->binary);
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(img->registers, 40);
  EXPECT_EQ(img->defines.size(), 1u);
}

TEST(DType, ConversionsRoundToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(1e6f), 0x7c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -26)), 0x0000);
  // Every one of the 65536 bit patterns: finite values and infinities exactly, NaNs stay NaN.
  int wrong = 0;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = halfToFloat(uint16_t(h));
    const uint32_t back = floatToHalf(f);
    const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0;
    const bool ok = nan ? std::isnan(f) && (back & 0x7c00) == 0x7c00 && (back & 0x03ff) != 0
                        : back == h;
    if (!ok && wrong++ < 5)
      ADD_FAILURE() << std::hex << "half 0x" << h << " -> " << f << " -> 0x" << back;
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(*parseDType("bfloat16"), DType::kBF16);
  EXPECT_EQ(parseDType("f8").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(sizeOf(DType::kBF16), 2u);
  EXPECT_STREQ(dtypeName(DType::kF16), "f16");
}

TEST(Verifier, TolerancesAndMismatches) {
  Tolerance bf = toleranceFor(DType::kBF16, 4096);
  Tolerance f32 = toleranceFor(DType::kF32, 4096);
  Tolerance f16 = toleranceFor(DType::kF16, 1);
  EXPECT_GT(bf.rtol, f16.rtol);
  EXPECT_GT(f16.rtol, f32.rtol);
  EXPECT_GT(toleranceFor(DType::kF32, 1 << 20).rtol, f32.rtol);
  EXPECT_GT(toleranceFor(DType::kTF32, 4096).rtol, f32.rtol);

  std::vector<double> ref = {1.0, -2.0, 3.0, 0.5};
  std::vector<uint16_t> out(4);
  for (int i = 0; i < 4; ++i) out[i] = floatToBf16(float(ref[i]) * 1.002f);
  auto r = compareHost(out.data(), DType::kBF16, ref.data(), 4, toleranceFor(DType::kBF16, 1));
  EXPECT_TRUE(r.ok) << r.summary();
  out[2] = floatToBf16(3.5f);
  r = compareHost(out.data(), DType::kBF16, ref.data(), 4, toleranceFor(DType::kBF16, 1));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.first_bad, 2);
  EXPECT_EQ(r.toStatus().code(), Code::kWrongResult);

  SimBackend b;
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    DevicePtr p = *b.alloc(7 * sizeOf(t));
    ASSERT_TRUE(poisonNaN(b, p, t, 7).ok());
    auto v = compareDevice(b, p, t, std::vector<double>(7, 1.0), toleranceFor(t));
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->nans, 7) << dtypeName(t);  // unwritten (poisoned) elements fail
  }
  EXPECT_EQ(poisonNaN(b, *b.alloc(4), DType::kI32, 1).code(), Code::kUnsupported);
}

}  // namespace
}  // namespace ktune
