// Hostile input through the public APIs: garbage config strings, spaces that fail validation and
// overflow-sized spaces (base/config.h).
// Every case must give a clear Status (what was wrong, what to do), never a crash, a torn file or
// a lost entry. Runs without a GPU.
// First: it sets the diagnostics every hostile test needs before any other include.
#include "tests/unit/hostile_fixture.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "base/config.h"

namespace ktune {
namespace {

// ---- config strings and spaces -----------------------------------------------------------------

TEST(HostileConfig, GarbageStringsAreInvalidArgumentNamingTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"BLOCK_M", "not NAME=VALUE"},
      {"=4", "bad parameter name"},
      {"1X=4", "bad parameter name"},
      {"A=1,,B=2", "not NAME=VALUE"},
      {"A=1,", "not NAME=VALUE"},
      {"A=1,A=2", "given twice"},
      {"A=", "bad value"},
      {"A=x y", "bad value"},
      {"A=+3", "bad value"},
      {"A=99999999999999999999", "out of range"},
      {"A=-99999999999999999999", "out of range"},
      {std::string("A=1\0B=2", 7), "bad value"},
      {"A=\xff\xfe", "bad value"},
      {"A=1;B=2", "bad value"},
  };
  for (const auto& [text, want] : cases) {
    auto c = Config::parse(text);
    ASSERT_FALSE(c.ok()) << "'" << text << "' parsed as " << c->toString();
    EXPECT_EQ(c.status().code(), Code::kInvalidArgument) << text;
    EXPECT_HAS(c.status().message(), want) << text;
  }
  // Extremes that are valid must round-trip exactly.
  for (const char* text : {"A=-9223372036854775808", "A=9223372036854775807", "  A = 007 ",
                           "_=-", "A=1.5e3,B=x-y_z"}) {
    auto c = Config::parse(text);
    ASSERT_TRUE(c.ok()) << text << ": " << c.status().toString();
    auto again = Config::parse(c->toString());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *c) << text;
  }
}

TEST(HostileConfig, SpaceValidateNamesUnknownMissingAndViolatedParameters) {
  ConfigSpace s;
  s.addInts("BLOCK_M", {64, 128}).addInts("num_warps", {4, 8}).constrain(
      "BLOCK_M >= 16 * num_warps",
      [](const Config& c) { return c.getInt("BLOCK_M") >= 16 * c.getInt("num_warps"); });
  auto st = s.validate(*Config::parse("BLOCK_M=64,num_warps=4,EVIL=1"));
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_HAS(st.message(), "unknown parameter 'EVIL'");
  st = s.validate(*Config::parse("BLOCK_M=64"));
  EXPECT_HAS(st.message(), "lacks parameter 'num_warps'");
  st = s.validate(*Config::parse("BLOCK_M=64,num_warps=8"));
  EXPECT_HAS(st.message(), "violates BLOCK_M >= 16 * num_warps");
  // A string where the space has integers: the constraint sees 0 and rejects it, no crash.
  st = s.validate(*Config::parse("BLOCK_M=big,num_warps=4"));
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(s.validate(*Config::parse("BLOCK_M=128,num_warps=8")).ok());
}

TEST(HostileConfig, OverflowSizedSpaceSaturatesInsteadOfWrapping) {
  ConfigSpace s;
  // 16^17 = 2^68 points: the product does not fit in size_t.
  for (int i = 0; i < 17; ++i) {
    std::vector<int64_t> v(16);
    for (int j = 0; j < 16; ++j) v[size_t(j)] = j;
    s.addInts("P" + std::to_string(i), v);
  }
  EXPECT_EQ(s.rawSize(), SIZE_MAX);
  ConfigSpace empty_list;
  empty_list.addInts("A", {1, 2}).addInts("B", {});
  EXPECT_EQ(empty_list.rawSize(), 0u);
  EXPECT_TRUE(empty_list.enumerate().accepted.empty());
}

}  // namespace
}  // namespace ktune
