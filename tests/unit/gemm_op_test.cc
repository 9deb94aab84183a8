// CI (no GPU): the GEMM op's problem mapping — alignment from the buffers, the row-major to
// cuBLASLt (column-major) view, and refusal of epilogues cuBLASLt cannot express.
#include <gtest/gtest.h>

#include "ops/gemm.h"

namespace ktune {
namespace {

using gemm::ElemType;
using gemm::Layout;

TEST(GemmOpMapping, AlignmentComesFromTheBuffers) {
  auto s = gemm::denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 16, 4096, 4096);
  EXPECT_TRUE(withAlignment(s, GemmBuffers{0x1000, 0x2000, 0x3000, 0}).aligned16);
  EXPECT_FALSE(withAlignment(s, GemmBuffers{0x1002, 0x2000, 0x3000, 0}).aligned16);
  EXPECT_FALSE(withAlignment(s, GemmBuffers{0x1000, 0x2008, 0x3000, 0}).aligned16);
  // C's alignment does not matter (the epilogue checks it on the device).
  EXPECT_TRUE(withAlignment(s, GemmBuffers{0x1000, 0x2000, 0x3002, 0}).aligned16);
}

TEST(GemmOpMapping, CublasLtViewOfEachLayout) {
  auto nt = gemm::denseShape(Layout::kNT, ElemType::kBF16, ElemType::kF32, 16, 4096, 1024);
  nt.has_bias = true;
  nt.beta = 0.5f;
  auto p = toLtProblem(nt);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_FALSE(p->trans_a);
  EXPECT_TRUE(p->trans_b);
  EXPECT_EQ(p->ab, cublaslt::LtType::kBF16);
  EXPECT_EQ(p->c, cublaslt::LtType::kF32);
  EXPECT_EQ(p->m, 16);
  EXPECT_EQ(p->n, 4096);
  EXPECT_EQ(p->k, 1024);
  EXPECT_EQ(p->lda, 1024);
  EXPECT_EQ(p->ldb, 1024);
  EXPECT_EQ(p->ldc, 4096);
  EXPECT_TRUE(p->bias);
  EXPECT_FLOAT_EQ(p->beta, 0.5f);
  auto tn = toLtProblem(gemm::denseShape(Layout::kTN, ElemType::kF16, ElemType::kF16, 7, 9, 11));
  ASSERT_TRUE(tn.ok());
  EXPECT_TRUE(tn->trans_a);
  EXPECT_FALSE(tn->trans_b);
  EXPECT_EQ(tn->lda, 7);
  EXPECT_EQ(tn->ab, cublaslt::LtType::kF16);
}

TEST(GemmOpMapping, ActivationsAreNotOfferedToCublasLt) {
  auto s = gemm::denseShape(Layout::kNN, ElemType::kBF16, ElemType::kBF16, 64, 64, 64);
  s.act = gemm::Activation::kSilu;
  EXPECT_EQ(toLtProblem(s).status().code(), Code::kUnsupported);
  s.act = gemm::Activation::kGelu;
  EXPECT_EQ(toLtProblem(s).status().code(), Code::kUnsupported);
}

// cuBLASLt's tile ids (cublasLtMatmulTile_t, from cublasLt.h) name their shapes: the wide-tile
// rule reads an algorithm's output tile through them (autotune/predict.h).
TEST(GemmOpMapping, CublasLtTileIdsNameTheirShapes) {
  int m = 0, n = 0;
  ASSERT_TRUE(cublaslt::ltTileShape(10, &m, &n));  // CUBLASLT_MATMUL_TILE_64x8
  EXPECT_EQ(m, 64);
  EXPECT_EQ(n, 8);
  ASSERT_TRUE(cublaslt::ltTileShape(393, &m, &n));  // CUBLASLT_MATMUL_TILE_128x8
  EXPECT_EQ(m, 128);
  EXPECT_EQ(n, 8);
  ASSERT_TRUE(cublaslt::ltTileShape(0x14c, &m, &n));  // CUBLASLT_MATMUL_TILE_64x216
  EXPECT_EQ(m, 64);
  EXPECT_EQ(n, 216);
  EXPECT_FALSE(cublaslt::ltTileShape(0, &m, &n));  // CUBLASLT_MATMUL_TILE_UNDEFINED
  EXPECT_FALSE(cublaslt::ltTileShape(60000, &m, &n));
}

TEST(GemmOpMapping, CublasLtOpenFailsCleanlyWithoutAGpu) {
  // Here (CI) either the library or the device is missing: a clear error, never a crash. On a GPU
  // machine it opens.
  auto lt = cublaslt::CublasLt::open({"/nonexistent/libcublasLt.so"});
  if (lt.ok()) GTEST_SKIP() << "cuBLASLt and a device are present: " << (*lt)->version();
  EXPECT_EQ(lt.status().code(), Code::kUnavailable);
  EXPECT_FALSE(lt.status().message().empty());
}

}  // namespace
}  // namespace ktune
