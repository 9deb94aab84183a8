// The CLI tests' fixture: runs the real `ktune` binary (KTUNE_CLI_PATH) in a child with a private
// KTUNE_CACHE_DIR (and any extra environment), returning its exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/subprocess.h"

namespace ktune {

#define EXPECT_HAS(hay, needle)                               \
  EXPECT_NE(std::string(hay).find(needle), std::string::npos) \
      << "'" << std::string(hay) << "' does not contain '" << (needle) << "'"

struct CliRun {
  int code = -1;
  std::string out, err;
};

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ktune-cli-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    cache_ = root_ + "/cache";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  // `ktune args...` with KTUNE_CACHE_DIR=cache plus `env` ("NAME=value"; runProcess has no env
  // parameter: env(1) sets them).
  CliRun ktune(const std::vector<std::string>& args, const std::string& cache = "",
               const std::vector<std::string>& env = {}, const std::string& input = "") const {
    std::vector<std::string> argv = {"env", "KTUNE_CACHE_DIR=" + (cache.empty() ? cache_ : cache)};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(KTUNE_CLI_PATH);
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = runProcess(argv, input, 300000);
    CliRun out;
    if (!r.ok()) {
      ADD_FAILURE() << "cannot run ktune: " << r.status().toString();
      return out;
    }
    EXPECT_FALSE(r->signaled) << "ktune killed by signal " << r->term_signal << "\n" << r->err;
    out.code = r->signaled ? -1 : r->exit_code;
    out.out = r->out;
    out.err = r->err;
    return out;
  }

  // Compilers `ktune info --json` reports as available, by name.
  static const nlohmann::json& info() {
    static const nlohmann::json j = [] {
      auto r = runProcess({KTUNE_CLI_PATH, "info", "--json"}, "", 60000);
      if (!r.ok() || r->exit_code != 0) return nlohmann::json();
      return nlohmann::json::parse(r->out, nullptr, false);
    }();
    return j;
  }
  static bool haveCompiler(const std::string& name) {
    // `info --json` is under test too: when it fails or prints no JSON object, every test that
    // asks for a compiler fails here rather than skipping for "no compiler".
    EXPECT_TRUE(info().is_object()) << "ktune info --json failed or printed no JSON object";
    if (!info().is_object()) return false;
    for (const auto& c : info()["compilers"])
      if (c["name"] == name && c["available"] == true) return true;
    return false;
  }

  std::string root_, cache_;
};

// The timeline's labels (KTUNE_TIMELINE: "EPOCH_MS PID LABEL DETAIL" lines), in file order.
inline std::vector<std::string> timelineLabels(const std::string& path) {
  std::vector<std::string> labels;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string ms, pid, label, detail;
    f >> ms >> pid >> label >> detail;
    labels.push_back(label == "compile_issued" ? label + " " + detail : label);
  }
  return labels;
}

inline long indexOf(const std::vector<std::string>& v, const std::string& s) {
  auto it = std::find(v.begin(), v.end(), s);
  return it == v.end() ? -1 : long(it - v.begin());
}

}  // namespace ktune
