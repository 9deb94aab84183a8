// The prelude's programmatic-dependent-launch macros (compiler/prelude.cuh) and the kernels whose
// families declare programmatic_wait: KTUNE_PDL_WAIT / KTUNE_PDL_LAUNCH_DEPENDENTS become
// griddepcontrol instructions on sm_90+ and nothing below (NVRTC, no GPU); every body of the
// decode GEMM and both row-wise kernels wait (a family that declares the wait but runs a kernel
// without it would read its inputs before the previous kernel wrote them).
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "compiler/compiler.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "templates/gemm.h"
#include "templates/rowwise.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

size_t count(std::string_view text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(PdlPrelude, MacrosAreGriddepcontrolFromSm90AndNothingBelow) {
  auto c = openNvrtcCompiler();
  if (!c.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << c.status().message());
  for (const char* arch : {"sm_90a", "sm_80"}) {
    SCOPED_TRACE(arch);
    CompileRequest r;
    r.source = R"(#include "prelude.cuh"
KTUNE_KERNEL void pdl_k(const float* x, float* y) {
  KTUNE_PDL_WAIT();
  KTUNE_PDL_LAUNCH_DEPENDENTS();
  y[ktune::tid_x()] = 2.0f * x[ktune::tid_x()];
}
)";
    r.source_name = "pdl.cu";
    r.entry = "pdl_k";
    r.arch = arch;
    r.dumps = kDumpPtx;
    auto co = (*c)->compile(r);
    ASSERT_TRUE(co.ok()) << co.status().toString();
    const std::string& ptx = co->dumps["ptx"];
    const bool hopper = std::string(arch) == "sm_90a";
    EXPECT_EQ(ptx.find("griddepcontrol.wait") != std::string::npos, hopper) << ptx;
    EXPECT_EQ(ptx.find("griddepcontrol.launch_dependents") != std::string::npos, hopper) << ptx;
    if (hopper) {
      EXPECT_LT(ptx.find("griddepcontrol.wait"), ptx.find("ld.global")) << "the wait comes first";
    }
  }
}

TEST(PdlPrelude, EveryKernelOfTheDeclaringFamiliesWaits) {
  const std::string_view decode = gemm::kernelSource(gemm::KernelKind::kDecode);
  const size_t bodies = count(decode, "ktune_gemm_decode(");
  EXPECT_GE(bodies, 3u);  // the mma, FMA and wgmma / TMA bodies
  // Each body waits, and so does DC_ST's producer thread before it issues the first stages ahead
  // of the block barrier (produce_first, decode_wg_produce.cuh).
  EXPECT_EQ(count(decode, "KTUNE_PDL_WAIT();"), bodies + 1);
  EXPECT_EQ(count(rowwise::rmsNormSource(), "KTUNE_PDL_WAIT();"), 1u);
  EXPECT_EQ(count(rowwise::siluMulSource(), "KTUNE_PDL_WAIT();"), 1u);
}

}  // namespace
}  // namespace ktune
