// The C API's shared-results option (ktune_tuner_options::remote_cache) against a real redis-server
// on a loopback port: a tuner tunes a key and publishes it; a second tuner with an empty cache
// (another machine) runs the published winner on its first call with no benchmark launch (one
// run that checks it before use, then the call: a shared winner is compiled and verified where it
// is used); a bad URL is KTUNE_ERR_INVALID_ARGUMENT naming the option.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/fs.h"
#include "ktune/ktune.h"
#include "tests/unit/remote_server.h"

namespace {

struct Seen {
  int launches = 0;
  int64_t block = 0;
};

int run(void* user, const ktune_sim_launch* l) {
  auto* s = static_cast<Seen*>(user);
  ++s->launches;
  s->block = ktune_sim_knob(l, "BLOCK", -1);
  return KTUNE_OK;
}

double cost(void*, const ktune_sim_launch* l) {
  return ktune_sim_knob(l, "BLOCK", 0) == 128 ? 0.01 : 0.02;  // BLOCK=128 wins
}

const ktune_arg kArgs[] = {{"n", KTUNE_ARG_I64}, {"y", KTUNE_ARG_PTR}};
const char* const kKey[] = {"n"};

struct Engine {
  ktune_tuner* t = nullptr;
  ktune_family* f = nullptr;
  Seen seen;
  int open(const std::string& cache, const char* remote) {
    ktune_tuner_options o = KTUNE_TUNER_OPTIONS_INIT;
    o.backend = "sim";
    o.cache_dir = cache.c_str();
    o.tuning = 1;
    o.isolate = 0;
    o.remote_cache = remote;
    int rc = ktune_tuner_create_ex(&o, &t);
    if (rc == KTUNE_OK) rc = ktune_sim_register_kernel(t, "c_fill", run, cost, &seen);
    ktune_family_desc d = KTUNE_FAMILY_DESC_INIT;
    d.name = "c_fill";
    d.source = "KTUNE_KERNEL void c_fill(long long n, float* y) {}";
    d.entry = "c_fill";
    d.space_json = R"({"params": {"BLOCK": [64, 128, 256, 512]}, "default": {"BLOCK": 64}})";
    d.args = kArgs;
    d.num_args = 2;
    d.key = kKey;
    d.num_key = 1;
    d.grid[0] = "cdiv(n, BLOCK)";
    d.block[0] = "BLOCK";
    if (rc == KTUNE_OK) rc = ktune_family_register(t, &d, &f);
    return rc;
  }
  int call() {
    uint64_t y = 0;
    int rc = ktune_malloc(t, 4096 * 4, &y);
    ktune_value v[2];
    std::memset(v, 0, sizeof(v));
    v[0].type = KTUNE_ARG_I64;
    v[0].v.i64 = 4096;
    v[1].type = KTUNE_ARG_PTR;
    v[1].v.ptr = y;
    if (rc == KTUNE_OK) rc = ktune_family_call(f, v, 2, nullptr);
    return rc;
  }
  ~Engine() { ktune_tuner_destroy(t); }
};

TEST(CApiRemote, SecondMachineRunsThePublishedWinnerWithoutTuning) {
  ktune::remotetest::RedisServer server;
  KTUNE_REQUIRE_REDIS(server);
  char tmpl[] = "/tmp/ktune-capi-remote-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string url = server.url();
  {
    Engine a;
    ASSERT_EQ(a.open(dir + "/a", url.c_str()), KTUNE_OK) << ktune_last_error();
    ASSERT_EQ(a.call(), KTUNE_OK) << ktune_last_error();
    EXPECT_GT(a.seen.launches, 4);  // tuned here: every config ran
    EXPECT_EQ(a.seen.block, 128);
  }
  Engine b;
  ASSERT_EQ(b.open(dir + "/b", url.c_str()), KTUNE_OK) << ktune_last_error();
  ASSERT_EQ(b.call(), KTUNE_OK) << ktune_last_error();
  EXPECT_EQ(b.seen.launches, 2) << "one check before use and the call: nothing benchmarked";
  EXPECT_EQ(b.seen.block, 128);
  char* json = nullptr;
  ASSERT_EQ(ktune_report_json(b.t, "c_fill", "n=4096", &json), KTUNE_OK) << ktune_last_error();
  EXPECT_NE(std::string(json).find("\"winner\":\"BLOCK=128\""), std::string::npos) << json;
  ktune_free(json);

  // Without the option (and without KTUNE_REMOTE_CACHE) a third machine tunes by itself.
  ::unsetenv("KTUNE_REMOTE_CACHE");
  Engine c;
  ASSERT_EQ(c.open(dir + "/c", nullptr), KTUNE_OK) << ktune_last_error();
  ASSERT_EQ(c.call(), KTUNE_OK);
  EXPECT_GT(c.seen.launches, 4);

  Engine bad;
  EXPECT_EQ(bad.open(dir + "/d", "http://cache:80"), KTUNE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ktune_last_error()).find("remote_cache"), std::string::npos)
      << ktune_last_error();
  (void)ktune::removeTree(dir);
}

}  // namespace
