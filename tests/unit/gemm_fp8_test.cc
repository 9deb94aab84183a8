// FP8 GEMM (e4m3 / e5m2 inputs on the TMA kernel's fp8 wgmma): the formats' host conversions, the
// shape rules (layout NT only, the tma kind only, 16-byte rows), the tensor maps, cuBLASLt's view,
// and the NVRTC compile of the fp8 kernel for sm_90a (no GPU needed).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <unistd.h>
#include <tuple>
#include <vector>

#include "autotune/autotuner.h"
#include "base/dtype.h"
#include "base/fs.h"
#include "compiler/compiler.h"
#include "ops/gemm.h"
#include "templates/gemm.h"
#include "tests/support/tools.h"
#include "tests/unit/gemm_test_util.h"
#include "tools/sim_gpu.h"

namespace ktune::gemm {
namespace {

bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

TEST(Fp8Format, EncodesRoundsAndSaturatesLikeTheHardware) {
  // Every e4m3 / e5m2 code decodes to a value that encodes back to the same code (NaNs aside).
  for (DType t : {DType::kF8E4M3, DType::kF8E5M2}) {
    for (int v = 0; v < 256; ++v) {
      const float f = fp8ToFloat(static_cast<uint8_t>(v), t);
      if (std::isnan(f) || std::isinf(f)) continue;
      const uint8_t back = floatToFp8(f, t);
      if (f == 0.0f) {
        EXPECT_EQ(back & 0x7f, 0) << dtypeName(t) << " code " << v;
        continue;
      }
      EXPECT_EQ(back, v) << dtypeName(t) << " code " << v << " = " << f;
    }
  }
  EXPECT_EQ(fp8ToFloat(0x7e, DType::kF8E4M3), 448.0f);  // largest finite e4m3
  EXPECT_EQ(fp8ToFloat(0x7b, DType::kF8E5M2), 57344.0f);
  EXPECT_EQ(fp8ToFloat(0x01, DType::kF8E4M3), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_TRUE(std::isnan(fp8ToFloat(0x7f, DType::kF8E4M3)));
  EXPECT_TRUE(std::isinf(fp8ToFloat(0x7c, DType::kF8E5M2)));
  // Saturation (satfinite), round to nearest even, sign.
  EXPECT_EQ(floatToFp8(1000.0f, DType::kF8E4M3), 0x7e);
  EXPECT_EQ(floatToFp8(-1e9f, DType::kF8E5M2), 0xfb);
  EXPECT_EQ(fp8ToFloat(floatToFp8(1.0625f, DType::kF8E4M3), DType::kF8E4M3), 1.0f);  // tie: even
  EXPECT_EQ(fp8ToFloat(floatToFp8(1.1875f, DType::kF8E4M3), DType::kF8E4M3), 1.25f);  // tie: even
  EXPECT_EQ(fp8ToFloat(floatToFp8(-0.3f, DType::kF8E4M3), DType::kF8E4M3), -0.3125f);
  // Buffers: storeFromDouble / loadAsDouble go through the same conversions.
  unsigned char buf[2];
  storeFromDouble(buf, DType::kF8E4M3, 1, 0.5);
  EXPECT_EQ(loadAsDouble(buf, DType::kF8E4M3, 1), 0.5);
  EXPECT_EQ(sizeOf(DType::kF8E5M2), 1u);
  EXPECT_EQ(*parseDType("float8_e4m3fn"), DType::kF8E4M3);
  EXPECT_EQ(*parseDType("fp8e5m2"), DType::kF8E5M2);
  EXPECT_FALSE(isFloating(DType::kF8E4M3));  // storage-only: no row-wise op takes it
}

GemmShape fp8Shape(Layout l, int64_t m, int64_t n, int64_t k, ElemType t = ElemType::kF8E4M3) {
  return denseShape(l, t, ElemType::kBF16, m, n, k);
}

Config tmaConfig(int64_t bn, int64_t cons, int64_t stages, int64_t cluster, int64_t epi,
                 int64_t split, int64_t pingpong = 0, int64_t wg_m = 1) {
  return Config{{"BLOCK_N", bn},           {"CONSUMERS", cons}, {"WG_M", wg_m},
                {"NUM_STAGES", stages},    {"GROUP_M", int64_t{8}}, {"CLUSTER_M", cluster},
                {"EPI_TMA", epi},          {"SPLIT_K", split},  {"PINGPONG", pingpong}};
}

// Which problems the fp8 path takes, and how the others are refused (with a reason, never a
// wrong answer).
TEST(GemmFp8, ShapeRulesKindsAndLayouts) {
  const GemmShape s = fp8Shape(Layout::kNT, 4096, 4096, 4096);
  ASSERT_TRUE(validate(s).ok());
  EXPECT_EQ(elemBytes(s.ab), 1);
  EXPECT_EQ(std::string(elemTypeName(s.ab)), "f8e4m3");
  EXPECT_EQ(*parseElemType("fp8e4m3"), ElemType::kF8E4M3);
  EXPECT_EQ(*parseElemType("f8e5m2"), ElemType::kF8E5M2);
  EXPECT_TRUE(has(shapeKey(s), "NT:f8e4m3>bf16:")) << shapeKey(s);
  const Config c = curatedConfigs(KernelKind::kTma, s).front();
  EXPECT_TRUE(applicable(KernelKind::kTma, c, s).ok());
  EXPECT_TRUE(applicable(KernelKind::kTma, c, fp8Shape(Layout::kNT, 64, 64, 64, ElemType::kF8E5M2)).ok());
  // Other layouts: refused with the reason (wgmma reads 8-bit operands K-major only).
  for (Layout l : {Layout::kNN, Layout::kTN, Layout::kTT}) {
    const Status st = applicable(KernelKind::kTma, c, fp8Shape(l, 256, 256, 256));
    EXPECT_EQ(st.code(), Code::kUnsupported) << layoutName(l);
    EXPECT_TRUE(has(st.message(), "layout NT")) << st.message();
  }
  // Other kinds: refused, naming the one that computes fp8.
  for (KernelKind k : {KernelKind::kMma, KernelKind::kWgmma, KernelKind::kSkinny, KernelKind::kDecode}) {
    const auto space = configSpace(k).enumerate("cuda").accepted;
    ASSERT_FALSE(space.empty());
    const Status st = applicable(k, space.front(), s);
    EXPECT_EQ(st.code(), Code::kUnsupported) << kernelKindName(k);
    EXPECT_TRUE(has(st.message(), "tma kernel only")) << st.message();
  }
  // 16-byte rows: K (= lda, ldb) a multiple of 16 fp8 elements, not of 8.
  GemmShape odd = fp8Shape(Layout::kNT, 128, 128, 264);
  EXPECT_FALSE(fastPathOk(odd));
  EXPECT_EQ(applicable(KernelKind::kTma, c, odd).code(), Code::kUnsupported);
  odd.lda = odd.ldb = 272;
  EXPECT_TRUE(fastPathOk(odd));
  EXPECT_TRUE(applicable(KernelKind::kTma, c, odd).ok());
  // fp8 C is not a GEMM output.
  GemmShape out8 = s;
  out8.c = ElemType::kF8E4M3;
  EXPECT_EQ(validate(out8).code(), Code::kInvalidArgument);
}

// Offline tuning and the shared queue rebuild a call from JSON: an fp8 shape round-trips.
TEST(GemmFp8, ShapeJsonRoundTrips) {
  GemmCall call;
  call.shape = fp8Shape(Layout::kNT, 128, 256, 512, ElemType::kF8E5M2);
  const std::string text = gemmCallToJson(call);
  EXPECT_TRUE(has(text, "\"f8e5m2\"")) << text;
  auto back = gemmShapeFromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(shapeKey(*back), shapeKey(call.shape));
}

// The tensor maps: A and B boxes are 64 rows of 128 one-byte elements (the same 128-byte swizzled
// rows as the 16-bit kernel's 64 x 64 boxes), C stays 64 x 64 bf16; shared memory and the launch
// rule are the bf16 kernel's.
TEST(GemmFp8, TensorMapsSharedMemoryAndLaunchRule) {
  const GemmShape s = fp8Shape(Layout::kNT, 1000, 520, 4096);
  const TmaDescriptors d = tmaDescriptors(s, 0x10000, 0x20000, 0x30000);
  EXPECT_EQ(d.a.elem_bytes, 1);
  EXPECT_EQ(d.a.box_cols, 128u);
  EXPECT_EQ(d.a.box_rows, 64u);
  EXPECT_EQ(d.a.cols, 4096u);
  EXPECT_EQ(d.a.rows, 1000u);
  EXPECT_EQ(d.a.row_stride_bytes, 4096u);
  EXPECT_EQ(d.b.rows, 520u);
  EXPECT_EQ(d.b.box_cols, 128u);
  EXPECT_EQ(d.c.elem_bytes, 2);
  EXPECT_EQ(d.c.box_cols, 64u);
  for (const TensorMap2DDesc* t : {&d.a, &d.b, &d.c}) EXPECT_TRUE(checkTensorMap2D(*t).ok());
  DeviceInfo h;
  h.vendor = Vendor::kNvidia;
  h.arch = "sm_90a";
  h.shared_per_block = 48 * 1024;
  h.shared_per_block_optin = 227 * 1024;
  h.multiprocessors = 132;
  const Config c = tmaConfig(256, 2, 4, 1, 1, 1);
  GemmShape bf = s;
  bf.ab = ElemType::kBF16;
  bf.lda = bf.ldb = 4096;
  auto p8 = launchPlan(KernelKind::kTma, c, s, h);
  auto p16 = launchPlan(KernelKind::kTma, c, bf, h);
  ASSERT_TRUE(p8.ok()) << p8.status().toString();
  ASSERT_TRUE(p16.ok()) << p16.status().toString();
  EXPECT_EQ(p8->shared_bytes, p16->shared_bytes);
  EXPECT_EQ(p8->grid.x, p16->grid.x);
  h.arch = "sm_80";
  EXPECT_EQ(launchPlan(KernelKind::kTma, c, s, h).status().code(), Code::kUnsupported);
}

// cuBLASLt's view: fp8 types, NT only (its "TN"), scales and fast accumulation per problem.
TEST(GemmFp8, CublasLtView) {
  auto lp = toLtProblem(fp8Shape(Layout::kNT, 128, 256, 512));
  ASSERT_TRUE(lp.ok());
  EXPECT_EQ(lp->ab, cublaslt::LtType::kF8E4M3);
  EXPECT_EQ(lp->c, cublaslt::LtType::kBF16);
  EXPECT_TRUE(lp->fast_accum);
  EXPECT_TRUE(cublaslt::checkLtProblem(*lp, "cuBLASLt").ok());
  auto nn = toLtProblem(fp8Shape(Layout::kNN, 128, 256, 512, ElemType::kF8E5M2));
  ASSERT_TRUE(nn.ok());
  EXPECT_EQ(nn->ab, cublaslt::LtType::kF8E5M2);
  EXPECT_EQ(cublaslt::checkLtProblem(*nn, "cuBLASLt").code(), Code::kUnsupported);
  EXPECT_EQ(cublaslt::checkLtProblem(*lp, "hipBLASLt").code(), Code::kUnsupported);
  // Scale pointers: 16-byte aligned (cuBLASLt refused one 4 bytes into an allocation).
  cublaslt::LtProblem scaled = *lp;
  scaled.scale_a = 0x10000;
  scaled.scale_b = 0x10004;
  EXPECT_EQ(cublaslt::checkLtProblem(scaled, "cuBLASLt").code(), Code::kInvalidArgument);
  scaled.scale_b = 0x10010;
  EXPECT_TRUE(cublaslt::checkLtProblem(scaled, "cuBLASLt").ok());
}

// The fp8 kernel compiles for sm_90a under NVRTC: the fp8 wgmma (k32, no transpose flags), TMA
// loads, the split tail, clusters and both epilogues; e5m2 too; no spills. A sample of the space
// (the full space is the bf16 sweep's: the fp8 part only changes the MMA, sizes and epilogue scale).
TEST(GemmFp8Nvrtc, KernelCompilesForSm90a) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  const GemmShape big = fp8Shape(Layout::kNT, 4096, 4096, 4096);
  GemmShape odd = fp8Shape(Layout::kNT, 1000, 520, 272, ElemType::kF8E5M2);
  odd.has_bias = true;
  odd.beta = 0.5f;
  std::vector<std::tuple<Config, GemmShape, std::string>> jobs = {
      {curatedConfigs(KernelKind::kTma, big).front(), big, "m64n256k32.f32.e4m3.e4m3"},
      {tmaConfig(128, 1, 8, 1, 1, 2), big, "m64n128k32.f32.e4m3.e4m3"},
      {tmaConfig(256, 2, 4, 2, 0, 1), big, "multicast::cluster"},
      {tmaConfig(192, 2, 5, 1, 1, 1), odd, "m64n192k32.f32.e5m2.e5m2"},
      // Ping-pong: the consumers' order barriers (named barriers 3 and 4, arrive + sync).
      {tmaConfig(256, 2, 4, 1, 1, 1, 1), big, "bar.arrive"},
      {tmaConfig(128, 2, 6, 1, 0, 1, 1, 2), odd, "m64n128k32.f32.e5m2.e5m2"},
  };
  std::vector<std::string> failures(jobs.size());
  auto work = [&](size_t first) {
    for (size_t j = first; j < jobs.size(); j += 2) {
      const auto& [c, s, want] = jobs[j];
      CompileRequest req;
      req.source = std::string(kernelSource(KernelKind::kTma));
      req.source_name = sourceFile(KernelKind::kTma);
      req.entry = entryName(KernelKind::kTma);
      req.defines = defines(KernelKind::kTma, c, s);
      req.arch = "sm_90a";
      req.dumps = kDumpPtx;
      auto r = (*cc)->compile(req);
      if (!r.ok()) {
        failures[j] = c.toString() + ": " + r.status().toString().substr(0, 2000);
        continue;
      }
      const std::string& ptx = r->dumps["ptx"];
      testutil::keepPtx(KernelKind::kTma, c, s, ptx);
      if (r->resources.spills()) failures[j] = c.toString() + ": spills";
      else if (!has(ptx, want)) failures[j] = c.toString() + ": PTX lacks " + want;
      else if (!has(ptx, "cp.async.bulk.tensor.2d")) failures[j] = c.toString() + ": no TMA load";
      else if (has(ptx, ".bf16.bf16")) failures[j] = c.toString() + ": a 16-bit wgmma in the fp8 kernel";
    }
  };
  std::thread t1(work, 0), t2(work, 1);
  t1.join();
  t2.join();
  for (const auto& f : failures)
    if (!f.empty()) ADD_FAILURE() << f;
}

// The tuned op refuses an fp8 call in another layout than NT before tuning anything, naming the
// layout rule (rather than failing every candidate), and keys fp8 apart from bf16.
TEST(GemmFp8Op, RefusesOtherLayoutsUpFrontAndKeysTheDtype) {
  const std::string dir = "/tmp/ktune-gemm-fp8-op-" + std::to_string(::getpid());
  cli::SimGpu gpu = cli::openSimGpu();
  EngineOptions o;
  o.options.cache_dir = dir;
  o.options.vendor_algos = 0;
  o.compiler = gpu.compiler;
  auto t = Engine::create(gpu.backend, o);
  ASSERT_TRUE(t.ok()) << t.status().toString();
  auto op = GemmOp::create(**t);
  ASSERT_TRUE(op.ok()) << op.status().toString();
  const GemmBuffers buf{0x10000, 0x20000, 0x30000, 0};
  for (Layout l : {Layout::kNN, Layout::kTN, Layout::kTT}) {
    const Status st = (**op)(GemmCall{fp8Shape(l, 64, 64, 64), buf});
    EXPECT_EQ(st.code(), Code::kUnsupported) << layoutName(l);
    EXPECT_TRUE(has(st.message(), "layout NT")) << st.message();
  }
  EXPECT_NE(shapeKey(fp8Shape(Layout::kNT, 64, 64, 64)),
            shapeKey(denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 64, 64, 64)));
  (void)removeTree(dir);
}

}  // namespace
}  // namespace ktune::gemm
