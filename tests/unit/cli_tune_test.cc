// `ktune tune` and the remaining CLI paths in CI: tuning on the simulated device (KTUNE_BACKEND=sim:
// tune, verify, record, report, then a database hit), --from-file validation, exit code 3 when the
// GPU is missing, per-command --help, --json everywhere, progress only where it belongs, the
// no-GPU analysis through the code-object store (second run all cache hits), `cache diff`, and
// the main job's table.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/fs.h"
#include "tests/support/tools.h"
#include "tests/unit/cli_fixture.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

using nlohmann::json;

const std::vector<std::string> kSim = {"KTUNE_BACKEND=sim"};
const std::vector<std::string> kNoGpu = {"KTUNE_BACKEND=auto"};

bool noRealGpu() {
  // A broken `info --json` fails the test that asked, instead of passing for "no GPU".
  auto r = runProcess({KTUNE_CLI_PATH, "info", "--json"}, "", 60000);
  if (!r.ok()) {
    ADD_FAILURE() << "ktune info --json did not run: " << r.status().toString();
    return true;
  }
  json j = json::parse(r->out, nullptr, false);
  if (!j.is_object() || !j.contains("backends")) {
    ADD_FAILURE() << "ktune info --json is not an object with \"backends\": " << r->out;
    return true;
  }
  for (const auto& b : j["backends"])
    if (b.value("available", false) && (b["name"] == "cuda" || b["name"] == "hip")) return false;
  return true;
}

TEST_F(Cli, TuneOnTheSimulatedDeviceRecordsAndReports) {
  CliRun r = ktune({"tune", "rmsnorm", "--rows", "4", "--cols", "256", "--json"}, "", kSim);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["family"], "rmsnorm_bf16");
  ASSERT_FALSE(j["winner"].get<std::string>().empty());
  EXPECT_GT(j["candidates"].size(), 4u);
  EXPECT_FALSE(j["from_database"].get<bool>());
  EXPECT_GT(j["winner_median_ms"].get<double>(), 0.0);
  const std::string winner = j["winner"];
  // Deterministic costs: the same winner again, now from the database.
  r = ktune({"tune", "rmsnorm", "--rows", "4", "--cols", "256", "--json"}, "", kSim);
  ASSERT_EQ(r.code, 0) << r.err;
  j = json::parse(r.out, nullptr, false);
  EXPECT_EQ(j["winner"], winner);
  CliRun ls = ktune({"db", "show", "rmsnorm_bf16"});
  ASSERT_EQ(ls.code, 0) << ls.err;
  EXPECT_HAS(ls.out, "winner " + winner);
  EXPECT_HAS(ls.out, "simulated H100-like");
  // The text table, with the winner marked.
  r = ktune({"tune", "silu_mul", "--rows", "4", "--cols", "256"}, "", kSim);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "silu_mul_bf16  key ");
  EXPECT_HAS(r.out, "MEDIAN_US");
  EXPECT_HAS(r.out, "  winner: ");
  EXPECT_NE(r.out.find("\n  * "), std::string::npos) << r.out;
}

TEST_F(Cli, TuneGemmOnTheSimulatedDevice) {
  CliRun r = ktune({"tune", "gemm", "--m", "32", "--n", "48", "--k", "64", "--kinds", "mma",
                    "--layout", "NT", "--json"},
                   "", kSim);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["family"], "gemm");
  EXPECT_HAS(j["winner"].get<std::string>(), "KIND=mma");
  for (const auto& c : j["candidates"]) EXPECT_NE(c["status"], "wrong_result") << c.dump();
  // Where the run's time outside the engine went (docs/search.md): the process's start-up pieces.
  ASSERT_TRUE(j.contains("process")) << r.out;
  for (const char* k :
       {"start_ms", "open_gpu_ms", "tuner_ms", "worker_prestart_ms", "op_ms", "buffers_ms"})
    EXPECT_GE(j["process"].value(k, -1.0), 0.0) << k << ": " << j["process"].dump();
  // And what the compile stage was made of: one job per store miss, on at least one thread.
  ASSERT_TRUE(j.contains("compile_jobs")) << r.out;
  // The early first wave's compiles the run found done count as compiled, though no job of its own.
  EXPECT_EQ(j["compile_jobs"].value("jobs", -1) + j["process"].value("first_wave_taken", 0.0),
            j.value("compiled", -2))
      << j["compile_jobs"].dump() << j["process"].dump();
  EXPECT_GE(j["compile_jobs"].value("threads", 0), 1);
  // --kinds that exist nowhere on the device: a usage error with a hint, not "0 configs".
  r = ktune({"tune", "gemm", "--m", "32", "--n", "48", "--k", "64", "--kinds", "mfma"}, "", kSim);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_HAS(r.err, "hint: kinds for sm_90a");
  r = ktune({"tune", "gemm", "--m", "32", "--n", "48", "--k", "64", "--kinds", "mfma", "--no-gpu"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_HAS(r.err, "none of the --kinds runs on sm_90a");
}

// The first key's first wave is asked for before the device's context is awaited (on a GPU the
// compiles then run beside the context, the vendor library and the inputs: GemmLookahead::
// startFirst); --no-lookahead does without it, and the candidates come out the same either way.
TEST_F(Cli, TuneGemmStartsTheFirstWaveBeforeTheContext) {
  const std::vector<std::string> args = {"tune", "gemm", "--m", "32", "--n", "48", "--k", "64",
                                         "--kinds", "mma", "--layout", "NT", "--json"};
  std::vector<json> reports;
  for (const bool early : {true, false}) {
    const std::string tl = root_ + (early ? "/early.tl" : "/late.tl");
    std::vector<std::string> a = args;
    if (!early) a.push_back("--no-lookahead");
    CliRun r = ktune(a, root_ + (early ? "/early" : "/late"), {"KTUNE_BACKEND=sim", "KTUNE_TIMELINE=" + tl});
    ASSERT_EQ(r.code, 0) << r.err;
    reports.push_back(json::parse(r.out, nullptr, false));
    ASSERT_TRUE(reports.back().is_object()) << r.out;
    const auto labels = timelineLabels(tl);
    const long started = indexOf(labels, "first_wave_started"), context = indexOf(labels, "context"),
               buffers = indexOf(labels, "buffers"), pre = indexOf(labels, "compile_issued precompile");
    ASSERT_GE(started, 0);
    EXPECT_LT(started, context);
    EXPECT_LT(context, buffers);
    EXPECT_GE(indexOf(labels, "compile_issued run"), 0);
    if (early) {
      EXPECT_GE(pre, 0);
      EXPECT_GT(reports.back()["process"].value("first_wave_precompiled", 0.0), 0.0);
    } else {
      EXPECT_EQ(pre, -1);
    }
  }
  EXPECT_EQ(reports[0]["winner"], reports[1]["winner"]);
  ASSERT_EQ(reports[0]["candidates"].size(), reports[1]["candidates"].size());
  for (size_t i = 0; i < reports[0]["candidates"].size(); ++i)
    EXPECT_EQ(reports[0]["candidates"][i]["status"], reports[1]["candidates"][i]["status"]) << i;
}

// --epilogue: the gate/up pair with bias and a residual add ('+'-joined) tunes over the two kernels
// that compute it, decode and tma (the sim computes C from the float64 reference; verification
// reads N/2 columns).
TEST_F(Cli, TuneGemmGateUpEpilogueOnTheSimulatedDevice) {
  CliRun r = ktune({"tune", "gemm", "--m", "4", "--n", "64", "--k", "256", "--layout", "NT",
                    "--epilogue", "bias+silu_mul+residual", "--json"},
                   "", kSim);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  const std::string winner = j["winner"].get<std::string>();
  EXPECT_TRUE(winner.find("KIND=decode") != std::string::npos ||
              winner.find("KIND=tma") != std::string::npos)
      << winner;
  // C is dense at N/2 columns; the key's epilogue bits: bias 1 | silu_mul 3 << 1 | beta 8 | a16 16.
  EXPECT_HAS(j["key"].get<std::string>(), "ldc=32,epi=31");
  int verified_decode = 0, verified_tma = 0;
  for (const auto& c : j["candidates"]) {
    EXPECT_NE(c["status"], "wrong_result") << c.dump();
    const std::string config = c["config"].get<std::string>();
    // Only the two kinds that compute the pair run it; every other one is refused.
    if (c["status"] != "ok") continue;
    EXPECT_TRUE(config.find("KIND=decode") != std::string::npos ||
                config.find("KIND=tma") != std::string::npos) << config;
    verified_decode += config.find("KIND=decode") != std::string::npos;
    verified_tma += config.find("KIND=tma") != std::string::npos;
  }
  EXPECT_GT(verified_decode, 0);
  EXPECT_GT(verified_tma, 0);
  r = ktune({"tune", "gemm", "--m", "4", "--n", "64", "--k", "256", "--epilogue", "bias+swish"},
            "", kSim);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_HAS(r.err, "'swish'");
  r = ktune({"tune", "gemm", "--m", "4", "--n", "63", "--k", "256", "--layout", "NT",
             "--epilogue", "silu_mul"},
            "", kSim);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_HAS(r.err, "even N");
  r = ktune({"tune", "gemm", "--m", "129", "--n", "64", "--k", "256", "--layout", "NT",
             "--epilogue", "silu_mul"},
            "", kSim);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_HAS(r.err, "M <= 128");
}

// FP8 (issue 33): --dtype fp8e4m3 is a GEMM input type only, and fp8 runs in layout NT (the op
// says so before tuning anything).
TEST_F(Cli, TuneGemmFp8DtypeAndLayoutRule) {
  CliRun r = ktune({"tune", "rmsnorm", "--rows", "4", "--cols", "256", "--dtype", "fp8e4m3"}, "", kSim);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_HAS(r.err, "gemm: also fp8e4m3");
  r = ktune({"tune", "gemm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "fp8e4m3", "--layout",
             "NN"},
            "", kSim);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_HAS(r.err, "fp8 GEMM needs layout NT");
}

TEST_F(Cli, FromFileIsValidatedFirst) {
  CliRun r = ktune({"tune", "--from-file", root_ + "/missing.jsonl"}, "", kNoGpu);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_HAS(r.err, "missing.jsonl");
  r = ktune({"tune", "--from-file", root_}, "", kNoGpu);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_HAS(r.err, "is a directory");
  const std::string fifo = root_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  r = ktune({"tune", "--from-file", fifo}, "", kNoGpu);
  EXPECT_EQ(r.code, 2) << r.err;
  // No valid line at all: refused before any GPU is opened, naming the first bad line.
  std::ofstream(root_ + "/garbage.jsonl") << "\nnot json\n";
  r = ktune({"tune", "--from-file", root_ + "/garbage.jsonl"}, "", kNoGpu);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_HAS(r.err, "line 2");
  // A bad line among good ones does not stop the file: it is reported with its number and the
  // exit code says the file was not all tuned (tune_item_test.cc has the field-by-field cases).
  std::ofstream(root_ + "/mixed.jsonl") << "{\"family\":\"rmsnorm_bf16\",\"key\":\"k\"}\nnot json\n";
  r = ktune({"tune", "--from-file", root_ + "/mixed.jsonl", "--json"}, "", kSim);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_HAS(r.out, "line 2: not valid JSON");
  std::ofstream(root_ + "/empty.jsonl") << "\n";
  r = ktune({"tune", "--from-file", root_ + "/empty.jsonl"}, "", kNoGpu);
  EXPECT_EQ(r.code, 2) << r.err;
  // A good file and no GPU: the documented exit code 3, and the way out.
  std::ofstream(root_ + "/ok.jsonl") << "{\"family\":\"rmsnorm_bf16\",\"key\":\"k\"}\n";
  if (noRealGpu()) {
    r = ktune({"tune", "--from-file", root_ + "/ok.jsonl"}, "", kNoGpu);
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_HAS(r.err, "needs a GPU");
    EXPECT_HAS(r.err, "KTUNE_BACKEND=sim");
  }
  // On the simulated device the line is read and answered (no args to rebuild it: skipped).
  r = ktune({"tune", "--from-file", root_ + "/ok.jsonl", "--json"}, "", kSim);
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  EXPECT_EQ(j["lines"], 1);
}

TEST_F(Cli, EveryCommandHasHelpAndJson) {
  // Every command: exit 0 and its own usage (explain used to print compile's; report, occupancy
  // and serve printed an error and exited 2).
  for (const std::string cmd : {"tune", "cache", "db", "compile", "explain", "info", "version",
                                "report", "occupancy", "remote", "serve"}) {
    CliRun r = ktune({cmd, "--help"});
    EXPECT_EQ(r.code, 0) << cmd << ": " << r.err;
    EXPECT_EQ(r.out.rfind("usage: ktune " + cmd, 0), 0u) << cmd << ": " << r.out;
  }
  CliRun r = ktune({"version", "--json"});
  ASSERT_EQ(r.code, 0);
  EXPECT_TRUE(json::parse(r.out, nullptr, false).contains("version")) << r.out;
  r = ktune({"cache", "path", "--json"});
  EXPECT_EQ(json::parse(r.out, nullptr, false)["dir"], cache_) << r.out;
  r = ktune({"cache", "clear", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out, nullptr, false)["entries"], 0) << r.out;
  r = ktune({"cache", "clear", "extra"});
  EXPECT_EQ(r.code, 2);
}

// gemm_mma keeps its tiles in dynamic shared memory and reads them with ldmatrix after cp.async:
// the report used to say "shared 0 B" and "LDS/shared loads: none".
TEST_F(Cli, ExplainGemmMmaShowsItsSharedMemory) {
  if (!haveCompiler("nvrtc")) KTUNE_SKIP_WITHOUT_TOOL("no NVRTC (CUDA toolkit)");
  CliRun r = ktune({"explain", "gemm_mma", "--arch", "sm_90a"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, " B dynamic");
  EXPECT_EQ(r.out.find("LDS/shared loads: none"), std::string::npos) << r.out;
  EXPECT_HAS(r.out, "LDS/shared loads: ");
}

// KTUNE_CLANG reaches the LLVM AMDGPU path (gfx942: hiprtc of ROCm 5.2 cannot target it).
TEST_F(Cli, KtuneClangIsHonoured) {
  CliRun r = ktune({"compile", "rmsnorm", "--arch", "gfx942", "--no-cache"}, "",
                   {"KTUNE_CLANG=" + root_ + "/no-such-clang"});
  EXPECT_EQ(r.code, 3) << "a missing compiler is exit 3 (unavailable)\n" << r.out << r.err;
  EXPECT_HAS(r.err, "clang not found (tried " + root_ + "/no-such-clang");
}

// Progress is for terminals: a pipe gets none (no "\r"), --json gets JSON lines, --quiet nothing.
TEST_F(Cli, ProgressOnlyWhereItBelongs) {
  CliRun r = ktune({"tune", "rmsnorm", "--rows", "2", "--cols", "128"}, "", kSim);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  r = ktune({"tune", "rmsnorm", "--rows", "2", "--cols", "64", "--json"}, "", kSim);
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.err);
  std::string line;
  int events = 0;
  while (std::getline(lines, line)) {
    json e = json::parse(line, nullptr, false);
    if (e.is_object() && e.value("event", "") == "progress") ++events;
  }
  EXPECT_GT(events, 0) << r.err;
  r = ktune({"tune", "rmsnorm", "--rows", "2", "--cols", "32", "--quiet"}, "", kSim);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

// Without a GPU: compile and analyse through the store (the second run compiles nothing), print
// the table, exit 0; `cache diff` of two of the configs.
TEST_F(Cli, NoGpuAnalysisUsesTheStoreAndCacheDiff) {
  if (!haveCompiler("nvrtc")) KTUNE_SKIP_WITHOUT_TOOL("no NVRTC (CUDA toolkit) for the sm_90a analysis");
  const std::vector<std::string> args = {"tune", "silu_mul", "--rows", "8", "--cols", "512", "--no-gpu"};
  CliRun r = ktune(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "silu_mul on sm_90a (nvrtc");
  EXPECT_HAS(r.out, "REGS");
  EXPECT_HAS(r.out, "timing needs a GPU: --no-gpu given");
  EXPECT_HAS(r.out, "0 cache hits");
  r = ktune(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "(0 compiled,");
  CliRun ls = ktune({"cache", "ls", "--json"});
  json l = json::parse(ls.out, nullptr, false);
  ASSERT_TRUE(l.is_array() && l.size() >= 2) << ls.out;
  const std::string k1 = l[0]["key"], k2 = l[1]["key"];
  r = ktune({"cache", "diff", k1.substr(0, 12), k2.substr(0, 12)});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "| ktune_silu_mul @ sm_90a\n");
  EXPECT_HAS(r.out, "-+-");
  EXPECT_HAS(r.out, " * ");  // two configs differ somewhere (registers, defines, ...)
  r = ktune({"cache", "diff", k1, k2, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json d = json::parse(r.out, nullptr, false);
  EXPECT_EQ(d["a"]["key"], k1);
  EXPECT_TRUE(d["b"]["report"].is_object()) << r.out;
  r = ktune({"cache", "dump", k1, "--what", "ptx"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, ".entry ktune_silu_mul");
}

// The README's main job without a GPU: exit 0 and the analysis table for the suite (the mma
// kernels: their shared memory is dynamic, so the launch rule's bytes must show, and their PTX's
// ldmatrix / cp.async must count as shared-memory traffic).
TEST_F(Cli, MainJobWithoutAGpu) {
  if (!noRealGpu()) GTEST_SKIP() << "a GPU is present: the main job tunes (tests/gpu)";
  if (!haveCompiler("nvrtc")) KTUNE_SKIP_WITHOUT_TOOL("no NVRTC (CUDA toolkit) for the sm_90a analysis");
  CliRun r = ktune({"tune", "gemm", "--suite", "llm", "--kinds", "mma"}, "", kNoGpu);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "gemm on sm_90a (nvrtc");
  EXPECT_HAS(r.out, "the suite's 8 shapes (");
  EXPECT_HAS(r.out, ") share these configs");
  // Every shape by name and size, not only the first one.
  for (const char* shape : {"prefill qkv 4096x6144x4096", "prefill o 4096x4096x4096",
                            "prefill gate_up 4096x28672x4096", "prefill down 4096x4096x14336",
                            "decode qkv 16x6144x4096", "decode o 16x4096x4096",
                            "decode gate_up 16x28672x4096", "decode down 16x4096x14336"})
    EXPECT_HAS(r.out, shape);
  EXPECT_HAS(r.out, "SMEM_K");
  EXPECT_HAS(r.out, "timing needs a GPU: no GPU backend available");
  EXPECT_EQ(r.out.find("ktune_gemm_mma     232      0 "), std::string::npos)
      << "shared memory reported as 0 KiB:\n" << r.out;
  r = ktune({"tune", "gemm", "--suite", "llm", "--kinds", "mma", "--json"}, "", kNoGpu);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["compiled"], 0) << "the second run is all store hits";
  ASSERT_FALSE(j["configs"].empty());
  for (const auto& c : j["configs"]) {
    ASSERT_EQ(c["status"], "ok") << c.dump();
    const json& rep = c["report"];
    EXPECT_GT(rep["dynamic_shared_bytes"].get<int64_t>(), 0) << c["config"];
    EXPECT_FALSE(rep["isa"]["lds_loads"].empty()) << "ldmatrix not counted: " << c["config"];
    EXPECT_FALSE(rep["isa"]["lds_stores"].empty()) << "cp.async not counted: " << c["config"];
  }
}

// Without the hardware, `tune --no-gpu --arch gfx942|gfx90a` ranks the analysed GEMM configs
// with the static model, says so ("analysed, not timed"), records the ranking apart from the
// tuning database, and a second run is all store hits with the same ranking.
TEST_F(Cli, NoGpuStaticRankingForAmdArchs) {
  for (const char* arch : {"gfx942", "gfx90a"}) {
    if (!haveCompiler(std::string(arch) == "gfx942" ? "clang-amdgpu" : "hiprtc"))
      KTUNE_SKIP_WITHOUT_TOOL("no AMD compiler for " << arch);
    const std::vector<std::string> args = {"tune", "gemm", "--m", "64", "--n", "64", "--k", "64",
                                           "--layout", "NT", "--no-gpu", "--arch", arch, "--json"};
    CliRun r = ktune(args);
    ASSERT_EQ(r.code, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j["ranking"], "static ranking: analysed, not timed");
    int rank = 0;
    double last = 2;
    for (const auto& c : j["configs"]) {
      if (c["static_rank"].is_null()) {
        EXPECT_TRUE(c.contains("excluded")) << c.dump();
        continue;
      }
      EXPECT_EQ(c["static_rank"], ++rank) << "ranked configs come first, in order";
      EXPECT_LE(c["static_score"].get<double>(), last);
      last = c["static_score"];
      EXPECT_FALSE(c.contains("median_us")) << "a static ranking has no timings";
    }
    EXPECT_GE(rank, 8) << arch << ": most curated configs fit and rank: " << r.out.substr(0, 2000);
    const std::string recorded = j["recorded"];
    EXPECT_EQ(recorded, cache_ + "/analysed/gemm-" + arch + ".json");
    auto file = readFile(recorded);
    ASSERT_TRUE(file.ok());
    EXPECT_EQ(json::parse(*file, nullptr, false)["ranking"], "static ranking: analysed, not timed");
    EXPECT_FALSE(pathExists(cache_ + "/gemm.json")) << "no tuning database of measured winners";
    CliRun again = ktune(args);
    json k = json::parse(again.out, nullptr, false);
    ASSERT_TRUE(k.is_object()) << again.out;
    EXPECT_EQ(k["compiled"], 0);
    ASSERT_EQ(k["configs"].size(), j["configs"].size());
    for (size_t i = 0; i < j["configs"].size(); ++i)
      EXPECT_EQ(k["configs"][i]["config"], j["configs"][i]["config"]) << "ranking not deterministic";
    r = ktune({"tune", "gemm", "--m", "64", "--n", "64", "--k", "64", "--no-gpu", "--arch", arch});
    EXPECT_HAS(r.out, "static ranking: analysed, not timed");
    EXPECT_HAS(r.out, "RANK");
  }
}

}  // namespace
}  // namespace ktune
