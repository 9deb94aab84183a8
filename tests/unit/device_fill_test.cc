// The device fill of fillRandom (ops/device_fill.h), where no GPU is needed: its kernel compiles
// for Hopper with the multiply and the add of each value rounded on their own (a fused
// multiply-add would round once and differ from the host's values in the last bit), and on the
// simulated backend nothing changes (the fill stays the host's). The values on a GPU, bit for bit
// against the host's: tests/gpu/device_fill_gpu_test.cc.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "ops/buffers.h"
#include "ops/device_fill.h"
#include "runtime/sim/sim_backend.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

TEST(DeviceFill, KernelRoundsTheMultiplyAndTheAddEach) {
  auto c = openNvrtcCompiler();
  if (!c.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << c.status().message());
  CompileRequest r;
  r.source = deviceFillSource();
  r.source_name = "fill.cu";
  r.entry = "ktune_fill_random";
  r.defines = {{"THREADS", "256"}};
  r.arch = "sm_90a";
  r.dumps = kDumpPtx;
  auto co = (*c)->compile(r);
  ASSERT_TRUE(co.ok()) << co.status().toString();
  const std::string& ptx = co->dumps["ptx"];
  EXPECT_NE(ptx.find("mul.rn.f64"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("add.rn.f64"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("fma.rn.f64"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("cvt.rn.f32.f64"), std::string::npos) << ptx;
}

TEST(DeviceFill, TheSimulatedBackendKeepsTheHostFill) {
  SimBackend sim;
  auto c = openNvrtcCompiler();
  if (!c.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << c.status().message());
  DeviceInfo dev;
  dev.arch = "sm_90a";
  dev.multiprocessors = 132;
  constexpr int64_t kCount = 5000;
  std::vector<unsigned char> before(kCount * 2), after(kCount * 2);
  auto p = sim.alloc(before.size());
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(fillRandom(sim, *p, DType::kBF16, kCount, 7).ok());
  std::memcpy(before.data(), sim.hostPtr(*p), before.size());
  enableDeviceFill(sim, **c, nullptr, dev);
  awaitDeviceFill();
  EXPECT_FALSE(deviceFillReady());  // not an NVIDIA device: no kernel, no compile
  Status st;
  EXPECT_FALSE(deviceFillRandom(sim, *p, DType::kBF16, kCount, 7, -1, 2, &st));
  ASSERT_TRUE(fillRandom(sim, *p, DType::kBF16, kCount, 7).ok());
  std::memcpy(after.data(), sim.hostPtr(*p), after.size());
  disableDeviceFill();
  EXPECT_EQ(before, after);
  ASSERT_TRUE(sim.free(*p).ok());
}

}  // namespace
}  // namespace ktune
