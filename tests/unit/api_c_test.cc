// The C API (include/ktune/ktune.h) on the simulated backend: a family registered from data is
// tuned on its first call per key (the simulated costs decide the winner), launched with the
// launch rule's dimensions, reported as JSON, found again from the database by a second tuner;
// every misuse is a status code with a message, per thread.
#include "ktune/ktune.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/fs.h"

namespace {

struct Recorded {
  int launches = 0;
  unsigned grid = 0, block = 0;
  int64_t vec = 0;
};

int run(void* user, const ktune_sim_launch* l) {
  auto* r = static_cast<Recorded*>(user);
  int64_t n;
  uint64_t x, y;
  std::memcpy(&n, ktune_sim_arg(l, 0), 8);
  std::memcpy(&x, ktune_sim_arg(l, 1), 8);
  std::memcpy(&y, ktune_sim_arg(l, 2), 8);
  auto* xs = static_cast<const float*>(ktune_sim_host_ptr(l, x));
  auto* ys = static_cast<float*>(ktune_sim_host_ptr(l, y));
  r->grid = ktune_sim_grid(l, 0);
  r->block = ktune_sim_block(l, 0);
  r->vec = ktune_sim_knob(l, "VEC", -1);
  int64_t covered = int64_t(r->grid) * r->block * r->vec;
  for (int64_t i = 0; i < n && i < covered; ++i) ys[i] = 2 * xs[i];
  ++r->launches;
  return KTUNE_OK;
}

double cost(void*, const ktune_sim_launch* l) {
  return 0.01 + (ktune_sim_knob(l, "BLOCK", 0) == 128 ? 0 : 0.003) +
         (ktune_sim_knob(l, "VEC", 0) == 4 ? 0 : 0.001);
}

const ktune_arg kArgs[] = {{"n", KTUNE_ARG_I64}, {"x", KTUNE_ARG_PTR}, {"y", KTUNE_ARG_PTR}};
const char* const kKey[] = {"pow2(n)"};

ktune_family_desc desc() {
  ktune_family_desc d = KTUNE_FAMILY_DESC_INIT;
  d.name = "c_twice";
  d.source = "KTUNE_KERNEL void c_twice(long long n, const float* x, float* y) {}";
  d.entry = "c_twice";
  d.space_json = R"({"params": {"BLOCK": [64, 128, 256], "VEC": [1, 4]},
                     "constraints": ["BLOCK * VEC < 1024"], "default": {"BLOCK": 64, "VEC": 1}})";
  d.args = kArgs;
  d.num_args = 3;
  d.key = kKey;
  d.num_key = 1;
  d.grid[0] = "cdiv(n, BLOCK * VEC)";
  d.block[0] = "BLOCK";
  return d;
}

class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ktune-capi-XXXXXX";
    dir_ = mkdtemp(tmpl);
    ASSERT_EQ(open(&t_), KTUNE_OK) << ktune_last_error();
  }
  void TearDown() override {
    ktune_tuner_destroy(t_);
    (void)ktune::removeTree(dir_);
  }
  int open(ktune_tuner** t, int isolate = 0, int tuning = 1) {
    ktune_tuner_options o = KTUNE_TUNER_OPTIONS_INIT;
    o.backend = "sim";
    o.cache_dir = dir_.c_str();
    o.tuning = tuning;
    o.isolate = isolate;
    int rc = ktune_tuner_create_ex(&o, t);
    if (rc == KTUNE_OK) rc = ktune_sim_register_kernel(*t, "c_twice", run, cost, &rec_);
    return rc;
  }
  std::vector<ktune_value> values(int64_t n, uint64_t x, uint64_t y) {
    std::vector<ktune_value> v(3);
    std::memset(v.data(), 0, sizeof(ktune_value) * 3);
    v[0].type = KTUNE_ARG_I64;
    v[0].v.i64 = n;
    v[1].type = KTUNE_ARG_PTR;
    v[1].v.ptr = x;
    v[2].type = KTUNE_ARG_PTR;
    v[2].v.ptr = y;
    return v;
  }
  std::string dir_;
  ktune_tuner* t_ = nullptr;
  Recorded rec_;
};

TEST_F(CApi, TunesOnFirstCallLaunchesWithTheRuleAndReports) {
  EXPECT_STREQ(ktune_tuner_backend(t_), "sim");
  EXPECT_STREQ(ktune_version(), ktune_version());
  EXPECT_GT(std::strlen(ktune_version()), 0u);
  ktune_family_desc d = desc();
  ktune_family* f = nullptr;
  ASSERT_EQ(ktune_family_register(t_, &d, &f), KTUNE_OK) << ktune_last_error();
  const int64_t n = 3000;
  uint64_t x = 0, y = 0;
  ASSERT_EQ(ktune_malloc(t_, n * 4, &x), KTUNE_OK);
  ASSERT_EQ(ktune_malloc(t_, n * 4, &y), KTUNE_OK);
  std::vector<float> hx(n), hy(n, -1);
  for (int64_t i = 0; i < n; ++i) hx[i] = float(i % 5);
  ASSERT_EQ(ktune_memcpy_htod(t_, x, hx.data(), n * 4), KTUNE_OK);
  auto v = values(n, x, y);
  ASSERT_EQ(ktune_family_call(f, v.data(), 3, nullptr), KTUNE_OK) << ktune_last_error();
  EXPECT_GT(rec_.launches, 5);  // tuned: every config ran
  // The last launch is the winner's, with the rule's dimensions.
  EXPECT_EQ(rec_.block, 128u);
  EXPECT_EQ(rec_.vec, 4);
  EXPECT_EQ(rec_.grid, unsigned((n + 511) / 512));
  ASSERT_EQ(ktune_memcpy_dtoh(t_, hy.data(), y, n * 4), KTUNE_OK);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hy[i], 2 * hx[i]) << i;

  char* key = nullptr;
  ASSERT_EQ(ktune_family_key(f, v.data(), 3, &key), KTUNE_OK);
  EXPECT_STREQ(key, "pow2(n)=4096");
  char* json = nullptr;
  ASSERT_EQ(ktune_report_json(t_, "c_twice", key, &json), KTUNE_OK) << ktune_last_error();
  std::string report = json;
  EXPECT_NE(report.find("\"winner\":\"BLOCK=128,VEC=4\""), std::string::npos) << report;
  EXPECT_NE(report.find("\"config\":\"BLOCK=256,VEC=1\""), std::string::npos) << report;
  ktune_free(json);

  // A second call is a lookup and one launch.
  int before = rec_.launches;
  ASSERT_EQ(ktune_family_call(f, v.data(), 3, nullptr), KTUNE_OK);
  EXPECT_EQ(rec_.launches, before + 1);

  // A second tuner (a new process would be the same) finds the key in the database.
  ktune_tuner* t2 = nullptr;
  Recorded rec2;
  std::swap(rec_, rec2);
  ASSERT_EQ(open(&t2), KTUNE_OK);
  ktune_family* f2 = nullptr;
  ASSERT_EQ(ktune_family_register(t2, &d, &f2), KTUNE_OK);
  uint64_t x2 = 0, y2 = 0;
  ASSERT_EQ(ktune_malloc(t2, n * 4, &x2), KTUNE_OK);
  ASSERT_EQ(ktune_malloc(t2, n * 4, &y2), KTUNE_OK);
  auto v2 = values(n, x2, y2);
  ASSERT_EQ(ktune_family_call(f2, v2.data(), 3, nullptr), KTUNE_OK);
  EXPECT_EQ(rec_.launches, 1);
  EXPECT_EQ(rec_.block, 128u);

  // Database operations: export, remove the key (the next call tunes again), import it back.
  char* db = nullptr;
  ASSERT_EQ(ktune_db_export(t2, "c_twice", &db), KTUNE_OK);
  EXPECT_NE(std::string(db).find("pow2(n)=4096"), std::string::npos);
  ASSERT_EQ(ktune_db_remove(t2, "c_twice", key), KTUNE_OK) << ktune_last_error();
  EXPECT_EQ(ktune_report_json(t2, "c_twice", key, &json), KTUNE_ERR_NOT_FOUND);
  ASSERT_EQ(ktune_db_import(t2, "c_twice", db), KTUNE_OK) << ktune_last_error();
  ASSERT_EQ(ktune_report_json(t2, "c_twice", key, &json), KTUNE_OK);
  ktune_free(json);
  ktune_free(db);
  char* cache = nullptr;
  ASSERT_EQ(ktune_cache_dir(t2, &cache), KTUNE_OK);
  EXPECT_EQ(std::string(cache).rfind(dir_, 0), 0u) << cache;
  ktune_free(cache);
  EXPECT_EQ(ktune_cache_clear(t2), KTUNE_OK) << ktune_last_error();
  ktune_free(key);
  ktune_tuner_destroy(t2);
}

// The per-run hook (ktune_family_desc.before_run): one call before every launch while a key
// tunes, with the call's arguments; none on a call that does not tune. A desc of the layout
// before the hook fields (smaller struct_size) still registers, without a hook.
struct Hooked {
  Recorded* rec = nullptr;
  std::vector<int> launches_seen;
};

int beforeRun(void* user, const ktune_value* args, size_t n, ktune_stream) {
  auto* h = static_cast<Hooked*>(user);
  if (n != 3 || args[0].type != KTUNE_ARG_I64 || args[0].v.i64 != 3000) return KTUNE_ERR_INTERNAL;
  h->launches_seen.push_back(h->rec->launches);
  return KTUNE_OK;
}

TEST_F(CApi, BeforeRunPrecedesEveryTuningLaunch) {
  Hooked h;
  h.rec = &rec_;
  ktune_family_desc d = desc();
  d.before_run = beforeRun;
  d.before_run_user = &h;
  ktune_family* f = nullptr;
  ASSERT_EQ(ktune_family_register(t_, &d, &f), KTUNE_OK) << ktune_last_error();
  uint64_t x = 0, y = 0;
  ASSERT_EQ(ktune_malloc(t_, 3000 * 4, &x), KTUNE_OK);
  ASSERT_EQ(ktune_malloc(t_, 3000 * 4, &y), KTUNE_OK);
  auto v = values(3000, x, y);
  ASSERT_EQ(ktune_family_call(f, v.data(), 3, nullptr), KTUNE_OK) << ktune_last_error();
  ASSERT_GT(h.launches_seen.size(), 5u * 10u);
  for (size_t i = 0; i < h.launches_seen.size(); ++i)
    ASSERT_EQ(h.launches_seen[i], int(i)) << "hook call " << i;
  EXPECT_EQ(rec_.launches, int(h.launches_seen.size()));
  ASSERT_EQ(ktune_family_call(f, v.data(), 3, nullptr), KTUNE_OK);
  EXPECT_EQ(rec_.launches, int(h.launches_seen.size()) + 1);

  ktune_family_desc old = desc();
  old.name = "c_twice_old_layout";
  old.struct_size = offsetof(ktune_family_desc, before_run);
  old.before_run = reinterpret_cast<ktune_before_run_fn>(0x1);  // beyond its size: never read
  ktune_family* g = nullptr;
  ASSERT_EQ(ktune_family_register(t_, &old, &g), KTUNE_OK) << ktune_last_error();
  ASSERT_EQ(ktune_family_call(g, v.data(), 3, nullptr), KTUNE_OK) << ktune_last_error();
}

// Background tuning through the C API: the first call of an unseen key runs one launch at once
// (nothing tuned on the caller's thread). A family registered from data cannot have its buffers
// rebuilt on the tuning thread, so nothing is queued and the wait returns at once with 0 tuned.
TEST_F(CApi, BackgroundModeCallsAtOnceAndTheWaitReturns) {
  ktune_tuner* bg = nullptr;
  ASSERT_EQ(open(&bg, 0, KTUNE_TUNING_BACKGROUND), KTUNE_OK) << ktune_last_error();
  ktune_family_desc d = desc();
  ktune_family* f = nullptr;
  ASSERT_EQ(ktune_family_register(bg, &d, &f), KTUNE_OK) << ktune_last_error();
  const int64_t n = 1000;
  uint64_t x = 0, y = 0;
  ASSERT_EQ(ktune_malloc(bg, n * 4, &x), KTUNE_OK);
  ASSERT_EQ(ktune_malloc(bg, n * 4, &y), KTUNE_OK);
  auto v = values(n, x, y);
  const int before = rec_.launches;
  ASSERT_EQ(ktune_family_call(f, v.data(), 3, nullptr), KTUNE_OK) << ktune_last_error();
  EXPECT_EQ(rec_.launches, before + 1);
  EXPECT_EQ(ktune_tuner_wait_background(bg), 0u);
  EXPECT_EQ(ktune_tuner_wait_background(nullptr), 0u);
  ktune_tuner_destroy(bg);
}

TEST_F(CApi, MistakesAreCodesWithMessages) {
  ktune_family_desc d = desc();
  ktune_family* f = nullptr;
  d.grid[0] = "cdiv(n, BLOCK * VECC)";
  EXPECT_EQ(ktune_family_register(t_, &d, &f), KTUNE_ERR_INVALID_ARGUMENT);
  std::string err = ktune_last_error();
  EXPECT_NE(err.find("grid"), std::string::npos) << err;
  EXPECT_NE(err.find("VECC"), std::string::npos) << err;
  EXPECT_NE(err.find("column 17"), std::string::npos) << err;

  d = desc();
  d.space_json = R"({"params": {"BLOCK": [64, "x"]}})";
  EXPECT_EQ(ktune_family_register(t_, &d, &f), KTUNE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ktune_last_error()).find("integers"), std::string::npos);
  d = desc();
  d.space_json = R"({"params": {"BLOCK": [64]}, "constraints": ["n > 1"]})";
  EXPECT_EQ(ktune_family_register(t_, &d, &f), KTUNE_ERR_INVALID_ARGUMENT);  // knobs only
  d = desc();
  d.struct_size = 8;
  EXPECT_EQ(ktune_family_register(t_, &d, &f), KTUNE_ERR_INVALID_ARGUMENT);
  d = desc();
  d.source_fn = [](void*, const char*, ktune_config_source*) { return 0; };
  EXPECT_EQ(ktune_family_register(t_, &d, &f), KTUNE_ERR_INVALID_ARGUMENT);  // and source too
  d = desc();
  ktune_arg bad_args[] = {{"n", 7}};
  d.args = bad_args;
  d.num_args = 1;
  EXPECT_EQ(ktune_family_register(t_, &d, &f), KTUNE_ERR_INVALID_ARGUMENT);

  d = desc();
  ASSERT_EQ(ktune_family_register(t_, &d, &f), KTUNE_OK) << ktune_last_error();
  EXPECT_EQ(ktune_family_register(t_, &d, &f), KTUNE_ERR_INVALID_ARGUMENT);  // same name twice
  auto v = values(100, 0, 0);
  v[0].type = KTUNE_ARG_I32;
  EXPECT_EQ(ktune_family_call(f, v.data(), 3, nullptr), KTUNE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ktune_last_error()).find("must be i64"), std::string::npos);
  EXPECT_EQ(ktune_family_call(f, v.data(), 2, nullptr), KTUNE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ktune_family_call(nullptr, v.data(), 3, nullptr), KTUNE_ERR_INVALID_ARGUMENT);

  ktune_rmsnorm_params rp{};
  rp.dtype = KTUNE_DTYPE_BF16;
  EXPECT_EQ(ktune_rmsnorm(t_, &rp, nullptr), KTUNE_ERR_UNSUPPORTED);  // no GPU kernels on sim
  rp.dtype = 9;
  EXPECT_EQ(ktune_rmsnorm(t_, &rp, nullptr), KTUNE_ERR_INVALID_ARGUMENT);
  // FP8 GEMM inputs are KTUNE_DTYPE_* values (the op then says the sim has no GPU kernels).
  ktune_gemm_params gp{};
  gp.layout = "NT";
  gp.ab_dtype = KTUNE_DTYPE_F8E4M3;
  gp.c_dtype = KTUNE_DTYPE_BF16;
  gp.m = gp.n = gp.k = 64;
  EXPECT_EQ(ktune_gemm(t_, &gp, nullptr), KTUNE_ERR_UNSUPPORTED);
  gp.ab_dtype = KTUNE_DTYPE_F8E5M2 + 1;
  EXPECT_EQ(ktune_gemm(t_, &gp, nullptr), KTUNE_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(ktune_status_name(KTUNE_ERR_NOT_FOUND), "not_found");
  EXPECT_STREQ(ktune_status_name(99), "unknown");

  ktune_tuner* t = nullptr;
  EXPECT_EQ(ktune_tuner_create("tpu", &t), KTUNE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(t, nullptr);
}

TEST_F(CApi, LastErrorIsPerThread) {
  ktune_family_desc d = desc();
  d.block[0] = "BLOCK +";
  ktune_family* f = nullptr;
  ASSERT_EQ(ktune_family_register(t_, &d, &f), KTUNE_ERR_INVALID_ARGUMENT);
  std::string other = "unset";
  std::thread([&] { other = ktune_last_error(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(std::string(ktune_last_error()).find("block 'BLOCK +': unexpected end"), std::string::npos)
      << ktune_last_error();
  char* dir = nullptr;
  ASSERT_EQ(ktune_cache_dir(t_, &dir), KTUNE_OK);  // success clears it
  ktune_free(dir);
  EXPECT_STREQ(ktune_last_error(), "");
}

// A family registered from data passes the caller's device pointers, which no worker process can
// use: with isolation requested (the option, or KTUNE_ISOLATE=1 with the option left to the
// environment) its first call refuses with the documented code and reason, and none of its
// candidates runs in the calling process.
TEST_F(CApi, DataFamilyRefusesIsolationWithTheReason) {
  for (bool from_env : {false, true}) {
    SCOPED_TRACE(from_env ? "KTUNE_ISOLATE=1" : "options.isolate = 1");
    if (from_env) {
      ASSERT_EQ(::setenv("KTUNE_ISOLATE", "1", 1), 0);
    }
    ktune_tuner* t = nullptr;
    Recorded rec;
    {
      ktune_tuner_options o = KTUNE_TUNER_OPTIONS_INIT;
      o.backend = "sim";
      o.cache_dir = dir_.c_str();
      o.isolate = from_env ? -1 : 1;
      ASSERT_EQ(ktune_tuner_create_ex(&o, &t), KTUNE_OK) << ktune_last_error();
    }
    ::unsetenv("KTUNE_ISOLATE");
    ASSERT_EQ(ktune_sim_register_kernel(t, "c_twice", run, cost, &rec), KTUNE_OK);
    ktune_family_desc d = desc();
    ktune_family* f = nullptr;
    ASSERT_EQ(ktune_family_register(t, &d, &f), KTUNE_OK) << ktune_last_error();
    uint64_t x = 0, y = 0;
    ASSERT_EQ(ktune_malloc(t, 4096 * 4, &x), KTUNE_OK);
    ASSERT_EQ(ktune_malloc(t, 4096 * 4, &y), KTUNE_OK);
    auto v = values(4096, x, y);
    EXPECT_EQ(ktune_family_call(f, v.data(), 3, nullptr), KTUNE_ERR_UNAVAILABLE);
    const std::string err = ktune_last_error();
    EXPECT_NE(err.find(from_env ? "isolated benchmarking was requested (KTUNE_ISOLATE=1)"
                                : "isolated benchmarking was requested (options.isolate)"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("registered from data, KernelSpec or the C API, passes the caller's own "
                       "device pointers"),
              std::string::npos)
        << err;
    EXPECT_EQ(rec.launches, 0) << "a candidate ran in the calling process";
    ktune_tuner_destroy(t);
  }
}

// ktune_worker_path reports the worker the tuner would start: KTUNE_WORKER when set (checked to be
// executable), with the documented codes. (The installed layout's lookup beside libktune.so is
// consumer_test's.)
TEST_F(CApi, WorkerPathFollowsKtuneWorker) {
  EXPECT_EQ(ktune_worker_path(nullptr, nullptr), KTUNE_ERR_INVALID_ARGUMENT);
  for (const char* w : {"/bin/sh", "/nonexistent/ktune-worker"}) {
    ASSERT_EQ(::setenv("KTUNE_WORKER", w, 1), 0);
    ktune_tuner* t = nullptr;
    const int created = ktune_tuner_create("sim", &t);
    ::unsetenv("KTUNE_WORKER");
    ASSERT_EQ(created, KTUNE_OK) << ktune_last_error();
    char* path = nullptr;
    if (std::string(w) == "/bin/sh") {
      ASSERT_EQ(ktune_worker_path(t, &path), KTUNE_OK) << ktune_last_error();
      EXPECT_STREQ(path, "/bin/sh");
      ktune_free(path);
    } else {
      EXPECT_EQ(ktune_worker_path(t, &path), KTUNE_ERR_NOT_FOUND);
      EXPECT_EQ(path, nullptr);
      EXPECT_NE(std::string(ktune_last_error())
                    .find("isolation worker '/nonexistent/ktune-worker' is not an executable file"),
                std::string::npos)
          << ktune_last_error();
    }
    ktune_tuner_destroy(t);
  }
}

}  // namespace
