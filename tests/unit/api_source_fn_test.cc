// Per-config sources through the C API (ktune_family_desc.source_fn) on the simulated backend: the
// callback is asked once per config, its buffers are released once per call, the modules are
// cached by their text (a later tuner loads the recorded winner from the store without
// compiling), a callback's error fails that config only, with its message, and misuse is refused.
// The same through the C++ KernelSpec::source_fn.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "base/fs.h"
#include "ktune/ktune.h"
#include "ktune/ktune.hpp"

namespace {

// What the generator saw. Calls are serialised per family (ktune.h), the mutex only keeps the
// test honest if that ever changes.
struct Generator {
  std::mutex mu;
  std::map<std::string, int> calls;  // config -> calls
  int released = 0;  // release calls
  std::string fail_config;  // this config answers KTUNE_ERR_COMPILE
  std::string no_text_config;
  std::vector<char*> live;  // texts handed out and not yet released
};

// A "PTX" module per config: the block size is in the text, as a compiler would write it.
int generate(void* user, const char* config, ktune_config_source* out) {
  auto* g = static_cast<Generator*>(user);
  std::lock_guard<std::mutex> l(g->mu);
  if (out->struct_size != sizeof(ktune_config_source)) return KTUNE_ERR_INTERNAL;
  ++g->calls[config];
  if (config == g->fail_config) {
    out->error = "tile does not fit";
    return KTUNE_ERR_COMPILE;
  }
  out->language = "ptx";
  out->release = [](void* u, ktune_config_source* src) {
    auto* gen = static_cast<Generator*>(u);  // called with the generator's lock still held
    ++gen->released;
    for (size_t i = 0; i < gen->live.size(); ++i) {
      if (gen->live[i] == src->text) {
        std::free(gen->live[i]);
        gen->live.erase(gen->live.begin() + long(i));
      }
    }
  };
  if (config == g->no_text_config) return KTUNE_OK;
  char* text = static_cast<char*>(std::malloc(256));
  std::snprintf(text, 256, ".version 8.0\n// generated for %s\n.visible .entry gen_twice() { ret; }\n",
                config);
  g->live.push_back(text);
  out->text = text;
  out->entry = "gen_twice";
  return KTUNE_OK;
}

struct Launches {
  int n = 0;
  unsigned block = 0;
};

int runTwice(void* user, const ktune_sim_launch* l) {
  auto* r = static_cast<Launches*>(user);
  int64_t n;
  uint64_t x, y;
  std::memcpy(&n, ktune_sim_arg(l, 0), 8);
  std::memcpy(&x, ktune_sim_arg(l, 1), 8);
  std::memcpy(&y, ktune_sim_arg(l, 2), 8);
  auto* xs = static_cast<const float*>(ktune_sim_host_ptr(l, x));
  auto* ys = static_cast<float*>(ktune_sim_host_ptr(l, y));
  for (int64_t i = 0; i < n; ++i) ys[i] = 2 * xs[i];
  r->block = ktune_sim_block(l, 0);
  ++r->n;
  return KTUNE_OK;
}

// The knobs are in the module's text, not in defines: the cost follows the launch's block size.
double costOf(void*, const ktune_sim_launch* l) { return ktune_sim_block(l, 0) == 256 ? 0.01 : 0.02; }

const ktune_arg kArgs[] = {{"n", KTUNE_ARG_I64}, {"x", KTUNE_ARG_PTR}, {"y", KTUNE_ARG_PTR}};
const char* const kKey[] = {"pow2(n)"};

class SourceFn : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ktune-srcfn-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    for (auto* t : tuners_) ktune_tuner_destroy(t);
    for (char* p : gen_.live) std::free(p);
    (void)ktune::removeTree(dir_);
  }
  ktune_tuner* open(Launches* rec) {
    ktune_tuner_options o = KTUNE_TUNER_OPTIONS_INIT;
    o.backend = "sim";
    o.cache_dir = dir_.c_str();
    o.tuning = 1;
    o.isolate = 0;
    ktune_tuner* t = nullptr;
    EXPECT_EQ(ktune_tuner_create_ex(&o, &t), KTUNE_OK) << ktune_last_error();
    EXPECT_EQ(ktune_sim_register_kernel(t, "gen_twice", runTwice, costOf, rec), KTUNE_OK);
    tuners_.push_back(t);
    return t;
  }
  ktune_family_desc desc() {
    ktune_family_desc d = KTUNE_FAMILY_DESC_INIT;
    d.name = "gen_twice";
    d.source_fn = generate;
    d.source_user = &gen_;
    d.space_json = R"({"params": {"BLOCK": [64, 128, 256, 512]}})";
    d.args = kArgs;
    d.num_args = 3;
    d.key = kKey;
    d.num_key = 1;
    d.grid[0] = "cdiv(n, BLOCK)";
    d.block[0] = "BLOCK";
    return d;
  }
  std::vector<ktune_value> values(ktune_tuner* t, int64_t n) {
    uint64_t x = 0, y = 0;
    EXPECT_EQ(ktune_malloc(t, n * 4, &x), KTUNE_OK);
    EXPECT_EQ(ktune_malloc(t, n * 4, &y), KTUNE_OK);
    std::vector<float> hx(n);
    for (int64_t i = 0; i < n; ++i) hx[i] = float(i % 7);
    EXPECT_EQ(ktune_memcpy_htod(t, x, hx.data(), n * 4), KTUNE_OK);
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
  std::string report(ktune_tuner* t, ktune_family* f, std::vector<ktune_value>& v) {
    char* key = nullptr;
    EXPECT_EQ(ktune_family_key(f, v.data(), 3, &key), KTUNE_OK);
    char* json = nullptr;
    EXPECT_EQ(ktune_report_json(t, "gen_twice", key, &json), KTUNE_OK) << ktune_last_error();
    std::string r = json ? json : "";
    ktune_free(json);
    ktune_free(key);
    return r;
  }
  // Files under the store's shards (objects/<2 hex>/...).
  size_t storeEntries() {
    size_t n = 0;
    auto shards = ktune::listDir(dir_ + "/objects");
    if (!shards.ok()) return 0;
    for (const auto& s : *shards) {
      auto names = ktune::listDir(dir_ + "/objects/" + s);
      if (names.ok()) n += names->size();
    }
    return n;
  }

  std::string dir_;
  Generator gen_;
  std::vector<ktune_tuner*> tuners_;
};

TEST_F(SourceFn, OneModulePerConfigTunedCachedAndReleased) {
  Launches rec;
  ktune_tuner* t = open(&rec);
  ktune_family_desc d = desc();
  ktune_family* f = nullptr;
  ASSERT_EQ(ktune_family_register(t, &d, &f), KTUNE_OK) << ktune_last_error();
  auto v = values(t, 5000);
  ASSERT_EQ(ktune_family_call(f, v.data(), 3, nullptr), KTUNE_OK) << ktune_last_error();
  ASSERT_EQ(gen_.calls.size(), 4u);
  for (const auto& [cfg, n] : gen_.calls) EXPECT_EQ(n, 1) << cfg;
  EXPECT_EQ(gen_.released, 4);
  EXPECT_TRUE(gen_.live.empty());
  EXPECT_EQ(rec.block, 256u);  // the winner, launched last
  std::vector<float> y(5000);
  ASSERT_EQ(ktune_memcpy_dtoh(t, y.data(), v[2].v.ptr, 5000 * 4), KTUNE_OK);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(y[i], 2.f * float(i % 7)) << i;
  const std::string r = report(t, f, v);
  EXPECT_NE(r.find("\"winner\":\"BLOCK=256\""), std::string::npos) << r;
  // Four distinct modules, four distinct binaries: none was deduplicated as identical.
  EXPECT_EQ(r.find("identical binary"), std::string::npos) << r;
  const size_t entries = storeEntries();

  // A second tuner (as a new process) loads the recorded winner: the generator is asked for the
  // winner's module alone and its binary comes from the store.
  Launches rec2;
  ktune_tuner* t2 = open(&rec2);
  ktune_family* f2 = nullptr;
  ASSERT_EQ(ktune_family_register(t2, &d, &f2), KTUNE_OK) << ktune_last_error();
  auto v2 = values(t2, 5000);
  ASSERT_EQ(ktune_family_call(f2, v2.data(), 3, nullptr), KTUNE_OK) << ktune_last_error();
  EXPECT_EQ(gen_.calls["BLOCK=256"], 2);
  EXPECT_EQ(gen_.calls["BLOCK=64"], 1);
  EXPECT_EQ(rec2.n, 1);
  EXPECT_EQ(rec2.block, 256u);
  EXPECT_EQ(storeEntries(), entries);
  EXPECT_EQ(gen_.released, 5);
}

TEST_F(SourceFn, ACallbackErrorFailsThatConfigOnly) {
  gen_.fail_config = "BLOCK=256";
  gen_.no_text_config = "BLOCK=512";
  Launches rec;
  ktune_tuner* t = open(&rec);
  ktune_family_desc d = desc();
  ktune_family* f = nullptr;
  ASSERT_EQ(ktune_family_register(t, &d, &f), KTUNE_OK) << ktune_last_error();
  auto v = values(t, 1000);
  ASSERT_EQ(ktune_family_call(f, v.data(), 3, nullptr), KTUNE_OK) << ktune_last_error();
  EXPECT_EQ(rec.block, 64u);  // 64 and 128 cost the same: the first wins
  const std::string r = report(t, f, v);
  EXPECT_NE(r.find("tile does not fit"), std::string::npos) << r;
  EXPECT_NE(r.find("source_fn for config BLOCK=256"), std::string::npos) << r;
  EXPECT_NE(r.find("without text"), std::string::npos) << r;
  EXPECT_EQ(gen_.released, 3);  // the error return set no release; the empty answer did
}

TEST_F(SourceFn, MisuseIsRefused) {
  Launches rec;
  ktune_tuner* t = open(&rec);
  ktune_family_desc d = desc();
  ktune_family* f = nullptr;
  d.source = "KTUNE_KERNEL void gen_twice() {}";
  EXPECT_EQ(ktune_family_register(t, &d, &f), KTUNE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ktune_last_error()).find("source_fn replaces source"), std::string::npos)
      << ktune_last_error();
}

// The C++ API: the language is a name; an unknown one fails the config, naming the languages.
TEST_F(SourceFn, CxxSpecSourceFn) {
  auto opts = ktune::TunerOptions::fromEnv();
  ASSERT_TRUE(opts.ok());
  opts->backend = "sim";
  opts->cache_dir = dir_;
  opts->tuning = true;
  opts->isolate = false;
  auto tuner = ktune::Autotuner::create(*opts);
  ASSERT_TRUE(tuner.ok()) << tuner.status().toString();
  Launches rec;
  ktune::SimKernelFns fns;
  fns.run = [&rec](const ktune::SimLaunchView& l) {
    rec.block = l.block(0);
    ++rec.n;
    return ktune::Status::Ok();
  };
  fns.cost = [](const ktune::SimLaunchView& l) { return l.block(0) == 128 ? 0.01 : 0.02; };
  ASSERT_TRUE((*tuner)->registerSimKernel("cxx_gen", fns).ok());
  ktune::KernelSpec s;
  s.name = "cxx_gen";
  s.entry = "cxx_gen";
  s.space_json = R"({"params": {"BLOCK": [64, 128, 256]}})";
  s.args = {{"n", ktune::ArgType::kI64}};
  s.key = {"n"};
  s.grid = {"cdiv(n, BLOCK)"};
  s.block = {"BLOCK"};
  s.source_fn = [](const std::string& config) -> ktune::Expected<ktune::ConfigSource> {
    ktune::ConfigSource src;
    src.language = config == "BLOCK=256" ? "fortran" : "mlir";
    src.text = "gpu.module @m { // " + config + "\n}";
    return src;
  };
  auto k = (*tuner)->addKernel(s);
  ASSERT_TRUE(k.ok()) << k.status().toString();
  ktune::Value args[] = {ktune::Value::i64(4096)};
  auto rep = k->tune(args, 1);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->winner, "BLOCK=128");
  bool saw = false;
  for (const auto& c : rep->candidates) {
    if (c.config != "BLOCK=256") continue;
    saw = true;
    EXPECT_NE(c.reason.find("unknown language 'fortran'"), std::string::npos) << c.reason;
  }
  EXPECT_TRUE(saw);
  // source and source_fn together, or neither, are refused at registration.
  s.source = "KTUNE_KERNEL void cxx_gen() {}";
  s.name = "cxx_gen2";
  EXPECT_EQ((*tuner)->addKernel(s).status().code(), ktune::Code::kInvalidArgument);
}

}  // namespace
