// The tma kind's box probe knobs TMA_ABOX / TMA_BBOX (gemm.h's configSource): outside the space,
// defines of their own, a source of their own, and nothing changed for a config without them
// (part of the gemm_templates_test program: KTUNE_TEST_PARTS in tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "compiler/store/store.h"
#include "templates/gemm.h"

namespace ktune::gemm {
namespace {

Config cl4e2() {
  return Config{{"BLOCK_N", int64_t{256}},  {"CONSUMERS", int64_t{2}}, {"WG_M", int64_t{1}},
                {"NUM_STAGES", int64_t{4}}, {"GROUP_M", int64_t{16}},  {"CLUSTER_M", int64_t{4}},
                {"EPI_TMA", int64_t{2}},    {"SPLIT_K", int64_t{1}},   {"PINGPONG", int64_t{0}}};
}

std::string keyOf(const Config& c, const GemmShape& s, const std::string& source) {
  CompileRequest req;
  req.source = source;
  req.entry = entryName(KernelKind::kTma);
  req.defines = defines(KernelKind::kTma, c, s);
  req.arch = "sm_90a";
  return codeObjectKey(req, "nvrtc", "1");
}

// Never enumerated, 64 the only value; a config without them compiles the kind's source as it is
// (its config string, defines and code-object key are those of the source alone), one with them
// a source whose two box lines read the defines, under keys of their own.
TEST(GemmTma, BoxProbeKnobsAreDefinesWithASourceOfTheirOwn) {
  const ConfigSpace& space = configSpace(KernelKind::kTma);
  for (const Config& c : space.enumerate("cuda", 227 * 1024).accepted)
    ASSERT_FALSE(c.has("TMA_ABOX") || c.has("TMA_BBOX")) << c.toString();
  const GemmShape s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 3000, 5000, 1000);
  const Config plain = cl4e2();
  const std::string main_src(kernelSource(KernelKind::kTma));
  auto src = configSource(KernelKind::kTma, plain);
  ASSERT_TRUE(src.ok()) << src.status().toString();
  EXPECT_EQ(*src, main_src);
  EXPECT_EQ(plain.toString().find("BOX"), std::string::npos);
  EXPECT_EQ(keyOf(plain, s, *src), keyOf(plain, s, main_src));
  for (const auto& [name, value] : defines(KernelKind::kTma, plain, s))
    EXPECT_EQ(name.find("BOX"), std::string::npos) << name;
  std::string seen;
  for (const auto& [knob, line] : {std::pair<const char*, const char*>{"TMA_ABOX", "? 64 : TMA_ABOX;"},
                                   {"TMA_BBOX", "ACT != 3 && TMA_BBOX != 64;"}}) {
    Config c = plain;
    c.set(knob, int64_t{64});
    ASSERT_TRUE(space.validate(c).ok()) << space.validate(c).toString();
    c.set(knob, int64_t{128});
    EXPECT_EQ(space.validate(c).code(), Code::kInvalidArgument) << knob;
    c.set(knob, int64_t{64});
    bool defined = false;
    for (const auto& [name, value] : defines(KernelKind::kTma, c, s))
      defined = defined || (name == knob && value == "64");
    EXPECT_TRUE(defined) << knob;
    auto probe = configSource(KernelKind::kTma, c);
    ASSERT_TRUE(probe.ok()) << probe.status().toString();
    EXPECT_NE(probe->find(line), std::string::npos) << knob;
    EXPECT_NE(*probe, seen);
    seen = *probe;
    EXPECT_NE(keyOf(c, s, *probe), keyOf(plain, s, main_src));
  }
  // Both at once: both lines replaced; the other kinds' sources never change.
  Config both = plain;
  both.set("TMA_ABOX", int64_t{64});
  both.set("TMA_BBOX", int64_t{64});
  auto b = configSource(KernelKind::kTma, both);
  ASSERT_TRUE(b.ok());
  EXPECT_NE(b->find("KT_A_MN ? 64 : TMA_ABOX;"), std::string::npos);
  EXPECT_NE(b->find("ACT != 3 && TMA_BBOX != 64;"), std::string::npos);
  EXPECT_EQ(b->find("KT_A_MN ? 64 : kBM;"), std::string::npos);
  auto mma = configSource(KernelKind::kMma, both);
  ASSERT_TRUE(mma.ok());
  EXPECT_EQ(*mma, std::string(kernelSource(KernelKind::kMma)));
}

}  // namespace
}  // namespace ktune::gemm
