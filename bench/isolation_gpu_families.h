// A user kernel family for the isolation GPU test and bench, described by the public spec
// (ktune/typed.hpp) and registered identically in the test process and in the worker
// (tests/gpu/isolation_gpu_plugin.cc: a user's plugin).
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

// `bad`: the faulting (BLOCK=256,MODE=1) and the looping (BLOCK=512,MODE=2) config beside the
// good ones (MODE=0).
inline TypedKernelSpec<UserProblem> userFamily(Backend* b, const std::string& name, bool bad) {
  TypedKernelSpec<UserProblem> f;
  f.name = name;
  f.source = kSource;
  f.entry = "iso_user";
  f.space = {{"BLOCK", {128, 256, 512, 1024}}, {"MODE", {0, 1, 2}}};
  f.constraint = [bad](const Knobs& c) {
    return c["MODE"] == 0 || (bad && ((c["BLOCK"] == 256 && c["MODE"] == 1) ||
                                      (c["BLOCK"] == 512 && c["MODE"] == 2)));
  };
  f.default_config = {{"BLOCK", 256}, {"MODE", 0}};
  f.key = [](const UserProblem& p, KeyFields& k) { k.add("n", pow2Ceil(p.n)); };
  f.launch = [](const Knobs& c, const UserProblem& p, const DeviceFacts&) {
    return Launch::linear(cdiv(p.n, c["BLOCK"]), c["BLOCK"]);
  };
  f.args = [](const UserProblem& p, ArgPack& a) {
    a.add(static_cast<long long>(p.n)).add(p.x).add(p.y);
  };
  f.before_run = [b](const UserProblem& p, StreamHandle s) {
    return b->memset8(p.y, 0xff, size_t(p.n) * 4, s);  // NaN: unwritten outputs fail
  };
  f.verify = [b](const UserProblem& p, StreamHandle) -> Status {
    std::vector<float> x(size_t(p.n)), y(size_t(p.n));
    KTUNE_RETURN_IF_ERROR(b->copyToHost(x.data(), p.x, x.size() * 4));
    KTUNE_RETURN_IF_ERROR(b->copyToHost(y.data(), p.y, y.size() * 4));
    for (size_t i = 0; i < x.size(); ++i)
      if (y[i] != 2.f * x[i]) return Status::WrongResult("y[" + std::to_string(i) + "] != 2 x");
    return Status::Ok();
  };
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
