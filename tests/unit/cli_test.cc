// CLI golden tests: runs the real `ktune` binary (KTUNE_CLI_PATH) in a child with a private
// KTUNE_CACHE_DIR and asserts on the stable parts of its output and on its exit codes
// (0 ok, 1 failed, 2 usage, 3 unavailable, 4 corrupt). No GPU needed; the compile cases use
// whichever of NVRTC / hiprtc / clang-19 is installed and skip visibly otherwise.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "base/fs.h"
#include "base/subprocess.h"
#include "tests/support/tools.h"
#include "tests/unit/cli_fixture.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST_F(Cli, VersionAndHelp) {
  CliRun r = ktune({"version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(^ktune \d+\.\d+\.\d+ \(schema \d+\)\n$)")))
      << r.out;
  r = ktune({"--version"});
  EXPECT_EQ(r.code, 0);
  r = ktune({"help"});
  EXPECT_EQ(r.code, 0);
  for (const char* want : {"usage: ktune <command>", "info", "compile <template|file.cu>",
                           "explain", "cache ls|show|dump|rm|clear|verify", "version",
                           "KTUNE_CACHE_DIR"})
    EXPECT_HAS(r.out, want);
  r = ktune({});
  EXPECT_EQ(r.code, 2) << "no command is a usage error";
  EXPECT_HAS(r.err, "usage: ktune <command>");
  // The commands with subcommands share their start (startSubcommand): --help is their usage on
  // stdout, a missing subcommand a usage error naming the command.
  for (const std::string cmd : {"cache", "db", "remote"}) {
    r = ktune({cmd, "--help"});
    EXPECT_EQ(r.code, 0) << cmd << "\n" << r.err;
    EXPECT_HAS(r.out, "usage: ktune " + cmd);
    r = ktune({cmd});
    EXPECT_EQ(r.code, 2) << cmd;
    EXPECT_HAS(r.err, "missing " + cmd + " subcommand");
  }
}

TEST_F(Cli, UnknownCommandAndBadFlagsAreUsageErrors) {
  CliRun r = ktune({"frobnicate", "--x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_HAS(r.err, "unknown command 'frobnicate'");
  EXPECT_HAS(r.err, "ktune help");
  const std::vector<std::vector<std::string>> bad = {
      {"info", "--frob"},
      {"compile", "rmsnorm", "--arch", "sm_90a", "--bogus"},
      {"compile", "rmsnorm", "--arch"},
      {"compile", "rmsnorm", "--arch", "sm_90a", "--arch", "gfx90a"},
      {"compile", "rmsnorm", "--arch", "sm_90a", "--resources=yes"},
      {"compile", "rmsnorm", "--arch", "sm_90a", "--dump", "everything"},
      {"compile", "rmsnorm", "--arch", "sm_90a", "-D", "=4"},
      {"compile", "rmsnorm"},
      {"compile", "--arch", "sm_90a"},
      {"cache"},
      {"cache", "ls", "--what"},
      {"cache", "frob"},
      {"cache", "show"},
      {"cache", "rm", "../../etc/passwd"},
      {"cache", "dump", "zz"},
  };
  for (const auto& args : bad) {
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    CliRun b = ktune(args);
    EXPECT_EQ(b.code, 2) << shown << "\n" << b.err;
    EXPECT_HAS(b.err, "ktune: ");
    EXPECT_TRUE(b.out.empty()) << shown << " printed to stdout: " << b.out;
  }
  // Nothing outside the cache dir was touched by the path-like key.
  EXPECT_TRUE(pathExists("/etc/passwd"));
}

TEST_F(Cli, InfoTextAndJson) {
  CliRun r = ktune({"info"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want : {"ktune ", "Backends", "Compilers", "Cache", cache_.c_str()})
    EXPECT_HAS(r.out, want);
  r = ktune({"info", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_TRUE(j.contains("backends") && j["backends"].is_array());
  ASSERT_TRUE(j.contains("compilers") && j["compilers"].is_array());
  ASSERT_TRUE(j.contains("cache") && j["cache"].is_object());
  EXPECT_EQ(j["cache"]["dir"], cache_);
  bool saw_cuda = false;
  for (const auto& b : j["backends"]) {
    ASSERT_TRUE(b.contains("name") && b.contains("available"));
    if (b["name"] == "cuda") saw_cuda = true;
    if (b["available"] == false) {
      ASSERT_TRUE(b.contains("reason"));
      EXPECT_FALSE(b["reason"].get<std::string>().empty()) << b.dump();
    } else {
      EXPECT_FALSE(b["devices"].empty()) << b.dump();
    }
  }
  EXPECT_TRUE(saw_cuda);
  for (const auto& c : j["compilers"]) {
    if (c["available"] == false) {
      EXPECT_FALSE(c["reason"].get<std::string>().empty()) << c.dump();
    }
  }
}

TEST_F(Cli, CompileNvrtcResources) {
  if (!haveCompiler("nvrtc"))
    KTUNE_SKIP_WITHOUT_TOOL("no NVRTC: the CUDA toolkit's libnvrtc is missing");
  CliRun r = ktune({"compile", "rmsnorm", "--arch", "sm_90a", "--resources"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "rmsnorm for sm_90a with nvrtc");
  EXPECT_HAS(r.out, "registers");
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(key [0-9a-f]{16})"))) << r.out;
  // Same request again: served from the cache.
  r = ktune({"compile", "rmsnorm", "--arch", "sm_90a", "--resources"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "cache hit");
  r = ktune({"compile", "rmsnorm", "--arch", "sm_90a", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["arch"], "sm_90a");
  EXPECT_GT(j["resources"]["registers"].get<int>(), 0);
}

TEST_F(Cli, CompileAmdIsaAndMfma) {
  // gfx90a is hiprtc's (README: clang-19 only for archs this ROCm cannot target).
  if (!haveCompiler("hiprtc")) KTUNE_SKIP_WITHOUT_TOOL("no hiprtc (libamdhip64-dev)");
  CliRun r = ktune({"compile", "rmsnorm", "--arch", "gfx90a", "--dump", "isa"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "rmsnorm for gfx90a with hiprtc");  // not the clang fallback
  EXPECT_HAS(r.out, "===== isa =====");
  EXPECT_HAS(r.out, "global_load_dwordx4");  // the README's 16-byte loads
  EXPECT_HAS(r.out, "VGPR");
  for (const char* mi : {"16", "32"}) {
    r = ktune({"compile", "gemm_mfma", "--arch", "gfx90a", "-D", std::string("MATRIX_INSTR=") + mi,
               "--dump", "isa"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_HAS(r.out, std::string("v_mfma_f32_") + mi + "x" + mi + "x");
  }
  r = ktune({"compile", "gemm_mfma", "--arch", "sm_90a"});
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, "no kernel for sm_90a");
}

TEST_F(Cli, ExplainGfx942PrintsOccupancy) {
  if (!haveCompiler("clang-amdgpu")) KTUNE_SKIP_WITHOUT_TOOL("no clang-19 for gfx942");
  CliRun r = ktune({"explain", "rmsnorm", "--arch", "gfx942"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "rmsnorm for gfx942");
  // A computed occupancy, not "unknown": "occupancy 7 waves/EU (256 threads, ...), limited by
  // vgpr" and "72 VGPRs allocated". The row kernel uses a few dozen VGPRs: 1-8 waves per EU.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.out, m, std::regex(R"(occupancy (\d+) waves/EU \(256 threads[^)]*\), limited by \w+)")))
      << r.out;
  EXPECT_GE(std::stoi(m[1].str()), 1);
  EXPECT_LE(std::stoi(m[1].str()), 8);
  std::smatch v;
  ASSERT_TRUE(std::regex_search(r.out, v, std::regex(R"((\d+) VGPRs allocated)"))) << r.out;
  EXPECT_GT(std::stoi(v[1].str()), 0);
}

TEST_F(Cli, CompileErrorsAreClear) {
  CliRun r = ktune({"compile", "nosuch", "--arch", "sm_90a"});
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, "unknown template 'nosuch'");
  EXPECT_HAS(r.err, "rmsnorm");  // the message lists the known ones

  r = ktune({"compile", "rmsnorm", "--arch", "sm_1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, "sm_1");
  EXPECT_TRUE(r.err.find("arch") != std::string::npos) << r.err;
  r = ktune({"compile", "rmsnorm", "--arch", "vax"});
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, "'vax'");

  r = ktune({"compile", root_ + "/missing.cu", "--arch", "sm_90a", "--entry", "k"});
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, "missing.cu");
  std::ofstream(root_ + "/k.cu") << "#include \"prelude.cuh\"\nKTUNE_KERNEL void k() {}\n";
  r = ktune({"compile", root_ + "/k.cu", "--arch", "sm_90a"});
  EXPECT_EQ(r.code, 2);
  EXPECT_HAS(r.err, "--entry");

  std::string arch = haveCompiler("nvrtc")    ? "sm_90a"
                     : haveCompiler("hiprtc") ? "gfx90a"
                     : haveCompiler("clang-amdgpu") ? "gfx942"
                                                    : "";
  if (arch.empty()) KTUNE_SKIP_WITHOUT_TOOL("no compiler for the user-source case");
  const std::string src = root_ + "/broken.cu";
  std::ofstream(src) << "#include \"prelude.cuh\"\nKTUNE_KERNEL void broken(float* p) {\n"
                        "  p[0] = this_is_not_declared;\n}\n";
  r = ktune({"compile", src, "--arch", arch, "--entry", "broken"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_HAS(r.err, "compile_error");
  EXPECT_HAS(r.err, "this_is_not_declared");  // the compiler's log line
  EXPECT_HAS(r.err, "broken.cu");
}

TEST_F(Cli, UnsafeCacheDirIsRefused) {
  const std::string shared = root_ + "/shared";
  ASSERT_TRUE(makeDirs(shared).ok());
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);
  CliRun r = ktune({"cache", "ls"}, shared);
  EXPECT_EQ(r.code, 1) << "an unsafe directory is not a usage error\n" << r.out << r.err;
  EXPECT_HAS(r.err, "mode 777");
  EXPECT_HAS(r.err, "chmod 700");
  r = ktune({"compile", "rmsnorm", "--arch", "gfx90a"}, shared);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  r = ktune({"cache", "verify"}, shared);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_HAS(r.err, "chmod 700");
  EXPECT_HAS(r.err, "chmod 700");
  r = ktune({"info"}, shared);  // info still works, and says what is wrong
  EXPECT_EQ(r.code, 0);
  EXPECT_HAS(r.out, "PROBLEM");
}

// Keys of the entries in `ls --json`.
std::vector<std::string> keysOf(const std::string& ls_json) {
  std::vector<std::string> out;
  json j = json::parse(ls_json, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& e : j) out.push_back(e["key"]);
  return out;
}

TEST_F(Cli, CacheLifecycleVerifyCorruptionDumpRmClear) {
  std::vector<std::pair<std::string, bool>> archs;  // arch, has an isa dump
  if (haveCompiler("hiprtc")) archs.push_back({"gfx90a", true});
  if (haveCompiler("clang-amdgpu")) archs.push_back({"gfx942", true});
  if (haveCompiler("nvrtc")) archs.push_back({"sm_90a", false});
  if (archs.empty()) KTUNE_SKIP_WITHOUT_TOOL("no compiler installed: nothing to cache");
  for (const auto& [arch, isa] : archs) {
    std::vector<std::string> args = {"compile", "copy", "--arch", arch};
    if (isa) args.insert(args.end(), {"--dump", "isa"});
    CliRun r = ktune(args);
    ASSERT_EQ(r.code, 0) << arch << ": " << r.err;
  }
  CliRun ls = ktune({"cache", "ls", "--json"});
  ASSERT_EQ(ls.code, 0) << ls.err;
  std::vector<std::string> keys = keysOf(ls.out);
  ASSERT_EQ(keys.size(), archs.size()) << ls.out;
  ls = ktune({"cache", "ls"});
  ASSERT_EQ(ls.code, 0);
  EXPECT_HAS(ls.out, std::to_string(keys.size()) + " entries");
  for (const auto& k : keys) EXPECT_HAS(ls.out, k.substr(0, 16));

  CliRun v = ktune({"cache", "verify"});
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_HAS(v.out, std::to_string(keys.size()) + " entries checked, 0 corrupt");

  // show / dump on a good key (an AMD one has an isa dump; every one has metadata).
  const std::string good = keys.front();
  CliRun show = ktune({"cache", "show", good.substr(0, 12)});
  ASSERT_EQ(show.code, 0) << show.err;
  json meta = json::parse(show.out, nullptr, false);
  ASSERT_TRUE(meta.is_object()) << show.out;
  EXPECT_EQ(meta["key"], good);
  std::string good_arch = meta["arch"];
  if (good_arch.rfind("gfx", 0) == 0) {
    CliRun d = ktune({"cache", "dump", good, "--what", "isa"});
    ASSERT_EQ(d.code, 0) << d.err;
    EXPECT_TRUE(std::regex_search(d.out, std::regex(R"(\bv_[a-z0-9_]+ )"))) << d.out.substr(0, 500);
    d = ktune({"cache", "dump", good, "--what", "ptx"});
    EXPECT_EQ(d.code, 1);
    EXPECT_HAS(d.err, "no 'ptx' dump");
  }

  // Flip one byte of the last entry's binary: verify names it and exits 4; the others stay good.
  const std::string bad = keys.back();
  std::string bin;
  for (const auto& e : fs::recursive_directory_iterator(cache_)) {
    if (e.path().filename() == bad + ".bin") bin = e.path();
  }
  ASSERT_FALSE(bin.empty()) << "no " << bad << ".bin under " << cache_;
  {
    std::fstream f(bin, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(40);
    char c = 0;
    f.read(&c, 1);
    c = char(c ^ 0x5a);
    f.seekp(40);
    f.write(&c, 1);
  }
  v = ktune({"cache", "verify"});
  EXPECT_EQ(v.code, 4) << v.out << v.err;
  EXPECT_HAS(v.out, "CORRUPT " + bad);
  EXPECT_HAS(v.out, "sha256 mismatch");
  EXPECT_HAS(v.out, "1 corrupt");
  if (keys.size() > 1) {
    EXPECT_EQ(v.out.find("CORRUPT " + good), std::string::npos);
  }
  CliRun vj = ktune({"cache", "verify", "--json"});
  EXPECT_EQ(vj.code, 4);
  json jr = json::parse(vj.out, nullptr, false);
  ASSERT_TRUE(jr.is_object()) << vj.out;
  ASSERT_EQ(jr["corrupt"].size(), 1u);
  EXPECT_EQ(jr["corrupt"][0]["key"], bad);
  CliRun d = ktune({"cache", "dump", bad, "--what", "report"});
  EXPECT_EQ(d.code, 4) << d.err;
  EXPECT_HAS(d.err, "corrupt");

  // rm the corrupt one: verify is clean again; then clear.
  CliRun rm = ktune({"cache", "rm", bad.substr(0, 20)});
  EXPECT_EQ(rm.code, 0) << rm.err;
  EXPECT_HAS(rm.out, "removed " + bad);
  v = ktune({"cache", "verify"});
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_EQ(keysOf(ktune({"cache", "ls", "--json"}).out).size(), keys.size() - 1);
  rm = ktune({"cache", "rm", bad});
  EXPECT_EQ(rm.code, 1) << "removing a missing key";
  CliRun clear = ktune({"cache", "clear"});
  EXPECT_EQ(clear.code, 0) << clear.err;
  EXPECT_HAS(clear.out, "cleared");
  ls = ktune({"cache", "ls"});
  EXPECT_EQ(ls.code, 0);
  EXPECT_HAS(ls.out, "0 entries");
  CliRun path = ktune({"cache", "path"});
  EXPECT_EQ(path.code, 0);
  EXPECT_HAS(path.out, cache_);
}


TEST_F(Cli, DbCommandsSurviveHostileFiles) {
  CliRun r = ktune({"db", "ls"});
  EXPECT_EQ(r.code, 0) << r.err;
  const std::vector<std::pair<std::string, std::string>> files = {
      {"family_number.json", R"({"family": 5, "schema": 1, "devices": []})"},
      {"family_missing.json", R"({"schema": 1, "devices": []})"},
      {"family_escape.json", R"({"family": "../../etc/x", "schema": 1, "devices": []})"},
  };
  for (const auto& [name, text] : files) {
    std::ofstream(root_ + "/" + name) << text;
    r = ktune({"db", "import", root_ + "/" + name});
    EXPECT_EQ(r.code, 2) << name << ": " << r.err;
    EXPECT_HAS(r.err, "family");
  }
  std::ofstream(root_ + "/broken.json") << "{\"family\": \"rmsnorm\", \"devices\": [";
  r = ktune({"db", "import", root_ + "/broken.json"});
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_HAS(r.err, "not valid JSON");
  r = ktune({"db", "show", "../../etc"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_HAS(r.err, "bad family name");
  EXPECT_FALSE(pathExists(cache_ + "/db/../../etc.json"));
  r = ktune({"db", "frob"});
  EXPECT_EQ(r.code, 2);
}

}  // namespace
}  // namespace ktune
