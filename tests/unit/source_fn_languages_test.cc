// Per-config sources of every language through the tuning engine, without a GPU, on sm_90a and
// gfx942: a family whose source_fn hands over, per config, MLIR (the block size substituted into
// the text), the LLVM IR, PTX or AMDGCN assembly lowered from it, or the prebuilt code object.
// The engine compiles each with the IR front door into the store, with resources that the
// analysis turns into an occupancy; a second tuning run compiles nothing (every module a store
// hit). The simulated device then refuses to load a real cubin/hsaco: each candidate fails at
// the load, as a result with a reason, never as an aborted run. (On a GPU the same family runs:
// tests/gpu/source_fn_mlir_gpu_test.cc.)
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "autotune/autotuner.h"
#include "compiler/analysis/report.h"
#include "compiler/compiler.h"
#include "compiler/ir/ir_util.h"
#include "compiler/sim/sim_compiler.h"
#include "compiler/store/store.h"
#include "runtime/sim/sim_backend.h"
#include "tests/support/tools.h"
#include "tests/unit/ir_test_kernels.h"
#include "tests/unit/tuner_sim_env.h"

namespace ktune {
namespace {

struct Saxpy {
  int64_t n = 0;
};

const char* const kLangs[] = {"mlir", "llvm", "lower", "binary"};

class SourceFnLanguages : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const auto& tc = ir_detail::toolchain();
    if (tc.llc.empty() || tc.llvm_mc.empty() || tc.lld.empty() || tc.mlir_opt.empty() ||
        tc.mlir_translate.empty() || tc.readelf.empty())
      KTUNE_SKIP_WITHOUT_TOOL("llvm-19/lld-19/mlir-19-tools not installed");
    if (nvidia() && !tc.jitlink && tc.ptxas.empty())
      KTUNE_SKIP_WITHOUT_TOOL("no nvJitLink or ptxas (CUDA toolkit)");
    auto ir = openIrCompiler();
    ASSERT_TRUE(ir.ok()) << ir.status().message();
    // What the embedding compiler would generate: the module at each level, per block size.
    for (int block : {128, 256}) {
      CompileRequest req;
      req.language = Language::kMlir;
      req.source = mlirFor(block);
      req.entry = "saxpy";
      req.arch = arch();
      req.dumps = kDumpLlvm | (nvidia() ? kDumpPtx : kDumpIsa);
      auto co = (*ir)->compile(req);
      ASSERT_TRUE(co.ok()) << co.status().message();
      modules_[block] = {{"mlir", req.source},
                         {"llvm", co->dumps["llvm"]},
                         {"lower", co->dumps[nvidia() ? "ptx" : "isa"]},
                         {"binary", co->binary}};
    }
  }
  const std::string& arch() const { return GetParam(); }
  bool nvidia() const { return arch().rfind("sm_", 0) == 0; }
  static std::string mlirFor(int block) {
    std::string s = kSaxpyMlir;
    const std::string from = "arith.constant 256 : index";
    s.replace(s.find(from), from.size(), "arith.constant " + std::to_string(block) + " : index");
    return s;
  }
  Language languageOf(const std::string& level) const {
    if (level == "mlir") return Language::kMlir;
    if (level == "llvm") return Language::kLlvmIr;
    if (level == "lower") return nvidia() ? Language::kPtx : Language::kAmdgcnAsm;
    return nvidia() ? Language::kCubin : Language::kHsaco;
  }

  testfamily::SpecFamily<Saxpy> family() {
    testfamily::SpecFamily<Saxpy> fam;
    auto& f = fam.spec;
    f.name = "saxpy_generated";
    f.entry = "saxpy";
    f.space = {{"LANG", {0, 1, 2, 3}}, {"BLOCK", {128, 256}}};
    f.source_fn = [this](const Knobs& c, const Saxpy&) -> Expected<ConfigSource> {
      const std::string level = kLangs[c["LANG"]];
      ConfigSource m;
      m.language = languageName(languageOf(level));
      m.text = modules_.at(static_cast<int>(c["BLOCK"])).at(level);
      return m;
    };
    f.key = [](const Saxpy& p, KeyFields& k) { k.add("n", p.n); };
    f.launch = [](const Knobs& c, const Saxpy& p, const DeviceFacts&) {
      const auto b = static_cast<unsigned>(c["BLOCK"]);
      Launch l;
      l.grid[0] = static_cast<unsigned>((p.n + b - 1) / b);
      l.block[0] = b;
      return l;
    };
    f.args = [](const Saxpy& p, ArgPack& a) { a.add(int32_t(p.n)); };
    return fam;
  }

  std::map<int, std::map<std::string, std::string>> modules_;
};

TEST_P(SourceFnLanguages, EveryLanguageIsCompiledCachedAndAnalysedThroughTheEngine) {
  tunertest::Env env;
  DeviceInfo d = tunertest::h100Like();
  d.arch = arch();
  d.warp_size = nvidia() ? 32 : 64;
  SimOptions so;
  so.device = d;
  env.backend = std::make_shared<SimBackend>(so);
  EngineOptions eo = env.options();
  eo.options.retry_failed = true;  // the second run compiles (or finds) every config again
  eo.options.static_prune = false;
  auto tuner = Engine::create(env.backend, eo);
  ASSERT_TRUE(tuner.ok()) << tuner.status().toString();
  auto fam = addFamily(**tuner, family());
  ASSERT_TRUE(fam.ok()) << fam.status().toString();

  auto rep = fam->tune(Saxpy{1 << 20});
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->compiled, 8) << rep->tree();
  ASSERT_EQ(rep->candidates.size(), 8u);
  for (const CandidateResult& c : rep->candidates) {
    SCOPED_TRACE(c.config);
    ASSERT_FALSE(c.code_object_key.empty()) << c.reason;
    // Compiled, then refused by the simulated device at the load (a result with a reason), or
    // the same binary as another level's (a prebuilt cubin of the MLIR module), set aside.
    EXPECT_NE(c.status, Code::kOk);
    EXPECT_TRUE(c.reason.find("not a sim code object") != std::string::npos ||
                c.reason.find("identical binary") != std::string::npos)
        << c.reason;
    auto co = (*tuner)->store().get(c.code_object_key);
    ASSERT_TRUE(co.ok()) << co.status().message();
    EXPECT_EQ(co->format, nvidia() ? "cubin" : "hsaco");
    EXPECT_EQ(co->lowered_entry, "saxpy");
    if (nvidia()) {
      EXPECT_GT(co->resources.registers, 0);
      EXPECT_EQ(co->resources.wave_size, 32);
    } else {
      EXPECT_GT(co->resources.vgpr, 0);
      EXPECT_GT(co->resources.sgpr, 0);
      EXPECT_EQ(co->resources.wave_size, 64);
    }
    const KernelReport kr = analyzeCodeObject(*co, static_cast<int>(Config::parse(c.config)->getInt("BLOCK")));
    EXPECT_TRUE(kr.has_occupancy) << kr.occupancy_note;
  }

  auto again = fam->tune(Saxpy{1 << 20});
  ASSERT_TRUE(again.ok()) << again.status().toString();
  EXPECT_EQ(again->compiled, 0) << again->tree();
  EXPECT_EQ(again->store_hits, 8) << again->tree();
}

INSTANTIATE_TEST_SUITE_P(Archs, SourceFnLanguages, ::testing::Values("sm_90a", "gfx942"));

}  // namespace
}  // namespace ktune
