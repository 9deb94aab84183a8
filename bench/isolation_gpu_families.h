// A user kernel family for the isolation GPU test and bench, registered through the public API
// identically in the test process and in the worker (tests/gpu/isolation_gpu_plugin.cc).
// y = 2 * x over n floats; MODE picks the behaviour: 0 good, 1 writes to address 0x10 (illegal
// address), 2 loops forever (a volatile load keeps the loop alive).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/autotuner.h"

namespace ktune::isogpu {

inline const char* kSource = R"(
#include "prelude.cuh"
KTUNE_KERNEL void iso_user(long long n, const float* __restrict__ x, float* __restrict__ y) {
  long long i = (long long)ktune::bid_x() * ktune::bdim_x() + ktune::tid_x();
#if MODE == 1
  if (i == 0) *(volatile float*)0x10 = 1.0f;
#elif MODE == 2
  for (;;) {
    if (*(volatile const float*)x == 12345.0f) break;  // never true: inputs are small integers
  }
#endif
  if (i < n) y[i] = 2.0f * x[i];
}
)";

struct UserProblem {
  int64_t n = 0;
  DevicePtr x = 0, y = 0;
};

inline Expected<std::shared_ptr<UserProblem>> makeUserProblem(Backend* b, int64_t n) {
  auto p = std::shared_ptr<UserProblem>(new UserProblem, [b](UserProblem* q) {
    if (q->x) (void)b->free(q->x);
    if (q->y) (void)b->free(q->y);
    delete q;
  });
  p->n = n;
  KTUNE_ASSIGN_OR_RETURN(p->x, b->alloc(size_t(n) * 4));
  KTUNE_ASSIGN_OR_RETURN(p->y, b->alloc(size_t(n) * 4));
  std::vector<float> xs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) xs[size_t(i)] = float(i % 13) - 6.f;
  KTUNE_RETURN_IF_ERROR(b->copyToDevice(p->x, xs.data(), size_t(n) * 4));
  return p;
}

inline Config cfg(int64_t block, int64_t mode) { return Config{{"BLOCK", block}, {"MODE", mode}}; }

// `bad`: include the faulting and the looping config among the good ones.
inline KernelFamily<UserProblem> userFamily(Backend* b, const std::string& name, bool bad) {
  KernelFamily<UserProblem> f;
  f.name = name;
  f.source = kSource;
  f.entry = "iso_user";
  f.configs = {cfg(128, 0), cfg(256, 0), cfg(512, 0), cfg(1024, 0)};
  if (bad) {
    f.configs.insert(f.configs.begin() + 1, cfg(256, 1));
    f.configs.insert(f.configs.begin() + 3, cfg(512, 2));
  }
  f.key = [](const UserProblem& p, KeyBuilder& k) { k.add("n", nextPow2(p.n)); };
  f.launch = [](const Config& c, const UserProblem& p, const DeviceInfo&) {
    unsigned block = unsigned(c.getInt("BLOCK"));
    return LaunchDims{{unsigned(std::max<int64_t>(1, ceilDiv(p.n, block)))}, {block}};
  };
  f.args = [](const UserProblem& p, KernelArgs& a) {
    a.add(static_cast<long long>(p.n)).add(p.x).add(p.y);
  };
  f.pre_run = [b](const UserProblem& p, StreamHandle s) {
    return b->memset8(p.y, 0xff, size_t(p.n) * 4, s);  // NaN: unwritten outputs fail
  };
  f.verify = [b](const UserProblem& p, StreamHandle) -> Expected<VerifyResult> {
    std::vector<float> x(size_t(p.n)), y(size_t(p.n));
    KTUNE_RETURN_IF_ERROR(b->copyToHost(x.data(), p.x, x.size() * 4));
    KTUNE_RETURN_IF_ERROR(b->copyToHost(y.data(), p.y, y.size() * 4));
    VerifyResult v;
    v.ok = true;
    for (size_t i = 0; i < x.size(); ++i) v.ok = v.ok && y[i] == 2.f * x[i];
    return v;
  };
  f.default_config = cfg(256, 0);
  f.args_json = [](const UserProblem& p) { return "{\"n\":" + std::to_string(p.n) + "}"; };
  f.make_problem = [b](const std::string& j) -> Expected<std::shared_ptr<UserProblem>> {
    auto js = nlohmann::json::parse(j, nullptr, false);
    if (js.is_discarded() || !js.contains("n") || !js["n"].is_number_integer())
      return Status::InvalidArgument("iso_user problem: bad args " + j);
    return makeUserProblem(b, js["n"].get<int64_t>());
  };
  return f;
}

// What the worker registers: the family with the bad configs and the all-good one (bench).
inline Status registerUserFamilies(Engine& t) {
  auto a = t.add(userFamily(&t.backend(), "iso_user_bad", true));
  if (!a.ok()) return a.status();
  auto g = t.add(userFamily(&t.backend(), "iso_user_good", false));
  return g.ok() ? Status::Ok() : g.status();
}

}  // namespace ktune::isogpu
