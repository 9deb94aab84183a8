// The tma kind's box probe knobs TMA_ABOX / TMA_BBOX (templates/gemm.h): outside the space,
// defines of their own, and no define for a config without them; its HAS_BETA problem define
// (part of the gemm_templates_test program: KTUNE_TEST_PARTS in tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <string>

#include "templates/gemm.h"

namespace ktune::gemm {
namespace {

Config cl4e2() {
  return Config{{"BLOCK_N", int64_t{256}},  {"CONSUMERS", int64_t{2}}, {"WG_M", int64_t{1}},
                {"NUM_STAGES", int64_t{4}}, {"GROUP_M", int64_t{16}},  {"CLUSTER_M", int64_t{4}},
                {"EPI_TMA", int64_t{2}},    {"SPLIT_K", int64_t{1}},   {"PINGPONG", int64_t{0}}};
}

// Never enumerated, 64 the only value; a define of its own when present (the kernel's kABoxRows /
// kBOneBox read it, tmaBoxRows the knob), none when absent.
TEST(GemmTma, BoxProbeKnobsAreDefinesOutsideTheSpace) {
  const ConfigSpace& space = configSpace(KernelKind::kTma);
  for (const Config& c : space.enumerate("cuda", 227 * 1024).accepted)
    ASSERT_FALSE(c.has("TMA_ABOX") || c.has("TMA_BBOX")) << c.toString();
  const GemmShape s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 3000, 5000, 1000);
  const Config plain = cl4e2();
  EXPECT_EQ(plain.toString().find("BOX"), std::string::npos);
  for (const auto& [name, value] : defines(KernelKind::kTma, plain, s))
    EXPECT_EQ(name.find("BOX"), std::string::npos) << name;
  const TmaBoxRows one = tmaBoxRows(plain, s);
  EXPECT_EQ(one.a, 128u);
  EXPECT_EQ(one.b, 64u);  // 256 / CLUSTER_M 4
  for (const char* knob : {"TMA_ABOX", "TMA_BBOX"}) {
    Config c = plain;
    c.set(knob, int64_t{64});
    ASSERT_TRUE(space.validate(c).ok()) << space.validate(c).toString();
    bool defined = false;
    for (const auto& [name, value] : defines(KernelKind::kTma, c, s))
      defined = defined || (name == knob && value == "64");
    EXPECT_TRUE(defined) << knob;
    c.set(knob, int64_t{128});
    EXPECT_EQ(space.validate(c).code(), Code::kInvalidArgument) << knob;
  }
  Config a64 = plain;
  a64.set("TMA_ABOX", int64_t{64});
  EXPECT_EQ(tmaBoxRows(a64, s).a, 64u);
  EXPECT_EQ(tmaBoxRows(a64, s).b, 64u);
  Config p176 = plain;
  p176.set("BLOCK_N", int64_t{176});
  p176.set("CLUSTER_M", int64_t{1});
  EXPECT_EQ(tmaBoxRows(p176, s).b, 176u);
  p176.set("TMA_BBOX", int64_t{64});
  EXPECT_EQ(tmaBoxRows(p176, s).b, 64u);
  EXPECT_EQ(tmaBoxRows(p176, s).a, 128u);
}

// HAS_BETA: the problem's beta == 0 as a define of the tma kind (its key has beta != 0 too), so a
// kernel for beta == 0 compiles without the beta * C code; other kinds do not get it.
TEST(GemmTma, HasBetaDefineFollowsTheShape) {
  GemmShape s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096);
  auto value = [](KernelKind k, const Config& c, const GemmShape& sh) {
    for (const auto& [name, v] : defines(k, c, sh))
      if (name == "HAS_BETA") return v;
    return std::string("absent");
  };
  EXPECT_EQ(value(KernelKind::kTma, cl4e2(), s), "0");
  s.alpha = 0.5f;  // alpha stays a run-time argument
  EXPECT_EQ(value(KernelKind::kTma, cl4e2(), s), "0");
  s.beta = 0.5f;
  EXPECT_EQ(value(KernelKind::kTma, cl4e2(), s), "1");
  const Config mma = curatedConfigs(KernelKind::kMma, s).front();
  EXPECT_EQ(value(KernelKind::kMma, mma, s), "absent");
}

}  // namespace
}  // namespace ktune::gemm
