// The family both sides register: the tuner (host.cc) and the worker's plugin (plugin.cc). On the
// simulated backend each side registers its own host function for the kernel; their simulated
// costs disagree on purpose (the worker's favours VEC=1, the tuner's VEC=4), so the winner says
// which process timed the candidates.
#pragma once

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <ktune/ktune.hpp>

struct Saxpy {
  long long n;
  ktune::DevicePtr x, y, z;
  float a;
};

inline ktune::SimKernelFns saxpySim(bool in_worker) {
  ktune::SimKernelFns fns;
  fns.run = [](const ktune::SimLaunchView& l) {
    long long n;
    float a;
    ktune::DevicePtr p[3];
    std::memcpy(&n, l.arg(0), sizeof n);
    for (int i = 0; i < 3; ++i) std::memcpy(&p[i], l.arg(1 + i), sizeof p[i]);
    std::memcpy(&a, l.arg(4), sizeof a);
    auto* x = static_cast<const float*>(l.hostPtr(p[0]));
    auto* y = static_cast<const float*>(l.hostPtr(p[1]));
    auto* z = static_cast<float*>(l.hostPtr(p[2]));
    if (!x || !y || !z) return ktune::Status::InvalidArgument("saxpy: unknown buffer");
    for (long long i = 0; i < n; ++i) z[i] = a * x[i] + y[i];
    return ktune::Status::Ok();
  };
  const double best_vec = in_worker ? 1.0 : 4.0;
  fns.cost = [best_vec](const ktune::SimLaunchView& l) {
    return 0.01 + std::fabs(static_cast<double>(l.knob("VEC")) - best_vec) * 1e-3;
  };
  return fns;
}

// The problem with its own buffers on `tuner` (freed with the problem): what make_problem builds
// in the worker from args_json.
inline ktune::Expected<std::shared_ptr<Saxpy>> makeSaxpy(ktune::Autotuner* tuner, long long n) {
  auto p = std::shared_ptr<Saxpy>(new Saxpy{n, 0, 0, 0, 2.f}, [tuner](Saxpy* s) {
    for (ktune::DevicePtr d : {s->x, s->y, s->z})
      if (d) (void)tuner->free(d);
    delete s;
  });
  std::vector<float> host(static_cast<size_t>(n));
  for (long long i = 0; i < n; ++i) host[static_cast<size_t>(i)] = static_cast<float>(i % 7);
  for (ktune::DevicePtr* d : {&p->x, &p->y, &p->z}) {
    auto a = tuner->alloc(host.size() * sizeof(float));
    if (!a.ok()) return a.status();
    *d = *a;
    ktune::Status st = tuner->copyToDevice(*d, host.data(), host.size() * sizeof(float));
    if (!st.ok()) return st;
  }
  return p;
}

inline ktune::TypedKernelSpec<Saxpy> saxpySpec(ktune::Autotuner* tuner) {
  ktune::TypedKernelSpec<Saxpy> s;
  s.name = "plugin_saxpy";
  s.source = R"(#include "prelude.cuh"
KTUNE_KERNEL void plugin_saxpy(long long n, const float* x, const float* y, float* z, float a) {
  long long i = ((long long)ktune::bid_x() * ktune::bdim_x() + ktune::tid_x()) * VEC;
  for (int k = 0; k < VEC; ++k)
    if (i + k < n) z[i + k] = a * x[i + k] + y[i + k];
})";
  s.entry = "plugin_saxpy";
  s.space = {{"BLOCK", {128, 256}}, {"VEC", {1, 2, 4}}};
  s.key = [](const Saxpy& p, ktune::KeyFields& k) { k.add("n", ktune::pow2Ceil(p.n)); };
  s.launch = [](const ktune::Knobs& c, const Saxpy& p, const ktune::DeviceFacts&) {
    return ktune::Launch::linear(ktune::cdiv(p.n, c["BLOCK"] * c["VEC"]), c["BLOCK"]);
  };
  s.args = [](const Saxpy& p, ktune::ArgPack& a) { a.add(p.n).add(p.x).add(p.y).add(p.z).add(p.a); };
  s.no_verify = true;
  // What the worker needs to rebuild the problem: its size; the buffers are the worker's own.
  s.args_json = [](const Saxpy& p) { return "{\"n\":" + std::to_string(p.n) + "}"; };
  s.make_problem = [tuner](const std::string& j) -> ktune::Expected<std::shared_ptr<Saxpy>> {
    long long n = 0;
    if (std::sscanf(j.c_str(), "{\"n\":%lld}", &n) != 1 || n <= 0)
      return ktune::Status::InvalidArgument("plugin_saxpy: bad args '" + j + "'");
    return makeSaxpy(tuner, n);
  };
  return s;
}
