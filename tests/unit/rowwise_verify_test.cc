// rowwise_bench's verification (bench/rowwise_verify.h) on the simulated backend: a launch that
// writes the reference passes, one that leaves a row unwritten (NaN poison) or writes a wrong row
// fails and names the row. The "kernel" here is host code writing through the backend.
#include "bench/rowwise_verify.h"

#include <gtest/gtest.h>

#include "ops/buffers.h"
#include "runtime/sim/sim_backend.h"

namespace ktune {
namespace {

struct RmsFixture {
  SimBackend be;
  rowwise::RmsNormProblem p;
  DevicePtr x = 0, w = 0, y = 0;
  RmsFixture() {
    p.rows = 300;  // more than sampleRows' 256: rows are sampled
    p.cols = 64;
    x = *be.alloc(size_t(p.rows * p.cols * 2));
    w = *be.alloc(size_t(p.cols * 2));
    y = *be.alloc(size_t(p.rows * p.cols * 2));
    EXPECT_TRUE(fillRandom(be, x, DType::kBF16, p.rows * p.cols, 1).ok());
    EXPECT_TRUE(fillRandom(be, w, DType::kBF16, p.cols, 2, 0.5, 1.5).ok());
  }
  // Writes the reference into y, rows in `skip` left alone, row `wrong` scaled by 2.
  Status write(int64_t skip, int64_t wrong) {
    auto xv = bench::readBf16(be, x, p.rows * p.cols);
    auto wv = bench::readBf16(be, w, p.cols);
    if (!xv.ok() || !wv.ok()) return Status::Internal("read");
    std::vector<double> yv(xv->size()), ro(xv->size());
    rowwise::rmsNormReference(p, xv->data(), wv->data(), nullptr, yv.data(), ro.data());
    std::vector<uint16_t> h(yv.size());
    for (size_t i = 0; i < h.size(); ++i) {
      const int64_t row = int64_t(i) / p.cols;
      h[i] = floatToBf16(float(yv[i] * (row == wrong ? 2.0 : 1.0)));
    }
    for (int64_t row = 0; row < p.rows; ++row) {
      if (row == skip) continue;
      Status s = be.copyToDevice(y + DevicePtr(row * p.cols * 2), h.data() + row * p.cols, size_t(p.cols) * 2);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }
};

TEST(RowwiseVerify, RmsNormReferencePassesAndBadRowsFail) {
  RmsFixture f;
  const std::string good = bench::verifyRmsNorm(f.be, f.p, f.x, f.w, 0, f.y, [&] { return f.write(-1, -1); });
  EXPECT_EQ(good.rfind("ok ", 0), 0u) << good;
  const std::string unwritten = bench::verifyRmsNorm(f.be, f.p, f.x, f.w, 0, f.y, [&] { return f.write(3, -1); });
  EXPECT_EQ(unwritten.rfind("FAIL 1 rows bad, row 3", 0), 0u) << unwritten;
  const std::string wrong = bench::verifyRmsNorm(f.be, f.p, f.x, f.w, 0, f.y, [&] { return f.write(-1, f.p.rows - 1); });
  EXPECT_NE(wrong.find("row 299"), std::string::npos) << wrong;
  const std::string failed = bench::verifyRmsNorm(f.be, f.p, f.x, f.w, 0, f.y, [] { return Status::LaunchError("boom"); });
  EXPECT_EQ(failed.rfind("FAIL", 0), 0u);
}

TEST(RowwiseVerify, SiluMulChecksEveryRowOfASmallProblem) {
  SimBackend be;
  rowwise::SiluMulProblem p;
  p.rows = 20;
  p.d = 32;
  const DevicePtr x = *be.alloc(size_t(p.rows * 2 * p.d * 2)), out = *be.alloc(size_t(p.rows * p.d * 2));
  ASSERT_TRUE(fillRandom(be, x, DType::kBF16, p.rows * 2 * p.d, 3).ok());
  auto launch = [&](bool bad_last) {
    return [&, bad_last]() -> Status {
      auto xv = bench::readBf16(be, x, p.rows * 2 * p.d);
      if (!xv.ok()) return xv.status();
      std::vector<double> o(size_t(p.rows * p.d));
      rowwise::siluMulReference(p, xv->data(), o.data());
      std::vector<uint16_t> h(o.size());
      for (size_t i = 0; i < h.size(); ++i) h[i] = floatToBf16(float(o[i]) + (bad_last && i + 1 == h.size() ? 1.0f : 0.0f));
      return be.copyToDevice(out, h.data(), h.size() * 2);
    };
  };
  const std::string good = bench::verifySiluMul(be, p, x, out, launch(false));
  EXPECT_EQ(good, "ok " + std::to_string(p.rows * p.d) + " values in sampled rows");
  const std::string bad = bench::verifySiluMul(be, p, x, out, launch(true));
  EXPECT_NE(bad.find("FAIL 1 rows bad, row 19"), std::string::npos) << bad;
}

}  // namespace
}  // namespace ktune
