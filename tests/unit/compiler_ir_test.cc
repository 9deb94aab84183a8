// The IR front door without a GPU: every language (MLIR, LLVM IR, PTX, AMDGCN assembly, cubin,
// hsaco) on both vendors (sm_90a, gfx942) compiles, reports resources and occupancy, and is cached
// once (the second compile is a store hit); the request checks fail clearly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "base/fs.h"
#include "compiler/analysis/report.h"
#include "compiler/compiler.h"
#include "compiler/ir/ir_util.h"
#include "compiler/store/store.h"
#include "tests/unit/ir_test_kernels.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

bool haveLlvmTools() {
  const auto& tc = ir_detail::toolchain();
  return !tc.llc.empty() && !tc.llvm_mc.empty() && !tc.lld.empty() && !tc.mlir_opt.empty() &&
         !tc.mlir_translate.empty() && !tc.readelf.empty();
}
bool haveNvidiaTools() { return ir_detail::toolchain().jitlink || !ir_detail::toolchain().ptxas.empty(); }

CompileRequest request(Language lang, const std::string& text, const std::string& arch,
                       unsigned dumps = kDumpNone) {
  CompileRequest r;
  r.language = lang;
  r.source = text;
  r.source_name = std::string("saxpy.") + languageName(lang);
  r.entry = "saxpy";
  r.arch = arch;
  r.dumps = dumps;
  return r;
}

class IrCompilerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!haveLlvmTools()) KTUNE_SKIP_WITHOUT_TOOL("llvm-19/lld-19/mlir-19-tools not installed");
    if (nvidia() && !haveNvidiaTools()) KTUNE_SKIP_WITHOUT_TOOL("no nvJitLink or ptxas (CUDA toolkit)");
    auto c = openIrCompiler();
    ASSERT_TRUE(c.ok()) << c.status().message();
    compiler_ = std::move(*c);
    dir_ = "/tmp/ktune-ir-test-" + std::to_string(::getpid()) + "-" + arch();
    auto s = CodeObjectStore::open(dir_);
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = *s;
  }
  void TearDown() override {
    if (!dir_.empty()) (void)removeTree(dir_);
  }
  const std::string& arch() const { return GetParam(); }
  bool nvidia() const { return arch().rfind("sm_", 0) == 0; }

  // Compiles through the store twice: the first is a miss, the second a hit with the same binary.
  CodeObject compileTwice(const CompileRequest& req) {
    bool hit = true;
    auto a = store_->getOrCompile(*compiler_, req, &hit);
    EXPECT_TRUE(a.ok()) << a.status().message();
    if (!a.ok()) return {};
    EXPECT_FALSE(hit) << languageName(req.language);
    auto b = store_->getOrCompile(*compiler_, req, &hit);
    EXPECT_TRUE(b.ok()) << b.status().message();
    EXPECT_TRUE(hit) << languageName(req.language) << ": second compile was not a store hit";
    if (b.ok()) {
      EXPECT_EQ(a->binary, b->binary);
    }
    return std::move(*a);
  }

  // Resources and occupancy as the C++ path reports them.
  void expectAnalysed(const CodeObject& co, const std::string& what) {
    EXPECT_EQ(co.lowered_entry, "saxpy") << what;
    EXPECT_EQ(co.format, nvidia() ? "cubin" : "hsaco") << what;
    if (nvidia()) {
      EXPECT_GT(co.resources.registers, 0) << what;
      EXPECT_EQ(co.resources.wave_size, 32) << what;
    } else {
      EXPECT_GT(co.resources.vgpr, 0) << what;
      EXPECT_GT(co.resources.sgpr, 0) << what;
      EXPECT_EQ(co.resources.wave_size, 64) << what;
    }
    const KernelReport rep = analyzeCodeObject(co, 256);
    EXPECT_TRUE(rep.has_occupancy) << what << ": " << rep.occupancy_note;
  }

  std::unique_ptr<Compiler> compiler_;
  std::shared_ptr<CodeObjectStore> store_;
  std::string dir_;
};

// MLIR -> LLVM IR -> PTX|asm -> binary, then each intermediate handed back in as its own
// language: every step of the pipeline is also an entry point.
TEST_P(IrCompilerTest, EveryLanguageCompilesIsCachedAndAnalysed) {
  const unsigned dumps = kDumpLlvm | kDumpMlir | (nvidia() ? kDumpPtx : kDumpIsa);
  CodeObject from_mlir = compileTwice(request(Language::kMlir, kSaxpyMlir, arch(), dumps));
  ASSERT_FALSE(from_mlir.binary.empty());
  expectAnalysed(from_mlir, "mlir");
  // The stage dump names the lowering passes and shows the module after each.
  const std::string& stages = from_mlir.dumps["mlir"];
  EXPECT_NE(stages.find(nvidia() ? "convert-gpu-to-nvvm" : "convert-gpu-to-rocdl"),
            std::string::npos);
  EXPECT_NE(stages.find("IR Dump After"), std::string::npos);
  EXPECT_NE(stages.find(nvidia() ? "nvvm.read.ptx.sreg.tid.x" : "rocdl.workitem.id.x"),
            std::string::npos);

  const std::string ir = from_mlir.dumps["llvm"];
  ASSERT_NE(ir.find("define"), std::string::npos);
  expectAnalysed(compileTwice(request(Language::kLlvmIr, ir, arch())), "llvm");

  const std::string lower = from_mlir.dumps[nvidia() ? "ptx" : "isa"];
  const Language lower_lang = nvidia() ? Language::kPtx : Language::kAmdgcnAsm;
  ASSERT_NE(lower.find("saxpy"), std::string::npos);
  CodeObject from_lower = compileTwice(request(lower_lang, lower, arch()));
  expectAnalysed(from_lower, languageName(lower_lang));
  EXPECT_EQ(from_lower.resources.registers, from_mlir.resources.registers);
  EXPECT_EQ(from_lower.resources.vgpr, from_mlir.resources.vgpr);

  const Language bin_lang = nvidia() ? Language::kCubin : Language::kHsaco;
  CodeObject prebuilt = compileTwice(request(bin_lang, from_mlir.binary, arch()));
  expectAnalysed(prebuilt, languageName(bin_lang));
  EXPECT_EQ(prebuilt.binary, from_mlir.binary);  // kept as it is
}

// The entry may be left out when the module has one kernel; a wrong one lists the kernels.
TEST_P(IrCompilerTest, EntryIsTheOnlyKernelOrNamed) {
  auto req = request(Language::kMlir, kSaxpyMlir, arch());
  req.entry.clear();
  auto co = compiler_->compile(req);
  ASSERT_TRUE(co.ok()) << co.status().message();
  EXPECT_EQ(co->lowered_entry, "saxpy");
  req.entry = "nope";
  auto bad = compiler_->compile(req);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("saxpy"), std::string::npos) << bad.status().message();
}

// A prebuilt binary for another arch is refused, not cached as if it fit.
TEST_P(IrCompilerTest, PrebuiltForAnotherArchIsRefused) {
  auto co = compiler_->compile(request(Language::kMlir, kSaxpyMlir, arch()));
  ASSERT_TRUE(co.ok()) << co.status().message();
  const std::string other = nvidia() ? "sm_80" : "gfx90a";
  auto bad = compiler_->compile(
      request(nvidia() ? Language::kCubin : Language::kHsaco, co->binary, other));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("not " + other), std::string::npos)
      << bad.status().message();
  // Nor is a binary of the other vendor, or a text file posing as one.
  auto text = compiler_->compile(
      request(nvidia() ? Language::kCubin : Language::kHsaco, "not an ELF file", arch()));
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), Code::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Archs, IrCompilerTest, ::testing::Values("sm_90a", "gfx942"));

TEST(IrCompiler, RequestChecks) {
  auto c = openIrCompiler();
  ASSERT_TRUE(c.ok());
  auto expectInvalid = [&](const CompileRequest& r, const std::string& words) {
    auto co = (*c)->compile(r);
    ASSERT_FALSE(co.ok()) << words;
    EXPECT_EQ(co.status().code(), Code::kInvalidArgument) << co.status().message();
    EXPECT_NE(co.status().message().find(words), std::string::npos) << co.status().message();
  };
  expectInvalid(request(Language::kPtx, ".version 8.0", "gfx942"), "NVIDIA code");
  expectInvalid(request(Language::kAmdgcnAsm, "s_endpgm", "sm_90a"), "AMD code");
  expectInvalid(request(Language::kMlir, "  \n", "sm_90a"), "empty mlir module");
  auto defs = request(Language::kMlir, kSaxpyMlir, "sm_90a");
  defs.defines = {{"VEC", "4"}};
  expectInvalid(defs, "substitute the values");
  expectInvalid(request(Language::kLlvmIr, "target triple = \"nvptx64-nvidia-cuda\"\n", "gfx942"),
                "targets nvptx64");
}

// On ROCDL gpu.block_dim becomes a call into the ockl device library: linked from
// rocm-device-libs and inlined (no call left in the ISA); a function from nowhere is a clear
// compile error rather than a code object with an unresolved symbol.
TEST(IrCompiler, AmdDeviceLibraryCallsAreLinkedOthersRefused) {
  if (!haveLlvmTools()) KTUNE_SKIP_WITHOUT_TOOL("llvm-19/mlir-19-tools not installed");
  auto compiler = openIrCompiler();
  ASSERT_TRUE(compiler.ok());
  if (!ir_detail::toolchain().amd_bitcode.empty()) {
    std::string src = kSaxpyMlir;
    const std::string from = "%bdim = arith.constant 256 : index";
    src.replace(src.find(from), from.size(), "%bdim = gpu.block_dim x");
    auto co = (*compiler)->compile(request(Language::kMlir, src, "gfx942", kDumpIsa));
    ASSERT_TRUE(co.ok()) << co.status().message();
    EXPECT_EQ(co->dumps["isa"].find("__ockl_get_local_size@rel32"), std::string::npos);
  }
  const std::string ir = R"(
declare float @mystery(float)
define amdgpu_kernel void @saxpy(ptr addrspace(1) %p) {
  %v = load float, ptr addrspace(1) %p
  %r = call float @mystery(float %v)
  store float %r, ptr addrspace(1) %p
  ret void
}
)";
  auto bad = (*compiler)->compile(request(Language::kLlvmIr, ir, "gfx942"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kCompileError);
  EXPECT_NE(bad.status().message().find("mystery"), std::string::npos) << bad.status().message();
}

// The same text in two languages, or with another toolchain, is another store entry.
TEST(IrCompiler, KeyIncludesLanguageAndToolchain) {
  CompileRequest a = request(Language::kLlvmIr, "text", "gfx942");
  CompileRequest b = a;
  b.language = Language::kMlir;
  EXPECT_NE(codeObjectKey(a, "ktune-ir", "llvm 19"), codeObjectKey(b, "ktune-ir", "llvm 19"));
  EXPECT_NE(codeObjectKey(a, "ktune-ir", "llvm 19"), codeObjectKey(a, "ktune-ir", "llvm 20"));
  // C++ keys are what they were before languages existed.
  CompileRequest cpp = a;
  cpp.language = Language::kCpp;
  EXPECT_EQ(codeObjectKey(cpp, "x", "1").size(), 64u);
  EXPECT_NE(codeObjectKey(cpp, "x", "1"), codeObjectKey(a, "x", "1"));
}

// A missing tool is kUnavailable naming the package to install; the toolchain's versions are
// recorded (they are part of every IR store key).
TEST(IrCompiler, MissingToolNamesThePackage) {
  auto s = ir_detail::need("", "mlir-opt-19", "mlir-19-tools");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kUnavailable);
  EXPECT_NE(s.status().message().find("install mlir-19-tools"), std::string::npos);
  EXPECT_EQ(*ir_detail::need("/usr/bin/x", "x", "y"), "/usr/bin/x");
  const std::string v = (*openIrCompiler())->version();
  EXPECT_NE(v.find("pipeline "), std::string::npos) << v;
  if (!ir_detail::toolchain().llc.empty()) {
    EXPECT_EQ(v.find("llvm none"), std::string::npos) << v;
  }
}

TEST(IrLanguage, NamesAndExtensions) {
  for (Language l : {Language::kCpp, Language::kPtx, Language::kLlvmIr, Language::kAmdgcnAsm,
                     Language::kMlir, Language::kCubin, Language::kHsaco}) {
    auto back = parseLanguage(languageName(l));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, l);
  }
  EXPECT_EQ(*languageFromPath("a/b.ll"), Language::kLlvmIr);
  EXPECT_EQ(*languageFromPath("k.ptx"), Language::kPtx);
  EXPECT_EQ(*languageFromPath("k.s"), Language::kAmdgcnAsm);
  EXPECT_EQ(*languageFromPath("k.mlir"), Language::kMlir);
  EXPECT_EQ(*languageFromPath("k.cubin"), Language::kCubin);
  EXPECT_EQ(*languageFromPath("k.hsaco"), Language::kHsaco);
  EXPECT_EQ(*languageFromPath("k.cu"), Language::kCpp);
  EXPECT_FALSE(languageFromPath("k.txt").ok());
  EXPECT_FALSE(languageFromPath("dir.ll/kernel").ok());
  EXPECT_FALSE(parseLanguage("fortran").ok());
}

// Module files: regular files only, and no bigger than kMaxModuleFileBytes (checked before
// reading, so a huge sparse file costs nothing).
TEST(IrLanguage, RequestFromFileChecksTheFile) {
  EXPECT_EQ(requestFromFile("/dev/null", "sm_90a", "", "ptx").status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(requestFromFile("/nonexistent/k.ptx", "sm_90a", "", "").status().code(),
            Code::kIoError);
  const std::string big = "/tmp/ktune-ir-big-" + std::to_string(::getpid()) + ".ll";
  { std::ofstream(big) << "x"; }
  ASSERT_EQ(::truncate(big.c_str(), off_t(kMaxModuleFileBytes) + 1), 0);
  auto r = requestFromFile(big, "gfx942", "", "");
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("MiB"), std::string::npos);
  ASSERT_EQ(::truncate(big.c_str(), 5), 0);
  auto ok = requestFromFile(big, "gfx942", "k", "");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->language, Language::kLlvmIr);
  EXPECT_EQ(ok->source.size(), 5u);
  EXPECT_EQ(ok->entry, "k");
  ::unlink(big.c_str());
}

}  // namespace
}  // namespace ktune
