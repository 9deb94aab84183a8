// Hostile input through the public APIs: row-wise and GEMM op arguments: sizes, pointers, dtypes,
// strides (ops/, templates/).
// Every case must give a clear Status (what was wrong, what to do), never a crash, a torn file or
// a lost entry. Runs without a GPU.
// First: it sets the diagnostics every hostile test needs before any other include.
#include "tests/unit/hostile_fixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#include "ops/rowwise.h"
#include "templates/gemm.h"
#include "templates/rowwise.h"

namespace ktune {
namespace {

// ---- op arguments: sizes, pointers, dtypes, strides ---------------------------------------

TEST(HostileOps, RowwiseArgsAreRejectedBeforeAnyLaunch) {
  RmsNormArgs good;
  good.dtype = DType::kBF16;
  good.rows = 4;
  good.cols = 4096;
  good.x = 0x10000;
  good.y = 0x20000;
  good.weight = 0x30000;
  ASSERT_TRUE(validate(good).ok()) << validate(good).toString();
  struct Case {
    const char* what;
    std::function<void(RmsNormArgs&)> edit;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"null x", [](RmsNormArgs& a) { a.x = 0; }, "x is null"},
      {"null y", [](RmsNormArgs& a) { a.y = 0; }, "y is null"},
      {"misaligned x", [](RmsNormArgs& a) { a.x += 1; }, "not aligned"},
      {"misaligned weight", [](RmsNormArgs& a) { a.weight += 3; }, "not aligned"},
      {"zero rows", [](RmsNormArgs& a) { a.rows = 0; }, "must be > 0"},
      {"negative cols", [](RmsNormArgs& a) { a.cols = -4096; }, "must be > 0"},
      {"huge cols", [](RmsNormArgs& a) { a.cols = int64_t(1) << 40; }, "2^31-1"},
      {"short stride", [](RmsNormArgs& a) { a.x_stride = 100; }, "smaller than cols"},
      {"negative stride", [](RmsNormArgs& a) { a.y_stride = -8192; }, "stride"},
      {"weight dtype", [](RmsNormArgs& a) { a.weight_dtype = DType::kF16; }, "weight dtype"},
      {"residual half set", [](RmsNormArgs& a) { a.residual = 0x40000; }, "both"},
      {"int8 dtype", [](RmsNormArgs& a) { a.dtype = DType::kI8; }, "rmsnorm"},
      {"nan eps", [](RmsNormArgs& a) { a.eps = std::nanf(""); }, "eps"},
      {"overflowing rows x stride",
       [](RmsNormArgs& a) {
         a.rows = int64_t(1) << 50;
         a.x_stride = int64_t(1) << 30;
       },
       "overflow"},
  };
  for (const auto& c : cases) {
    RmsNormArgs a = good;
    c.edit(a);
    Status st = validate(a);
    EXPECT_FALSE(st.ok()) << c.what;
    EXPECT_TRUE(st.code() == Code::kInvalidArgument || st.code() == Code::kUnsupported)
        << c.what << ": " << st.toString();
    EXPECT_HAS(st.message(), c.want) << c.what;
  }

  SiluMulArgs s;
  s.rows = 16;
  s.d = 14336;
  s.x = 0x10000;
  s.out = 0x80000;
  ASSERT_TRUE(validate(s).ok());
  SiluMulArgs bad = s;
  bad.d = int64_t(1) << 62;  // 2*d does not fit in int64
  EXPECT_FALSE(validate(bad).ok());
  bad = s;
  bad.x_stride = 100;
  EXPECT_HAS(validate(bad).message(), "x_stride");
  bad = s;
  bad.out = 0x80001;
  EXPECT_HAS(validate(bad).message(), "not aligned");
  bad = s;
  bad.rows = -1;
  EXPECT_HAS(validate(bad).message(), "must be > 0");
  bad = s;
  bad.rows = int64_t(1) << 62;
  EXPECT_HAS(validate(bad).message(), "overflow");
}

TEST(HostileOps, GemmShapesAreValidatedWithClearMessages) {
  using namespace gemm;
  GemmShape good = denseShape(Layout::kNN, ElemType::kBF16, ElemType::kBF16, 128, 256, 64);
  ASSERT_TRUE(validate(good).ok());
  struct Case {
    const char* what;
    std::function<void(GemmShape&)> edit;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"zero M", [](GemmShape& s) { s.m = 0; }, "positive"},
      {"negative K", [](GemmShape& s) { s.k = -1; }, "positive"},
      {"M over int32", [](GemmShape& s) { s.m = int64_t(1) << 31; }, "int32"},
      {"f32 inputs", [](GemmShape& s) { s.ab = ElemType::kF32; }, "f16 or bf16"},
      {"short lda", [](GemmShape& s) { s.lda = 8; }, "lda=8"},
      {"short ldb", [](GemmShape& s) { s.ldb = 0; }, "ldb=0"},
      {"negative ldc", [](GemmShape& s) { s.ldc = -256; }, "ldc=-256"},
      {"nan alpha", [](GemmShape& s) { s.alpha = std::nanf(""); }, "finite"},
      {"inf beta", [](GemmShape& s) { s.beta = INFINITY; }, "finite"},
      {"overflowing lda", [](GemmShape& s) { s.lda = INT64_MAX; }, "overflow"},
  };
  for (const auto& c : cases) {
    GemmShape s = good;
    c.edit(s);
    Status st = validate(s);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << c.what << ": " << st.toString();
    EXPECT_HAS(st.message(), c.want) << c.what;
  }
}

}  // namespace
}  // namespace ktune
