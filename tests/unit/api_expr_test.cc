// The expression language of the data-driven registration API (api/expr.h): values, precedence,
// errors with columns, and hostile input (overflow, division by zero, deep nesting, garbage)
// answered with errors, never undefined behaviour (this test also runs under UBSan).
#include "api/expr.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>

namespace ktune::api {
namespace {

// Variables: BLOCK=256 (slot 0), VEC=4 (1), n=10000 (2), big=INT64_MAX (3), zero=0 (4).
int resolve(std::string_view s) {
  if (s == "BLOCK") return 0;
  if (s == "VEC") return 1;
  if (s == "n") return 2;
  if (s == "big") return 3;
  if (s == "zero") return 4;
  return -1;
}
const int64_t kVals[] = {256, 4, 10000, std::numeric_limits<int64_t>::max(), 0};

Expected<int64_t> eval(const std::string& text) {
  auto e = Expr::parse(text, resolve, "test", "BLOCK, VEC, n, big, zero");
  if (!e.ok()) return e.status();
  return e->eval(kVals);
}

int64_t value(const std::string& text) {
  auto v = eval(text);
  EXPECT_TRUE(v.ok()) << text << ": " << v.status().toString();
  return v.ok() ? *v : -999;
}

TEST(ApiExpr, ArithmeticAndPrecedence) {
  EXPECT_EQ(value("cdiv(n, BLOCK * VEC)"), 10);  // 10000 / 1024 rounded up
  EXPECT_EQ(value("1 + 2 * 3"), 7);
  EXPECT_EQ(value("(1 + 2) * 3"), 9);
  EXPECT_EQ(value("10 - 4 - 3"), 3);  // left associative
  EXPECT_EQ(value("-7 / 2"), -3);     // C truncation
  EXPECT_EQ(value("-7 % 3"), -1);
  EXPECT_EQ(value("cdiv(7, 2)"), 4);
  EXPECT_EQ(value("cdiv(-7, 2)"), -3);
  EXPECT_EQ(value("min(BLOCK, 100) + max(VEC, 9)"), 109);
  EXPECT_EQ(value("pow2(1000)"), 1024);
  EXPECT_EQ(value("pow2(0)"), 1);
  EXPECT_EQ(value("BLOCK * VEC <= 1024"), 1);
  EXPECT_EQ(value("BLOCK > 256 || VEC == 4 && !zero"), 1);
  EXPECT_EQ(value("BLOCK != 256"), 0);
  EXPECT_EQ(value("VEC >= 4 ? BLOCK : 1"), 256);
  EXPECT_EQ(value("zero ? 1 : 2 ? 3 : 4"), 3);
  EXPECT_EQ(value("  - -5 "), 5);
}

TEST(ApiExpr, ShortCircuitSkipsTheFailingSide) {
  EXPECT_EQ(value("zero != 0 && n / zero > 1"), 0);
  EXPECT_EQ(value("zero == 0 || n / zero > 1"), 1);
  EXPECT_EQ(value("zero ? n / zero : 5"), 5);
}

TEST(ApiExpr, ParseErrorsNameTheProblemAndColumn) {
  auto e = eval("cdiv(n, BLOK * VEC)");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kInvalidArgument);
  EXPECT_NE(e.status().message().find("unknown name 'BLOK'"), std::string::npos);
  EXPECT_NE(e.status().message().find("column 9"), std::string::npos) << e.status().message();
  EXPECT_NE(e.status().message().find("known: BLOCK"), std::string::npos);
  for (const char* bad : {"", "1 +", "(1", "1)", "cdiv(1)", "foo(1)", "1 2", "3x", "a$b", "1 <> 2",
                          "99999999999999999999", "min(1, 2, 3)", "? 1 : 2", "1 ? 2"}) {
    EXPECT_EQ(eval(bad).status().code(), Code::kInvalidArgument) << "accepted: '" << bad << "'";
  }
}

TEST(ApiExpr, RuntimeErrorsInsteadOfUndefinedBehaviour) {
  for (const char* bad : {"n / zero", "n % zero", "cdiv(n, zero)", "big + 1", "big * 2",
                          "-big - 2", "(-big - 1) / -1", "(-big - 1) % -1", "-(-big - 1)",
                          "pow2(big)"}) {
    auto v = eval(bad);
    EXPECT_EQ(v.status().code(), Code::kInvalidArgument) << bad << " = " << (v.ok() ? *v : 0);
  }
  auto e = Expr::parse("n / zero", resolve, "grid", "");
  ASSERT_TRUE(e.ok());
  int64_t out = 0;
  EXPECT_FALSE(e->evalFast(kVals, &out));
  EXPECT_NE(e->eval(kVals).status().message().find("division by zero"), std::string::npos);
}

TEST(ApiExpr, LimitsOnSizeAndNesting) {
  std::string deep(Expr::kMaxDepth + 5, '(');
  deep += "1" + std::string(Expr::kMaxDepth + 5, ')');
  EXPECT_NE(eval(deep).status().message().find("nested deeper"), std::string::npos);
  std::string neg(200, '-');
  EXPECT_EQ(eval(neg + "1").status().code(), Code::kInvalidArgument);
  std::string many = "1";
  for (int i = 0; i < 600; ++i) many += "+1";
  EXPECT_NE(eval(many).status().message().find("terms"), std::string::npos);
  EXPECT_EQ(eval(std::string(Expr::kMaxText + 1, '1')).status().code(), Code::kInvalidArgument);
  std::string ok = "1";
  for (int i = 0; i < 100; ++i) ok += "+1";
  EXPECT_EQ(value(ok), 101);
}

// Random strings over the language's alphabet: every one parses or fails cleanly, and every
// parsed one evaluates or fails cleanly (UBSan catches any overflow that slips through).
TEST(ApiExpr, RandomInputNeverMisbehaves) {
  const std::string alphabet = "0123456789+-*/%()<>=!&|?:, BLOCKVECnbigzerocdivmaxpow2";
  std::mt19937 rng(12345);
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    int len = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
    auto e = Expr::parse(s, resolve, "fuzz", "");
    if (!e.ok()) continue;
    ++parsed;
    (void)e->eval(kVals);
  }
  EXPECT_GT(parsed, 100);  // the generator reaches the evaluator, not only the parser
}

}  // namespace
}  // namespace ktune::api
