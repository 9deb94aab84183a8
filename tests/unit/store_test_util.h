// What store_test.cc and its part store_concurrency_part.cc share (one program): a fake compiler
// whose deterministic code objects depend on the request (so torn writes would show), a request
// shorthand, and the fixture's private store directory per test.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "base/sha256.h"
#include "compiler/store/store.h"

namespace ktune::storetest {

namespace fs = std::filesystem;

class FakeCompiler : public Compiler {
 public:
  std::string name() const override { return "fake"; }
  std::string version() const override { return "1.0"; }
  bool supportsArch(const std::string&) const override { return true; }
  Expected<CodeObject> compile(const CompileRequest& req) override {
    ++compiles;
    if (req.source.find("#error") != std::string::npos) {
      return Status::CompileError("fake: #error in " + req.source_name);
    }
    CodeObject o;
    // Deterministic, a few KiB, content depends on the request (so torn writes would show).
    std::string seed = sha256Hex(req.source + "|" + req.entry + "|" + req.arch);
    for (int i = 0; i < 64; ++i) o.binary += seed + std::to_string(i);
    o.binary.push_back('\0');
    o.binary.push_back('\xff');
    o.format = "sim";
    o.arch = req.arch;
    o.entry = req.entry;
    o.lowered_entry = "_Z" + req.entry;
    o.compiler = name();
    o.compiler_version = version();
    o.options = req.options;
    o.resources.registers = 40;
    o.resources.vgpr = 128;
    o.resources.agpr = 64;
    o.resources.sgpr = 30;
    o.resources.shared_bytes = 49152;
    o.resources.spill_store_bytes = 8;
    o.resources.wave_size = 64;
    o.log = "ptxas info: fake";
    o.compile_ms = 12.5;
    if (req.dumps & kDumpIsa) o.dumps["isa"] = "v_mfma_f32_32x32x8_bf16 v[0:15]\n" + req.entry;
    if (req.dumps & kDumpSource) o.dumps["source"] = req.source;
    return o;
  }
  std::atomic<int> compiles{0};
};

inline CompileRequest request(const std::string& entry, unsigned dumps = kDumpNone) {
  CompileRequest r;
  r.source = "extern \"C\" __global__ void " + entry + "() {}";
  r.source_name = entry + ".cu";
  r.entry = entry;
  r.defines = {{"BLOCK", "128"}};
  r.arch = "gfx90a";
  r.options = {"-O3"};
  r.dumps = dumps;
  return r;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            ("ktune_store_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(root_);
    dir_ = (root_ / "cache").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(root_ / "cache", fs::perms::owner_all, ec);
    fs::remove_all(root_, ec);
  }
  std::shared_ptr<CodeObjectStore> openStore() {
    auto s = CodeObjectStore::open(dir_);
    EXPECT_TRUE(s.ok()) << s.status().toString();
    return s.ok() ? *s : nullptr;
  }
  std::string binPath(const std::string& key) {
    return dir_ + "/objects/" + key.substr(0, 2) + "/" + key + ".bin";
  }
  std::string jsonPath(const std::string& key) {
    return dir_ + "/objects/" + key.substr(0, 2) + "/" + key + ".json";
  }
  fs::path root_;
  std::string dir_;
};

}  // namespace ktune::storetest
