// CI (no GPU): the occupancy a user reads agrees with LLVM's. The MFMA kernel's LDS is static, so
// the launch adds none and it is counted once, in the compile report, explain, the static ranking
// and pruning, and the tuner; the same rule for NVIDIA shared memory (static + the launch's
// dynamic part). Then the CLI itself, `ktune compile gemm_mfma --arch A --compiler clang -D ...
// --report --dump isa`, for every curated config and a sample of the space on gfx90a and gfx942:
// the occupancy it prints equals LLVM's own "; Occupancy:" in the same dump. The template's bare
// default is the arch's curated default, and a -D that breaks the space is named before compiling.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "autotune/static_prune.h"
#include "compiler/analysis/report.h"
#include "report/model.h"
#include "templates/catalog.h"
#include "templates/gemm.h"
#include "tests/support/tools.h"
#include "tests/unit/cli_fixture.h"
#include "tests/unit/report_fixtures.h"

namespace ktune {
namespace {

using namespace gemm;

Config mfmaConfig(int64_t bm, int64_t bn, int64_t bk, int64_t mi, int64_t stages) {
  return Config{{"BLOCK_M", bm},        {"BLOCK_N", bn},           {"BLOCK_K", bk},
                {"MATRIX_INSTR", mi},   {"NUM_WAVES", int64_t{4}}, {"WAVES_PER_EU", int64_t{0}},
                {"NUM_STAGES", stages}, {"GROUP_M", int64_t{8}},   {"SPLIT_K", int64_t{1}}};
}

GemmShape nt4096() {
  return denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096);
}

// A gfx942 code object as the clang path reports the issue's config (64x128x128, NUM_STAGES 1):
// 48 KiB of static LDS, registers low enough that LDS is the limit.
CodeObject mfmaCode(int64_t lds) {
  CodeObject co;
  co.arch = "gfx942";
  co.compiler = "clang";
  co.entry = "ktune_gemm_mfma";
  co.resources.vgpr = 128;
  co.resources.agpr = 32;
  co.resources.sgpr = 40;
  co.resources.shared_bytes = lds;
  co.resources.wave_size = 64;
  co.resources.max_threads_per_block = 256;
  return co;
}

TEST(ReportLds, MfmaStaticLdsIsCountedOnce) {
  const Config c = mfmaConfig(64, 128, 128, 16, 1);
  ASSERT_EQ(sharedBytes(KernelKind::kMfma, c), 49152);
  // The launch adds nothing: the tiles are `__shared__` arrays, already in the code object.
  EXPECT_EQ(launchSharedBytes(KernelKind::kMfma, c), 0);
  DeviceInfo dev;
  dev.vendor = Vendor::kAmd;
  dev.arch = "gfx942";
  dev.shared_per_block = 64 * 1024;
  auto plan = launchPlan(KernelKind::kMfma, c, nt4096(), dev);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->shared_bytes, 0);
  // The report: 48 KiB once -> one workgroup per CU, 1 wave/EU (LLVM says 1), not "98304 bytes
  // of LDS exceed the 65536".
  const KernelReport r =
      analyzeCodeObject(mfmaCode(49152), 256, launchSharedBytes(KernelKind::kMfma, c));
  ASSERT_TRUE(r.has_occupancy) << r.occupancy_note;
  EXPECT_EQ(r.amd.occ_lds, 1);
  EXPECT_DOUBLE_EQ(r.amd.waves_per_eu, 1.0);
  EXPECT_EQ(r.amd.llvm_waves_per_eu, 1);
  EXPECT_EQ(r.amd.limiter, "lds");
  EXPECT_NE(r.text().find("LDS 49152 B, scratch"), std::string::npos) << r.text();
  EXPECT_EQ(r.text().find("exceed"), std::string::npos) << r.text();
  // The one count: static + the launch's dynamic part.
  EXPECT_EQ(occupancySharedBytes(mfmaCode(49152).resources, 0), 49152);
  EXPECT_EQ(occupancySharedBytes(mfmaCode(1024).resources, 4096), 5120);
}

TEST(ReportLds, PrunerAndReportCountTheSame) {
  const Config c = mfmaConfig(64, 128, 128, 16, 1);
  const CodeObject co = mfmaCode(49152);
  DeviceInfo dev;
  dev.vendor = Vendor::kAmd;
  dev.arch = "gfx942";
  dev.shared_per_block = 64 * 1024;
  auto plan = launchPlan(KernelKind::kMfma, c, nt4096(), dev);
  ASSERT_TRUE(plan.ok());
  const PruneLaunch launch{int(plan->block.x), plan->shared_bytes};
  StaticPruneOptions o;
  // 1 wave/EU meets the default minimum: kept (the double count pruned it as "0 waves/EU").
  EXPECT_EQ(staticPruneReason(o, co, dev, launch, ""), std::nullopt);
  o.min_waves_per_eu = 2;
  auto why = staticPruneReason(o, co, dev, launch, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("occupancy 1 waves/EU < 2 (VGPR 128 (AGPR 32 of them), LDS 49152 B"),
            std::string::npos)
      << *why;
}

TEST(ReportLds, NvidiaStaticPlusDynamicSharedOnce) {
  // The mma kernel's tiles are dynamic; its split-K flag is a 4-byte static `__shared__`.
  const Config c{{"BLOCK_M", int64_t{128}}, {"BLOCK_N", int64_t{128}}, {"BLOCK_K", int64_t{32}},
                 {"WARPS_M", int64_t{2}},   {"WARPS_N", int64_t{2}},   {"NUM_STAGES", int64_t{4}},
                 {"GROUP_M", int64_t{8}},   {"SPLIT_K", int64_t{2}},   {"MIN_BLOCKS", int64_t{0}}};
  const int64_t tiles = sharedBytes(KernelKind::kMma, c);
  ASSERT_EQ(tiles, 65536);
  EXPECT_EQ(launchSharedBytes(KernelKind::kMma, c), tiles);
  DeviceInfo dev;
  dev.vendor = Vendor::kNvidia;
  dev.arch = "sm_90a";
  dev.shared_per_block = 48 * 1024;
  dev.shared_per_block_optin = 227 * 1024;
  auto plan = launchPlan(KernelKind::kMma, c, nt4096(), dev);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->shared_bytes, tiles);
  CodeObject co;
  co.arch = "sm_90a";
  co.compiler = "nvrtc";
  co.entry = "ktune_gemm_mma";
  co.resources.registers = 128;
  co.resources.shared_bytes = 4;
  const KernelReport r = analyzeCodeObject(co, 128, plan->shared_bytes);
  ASSERT_TRUE(r.has_occupancy) << r.occupancy_note;
  // (65536 + 4 + 1024 reserved) rounded to 128 B = 66688 -> floor(233472 / 66688) = 3 blocks.
  EXPECT_EQ(r.nv.by_smem, 3);
  EXPECT_NE(r.text().find("shared 4 B + 65536 B dynamic"), std::string::npos) << r.text();
  PruneLaunch launch{128, plan->shared_bytes};
  StaticPruneOptions o;
  o.min_blocks_per_sm = 4;
  auto why = staticPruneReason(o, co, dev, launch, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("shared 65540 B"), std::string::npos) << *why;
}

// `ktune report` reads registers and occupancy from the store: for a GEMM candidate with the
// launch of its config (the mma tiles are dynamic shared memory the binary does not show), and
// AMD's .vgpr_count as it is (the AGPRs are in it already).
TEST(ReportLds, TuningReportUsesTheCandidatesLaunch) {
  char tmpl[] = "/tmp/ktune-report-lds-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto store = CodeObjectStore::open(dir + "/store");
  ASSERT_TRUE(store.ok());
  DbEntry e;
  e.key = reporttest::llmKeys()[0];
  e.date = "2026-11-27T00:00:00Z";
  auto add = [&](const std::string& config, const CodeObject& co) {
    CandidateResult c;
    c.config = config;
    c.date = e.date;
    c.stats = {0.3, 0.3, 0.31, 0.29, 0.32, 0.3, 0.001, 50, {}};
    c.code_object_key = sha256Hex(config);
    ASSERT_TRUE((*store)->put(c.code_object_key, co).ok());
    e.candidates.push_back(c);
  };
  CodeObject mma;
  mma.binary = "cubin";
  mma.format = "cubin";
  mma.arch = "sm_90a";
  mma.entry = "ktune_gemm_mma";
  mma.compiler = "nvrtc";
  mma.compiler_version = "13.0";
  mma.resources.registers = 128;
  add("BLOCK_K=32,BLOCK_M=128,BLOCK_N=128,GROUP_M=8,KIND=mma,MIN_BLOCKS=0,NUM_STAGES=4,SPLIT_K=1,"
      "WARPS_M=2,WARPS_N=2",
      mma);
  CodeObject mfma = mfmaCode(49152);
  mfma.binary = "hsaco";
  mfma.format = "hsaco";
  add("BLOCK_K=128,BLOCK_M=64,BLOCK_N=128,GROUP_M=8,KIND=mfma,MATRIX_INSTR=16,NUM_STAGES=1,"
      "NUM_WAVES=4,SPLIT_K=1,WAVES_PER_EU=0",
      mfma);
  e.winner = e.candidates[0].config;
  e.winner_stats = e.candidates[0].stats;
  {
    auto db = TuningDatabase::open(dir + "/gemm.json", reporttest::h100Validator(), "gemm");
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->record(e).ok());
  }
  auto view = report::loadDatabase(dir + "/gemm.json", {dir + "/store", {}});
  (void)removeTree(dir);
  ASSERT_TRUE(view.ok()) << view.status().toString();
  const auto& cands = view->devices.at(0).keys.at(0).candidates;
  ASSERT_EQ(cands.size(), 2u);
  // 128 registers x 128 threads allow 4 blocks; 64 KiB of tiles + 1 KiB reserved allow 3.
  EXPECT_EQ(cands[0].shared_bytes, 65536);
  EXPECT_DOUBLE_EQ(cands[0].occupancy, 3.0 * 4 / 64);
  EXPECT_EQ(cands[1].registers, 128);  // .vgpr_count, not VGPR + AGPR
  EXPECT_EQ(cands[1].shared_bytes, 49152);
  EXPECT_DOUBLE_EQ(cands[1].occupancy, 1.0 / 8);  // 1 wave/EU of 8
}

TEST(TemplateDefaults, BareGemmMfmaIsTheArchCuratedDefault) {
  for (const std::string arch : {"gfx90a", "gfx942"}) {
    auto t = templates::findTemplate("gemm_mfma");
    ASSERT_TRUE(t.ok());
    auto defs = templates::defaultDefines(*t, arch);
    ASSERT_TRUE(defs.ok()) << defs.status().toString();
    DeviceInfo dev;
    dev.vendor = Vendor::kAmd;
    dev.arch = arch;
    auto curated = curatedConfigs(KernelKind::kMfma, nt4096(), dev, "");
    ASSERT_TRUE(curated.ok() && !curated->empty());
    EXPECT_EQ(*defs, defines(KernelKind::kMfma, curated->front(), nt4096())) << arch;
    // LDS lets the default run 2 waves per EU (the old default, 128x128x128 on 4 waves with 64 KiB,
    // ran one workgroup of 4 waves per CU: 1 wave/EU).
    const Config& d = curated->front();
    EXPECT_GE(65536 / sharedBytes(KernelKind::kMfma, d) * d.getInt("NUM_WAVES") / 4, 2)
        << d.toString();
    // Both MFMA sizes compile from it (`-D MATRIX_INSTR=32` is the README's 32x32 variant).
    Config mi32 = d;
    mi32.set("MATRIX_INSTR", int64_t{32});
    EXPECT_TRUE(configSpace(KernelKind::kMfma).validate(mi32).ok());
  }
}

// What `compile --report` computes occupancy for: the launch rule's block and dynamic shared
// memory on the template's example problem (the TMA kernel's producer warpgroup included).
TEST(TemplateDefaults, ReportLaunchIsTheLaunchRules) {
  struct Case {
    const char* name;
    const char* arch;
    unsigned threads;
    bool dynamic;
  };
  for (const Case& k :
       {Case{"gemm_mfma", "gfx942", 512, false}, Case{"gemm_tma", "sm_90a", 384, true},
        Case{"gemm_mma", "sm_90a", 256, true}}) {
    auto t = templates::findTemplate(k.name);
    ASSERT_TRUE(t.ok());
    auto defs = templates::defaultDefines(*t, k.arch);
    ASSERT_TRUE(defs.ok()) << defs.status().toString();
    auto plan = templates::exampleLaunch(*t, k.arch, *defs);
    ASSERT_TRUE(plan.ok()) << k.name << ": " << plan.status().toString();
    EXPECT_EQ(plan->block.x * plan->block.y * plan->block.z, k.threads) << k.name;
    EXPECT_EQ(plan->shared_bytes > 0, k.dynamic) << k.name;
  }
  auto rms = templates::findTemplate("rmsnorm");
  ASSERT_TRUE(rms.ok());
  EXPECT_EQ(templates::exampleLaunch(*rms, "gfx942", {}).status().code(), Code::kNotFound);
}

TEST(TemplateDefines, BrokenConstraintIsNamedBeforeCompiling) {
  auto t = templates::findTemplate("gemm_mfma");
  ASSERT_TRUE(t.ok());
  auto defs = templates::defaultDefines(*t, "gfx942");
  ASSERT_TRUE(defs.ok());
  EXPECT_TRUE(templates::checkDefines(*t, "gfx942", *defs).ok());
  auto with = [&](std::vector<std::pair<std::string, std::string>> set) {
    templates::DefineList d = *defs;
    for (const auto& [k, v] : set)
      for (auto& [dk, dv] : d)
        if (dk == k) dv = v;
    return templates::checkDefines(*t, "gfx942", d);
  };
  Status s = with({{"MATRIX_INSTR", "16"}, {"BLOCK_K", "16"}});
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("violates BLOCK_K % (MATRIX_INSTR == 32 ? 16 : 32) == 0"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("--list-configs"), std::string::npos) << s.message();
  // The issue's example in layout NN: a rule of the problem (B stored [K][N]), not a static_assert.
  s = with({{"BLOCK_M", "128"},
            {"BLOCK_N", "64"},
            {"BLOCK_K", "64"},
            {"MATRIX_INSTR", "16"},
            {"NUM_STAGES", "1"},
            {"LAYOUT", "0"}});
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("needs BLOCK_N * BLOCK_K a multiple of 64 * threads"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(with({{"BLOCK_M", "128"},
                    {"BLOCK_N", "64"},
                    {"BLOCK_K", "64"},
                    {"MATRIX_INSTR", "16"},
                    {"NUM_STAGES", "1"}})
                  .ok());
  // Values that are not integers are the compiler's to judge.
  EXPECT_TRUE(with({{"BLOCK_K", "BK"}}).ok());
  // The valid configs: every one passes the space and the example problem.
  auto all = templates::validConfigs(*t, "gfx942", {});
  ASSERT_TRUE(all.ok());
  EXPECT_GT(all->size(), 500u);
  for (size_t i = 0; i < all->size(); i += 97) {
    EXPECT_TRUE(configSpace(KernelKind::kMfma).validate((*all)[i]).ok());
    EXPECT_TRUE(applicable(KernelKind::kMfma, (*all)[i], nt4096()).ok());
    EXPECT_LE(sharedBytes(KernelKind::kMfma, (*all)[i]), 65536);
  }
  auto nn = templates::validConfigs(*t, "gfx942", {{"LAYOUT", "0"}});
  ASSERT_TRUE(nn.ok());
  EXPECT_LT(nn->size(), all->size());
}

TEST_F(Cli, ExplainNamesTheConstraintAndListsConfigs) {
  // No compiler is needed: the check comes first.
  CliRun r = ktune({"explain", "gemm_mfma", "--arch", "gfx942", "-D", "LAYOUT=0", "-D",
                    "BLOCK_M=128", "-D", "BLOCK_N=64", "-D", "BLOCK_K=64", "-D", "MATRIX_INSTR=16",
                    "-D", "NUM_STAGES=1"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_HAS(r.err, "needs BLOCK_N * BLOCK_K a multiple of 64 * threads");
  EXPECT_HAS(r.err, "ktune explain gemm_mfma --arch gfx942 --list-configs");
  EXPECT_EQ(r.err.find("static_assert"), std::string::npos) << r.err;
  r = ktune(
      {"compile", "gemm_mfma", "--arch", "gfx90a", "-D", "MATRIX_INSTR=16", "-D", "BLOCK_K=16"});
  EXPECT_EQ(r.code, 2);
  EXPECT_HAS(r.err, "violates BLOCK_K % (MATRIX_INSTR == 32 ? 16 : 32) == 0");
  // Layout NN: 64x128 B tiles apply with BLOCK_K 128 only.
  r = ktune({"explain", "gemm_mfma", "--arch", "gfx942", "--list-configs", "-D", "LAYOUT=0", "-D",
             "BLOCK_M=64", "-D", "BLOCK_N=128", "-D", "NUM_STAGES=1"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(r.out, m, std::regex(R"(gemm_mfma for gfx942: (\d+) valid configs)")))
      << r.out;
  EXPECT_GT(std::stoi(m[1].str()), 0);
  EXPECT_HAS(r.out, "-D BLOCK_K=128 -D BLOCK_M=64 -D BLOCK_N=128 -D GROUP_M=8 -D MATRIX_INSTR=16");
  EXPECT_EQ(r.out.find("BLOCK_K=64 "), std::string::npos) << "64-deep B tiles do not apply to NN";
  EXPECT_EQ(r.out.find("NUM_STAGES=0"), std::string::npos) << "the -D filter";
  // The example problem (NT, B stored [N][K]) takes the issue's 128x64 tiles.
  r = ktune({"explain", "gemm_mfma", "--arch", "gfx942", "--list-configs", "-D", "BLOCK_M=128",
             "-D", "BLOCK_N=64", "-D", "NUM_STAGES=1", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_GT(j["configs"].size(), 0u);
  EXPECT_HAS(r.out, "-D BLOCK_K=64 -D BLOCK_M=128 -D BLOCK_N=64 -D GROUP_M=8 -D MATRIX_INSTR=16");
}

// What `--report` printed: ktune's occupancy (the guide's, whole workgroups), ktune's LLVM-style
// bound, the LDS line, and LLVM's own "; Occupancy:" from the isa dump printed above it.
struct Printed {
  double waves = -1;
  int bound = -1, llvm = -1, threads = 0;
  long long lds = -1;
  bool dynamic = false;
};

Printed parse(const std::string& out) {
  Printed p;
  std::smatch m;
  const size_t isa = out.find("===== isa =====");
  const std::string dump = isa == std::string::npos ? "" : out.substr(isa);
  if (std::regex_search(dump, m, std::regex(R"(; Occupancy: (\d+))")))
    p.llvm = std::stoi(m[1].str());
  if (std::regex_search(
          out, m,
          std::regex(
              R"(occupancy ([0-9.]+) waves/EU \((\d+) threads, whole workgroups; LLVM's per-wave bound (\d+)\))"))) {
    p.waves = std::stod(m[1].str());
    p.threads = std::stoi(m[2].str());
    p.bound = std::stoi(m[3].str());
  }
  if (std::regex_search(out, m, std::regex(R"(SGPR \d+, LDS (\d+) B( \+)?)"))) {
    p.lds = std::stoll(m[1].str());
    p.dynamic = m[2].matched;
  }
  return p;
}

// Every curated MFMA config (the NT problem, where all of them apply) and a deterministic sample
// of the space through the CLI on the LLVM path.
class CliLlvm : public Cli {
 protected:
  void check(const std::string& arch) {
    if (!haveCompiler("clang-amdgpu"))
      KTUNE_SKIP_WITHOUT_TOOL("no clang-19 (the LLVM AMDGPU path)");
    std::vector<Config> configs = curatedConfigs(KernelKind::kMfma, nt4096());
    ASSERT_GE(configs.size(), 16u);
    const size_t curated = configs.size();
    if (testsupport::quick()) configs.resize(4);
    // The sample: 4 configs of the space (2 under KTUNE_TEST_QUICK) at a fixed stride; the two
    // archs take interleaved configs.
    const auto space = configSpace(KernelKind::kMfma).enumerate("hip", 64 * 1024).accepted;
    const size_t sample = testsupport::quick() ? 2 : 4, stride = space.size() / sample;
    for (size_t i = arch == "gfx90a" ? stride / 2 : 0; i < space.size(); i += stride)
      if (std::find(configs.begin(), configs.end(), space[i]) == configs.end())
        configs.push_back(space[i]);
    int equal_guide = 0;
    for (const Config& c : configs) {
      std::vector<std::string> args = {"compile", "gemm_mfma", "--arch", arch, "--compiler",
                                       "clang",   "--report",  "--dump", "isa"};
      for (const auto& [k, v] : c.params())
        args.insert(args.end(), {"-D", k + "=" + paramValueToString(v)});
      const CliRun r = ktune(args);
      ASSERT_EQ(r.code, 0) << c.toString() << "\n" << r.err;
      const Printed p = parse(r.out);
      const std::string what = arch + " " + c.toString();
      ASSERT_GE(p.llvm, 1) << what << ": no '; Occupancy:' in the isa dump";
      ASSERT_GE(p.bound, 0) << what << ": no occupancy printed\n"
                            << r.out.substr(r.out.rfind("VGPR"));
      EXPECT_EQ(p.bound, p.llvm) << what;
      EXPECT_EQ(p.lds, sharedBytes(KernelKind::kMfma, c)) << what;
      EXPECT_FALSE(p.dynamic) << what << ": the MFMA kernel's LDS is static";
      // The guide's figure counts whole workgroups: it equals LLVM's unless the workgroup's waves
      // do not divide the waves the EUs hold, and then it is the whole workgroups below it.
      const int waves = p.threads / 64;
      const double whole = static_cast<double>(p.llvm * 4 / waves * waves) / 4;
      EXPECT_EQ(p.waves, whole) << what;
      equal_guide += p.waves == p.llvm;
    }
    std::printf(
        "%s: %zu configs (%zu curated) through `ktune compile --report`: ktune's LLVM bound "
        "equals '; Occupancy:' on all; the guide's figure equals it on %d\n",
        arch.c_str(), configs.size(), std::min(curated, configs.size()), equal_guide);
  }
};

TEST_F(CliLlvm, Gfx942ReportEqualsLlvmOccupancy) { check("gfx942"); }
TEST_F(CliLlvm, Gfx90aReportEqualsLlvmOccupancy) { check("gfx90a"); }

}  // namespace
}  // namespace ktune
