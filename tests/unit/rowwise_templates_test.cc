// Row-wise templates without a GPU or compiler: config spaces, defines, launch rules, float64
// references on hand-checked cases, host dtype conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "templates/rowwise.h"

namespace ktune::rowwise {
namespace {

std::map<std::string, std::string> asMap(const std::vector<std::pair<std::string, std::string>>& d) {
  return {d.begin(), d.end()};
}

RowwiseLimits cudaLimits() { return *limitsForArch("sm_90a"); }
RowwiseLimits hipLimits() { return *limitsForArch("gfx942"); }

TEST(RowwiseLimits, PerArchFamily) {
  EXPECT_EQ(cudaLimits().warp_size, 32);
  EXPECT_EQ(cudaLimits().backend, "cuda");
  EXPECT_EQ(hipLimits().warp_size, 64);
  EXPECT_EQ(limitsForArch("gfx90a")->backend, "hip");
  EXPECT_EQ(limitsForArch("gfx1100")->warp_size, 32);
  auto bad = limitsForArch("tpu_v5");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kUnsupported);
  EXPECT_NE(bad.status().message().find("tpu_v5"), std::string::npos);

  DeviceInfo dev;
  dev.vendor = Vendor::kAmd;
  dev.warp_size = 64;
  dev.max_threads_per_block = 1024;
  EXPECT_EQ(limitsFor(dev).backend, "hip");
  EXPECT_EQ(limitsFor(dev).warp_size, 64);
}

TEST(RowwiseSpace, RmsNormConstraintsHoldForEveryAcceptedConfig) {
  for (auto lim : {cudaLimits(), hipLimits()}) {
    for (auto dt : {RowDType::kF32, RowDType::kF16, RowDType::kBF16}) {
      auto e = rmsNormSpace(dt, lim).enumerate(lim.backend);
      ASSERT_GT(e.accepted.size(), 10u) << name(dt);
      for (const auto& c : e.accepted) {
        EXPECT_EQ(c.getInt("THREADS") % lim.warp_size, 0) << c.toString();
        EXPECT_LE(c.getInt("VEC") * int64_t(sizeOf(dt)), 16) << c.toString();
        EXPECT_LE(c.getInt("THREADS") * c.getInt("ROWS_PER_BLOCK"), lim.max_threads_per_block);
      }
      // Every rejection carries a reason naming the constraint.
      for (const auto& r : e.rejected) EXPECT_NE(r.reason.find("constraint"), std::string::npos);
      EXPECT_TRUE(rmsNormSpace(dt, lim).validate(rmsNormDefaultConfig(dt, lim), lim.backend).ok());
    }
  }
  // 16-byte vectors: 8 bf16, 4 fp32.
  auto e = rmsNormSpace(RowDType::kF32, cudaLimits()).enumerate("cuda");
  int64_t maxvec = 0;
  for (const auto& c : e.accepted) maxvec = std::max(maxvec, c.getInt("VEC"));
  EXPECT_EQ(maxvec, 4);
  // No wave64 config below one wave.
  for (const auto& c : rmsNormSpace(RowDType::kBF16, hipLimits()).enumerate("hip").accepted)
    EXPECT_GE(c.getInt("THREADS"), 64);
}

TEST(RowwiseSpace, SiluMulAndCopySpaces) {
  for (auto lim : {cudaLimits(), hipLimits()}) {
    auto e = siluMulSpace(RowDType::kBF16, lim).enumerate(lim.backend);
    ASSERT_GT(e.accepted.size(), 10u);
    for (const auto& c : e.accepted) {
      EXPECT_LE(c.getInt("UNROLL") * c.getInt("ROWS_PER_BLOCK"), 4);
      EXPECT_EQ(c.getInt("THREADS") % lim.warp_size, 0);
    }
    EXPECT_TRUE(siluMulSpace(RowDType::kBF16, lim)
                    .validate(siluMulDefaultConfig(RowDType::kBF16, lim), lim.backend)
                    .ok());
    EXPECT_EQ(copySpace(lim).enumerate(lim.backend).accepted.size(), 16u);
  }
}

TEST(RowwiseDefines, RmsNormRegisterResidencyAndAlignment) {
  RmsNormProblem p;
  p.dtype = RowDType::kBF16;
  p.rows = 4096;
  p.cols = 4096;
  Config c{{"VEC", 8}, {"THREADS", 512}, {"ROWS_PER_BLOCK", 1}, {"OCC", 0}};
  auto d = asMap(rmsNormDefines(c, p));
  EXPECT_EQ(d["DTYPE"], "2");
  EXPECT_EQ(d["VEC"], "8");
  EXPECT_EQ(d["NITER"], "1");  // 4096 / 8 = 512 vectors = one per thread
  EXPECT_EQ(d["HAS_WEIGHT"], "1");
  EXPECT_EQ(d["HAS_RESIDUAL"], "0");

  c.set("THREADS", int64_t(32));
  EXPECT_EQ(asMap(rmsNormDefines(c, p))["NITER"], "0");  // 16 vectors/thread: two-pass
  c.set("THREADS", int64_t(128));
  EXPECT_EQ(asMap(rmsNormDefines(c, p))["NITER"], "4");

  // Row stride of 7 bf16 (14 bytes): only 2-byte alignment holds for every row -> VEC 1.
  p.cols = 7;
  EXPECT_EQ(asMap(rmsNormDefines(c, p))["VEC"], "1");
  // One row: the stride does not matter, 16-byte vectors stay (tail done scalar).
  p.rows = 1;
  EXPECT_EQ(asMap(rmsNormDefines(c, p))["VEC"], "8");
  // A padded stride of 4100 elements (8200 bytes): 8-byte alignment -> VEC 4.
  p.rows = 3;
  p.cols = 4097;
  p.x_stride = p.y_stride = 4100;
  EXPECT_EQ(asMap(rmsNormDefines(c, p))["VEC"], "4");
  // Residual buffers with a 4-byte misaligned start -> VEC 2.
  p.x_stride = p.y_stride = 0;
  p.cols = 4096;
  p.has_residual = true;
  p.r_misalign = 4;
  EXPECT_EQ(asMap(rmsNormDefines(c, p))["VEC"], "2");
  EXPECT_EQ(asMap(rmsNormDefines(c, p))["HAS_RESIDUAL"], "1");
}

TEST(RowwiseDefines, SiluMulVecFollowsHalfOffset) {
  SiluMulProblem p;
  p.rows = 16;
  p.d = 14336;
  Config c{{"VEC", 8}, {"THREADS", 256}, {"UNROLL", 2}, {"ROWS_PER_BLOCK", 1}};
  EXPECT_EQ(asMap(siluMulDefines(c, p))["VEC"], "8");
  p.d = 1001;  // gate->up offset 2002 bytes: only 2-byte alignment
  EXPECT_EQ(asMap(siluMulDefines(c, p))["VEC"], "1");
  p.d = 1002;  // 2004 bytes -> 4-byte alignment -> VEC 2
  EXPECT_EQ(asMap(siluMulDefines(c, p))["VEC"], "2");
}

TEST(RowwiseLaunch, GridsCoverTheProblem) {
  DeviceInfo dev;
  dev.multiprocessors = 132;
  dev.max_threads_per_sm = 2048;
  SiluMulProblem s;
  s.rows = 70000;
  s.d = 14336;
  Config c{{"VEC", 8}, {"THREADS", 256}, {"UNROLL", 2}, {"ROWS_PER_BLOCK", 1}};
  auto l = siluMulLaunch(c, s, dev);
  EXPECT_EQ(l.block.x, 256u);
  EXPECT_EQ(l.grid.x, 4u);      // 1792 vectors / 512 per block
  EXPECT_EQ(l.grid.y, 65535u);  // capped; the kernel loops over further rows
  s.d = 3;                      // fewer elements than one vector: still one block
  s.rows = 1;
  l = siluMulLaunch(c, s, dev);
  EXPECT_EQ(l.grid.x, 1u);
  EXPECT_EQ(l.grid.y, 1u);
  s.d = 8200;  // 1025 vectors -> a 3rd chunk of 512
  l = siluMulLaunch(c, s, dev);
  EXPECT_EQ(l.grid.x, 3u);
  s.d = 8194;  // gate->up offset 16388 bytes: VEC lowered to 2 -> 4097 vectors -> 9 chunks
  l = siluMulLaunch(c, s, dev);
  EXPECT_EQ(l.grid.x, 9u);

  RmsNormProblem r;
  r.rows = 33;
  r.cols = 4097;
  Config rc{{"VEC", 8}, {"THREADS", 256}, {"ROWS_PER_BLOCK", 4}, {"OCC", 0}};
  auto rl = rmsNormLaunch(rc, r, dev);
  EXPECT_EQ(rl.block.x, 256u);
  EXPECT_EQ(rl.block.y, 4u);
  EXPECT_EQ(rl.grid.x, 9u);

  auto cl = copyLaunch(Config{{"THREADS", 512}, {"UNROLL", 4}}, int64_t(1) << 30, dev);
  EXPECT_EQ(cl.grid.x, 132u * 4);  // one wave of resident blocks
  cl = copyLaunch(Config{{"THREADS", 512}, {"UNROLL", 4}}, 100, dev);
  EXPECT_EQ(cl.grid.x, 1u);
}

TEST(RowwiseValidate, ClearMessages) {
  RmsNormProblem p;
  p.rows = 0;
  p.cols = 10;
  auto st = validate(p);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("rows"), std::string::npos);
  p.rows = 2;
  p.x_stride = 5;
  st = validate(p);
  EXPECT_NE(st.message().find("x_stride"), std::string::npos);
  p.x_stride = 0;
  p.eps = -1.f;
  EXPECT_FALSE(validate(p).ok());
  p.eps = 1e-5f;
  EXPECT_TRUE(validate(p).ok());

  SiluMulProblem s;
  s.rows = 1;
  s.d = -3;
  EXPECT_FALSE(validate(s).ok());
  s.d = 8;
  s.x_stride = 10;
  st = validate(s);
  EXPECT_NE(st.message().find("2*d"), std::string::npos);
  s.x_stride = 16;
  EXPECT_TRUE(validate(s).ok());
}

TEST(RowwiseReference, RmsNormHandChecked) {
  RmsNormProblem p;
  p.dtype = RowDType::kF32;
  p.rows = 1;
  p.cols = 2;
  p.eps = 0.f;
  const double x[] = {3, 4}, w[] = {1, 2};
  double y[2];
  rmsNormReference(p, x, w, nullptr, y, nullptr);
  // mean(x^2) = 12.5
  EXPECT_NEAR(y[0], 3 / std::sqrt(12.5), 1e-12);
  EXPECT_NEAR(y[1], 8 / std::sqrt(12.5), 1e-12);

  // Fused residual: s = x + r = (3, 4); r_out = s; no weight.
  p.has_residual = true;
  p.has_weight = false;
  const double x2[] = {1, 2}, r2[] = {2, 2};
  double ro[2];
  rmsNormReference(p, x2, nullptr, r2, y, ro);
  EXPECT_EQ(ro[0], 3);
  EXPECT_EQ(ro[1], 4);
  EXPECT_NEAR(y[1], 4 / std::sqrt(12.5), 1e-12);

  // eps and strides: two rows of 1 element with stride 3.
  RmsNormProblem q;
  q.dtype = RowDType::kF32;
  q.rows = 2;
  q.cols = 1;
  q.x_stride = q.y_stride = 3;
  q.has_weight = false;
  q.eps = 1.f;
  const double xs[] = {2, -1, -1, -3};
  double ys[4] = {7, 7, 7, 7};
  rmsNormReference(q, xs, nullptr, nullptr, ys, nullptr);
  EXPECT_NEAR(ys[0], 2 / std::sqrt(5.0), 1e-12);
  EXPECT_NEAR(ys[3], -3 / std::sqrt(10.0), 1e-12);
  EXPECT_EQ(ys[1], 7);  // padding untouched

  // bf16 residual sum is rounded: 1 + 2^-9 is not representable in bf16 (8 bits of mantissa).
  RmsNormProblem b;
  b.dtype = RowDType::kBF16;
  b.rows = 1;
  b.cols = 1;
  b.has_residual = true;
  b.has_weight = false;
  const double bx[] = {1.0}, br[] = {std::ldexp(1.0, -9)};
  double by[1], bro[1];
  rmsNormReference(b, bx, nullptr, br, by, bro);
  EXPECT_EQ(bro[0], 1.0);
}

TEST(RowwiseReference, SiluMulHandChecked) {
  SiluMulProblem p;
  p.rows = 2;
  p.d = 2;
  // rows: [gate0 gate1 | up0 up1]
  const double x[] = {0, 1, 2, 3, -1, 10, 4, 0.5};
  double out[4];
  siluMulReference(p, x, out);
  EXPECT_EQ(out[0], 0.0);                               // silu(0) = 0
  EXPECT_NEAR(out[1], 3.0 / (1.0 + std::exp(-1.0)), 1e-12);  // silu(1) * 3
  EXPECT_NEAR(out[2], -1.0 / (1.0 + std::exp(1.0)) * 4, 1e-12);
  EXPECT_NEAR(out[3], 10.0 / (1.0 + std::exp(-10.0)) * 0.5, 1e-12);
  EXPECT_EQ(siluMulBytes(p), 3 * 2 * 2 * 2);
}

TEST(RowwiseConvert, Bf16AndHalfRoundToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBf16(std::ldexp(1.0f, 0) + std::ldexp(1.0f, -8)), 0x3F80);  // tie -> even
  EXPECT_EQ(floatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);          // tie -> even
  EXPECT_EQ(bf16ToFloat(0xC040), -3.0f);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));

  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);  // rounds to inf
  EXPECT_EQ(floatToHalf(0.1f), 0x2E66);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);      // tie -> even (0)
  EXPECT_EQ(floatToHalf(3 * std::ldexp(1.0f, -25)), 0x0002);  // 1.5 ulp -> 2
  EXPECT_EQ(floatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isinf(halfToFloat(0x7C00)));
  // Every one of the 65536 bit patterns: finite values (both signs, subnormals, zeros) and
  // infinities round-trip exactly; NaNs stay NaN.
  int wrong = 0;
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = halfToFloat(static_cast<uint16_t>(h));
    const uint32_t back = floatToHalf(f);
    const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
    const bool ok = nan ? std::isnan(f) && (back & 0x7C00) == 0x7C00 && (back & 0x03FF) != 0
                        : back == h;
    if (!ok && wrong++ < 5)
      ADD_FAILURE() << std::hex << "half 0x" << h << " -> " << f << " -> 0x" << back;
  }
  EXPECT_EQ(wrong, 0);
  const std::vector<double> v = {1.5, -2.25, 1e-3};
  for (auto dt : {RowDType::kF32, RowDType::kF16, RowDType::kBF16}) {
    auto back = unpack(dt, pack(dt, v).data(), v.size());
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(back[i], roundTo(dt, v[i]));
  }
}

TEST(RowwiseSources, EmbeddedWithFixedEntries) {
  EXPECT_NE(rmsNormSource().find(kRmsNormEntry), std::string_view::npos);
  EXPECT_NE(siluMulSource().find(kSiluMulEntry), std::string_view::npos);
  EXPECT_NE(copySource().find(kCopyEntry), std::string_view::npos);
  EXPECT_NE(rmsNormSource().find("#include \"prelude.cuh\""), std::string_view::npos);
}

}  // namespace
}  // namespace ktune::rowwise
