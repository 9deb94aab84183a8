// One source per GEMM kernel (templates/gemm/<kind>/): each kind compiles from its own folder's
// files plus the shared gemm/common.cuh (the tma and decode kinds also gemm/hopper.cuh, their
// sm_90 primitives), so editing one kernel (e.g. the MFMA one) changes neither the source text
// nor the code-object keys of the others; every knob is required (a missing -D
// is a compile error, never a silent default); curated configs are data with a fallback and an
// overlay (templates/gemm/curated.json).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/store/store.h"
#include "templates/catalog.h"
#include "templates/embedded.h"
#include "templates/gemm.h"
#include "tests/support/tools.h"

namespace ktune::gemm {
namespace {

constexpr KernelKind kAll[] = {KernelKind::kMma,   KernelKind::kSkinny, KernelKind::kMfma,
                               KernelKind::kWgmma, KernelKind::kTma,    KernelKind::kDecode};

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

// Every embedded file under gemm/<kind>/.
std::vector<std::string> filesOf(KernelKind k) {
  std::vector<std::string> out;
  const std::string dir = std::string("gemm/") + kernelKindName(k) + "/";
  for (const char* const* n = templates::embeddedSourceNames(); *n; ++n)
    if (std::string_view(*n).substr(0, dir.size()) == dir) out.push_back(*n);
  return out;
}

// The longest line of a file: text no other kernel has by accident.
std::string longestLine(std::string_view text) {
  std::string best;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    if (end - pos > best.size()) best = std::string(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return best;
}

TEST(GemmSources, EachKindIsItsOwnFilesPlusTheCommonPart) {
  const std::string_view common = templates::embeddedSource("gemm/common.cuh");
  ASSERT_FALSE(common.empty());
  for (KernelKind k : kAll) {
    SCOPED_TRACE(kernelKindName(k));
    const std::string_view src = kernelSource(k);
    ASSERT_FALSE(src.empty());
    EXPECT_EQ(kernelSource(k).data(), src.data());  // built once
    EXPECT_TRUE(contains(src, common));
    EXPECT_TRUE(contains(src, "#include \"prelude.cuh\""));  // the compilers provide it
    EXPECT_FALSE(contains(src, "\n#include \"gemm_common.cuh\""));
    EXPECT_TRUE(contains(src, entryName(k)));
    const auto files = filesOf(k);
    ASSERT_FALSE(files.empty());
    for (const std::string& f : files) {
      // Each part appears whole (no include line of the folder is left behind).
      const std::string_view part = templates::embeddedSource(f.c_str());
      const std::string line = longestLine(part);
      EXPECT_TRUE(contains(src, line)) << f;
      if (f != sourceFile(k)) {
        EXPECT_FALSE(contains(src, "\n#include \"" + f.substr(f.rfind('/') + 1) + "\"")) << f;
      }
    }
    // Nothing of any other kind: not its entry, not a line of any of its files.
    for (KernelKind other : kAll) {
      if (other == k) continue;
      EXPECT_FALSE(contains(src, entryName(other))) << kernelKindName(other);
      for (const std::string& f : filesOf(other))
        EXPECT_FALSE(contains(src, longestLine(templates::embeddedSource(f.c_str())))) << f;
    }
  }
  // The MFMA kernel is split into parts, each under 500 lines, and all of them are in its source.
  EXPECT_GE(filesOf(KernelKind::kMfma).size(), 3u);
}

// The sm_90 primitives are written once (gemm/hopper.cuh) and are in exactly the tma and decode
// kinds' sources, expanded in place of their include line; no other kind has a line of them.
TEST(GemmSources, HopperPrimitivesAreSharedByTheTmaAndDecodeKindsOnly) {
  const std::string_view hopper = templates::embeddedSource("gemm/hopper.cuh");
  ASSERT_FALSE(hopper.empty());
  const std::string line = longestLine(hopper);
  for (KernelKind k : kAll) {
    const std::string_view src = kernelSource(k);
    const bool shares = k == KernelKind::kTma || k == KernelKind::kDecode;
    EXPECT_EQ(contains(src, hopper), shares) << kernelKindName(k);
    EXPECT_EQ(contains(src, line), shares) << kernelKindName(k);
    EXPECT_FALSE(contains(src, "\n#include \"gemm_hopper.cuh\"")) << kernelKindName(k);
  }
}

// The cache key of an NVIDIA GEMM compile depends on its own source only: the same request built
// from the NVIDIA kind's source gives the same key whatever the MFMA files say, because that source
// holds no byte of them (checked above) — and the key differs from the MFMA kind's.
TEST(GemmSources, NvidiaCacheKeysDoNotDependOnTheMfmaKernel) {
  const auto s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096);
  for (KernelKind k : {KernelKind::kMma, KernelKind::kSkinny, KernelKind::kWgmma, KernelKind::kTma}) {
    const auto cur = curatedConfigs(k, s);
    ASSERT_FALSE(cur.empty()) << kernelKindName(k);
    CompileRequest req;
    req.source = std::string(kernelSource(k));
    req.entry = entryName(k);
    req.defines = defines(k, cur.front(), s);
    req.arch = "sm_90a";
    const std::string key = codeObjectKey(req, "nvrtc", "1");
    // A request with the MFMA text appended (what the old one-source family compiled) differs:
    // so the key above is a function of this kind's files alone.
    CompileRequest with_mfma = req;
    with_mfma.source += kernelSource(KernelKind::kMfma);
    EXPECT_NE(codeObjectKey(with_mfma, "nvrtc", "1"), key);
    EXPECT_FALSE(contains(req.source, kernelSource(KernelKind::kMfma).substr(
                                          kernelSource(KernelKind::kMfma).size() / 2, 200)));
  }
}

TEST(GemmSources, CatalogCompilesTheExpandedSource) {
  for (const auto& t : templates::catalog()) {
    if (t.name.rfind("gemm_", 0) != 0) continue;
    const std::string_view src = templates::sourceOf(t);
    EXPECT_FALSE(contains(src, "\n#include \"gemm_common.cuh\"")) << t.name;
    EXPECT_TRUE(contains(src, t.entry)) << t.name;
  }
}

// Every knob and problem define is required: dropping any one is a compile error naming it.
TEST(GemmSources, MissingKnobIsACompileError) {
  auto cc = compilerForArch("sm_90a");
  if (!cc.ok()) KTUNE_SKIP_WITHOUT_TOOL("NVRTC unavailable: " << cc.status().toString());
  const auto s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096);
  for (KernelKind k : {KernelKind::kMma, KernelKind::kSkinny, KernelKind::kWgmma, KernelKind::kTma}) {
    const auto full = defines(k, curatedConfigs(k, s).front(), s);
    // The first knob of the config and one problem define.
    for (const std::string& drop : {full.front().first, std::string("DTYPE_C")}) {
      CompileRequest req;
      req.source = std::string(kernelSource(k));
      req.entry = entryName(k);
      for (const auto& d : full)
        if (d.first != drop) req.defines.push_back(d);
      req.arch = "sm_90a";
      auto r = (*cc)->compile(req);
      ASSERT_FALSE(r.ok()) << kernelKindName(k) << " without " << drop;
      EXPECT_TRUE(contains(r.status().message(), "define")) << r.status().message().substr(0, 400);
    }
  }
}

}  // namespace
}  // namespace ktune::gemm

namespace ktune::gemm {
namespace {

// Curated configs are data (templates/gemm/curated.json) with a device -> arch -> vendor ->
// default fallback and a user overlay.
class CuratedTable : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(KTUNE_TEST_BINARY_DIR) + "/curated_table_test";
    std::filesystem::create_directories(dir_);
    h100_.vendor = Vendor::kNvidia;
    h100_.name = "Test H100";
    h100_.arch = "sm_90a";
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = dir_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
  std::string dir_;
  DeviceInfo h100_;
  const GemmShape big_ = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096);
};

TEST_F(CuratedTable, ShippedTableParsesAndKeepsTheDefaults) {
  EXPECT_TRUE(checkCuratedTable(templates::embeddedSource("gemm/curated.json")).ok());
  // The first entries are the defaults when tuning is off (the same as before they became data).
  EXPECT_EQ(curatedConfigs(KernelKind::kMma, big_).front().toString(),
            "BLOCK_K=32,BLOCK_M=128,BLOCK_N=256,GROUP_M=8,MIN_BLOCKS=0,NUM_STAGES=4,SPLIT_K=1,"
            "WARPS_M=2,WARPS_N=4");
  EXPECT_EQ(curatedConfigs(KernelKind::kMma, big_).size(), 7u);  // no split-K for many tiles
  const auto m1 = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 1, 4096, 4096);
  EXPECT_EQ(curatedConfigs(KernelKind::kMma, m1).size(), 12u);
  // SK_MT "auto" follows M: ceil(M / 8) clamped to 1..8.
  EXPECT_EQ(curatedConfigs(KernelKind::kSkinny, m1).front().getInt("SK_MT"), 1);
  const auto m40 = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 40, 4096, 4096);
  for (const Config& c : curatedConfigs(KernelKind::kSkinny, m40)) EXPECT_EQ(c.getInt("SK_MT"), 5);
  EXPECT_EQ(curatedConfigs(KernelKind::kTma, m1).front().getInt("CONSUMERS"), 1);  // max_m 256
  EXPECT_EQ(curatedConfigs(KernelKind::kTma, big_).front().getInt("BLOCK_N"), 256);
  EXPECT_EQ(curatedConfigs(KernelKind::kMfma, big_).size(), 20u);
  // A device with no entries of its own gets exactly the shipped lists.
  for (KernelKind k : kAll) {
    auto dev = curatedConfigs(k, big_, h100_, "");
    ASSERT_TRUE(dev.ok()) << dev.status().toString();
    EXPECT_EQ(*dev, curatedConfigs(k, big_)) << kernelKindName(k);
  }
}

TEST_F(CuratedTable, OverlayWinsAtItsLevelAndTheMostSpecificLevelWins) {
  const std::string mma_a =
      R"({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "WARPS_M": 2, "WARPS_N": 2, "NUM_STAGES": 4, "GROUP_M": 8, "SPLIT_K": 1, "MIN_BLOCKS": 0})";
  const std::string mma_b =
      R"({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "WARPS_M": 2, "WARPS_N": 2, "NUM_STAGES": 4, "GROUP_M": 8, "SPLIT_K": 1, "MIN_BLOCKS": 0})";
  const std::string path = write("overlay.json", R"({"kernels": {"mma": {
      "device:Test H100": [{"config": )" + mma_a + R"(}],
      "arch:sm_80": [{"config": )" + mma_b + R"(}, {"when": {"min_n": 100000}, "config": )" + mma_a + R"(}]}}})");
  auto on_h100 = curatedConfigs(KernelKind::kMma, big_, h100_, path);
  ASSERT_TRUE(on_h100.ok()) << on_h100.status().toString();
  ASSERT_EQ(on_h100->size(), 1u);
  EXPECT_EQ(on_h100->front().getInt("BLOCK_M"), 64);
  DeviceInfo a100 = h100_;
  a100.name = "Test A100";
  a100.arch = "sm_80";
  auto on_a100 = curatedConfigs(KernelKind::kMma, big_, a100, path);
  ASSERT_TRUE(on_a100.ok());
  ASSERT_EQ(on_a100->size(), 1u);  // the min_n bound leaves the second entry out
  EXPECT_EQ(on_a100->front().getInt("BLOCK_M"), 128);
  // Another kernel, or another device: the shipped lists.
  DeviceInfo other = h100_;
  other.name = "Other";
  EXPECT_EQ(*curatedConfigs(KernelKind::kMma, big_, other, path), curatedConfigs(KernelKind::kMma, big_));
  EXPECT_EQ(*curatedConfigs(KernelKind::kTma, big_, h100_, path), curatedConfigs(KernelKind::kTma, big_));
}

TEST_F(CuratedTable, BadOverlaysAreErrorsNotSilentDefaults) {
  for (const std::string& text :
       {std::string("not json"), std::string(R"({"kernels": {"nope": {}}})"),
        std::string(R"({"kernels": {"mma": {"default": [{"config": {"BLOCK_M": "x"}}]}}})"),
        std::string(R"({"kernels": {"mma": {"default": [{"when": {"max_k": 1}, "config": {}}]}}})"),
        std::string(R"({"kernels": {"mma": {"default": {}}}})"), std::string(R"({"schema": 2, "kernels": {}})")}) {
    const std::string p = write("bad.json", text);
    EXPECT_EQ(curatedConfigs(KernelKind::kMma, big_, h100_, p).status().code(), Code::kInvalidArgument)
        << text;
    EXPECT_FALSE(checkCuratedTable(text).ok()) << text;
  }
  EXPECT_FALSE(curatedConfigs(KernelKind::kMma, big_, h100_, dir_ + "/missing.json").ok());
}

}  // namespace
}  // namespace ktune::gemm
