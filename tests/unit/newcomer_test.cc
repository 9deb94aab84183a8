// What a newcomer meets first (issue 30): errors that say what to do instead of aborting, failure
// reasons that name their cause, CLI answers that list what exists, whole configs in the tables,
// and the simulated backend's host kernels at real sizes without thrashing memory.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/fs.h"
#include "ktune/ktune.h"
#include "ktune/ktune.hpp"
#include "runtime/sim/sim_backend.h"
#include "templates/rowwise.h"
#include "tests/unit/cli_fixture.h"
#include "tools/sim_gpu.h"

namespace ktune {
namespace {

using nlohmann::json;
const std::vector<std::string> kSim = {"KTUNE_BACKEND=sim"};

// ---------------------------------------------------------------- the public API

TEST(Newcomer, CreateWithoutADeviceSaysHowToGetTheSimulatedBackend) {
  TunerOptions o;
  o.backend = "auto";
  auto t = Autotuner::create(o);
  if (t.ok()) GTEST_SKIP() << "a GPU backend opened: nothing is missing here";
  EXPECT_EQ(t.status().code(), Code::kUnavailable) << t.status().toString();
  EXPECT_NE(t.status().message().find("KTUNE_BACKEND=sim"), std::string::npos)
      << t.status().toString();
}

// value() on an error used to throw std::bad_variant_access out of the header ("terminate called
// after throwing ...", no reason); now the Status is printed before the abort.
TEST(NewcomerDeathTest, ValueOfAnErrorPrintsTheStatus) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Expected<int> e(Status::Unavailable("no GPU backend available (set KTUNE_BACKEND=sim)"));
        std::printf("%d\n", e.value());
      },
      "check ok\\(\\) first\\): unavailable: no GPU backend available \\(set KTUNE_BACKEND=sim\\)");
}

KernelSpec scaleSpec(const std::string& name) {
  KernelSpec s;
  s.name = name;
  s.source = "KTUNE_KERNEL void k(long long n, float* x) {}";
  s.entry = "k";
  s.space_json = R"({"params": {"BLOCK": [128, 256]}})";
  s.args = {{"n", ArgType::kI64}, {"x", ArgType::kPtr}};
  s.key = {"pow2(n)"};
  s.grid = {"cdiv(n, BLOCK)"};
  s.block = {"BLOCK"};
  return s;
}

// The note used to ask for "verify" or "no_verify", fields KernelSpec did not have.
TEST(Newcomer, UnverifiedDataFamilyNoteNamesRealFields) {
  TunerOptions o;
  o.backend = "sim";
  o.cache_dir = ::testing::TempDir() + "ktune-newcomer-" + std::to_string(::getpid());
  auto t = Autotuner::create(o);
  ASSERT_TRUE(t.ok()) << t.status().toString();
  ::testing::internal::CaptureStderr();
  auto k = (*t)->addKernel(scaleSpec("nc_unverified"));
  const std::string note = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(k.ok()) << k.status().toString();
  EXPECT_NE(note.find("KernelSpec::no_verify"), std::string::npos) << note;
  EXPECT_NE(note.find("ktune_family_desc.no_verify"), std::string::npos) << note;
  // Setting it is the explicit choice: no note.
  KernelSpec quiet = scaleSpec("nc_quiet");
  quiet.no_verify = true;
  ::testing::internal::CaptureStderr();
  auto k2 = (*t)->addKernel(quiet);
  const std::string none = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(k2.ok()) << k2.status().toString();
  EXPECT_EQ(none.find("no verify function"), std::string::npos) << none;
  // The C API's field reaches the spec.
  ktune_family_desc d = KTUNE_FAMILY_DESC_INIT;
  EXPECT_EQ(d.no_verify, 0);
  std::error_code ec;
  std::filesystem::remove_all(o.cache_dir, ec);
}

// ---------------------------------------------------------------- the CLI

TEST_F(Cli, DbShowOfAMissingFamilyListsTheOnesThatExist) {
  CliRun r = ktune({"tune", "rmsnorm", "--rows", "4", "--cols", "256", "--quiet"}, "", kSim);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::vector<std::string>& cmd : {std::vector<std::string>{"db", "show", "rmsnorm"},
                                               {"report", "rmsnorm", "-o", root_ + "/r.html"}}) {
    r = ktune(cmd);
    EXPECT_EQ(r.code, 1) << cmd[0] << ": " << r.err;
    EXPECT_HAS(r.err, "no tuning database for 'rmsnorm'");
    EXPECT_HAS(r.err, "families with a database: rmsnorm_bf16");
    EXPECT_HAS(r.err, "(did you mean rmsnorm_bf16?)");
  }
}

// An inapplicable kernel kind used to fail as "launch: grid and block dimensions must be
// positive"; the tune table cut configs at 55 characters, so rows of one kind read the same.
TEST_F(Cli, InapplicableGemmKindsSayWhyAndConfigsAreWhole) {
  const std::vector<std::string> args = {"tune", "gemm", "--m", "16", "--n", "64", "--k", "64",
                                         "--layout", "NN", "--kinds", "skinny,mma"};
  std::vector<std::string> with_json = args;
  with_json.push_back("--json");
  CliRun r = ktune(with_json, "", kSim);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  int skinny = 0;
  for (const auto& c : j["candidates"]) {
    const std::string reason = c.value("reason", "");
    EXPECT_EQ(reason.find("grid and block dimensions"), std::string::npos) << c.dump();
    if (c["config"].get<std::string>().find("KIND=skinny") == std::string::npos) continue;
    ++skinny;
    EXPECT_HAS(reason, "skinny GEMM handles layout NT only");
  }
  EXPECT_GT(skinny, 0) << r.out;
  r = ktune(args, "", kSim);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("..."), std::string::npos) << r.out;
  for (const auto& c : j["candidates"]) EXPECT_HAS(r.out, c["config"].get<std::string>());
}

// Early rejection is a measurement ("slower than best ..."), not a timeout and not a failure.
TEST_F(Cli, EarlyRejectionIsNotAFailure) {
  // f32 rows of 4096: VEC=1 costs about 1.4x the 16-byte configs on the simulated device.
  CliRun r = ktune({"tune", "rmsnorm", "--rows", "128", "--cols", "4096", "--dtype", "f32"}, "", kSim);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("timeout: slower than best"), std::string::npos) << r.out;
  const bool rejected = r.out.find("  slower than best") != std::string::npos;
  r = ktune({"report", "rmsnorm_f32", "-o", root_ + "/r.html"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto html = readFile(root_ + "/r.html");
  ASSERT_TRUE(html.ok());
  if (!rejected) GTEST_SKIP() << "no candidate was stopped early on this run";
  EXPECT_HAS(*html, "Stopped early: slower than the best (");
  EXPECT_HAS(*html, " stopped early (slower than the best), ");
  const size_t failures = html->find("<h4>Failures ("), table_end = html->find("</table>", failures);
  ASSERT_NE(failures, std::string::npos);
  const std::string failed = html->substr(failures, html->find("<h4>", failures + 4) - failures);
  EXPECT_EQ(failed.find("slower than best"), std::string::npos) << failed;
  (void)table_end;
}

// ---------------------------------------------------------------- the simulated backend

struct RowLaunch {
  std::vector<std::pair<std::string, std::string>> defines;
  std::vector<std::vector<unsigned char>> slots;
  std::vector<void*> ptrs;
  template <typename T>
  void add(T v) {
    slots.emplace_back(sizeof(T));
    std::memcpy(slots.back().data(), &v, sizeof(T));
  }
  SimLaunch launch(SimBackend* b) {
    ptrs.clear();
    for (auto& s : slots) ptrs.push_back(s.data());
    SimLaunch l;
    l.backend = b;
    l.args = ptrs.data();
    l.defines = &defines;
    return l;
  }
};

// Strided rows: y and the residual output have their own strides (the host kernel used to write
// y with x's layout), and the padding between rows stays untouched.
TEST(Newcomer, SimRmsNormRespectsEveryStride) {
  SimBackend b(SimOptions{});
  const int64_t rows = 3, cols = 40, xs = 48, ys = 56, rs = 44, ros = 52;
  const DType t = DType::kBF16;
  auto alloc = [&](int64_t n) { return *b.alloc(size_t(n) * 2); };
  const DevicePtr x = alloc(rows * xs), y = alloc(rows * ys), w = alloc(cols), r = alloc(rows * rs),
                  ro = alloc(rows * ros);
  for (int64_t i = 0; i < rows * xs; ++i) storeFromDouble(b.hostPtr(x), t, i, 0.25 * double(i % 9) - 1);
  for (int64_t i = 0; i < rows * rs; ++i) storeFromDouble(b.hostPtr(r), t, i, 0.5 * double(i % 5));
  for (int64_t i = 0; i < cols; ++i) storeFromDouble(b.hostPtr(w), t, i, 1.0 + 0.01 * double(i));
  RowLaunch L;
  L.defines = {{"DTYPE", std::to_string(int(t))}, {"HAS_RESIDUAL", "1"}, {"HAS_WEIGHT", "1"}};
  for (DevicePtr p : {y, x, w, r, ro}) L.add(p);
  for (long long v : {rows, cols, xs, ys, rs, ros}) L.add(v);
  L.add(1e-6f);
  rowwise::RmsNormProblem p;
  p.dtype = t;
  p.has_weight = p.has_residual = true;
  p.rows = rows, p.cols = cols, p.x_stride = xs, p.y_stride = ys, p.r_stride = rs, p.ro_stride = ros;
  p.eps = 1e-6f;
  auto load = [&](DevicePtr d, int64_t n) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = loadAsDouble(b.hostPtr(d), t, i);
    return v;
  };
  // Launches (y re-poisoned first) and compares y, its padding and the residual output with the
  // float64 reference of the inputs as they are now.
  auto check = [&](const char* when) {
    std::memset(b.hostPtr(y), 0xcd, size_t(rows * ys) * 2);
    ASSERT_TRUE(cli::simRmsNorm(L.launch(&b)).ok()) << when;
    std::vector<double> want_y(size_t(rows * ys), -7), want_ro(size_t(rows * ros), -7);
    auto xv = load(x, rows * xs), wv = load(w, cols), rv = load(r, rows * rs);
    rowwise::rmsNormReference(p, xv.data(), wv.data(), rv.data(), want_y.data(), want_ro.data());
    const auto* yraw = static_cast<const unsigned char*>(b.hostPtr(y));
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < ys; ++j) {
        const int64_t at = i * ys + j;
        if (j < cols)
          EXPECT_EQ(loadAsDouble(yraw, t, at), rowwise::roundTo(t, want_y[size_t(at)]))
              << when << " " << i << "," << j;
        else
          EXPECT_EQ(yraw[2 * at], 0xcd) << when << ": padding of row " << i << " written";
      }
      for (int64_t j = 0; j < cols; ++j)
        EXPECT_EQ(loadAsDouble(b.hostPtr(ro), t, i * ros + j),
                  rowwise::roundTo(t, want_ro[size_t(i * ros + j)])) << when;
    }
  };
  check("first launch");
  check("same inputs (the kept result)");
  // One input element changed: a new result, not the kept one.
  storeFromDouble(b.hostPtr(x), t, 1 * xs + 3, 3.5);
  check("after x changed");
  storeFromDouble(b.hostPtr(w), t, 7, -2.0);
  check("after w changed");
}

long minorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// The host kernels converted the whole tensor to doubles on every launch (fresh allocations of
// tens of MiB, mmap'ed and faulted in each time): a simulated tune of 4096x4096 took minutes,
// most of it page faults. Now a launch reuses one row's buffers.
TEST(Newcomer, SimRowwiseLaunchesDoNotFaultInFreshMemory) {
  SimBackend b(SimOptions{});
  const long long rows = 256, cols = 4096;
  const DevicePtr x = *b.alloc(size_t(rows * cols) * 2), y = *b.alloc(size_t(rows * cols) * 2);
  std::memset(b.hostPtr(x), 0x3c, size_t(rows * cols) * 2);
  std::memset(b.hostPtr(y), 0, size_t(rows * cols) * 2);
  RowLaunch L;
  L.defines = {{"DTYPE", std::to_string(int(DType::kBF16))}, {"HAS_RESIDUAL", "0"},
               {"HAS_WEIGHT", "0"}};
  for (DevicePtr p : {y, x, DevicePtr(0), DevicePtr(0), DevicePtr(0)}) L.add(p);
  for (long long v : {rows, cols, 0LL, 0LL, 0LL, 0LL}) L.add(v);
  L.add(1e-6f);
  ASSERT_TRUE(cli::simRmsNorm(L.launch(&b)).ok());  // warm: the per-thread row buffers
  const long before = minorFaults();
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(cli::simRmsNorm(L.launch(&b)).ok());
  // Before: about 6500 faults per launch (24 MiB of doubles + 2 MiB packed, 4 KiB pages).
  EXPECT_LT(minorFaults() - before, 2000) << "page faults in 8 launches of " << rows << "x" << cols;

  RowLaunch S;  // SiLU·Mul: out [rows][d], x [rows][2d]
  S.defines = {{"DTYPE", std::to_string(int(DType::kBF16))}};
  for (DevicePtr p : {y, x}) S.add(p);
  for (long long v : {rows, cols / 2, 0LL, 0LL}) S.add(v);
  ASSERT_TRUE(cli::simSiluMul(S.launch(&b)).ok());
  const long before_silu = minorFaults();
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(cli::simSiluMul(S.launch(&b)).ok());
  EXPECT_LT(minorFaults() - before_silu, 2000);
}

}  // namespace
}  // namespace ktune
