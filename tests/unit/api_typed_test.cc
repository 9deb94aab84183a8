// The typed registration (include/ktune/typed.hpp) on the simulated backend, through the public
// headers only: the problem struct reaches the key, launch and args callbacks; the space's
// constraint and defines apply; the winner is the simulated fastest; verify rejects a wrong
// config; a second tuner finds the result in the database; a bad spec names its field; named
// constraints, the shared-memory pre-check and generated sources (what data families use); the
// hooks the built-in ops use (refusal, before-launch and before-timed-run hooks, vendor candidates).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "ktune/ktune.hpp"

namespace {

struct Problem {
  int64_t n = 0;
  ktune::DevicePtr out = 0;
};

struct Seen {
  int launches = 0;
  unsigned grid = 0, block = 0;
  int64_t n_arg = 0;
};

class TypedApi : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ktune-typed-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::unique_ptr<ktune::Autotuner> open() {
    ktune::TunerOptions o;
    o.backend = "sim";
    o.cache_dir = dir_;
    o.warmup_ms = 0.1;
    o.rep_ms = 0.5;
    auto t = ktune::Autotuner::create(o);
    EXPECT_TRUE(t.ok()) << t.status().toString();
    if (!t.ok()) return nullptr;
    ktune::SimKernelFns fns;
    fns.run = [this](const ktune::SimLaunchView& l) {
      ++seen_.launches;
      seen_.grid = l.grid(0);
      seen_.block = l.block(0);
      std::memcpy(&seen_.n_arg, l.arg(0), sizeof seen_.n_arg);
      ktune::DevicePtr out;
      std::memcpy(&out, l.arg(1), sizeof out);
      // The kernel "writes" its VEC define; VEC=4 writes a wrong value (verify must reject it).
      int32_t v = static_cast<int32_t>(l.knob("VEC")) == 4 ? -1 : 7;
      std::memcpy(l.hostPtr(out), &v, sizeof v);
      return ktune::Status::Ok();
    };
    // BLOCK=256 is fastest; WAVES (not a define) does not change the binary.
    fns.cost = [](const ktune::SimLaunchView& l) {
      return 0.01 + (l.block(0) == 256 ? 0.0 : 0.002) + 0.001 * double(l.knob("VEC") == 1);
    };
    EXPECT_TRUE((*t)->registerSimKernel("typed_k", fns).ok());
    return std::move(t).value();
  }

  ktune::TypedKernelSpec<Problem> spec(ktune::Autotuner* t) {
    ktune::TypedKernelSpec<Problem> s;
    s.name = "typed_k";
    s.source = "KTUNE_KERNEL void typed_k(long long n, int* out) {}";
    s.entry = "typed_k";
    s.space = {{"BLOCK", {128, 256, 1024}}, {"VEC", {1, 2, 4}}};
    s.constraint = [](const ktune::Knobs& c) { return c["BLOCK"] * c["VEC"] <= 1024; };
    s.default_config = {{"BLOCK", 128}, {"VEC", 1}};
    s.defines = {"VEC"};
    s.key = [](const Problem& p, ktune::KeyFields& k) { k.add("n", ktune::pow2Ceil(p.n)); };
    s.launch = [](const ktune::Knobs& c, const Problem& p, const ktune::DeviceFacts& d) {
      EXPECT_EQ(d.arch, "sim");
      return ktune::Launch::linear(ktune::cdiv(p.n, c["BLOCK"] * c["VEC"]), c["BLOCK"]);
    };
    s.args = [](const Problem& p, ktune::ArgPack& a) { a.add(p.n).add(p.out); };
    s.verify = [t](const Problem& p, ktune::StreamHandle) {
      int32_t v = 0;
      KTUNE_RETURN_IF_ERROR(t->copyToHost(&v, p.out, sizeof v));
      return v == 7 ? ktune::Status::Ok() : ktune::Status::WrongResult("out=" + std::to_string(v));
    };
    return s;
  }

  std::string dir_;
  Seen seen_;
};

TEST_F(TypedApi, TunesCallsAndReportsThroughTheProblemStruct) {
  auto t = open();
  ASSERT_TRUE(t);
  auto k = ktune::addTypedKernel(*t, spec(t.get()));
  ASSERT_TRUE(k.ok()) << k.status().toString();
  EXPECT_EQ(k->name(), "typed_k");
  auto out = t->alloc(64);
  ASSERT_TRUE(out.ok());
  Problem p{3000, *out};
  EXPECT_EQ(k->key(p), "n=4096");
  auto r = k->tune(p);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  // 3 x 3 configs, BLOCK=1024 with VEC 2 and 4 dropped by the constraint: 7 candidates.
  EXPECT_EQ(r->candidates.size(), 7u);
  EXPECT_EQ(r->winner, "BLOCK=256,VEC=2");
  int wrong = 0;
  for (const auto& c : r->candidates) {
    if (c.status != ktune::Code::kWrongResult) continue;
    ++wrong;
    EXPECT_NE(c.reason.find("out=-1"), std::string::npos) << c.reason;
  }
  EXPECT_EQ(wrong, 2);  // VEC=4 with BLOCK 128 and 256
  seen_ = {};
  ASSERT_TRUE((*k)(p).ok());
  EXPECT_EQ(seen_.launches, 1);
  EXPECT_EQ(seen_.block, 256u);
  EXPECT_EQ(seen_.grid, 6u);  // cdiv(3000, 512)
  EXPECT_EQ(seen_.n_arg, 3000);
  auto sel = k->lookup(p);
  ASSERT_TRUE(sel.ok()) << sel.status().toString();
  EXPECT_EQ(sel->winner, "BLOCK=256,VEC=2");
  EXPECT_EQ(sel->origin, "memory");
  ASSERT_TRUE(t->free(*out).ok());

  // A second tuner over the same cache: the database answers, nothing is tuned again.
  t.reset();
  auto t2 = open();
  ASSERT_TRUE(t2);
  auto k2 = ktune::addTypedKernel(*t2, spec(t2.get()));
  ASSERT_TRUE(k2.ok()) << k2.status().toString();
  auto out2 = t2->alloc(64);
  ASSERT_TRUE(out2.ok());
  Problem p2{4096, *out2};
  seen_ = {};
  ASSERT_TRUE((*k2)(p2).ok());
  EXPECT_EQ(seen_.launches, 1);  // one launch: no candidate ran
  auto sel2 = k2->lookup(p2);
  ASSERT_TRUE(sel2.ok());
  EXPECT_EQ(sel2->winner, "BLOCK=256,VEC=2");
  EXPECT_EQ(sel2->origin, "database");
}

// What the string-based KernelSpec is built on: named constraints, a shared-memory rule over the
// knobs (configs that cannot fit are failed before they are compiled) and per-config sources.
TEST_F(TypedApi, NamedConstraintsSharedBytesAndGeneratedSources) {
  auto t = open();
  ASSERT_TRUE(t);
  auto s = spec(t.get());
  s.constraint = nullptr;
  s.constraints = {{"VEC <= 2", [](const ktune::Knobs& c) { return c["VEC"] <= 2; }}};
  // BLOCK=1024 needs 128 KiB: more than the simulated device's 96 KiB opt-in.
  s.shared_bytes = [](const ktune::Knobs& c) { return c["BLOCK"] * int64_t{128}; };
  std::atomic<int> generated{0}, too_big{0};
  s.source.clear();
  s.source_fn = [&](const ktune::Knobs& c,
                    const Problem& p) -> ktune::Expected<ktune::ConfigSource> {
    ++generated;
    if (c["BLOCK"] == 1024) ++too_big;
    EXPECT_EQ(p.n, 3000);
    ktune::ConfigSource src;
    src.language = "cpp";
    src.text = "KTUNE_KERNEL void typed_k(long long n, int* out) {}  // " + c.toString();
    return src;
  };
  auto k = ktune::addTypedKernel(*t, s);
  ASSERT_TRUE(k.ok()) << k.status().toString();
  auto out = t->alloc(64);
  ASSERT_TRUE(out.ok());
  auto r = k->tune(Problem{3000, *out});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  // 3 x 3 configs, VEC=4 dropped by the named constraint: 6 candidates, 2 of them too big.
  EXPECT_EQ(r->candidates.size(), 6u);
  int failed = 0;
  for (const auto& c : r->candidates) {
    if (c.config.find("BLOCK=1024") == std::string::npos) continue;
    ++failed;
    EXPECT_NE(c.status, ktune::Code::kOk) << c.config;
    EXPECT_NE(c.reason.find("shared"), std::string::npos) << c.reason;
  }
  EXPECT_EQ(failed, 2);
  EXPECT_EQ(r->winner, "BLOCK=256,VEC=2");
  EXPECT_GE(generated.load(), 4);
  EXPECT_EQ(too_big.load(), 0) << "a config that cannot fit was generated and compiled";
  ASSERT_TRUE(t->free(*out).ok());
}

// The hooks the built-in ops register through (the one registration type): a launch rule that
// refuses a config for a problem, a hook before every launch and one before every timed run, and
// vendor candidates raced with the JIT configs. A regression test of the ops' move onto the
// public spec: each hook must reach the engine.
TEST_F(TypedApi, OpsHooksReachTheEngineThroughThePublicSpec) {
  auto t = open();
  ASSERT_TRUE(t);
  auto s = spec(t.get());
  auto launch = s.launch;
  s.launch = [launch](const ktune::Knobs& c, const Problem& p, const ktune::DeviceFacts& d) {
    ktune::Launch l = launch(c, p, d);
    if (c["VEC"] == 4) l.refused = ktune::Status::Unsupported("VEC=4 is refused for this problem");
    return l;
  };
  std::atomic<int> before_launch{0}, before_timed{0}, vendor_asked{0}, vendor_runs{0};
  s.before_launch = [&](const ktune::Knobs& c, const Problem&, ktune::StreamHandle) {
    EXPECT_NE(c["VEC"], 4) << "a refused config was launched";
    ++before_launch;
    return ktune::Status::Ok();
  };
  s.before_timed_run = [&](const Problem&, ktune::StreamHandle) {
    ++before_timed;
    return ktune::Status::Ok();
  };
  s.vendor_candidates = [&](const Problem&) {
    ++vendor_asked;
    return std::vector<ktune::VendorCandidate>{{"vend:algo=1", "vend", false}};
  };
  ktune::Autotuner* tp = t.get();
  s.vendor_launch = [&, tp](const std::string& id, const Problem& p, ktune::StreamHandle) {
    EXPECT_EQ(id, "vend:algo=1");
    ++vendor_runs;
    const int32_t v = 7;  // what verify expects
    return tp->copyToDevice(p.out, &v, sizeof v);
  };
  auto k = ktune::addTypedKernel(*t, s);
  ASSERT_TRUE(k.ok()) << k.status().toString();
  auto out = t->alloc(64);
  ASSERT_TRUE(out.ok());
  auto r = k->tune(Problem{3000, *out});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  int refused = 0, vendor = 0;
  for (const auto& c : r->candidates) {
    if (c.source == "vend") {
      ++vendor;
      EXPECT_EQ(c.config, "vend:algo=1");
      EXPECT_EQ(c.status, ktune::Code::kOk) << c.reason;
    } else if (c.config.find("VEC=4") != std::string::npos) {
      ++refused;
      EXPECT_NE(c.status, ktune::Code::kOk) << c.config;
      EXPECT_NE(c.reason.find("VEC=4 is refused"), std::string::npos) << c.reason;
    }
  }
  EXPECT_EQ(refused, 2);  // VEC=4 with BLOCK 128 and 256, never compiled nor launched
  EXPECT_EQ(vendor, 1);
  EXPECT_GT(vendor_asked.load(), 0);
  EXPECT_GT(vendor_runs.load(), 0);
  EXPECT_GT(before_launch.load(), 0);
  EXPECT_GT(before_timed.load(), 0);
  ASSERT_TRUE(t->free(*out).ok());
}

TEST_F(TypedApi, BadSpecsNameTheirField) {
  auto t = open();
  ASSERT_TRUE(t);
  auto s = spec(t.get());
  s.args = nullptr;
  auto k = ktune::addTypedKernel(*t, s);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), ktune::Code::kInvalidArgument);
  EXPECT_NE(k.status().message().find("args"), std::string::npos) << k.status().toString();
  s = spec(t.get());
  s.defines = {"WIDTH"};
  k = ktune::addTypedKernel(*t, s);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("WIDTH"), std::string::npos) << k.status().toString();
  s = spec(t.get());
  s.space.push_back({"bad name", {1}});
  k = ktune::addTypedKernel(*t, s);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("bad name"), std::string::npos) << k.status().toString();
  // An empty handle is an error, not a crash.
  ktune::TypedKernel<Problem> empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_EQ(empty(Problem{}).code(), ktune::Code::kInvalidArgument);
}

}  // namespace
