// Programmatic dependent launches in the CUDA backend, against the fake libcuda
// (tests/unit/fake_cuda_driver.h): launchWith(kLaunchProgrammaticWait) goes through
// cuLaunchKernelEx with the programmatic-stream-serialization attribute on a compute capability
// 9.0 device; without the bit, on an older device, or with a driver that lacks cuLaunchKernelEx,
// it is the ordinary cuLaunchKernel and still succeeds. The backend reads the driver and the
// device once per process, so each case runs in a child process of its own (a death test,
// "threadsafe": the program run again for that test; the parent never opens the driver), with the
// fake's environment set before the backend opens. The child reuses the parent's fake.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/backend.h"
#include "tests/support/tools.h"
#include "tests/unit/fake_cuda_driver.h"

namespace ktune {
namespace {

// In the child: the fake opened with `env` set, then one launch with the bit, one with flags 0 and
// one through launch(). Exits 0 when exactly `want_ex` of them (0 or 1) went through
// cuLaunchKernelEx, with the attribute, and the rest through cuLaunchKernel; prints what the fake
// saw otherwise.
[[noreturn]] void launchInChild(const std::string& dir, const char* env, int want_ex) {
  if (env != nullptr) ::putenv(const_cast<char*>(env));
  void* lib = ::dlopen((dir + "/libcuda.so.1").c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", ::dlerror());
    ::_exit(2);
  }
  auto b = openCudaBackend();
  if (!b.ok() || !(*b)->setDevice(0).ok()) ::_exit(3);
  Backend& be = **b;
  auto m = be.loadModule(".version 8.0\n.target sm_90a\n");
  if (!m.ok()) ::_exit(4);
  auto f = be.getFunction(*m, "k");
  if (!f.ok()) ::_exit(5);
  const auto count = [lib](const char* name) { return *static_cast<int*>(::dlsym(lib, name)); };
  KernelArgs args;
  args.add(DevicePtr{0}).add(1.5f);
  const int plain0 = count("fake_launches");
  const bool ok1 = be.launchWith(*f, {3, 2, 1}, {64, 1, 1}, 256, args.data(), {},
                                 kLaunchProgrammaticWait).ok();
  const int ex = count("fake_ex_launches");
  const unsigned grid_y = static_cast<unsigned*>(::dlsym(lib, "fake_last_grid"))[1];
  const unsigned shared = *static_cast<unsigned*>(::dlsym(lib, "fake_last_shared"));
  const bool ok2 = be.launchWith(*f, {1, 1, 1}, {32, 1, 1}, 0, args.data(), {}, 0).ok();
  const bool ok3 = be.launch(*f, {1, 1, 1}, {32, 1, 1}, 0, args.data()).ok();
  const int plain = count("fake_launches") - plain0;
  bool ok = ok1 && ok2 && ok3 && count("fake_ex_launches") == want_ex && plain == 3 - want_ex &&
            grid_y == 2 && shared == 256;
  if (want_ex == 1) {
    ok = ok && ex == 1 && count("fake_ex_num_attrs") == 1 && count("fake_ex_attr_id") == 6 &&
         count("fake_ex_attr_value") == 1;
  }
  std::fprintf(stderr, "ok=%d%d%d ex=%d plain=%d attrs=%d id=%d value=%d grid_y=%u shared=%u\n",
               ok1, ok2, ok3, count("fake_ex_launches"), plain, count("fake_ex_num_attrs"),
               count("fake_ex_attr_id"), count("fake_ex_attr_value"), grid_y, shared);
  ::_exit(ok ? 0 : 1);
}

class FakeCudaPdlTest : public ::testing::Test {
 protected:
  static constexpr const char* kDirVar = "KTUNE_TEST_FAKE_CUDA_DIR";
  static void SetUpTestSuite() {
    if (const char* d = std::getenv(kDirVar)) {  // a death test's child: the parent built it
      dir_ = d;
      child_ = true;
      return;
    }
    dir_ = fakeCudaForSuite(&skip_reason_);
    if (dir_.empty()) return;
    ::setenv(kDirVar, dir_.c_str(), 1);
  }
  static void TearDownTestSuite() {
    if (dir_.empty() || child_) return;
    ::unsetenv(kDirVar);
    ::unlink((dir_ + "/libcuda.so.1").c_str());
    ::unlink((dir_ + "/fake_cuda.c").c_str());
    ::rmdir(dir_.c_str());
  }
  void SetUp() override {
    if (!skip_reason_.empty()) KTUNE_SKIP_WITHOUT_TOOL(skip_reason_);
    ASSERT_FALSE(dir_.empty());
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
  static inline std::string dir_, skip_reason_;
  static inline bool child_ = false;
};

TEST_F(FakeCudaPdlTest, ProgrammaticWaitGoesThroughLaunchKernelExOnComputeCapability9) {
  EXPECT_EXIT(launchInChild(dir_, nullptr, 1), ::testing::ExitedWithCode(0), "");
}

TEST_F(FakeCudaPdlTest, OlderDeviceLaunchesWithoutTheAttribute) {
  static char env[] = "FAKE_CUDA_CC_MAJOR=8";
  EXPECT_EXIT(launchInChild(dir_, env, 0), ::testing::ExitedWithCode(0), "");
}

TEST_F(FakeCudaPdlTest, DriverWithoutLaunchKernelExFallsBackToLaunchKernel) {
  static char env[] = "FAKE_CUDA_NO_LAUNCH_EX=1";
  EXPECT_EXIT(launchInChild(dir_, env, 0), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace ktune
