// NVRTC compiles ktune kernels (with the prelude) without a GPU.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/compiler.h"
#include "compiler/compiler_util.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

const char* kKernel = R"(
#include "prelude.cuh"
template <class T, int VEC>
__global__ void KTUNE_LAUNCH_BOUNDS(256, 0) scale(const T* __restrict__ x, T* __restrict__ y, float s, int n) {
  __shared__ float red[32];
  const int i = (ktune::bid_x() * ktune::bdim_x() + ktune::tid_x()) * VEC;
  float acc = 0.f;
  if (i + VEC <= n) {
    ktune::Vec<T, VEC> v = ktune::load_vec<VEC>(x + i);
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      acc += ktune::to_float(v[j]);
      v[j] = ktune::from_float<T>(ktune::to_float(v[j]) * s);
    }
    ktune::store_vec<VEC>(y + i, v);
  }
  acc = ktune::warp_reduce_sum(acc);
  if (ktune::lane_id() == 0) red[ktune::tid_x() / KTUNE_WARP_SIZE] = acc;
  ktune::sync_threads();
  if (ktune::tid_x() == 0) y[0] = ktune::from_float<T>(red[0] * ktune::rsqrt(s) + ktune::exp_fast(s));
}
KTUNE_KERNEL void KTUNE_LAUNCH_BOUNDS(128, 2) copy_async(const float* x, float* y) {
  __shared__ __align__(16) float buf[128 * 4];
  ktune::cp_async16(&buf[ktune::tid_x() * 4], x + ktune::tid_x() * 4);
  ktune::cp_async_commit();
  ktune::cp_async_wait<0>();
  ktune::sync_threads();
  y[ktune::tid_x()] = buf[(ktune::tid_x() * 5) % 512] * SCALE;
}
)";

class NvrtcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = openNvrtcCompiler();
    if (!c.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << c.status().message());
    compiler_ = std::move(c).value();
  }
  std::unique_ptr<Compiler> compiler_;
};

CompileRequest request(const std::string& arch, const std::string& entry) {
  CompileRequest r;
  r.source = kKernel;
  r.source_name = "scale.cu";
  r.entry = entry;
  r.arch = arch;
  r.defines = {{"SCALE", "2.0f"}};
  return r;
}

// The SASS dump is nvdisasm's text (every kernel ends in EXIT) where nvdisasm or cuobjdump is
// installed (the GPU machine), else exactly the line naming the missing tool (CI: neither ships
// in Debian's main archive). An error message or an empty dump fails both branches.
void expectSassOrTheMissingToolLine(const std::string& sass) {
  if (!findProgram("nvdisasm").empty() || !findProgram("cuobjdump").empty() ||
      pathExists("/usr/local/cuda/bin/nvdisasm") || pathExists("/usr/local/cuda/bin/cuobjdump")) {
    EXPECT_NE(sass.find("EXIT"), std::string::npos) << sass.substr(0, 2000);
  } else {
    EXPECT_EQ(sass.rfind("nvdisasm not installed (nor cuobjdump; looked on PATH and in ", 0), 0u)
        << sass;
    EXPECT_NE(sass.find("): SASS unavailable"), std::string::npos) << sass;
  }
}

TEST_F(NvrtcTest, TemplatedKernelWithPreludeForHopperAndAmpere) {
  EXPECT_EQ(compiler_->name(), "nvrtc");
  EXPECT_FALSE(compiler_->version().empty());
  for (const char* arch : {"sm_90a", "sm_80"}) {
    SCOPED_TRACE(arch);
    auto req = request(arch, "scale<__nv_bfloat16, 8>");
    req.dumps = kDumpPtx | kDumpSass | kDumpSource;
    auto co = compiler_->compile(req);
    ASSERT_TRUE(co.ok()) << co.status().toString();
    ASSERT_GE(co->binary.size(), 4u);
    EXPECT_EQ(co->binary.substr(0, 4),
              "\x7f"
              "ELF");
    EXPECT_EQ(co->format, "cubin");
    EXPECT_EQ(co->lowered_entry.rfind("_Z5scaleI13__nv_bfloat16Li8EEvPKT_PS1_fi", 0), 0u)
        << co->lowered_entry;
    EXPECT_GT(co->resources.registers, 0) << co->log;
    EXPECT_EQ(co->resources.shared_bytes, 128);  // float red[32]
    EXPECT_EQ(co->resources.spill_store_bytes, 0);
    EXPECT_NE(co->dumps["ptx"].find(".entry"), std::string::npos);
    EXPECT_NE(co->dumps["ptx"].find("ld.global.nc.v4"), std::string::npos);  // 16-byte loads
    expectSassOrTheMissingToolLine(co->dumps["sass"]);
    EXPECT_NE(co->dumps["source"].find("#define SCALE 2.0f"), std::string::npos);
    EXPECT_NE(std::find(co->options.begin(), co->options.end(), std::string("-arch=") + arch),
              co->options.end());
  }
}

// The SASS path end to end wherever the test runs: a stand-in nvdisasm first on PATH receives
// `-c <file>.cubin` holding the compiled ELF and its output becomes the dump verbatim.
TEST_F(NvrtcTest, SassDumpRunsNvdisasmOnTheCubin) {
  auto dir = compiler_detail::TempDir::create("ktune-fake-nvdisasm-");
  ASSERT_TRUE(dir.ok());
  const std::string tool = dir->file("nvdisasm");
  const std::string script =
      "#!/bin/sh\n"
      "[ \"$1\" = -c ] || { echo \"bad flag $1\" >&2; exit 2; }\n"
      "case \"$2\" in *.cubin) ;; *) echo \"bad file $2\" >&2; exit 2;; esac\n"
      "head -c 4 \"$2\" | grep -q ELF || { echo 'not an ELF' >&2; exit 2; }\n"
      "echo \"fake-sass $(wc -c < \"$2\") bytes\"\n";
  ASSERT_TRUE(writeFileAtomic(tool, script).ok());
  ASSERT_EQ(::chmod(tool.c_str(), 0755), 0);
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", (dir->path() + ":" + saved).c_str(), 1);
  auto req = request("sm_90a", "copy_async");
  req.dumps = kDumpSass;
  auto co = compiler_->compile(req);
  ::setenv("PATH", saved.c_str(), 1);
  ASSERT_TRUE(co.ok()) << co.status().toString();
  EXPECT_EQ(co->dumps["sass"], "fake-sass " + std::to_string(co->binary.size()) + " bytes\n");
}

TEST_F(NvrtcTest, ExternCEntryAndCpAsync) {
  auto req = request("sm_80", "copy_async");
  req.dumps = kDumpPtx;
  auto co = compiler_->compile(req);
  ASSERT_TRUE(co.ok()) << co.status().toString();
  EXPECT_EQ(co->lowered_entry, "copy_async");
  EXPECT_EQ(co->resources.shared_bytes, 2048);
  EXPECT_NE(co->dumps["ptx"].find("cp.async.cg.shared.global"), std::string::npos);
  EXPECT_NE(co->dumps["ptx"].find(".maxntid 128"), std::string::npos);
}

// Regression (H100 machine, 2026-11-22): an identical program compiled a second time in one
// process came back with no ptxas report, so its resources read 0 registers.
TEST_F(NvrtcTest, IdenticalCompileTwiceKeepsItsResourceReport) {
  auto req = request("sm_90a", "copy_async");
  auto a = compiler_->compile(req);
  auto b = compiler_->compile(req);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT(a->resources.registers, 0);
  EXPECT_EQ(b->resources.registers, a->resources.registers) << b->log;
  EXPECT_EQ(b->resources.shared_bytes, a->resources.shared_bytes);
}

// The cubin itself carries the register count and static shared size: the fallback when NVRTC
// prints no ptxas report must agree with the report.
TEST_F(NvrtcTest, CubinResourcesMatchPtxasReport) {
  auto co = compiler_->compile(request("sm_90a", "copy_async"));
  ASSERT_TRUE(co.ok()) << co.status().toString();
  ResourceUsage r;
  ASSERT_TRUE(cubinResources(co->binary, co->lowered_entry, &r));
  EXPECT_EQ(r.registers, co->resources.registers);
  EXPECT_GE(r.shared_bytes, co->resources.shared_bytes);  // upper bound (reserved memory)
  EXPECT_EQ(r.stack_bytes, co->resources.stack_bytes);
  EXPECT_FALSE(cubinResources("not an elf", "copy_async", &r));
  EXPECT_FALSE(cubinResources(co->binary, "no_such_kernel", &r));
}

TEST_F(NvrtcTest, SyntaxErrorCarriesLogAndOptions) {
  CompileRequest req = request("sm_90a", "broken");
  req.source =
      "#include \"prelude.cuh\"\nKTUNE_KERNEL void broken(float* p) { p[0] = undefined_thing; }\n";
  req.source_name = "broken.cu";
  auto co = compiler_->compile(req);
  ASSERT_FALSE(co.ok());
  EXPECT_EQ(co.status().code(), Code::kCompileError);
  const std::string& m = co.status().message();
  EXPECT_NE(m.find("undefined_thing"), std::string::npos) << m;
  EXPECT_NE(m.find("broken.cu(2)"), std::string::npos) << m;
  EXPECT_NE(m.find("-arch=sm_90a"), std::string::npos) << m;
  EXPECT_NE(m.find("-DSCALE=2.0f"), std::string::npos) << m;
}

TEST_F(NvrtcTest, UnknownArchIsUnsupported) {
  EXPECT_TRUE(compiler_->supportsArch("sm_90a"));
  EXPECT_FALSE(compiler_->supportsArch("sm_1"));
  EXPECT_FALSE(compiler_->supportsArch("gfx942"));
  auto co = compiler_->compile(request("sm_1", "copy_async"));
  ASSERT_FALSE(co.ok());
  EXPECT_EQ(co.status().code(), Code::kUnsupported);
  EXPECT_NE(co.status().message().find("sm_1"), std::string::npos);
}

TEST(PtxasReport, ParsesNvrtc13Output) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z4tmplI6__halfLi8EEvPKT_Pf' for 'sm_80'\n"
      "ptxas info    : Function properties for _Z4tmplI6__halfLi8EEvPKT_Pf\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 12 registers, used 1 barriers, 2048 bytes smem, 368 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'rms' for 'sm_80'\n"
      "ptxas info    : Function properties for rms\n"
      "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 128 bytes smem, 372 bytes cmem[0]\n";
  ResourceUsage r;
  ASSERT_TRUE(parsePtxasReport(log, "rms", &r));
  EXPECT_EQ(r.registers, 255);
  EXPECT_EQ(r.shared_bytes, 128);
  EXPECT_EQ(r.stack_bytes, 24);
  EXPECT_EQ(r.spill_store_bytes, 8);
  EXPECT_EQ(r.spill_load_bytes, 4);
  EXPECT_TRUE(r.spills());
  ResourceUsage first;
  ASSERT_TRUE(parsePtxasReport(log, "", &first));
  EXPECT_EQ(first.registers, 12);
  EXPECT_EQ(first.shared_bytes, 2048);
  ResourceUsage none;
  EXPECT_FALSE(parsePtxasReport(log, "missing", &none));
}

}  // namespace
}  // namespace ktune
