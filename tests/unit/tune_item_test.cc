// Offline tuning items and imported entries are data from outside (issue 28): an untuned-keys
// line or queue item is checked field by field (validateTuneItem: types, ranges, strides, the
// memory its problem needs) and a bad one is reported with its line number while the rest of the
// file is tuned; `db import` refuses entries whose configs are not in the family's space and
// merges the rest.
#include "ops/tune_args.h"

#include <gtest/gtest.h>

#include <fstream>

#include "ops/builtin.h"
#include "base/fs.h"
#include "cli_fixture.h"
#include "templates/rowwise.h"

namespace ktune {
namespace {

using json = nlohmann::json;

Status itemStatus(const std::string& line) { return parseBuiltinTuneItem(line).status(); }

TEST(TuneItem, GoodItemsPass) {
  auto rms = parseBuiltinTuneItem(
      R"({"family":"rmsnorm_bf16","key":"k","date":"d","rows":4,"cols":256,"eps":1e-5,)"
      R"("x_stride":512,"weight":true,"residual":false,"dtype":"bf16"})");
  ASSERT_TRUE(rms.ok()) << rms.status().toString();
  EXPECT_EQ(rms->family, "rmsnorm_bf16");
  EXPECT_EQ(rms->key, "k");
  EXPECT_FALSE(rms->args.contains("family"));
  EXPECT_EQ(rms->args["rows"], 4);
  EXPECT_TRUE(parseBuiltinTuneItem(R"({"family":"silu_mul_f16","rows":8,"d":128})").ok());
  EXPECT_TRUE(parseBuiltinTuneItem(R"({"family":"gemm","layout":"NN","ab":"bf16","c":"bf16",)"
                            R"("m":64,"n":64,"k":64})")
                  .ok());
  // Another family's fields are its make_problem's business.
  EXPECT_TRUE(parseBuiltinTuneItem(R"({"family":"mine","eps":"anything","rows":-3})").ok());
}

TEST(TuneItem, EachBadFieldIsNamed) {
  struct Case {
    const char* line;
    const char* expect;
  } cases[] = {
      {R"({"family":"rmsnorm_bf16","rows":4,"cols":256,"eps":"x"})", "\"eps\" must be a number"},
      {R"({"family":"rmsnorm_bf16","rows":4,"cols":256,"dtype":5})", "\"dtype\" must be a string"},
      {R"({"family":"rmsnorm_bf16","rows":4,"cols":256,"dtype":"int3"})", "\"dtype\""},
      {R"({"family":"rmsnorm_bf16","rows":4,"cols":256,"x_stride":-1})", "\"x_stride\" must be in"},
      {R"({"family":"rmsnorm_bf16","rows":4,"cols":256,"y_stride":100})", "at least the row width"},
      {R"({"family":"rmsnorm_bf16","rows":"4","cols":256})", "\"rows\" must be an integer"},
      {R"({"family":"rmsnorm_bf16","rows":4,"cols":0})", "\"cols\" must be in"},
      {R"({"family":"rmsnorm_bf16","rows":4,"cols":256,"weight":1})", "\"weight\" must be true"},
      {R"({"family":"rmsnorm_bf16","rows":4.5,"cols":256})", "\"rows\" must be an integer"},
      {R"({"family":"rmsnorm_bf16","rows":18446744073709551615,"cols":2})", "\"rows\" must be in"},
      {R"({"family":"silu_mul_bf16","rows":4,"d":64,"x_stride":64})", "at least the row width 128"},
      {R"({"family":"gemm","layout":"NN","ab":"bf16","c":"bf16","m":-1,"n":1,"k":1})", "m"},
      {R"({"family":5})", "\"family\" must be a string"},
      {R"({"key":"k"})", "\"family\" must be a string"},
      {R"({"family":"f","key":7})", "\"key\" must be a string"},
      {R"([1,2])", "not a JSON object"},
      {"not json", "not valid JSON"},
  };
  for (const auto& c : cases) {
    Status s = itemStatus(c.line);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.line;
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << c.line << " -> " << s.message();
  }
  EXPECT_EQ(itemStatus(std::string(100000, '[') + std::string(100000, ']')).code(),
            Code::kInvalidArgument);
}

// The engine reads an item's envelope only: a built-in family's fields are the ops' to check
// (ops/tune_args.h), handed to it as a TuneArgsCheck.
TEST(TuneItem, EngineChecksTheEnvelopeAndCallsTheGivenCheck) {
  EXPECT_TRUE(parseTuneItem(R"({"family":"rmsnorm_bf16","rows":4,"cols":256,"eps":"x"})").ok());
  EXPECT_EQ(parseTuneItem(R"({"family":5})").status().code(), Code::kInvalidArgument);
  int calls = 0;
  TuneArgsCheck check = [&](const std::string& family, const json& args) {
    ++calls;
    EXPECT_FALSE(args.contains("family"));
    return family == "no" ? Status::InvalidArgument("refused") : Status::Ok();
  };
  EXPECT_TRUE(parseTuneItem(R"({"family":"yes","x":1})", check).ok());
  EXPECT_EQ(parseTuneItem(R"({"family":"no","x":1})", check).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(calls, 2);
}

// The problem's buffers, not its fields, decide: rows = cols = 65536 is inside the field bounds
// but would allocate 16 GiB (the issue saw 5 GB of host memory in 11 s).
TEST(TuneItem, ProblemMemoryIsBounded) {
  Status s = itemStatus(R"({"family":"rmsnorm_bf16","rows":65536,"cols":65536})");
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("more than the limit of 4096 MiB"), std::string::npos) << s.message();
  EXPECT_FALSE(parseBuiltinTuneItem(R"({"family":"silu_mul_bf16","rows":65536,"d":65536})").ok());
  EXPECT_FALSE(parseBuiltinTuneItem(R"({"family":"gemm","layout":"NN","ab":"bf16","c":"f32",)"
                             R"("m":65536,"n":65536,"k":65536})")
                   .ok());
  EXPECT_FALSE(parseBuiltinTuneItem(R"({"family":"rmsnorm_bf16","rows":2,"cols":8,)"
                             R"("x_stride":2147483648})")
                   .ok());
  EXPECT_TRUE(parseBuiltinTuneItem(R"({"family":"rmsnorm_bf16","rows":8192,"cols":8192})").ok());
}

TEST(ImportCheck, BuiltinFamiliesRefuseConfigsOutsideTheirSpace) {
  Validator v;
  v.arch = "sm_90a";
  auto lim = rowwise::limitsForArch("sm_90a");
  ASSERT_TRUE(lim.ok());
  const std::string good = rowwise::rmsNormDefaultConfig(rowwise::RowDType::kBF16, *lim).toString();
  auto check = builtinImportCheck("rmsnorm_bf16");
  ASSERT_TRUE(check);
  EXPECT_TRUE(check(v, "jit", good).ok()) << good;
  EXPECT_FALSE(check(v, "jit", "EVIL=1").ok());
  EXPECT_FALSE(check(v, "jit", "not a config").ok());
  EXPECT_FALSE(check(v, "cublaslt", "cublaslt:idx=0").ok());
  Validator amd;
  amd.arch = "gfx999zz";
  EXPECT_FALSE(check(amd, "jit", good).ok());
  auto gemm = builtinImportCheck("gemm");
  ASSERT_TRUE(gemm);
  EXPECT_FALSE(gemm(v, "jit", "BLOCK_M=7").ok());
  EXPECT_TRUE(gemm(v, "cublaslt", "cublaslt:idx=0:x").ok());
  EXPECT_FALSE(builtinImportCheck("user_family"));
}

class TuneItemCli : public Cli {
 protected:
  const std::vector<std::string> kSim = {"KTUNE_BACKEND=sim"};
};

// One good line among poisoned ones: every bad line is reported with its number and reason, the
// good one is tuned, nothing crashes or grows past the limit, and the exit code says it failed.
TEST_F(TuneItemCli, FromFileReportsBadLinesAndTunesTheRest) {
  const std::string f = root_ + "/keys.jsonl";
  std::ofstream(f) << R"({"family":"rmsnorm_bf16","key":"a","rows":4,"cols":256,"eps":"x"})" "\n"
                   << R"({"family":"rmsnorm_bf16","key":"b","rows":4,"cols":256,"dtype":5})" "\n"
                   << "\n"
                   << R"({"family":"rmsnorm_bf16","key":"c","rows":4,"cols":256,"x_stride":-8})" "\n"
                   << R"({"family":"rmsnorm_bf16","key":"d","rows":65536,"cols":65536})" "\n"
                   << R"({"family":"rmsnorm_bf16","rows":4,"cols":256,"eps":1e-6})" "\n"
                   << std::string(70, '[') + std::string(70, ']') << "\n";
  CliRun r = ktune({"tune", "--from-file", f, "--json"}, "", kSim);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  EXPECT_EQ(j["lines"], 6);
  EXPECT_EQ(j["tuned"], 1) << r.out;
  EXPECT_EQ(j["skipped"], 5) << r.out;
  // The engine parses the line; the op's make_problem checks its fields (ops/tune_args.h) before
  // it allocates anything, and the line is reported with that reason.
  auto message = [&](const std::string& line_no) {
    for (const auto& m : j["messages"])
      if (m.get<std::string>().rfind("line " + line_no + ": ", 0) == 0) return m.get<std::string>();
    return std::string("(no message for line " + line_no + ")");
  };
  EXPECT_HAS(message("1"), "field \"eps\" must be a number");
  EXPECT_HAS(message("2"), "field \"dtype\" must be a string");
  EXPECT_HAS(message("4"), "field \"x_stride\"");
  EXPECT_HAS(message("5"), "rmsnorm problem needs");
  EXPECT_HAS(message("7"), "JSON nested deeper");
}

// `ktune db import`: an entry whose winner is not a config of the family is refused with its
// reason; the valid entry beside it is imported.
TEST_F(TuneItemCli, DbImportRefusesForeignConfigsAndKeepsTheRest) {
  auto lim = rowwise::limitsForArch("sm_90a");
  ASSERT_TRUE(lim.ok());
  const std::string good = rowwise::rmsNormDefaultConfig(rowwise::RowDType::kBF16, *lim).toString();
  json stats = {{"median_ms", 0.01}, {"runs", 5}};
  json doc = {{"schema", 1},
              {"family", "rmsnorm_bf16"},
              {"devices",
               {{{"validator", {{"backend", "sim"}, {"arch", "sm_90a"}, {"device_name", "x"}}},
                 {"entries",
                  {{"good", {{"winner", good}, {"stats", stats}}},
                   {"evil", {{"winner", "PWN=1"}, {"stats", stats}}},
                   {"evil2",
                    {{"winner", good},
                     {"stats", stats},
                     {"candidates", {{{"config", "BLOCK=3"}, {"stats", stats}}}}}}}}}}}};
  const std::string f = root_ + "/import.json";
  ASSERT_TRUE(writeFileAtomic(f, doc.dump()).ok());
  CliRun r = ktune({"db", "import", f});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_HAS(r.err, "refused rmsnorm_bf16 entry evil: winner 'PWN=1'");
  EXPECT_HAS(r.err, "evil2: candidate 'BLOCK=3' dropped");  // a bad candidate: dropped, entry kept
  r = ktune({"db", "show", "rmsnorm_bf16", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json shown = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(shown.is_array()) << r.out;
  ASSERT_EQ(shown.size(), 2u) << r.out;
  EXPECT_EQ(shown[0]["key"], "evil2");
  EXPECT_EQ(shown[1]["key"], "good");
}

}  // namespace
}  // namespace ktune
