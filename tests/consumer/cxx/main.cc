// An outside C++ program on the installed package: registers a kernel from data, tunes it on the
// simulated backend (a host function stands in for the kernel; its simulated cost makes
// BLOCK=256,VEC=2 the fastest) and checks the result, the winner and the report.
#include <cstdio>
#include <cstring>
#include <vector>

#include <ktune/ktune.hpp>

namespace {

int failed(const char* what, const ktune::Status& s) {
  std::fprintf(stderr, "FAIL %s: %s\n", what, s.toString().c_str());
  return 1;
}

ktune::Status scale(const ktune::SimLaunchView& l) {
  int64_t n;
  ktune::DevicePtr x, y;
  std::memcpy(&n, l.arg(0), sizeof n);
  std::memcpy(&x, l.arg(1), sizeof x);
  std::memcpy(&y, l.arg(2), sizeof y);
  auto* xs = static_cast<const float*>(l.hostPtr(x));
  auto* ys = static_cast<float*>(l.hostPtr(y));
  int64_t covered = int64_t(l.grid(0)) * l.block(0) * l.knob("VEC", 1);
  for (int64_t i = 0; i < n && i < covered; ++i) ys[i] = 3.0f * xs[i];
  return ktune::Status::Ok();
}

double cost(const ktune::SimLaunchView& l) {
  return 0.01 + (l.knob("BLOCK") == 256 ? 0 : 0.002) + (l.knob("VEC") == 2 ? 0 : 0.001);
}

}  // namespace

int main() {
  auto opts = ktune::TunerOptions::fromEnv();
  if (!opts.ok()) return failed("fromEnv", opts.status());
  opts->backend = "sim";
  auto tuner = ktune::Autotuner::create(*opts);
  if (!tuner.ok()) return failed("create", tuner.status());
  ktune::Autotuner& t = **tuner;
  if (auto s = t.registerSimKernel("consumer_scale", {scale, cost}); !s.ok())
    return failed("registerSimKernel", s);

  ktune::KernelSpec spec;
  spec.name = "consumer_scale";
  spec.source = "KTUNE_KERNEL void consumer_scale(long long n, const float* x, float* y) {}";
  spec.entry = "consumer_scale";
  spec.space_json = R"({"params": {"BLOCK": [128, 256, 512], "VEC": [1, 2, 4]},
                        "constraints": ["BLOCK * VEC <= 1024"]})";
  spec.args = {{"n", ktune::ArgType::kI64}, {"x", ktune::ArgType::kPtr}, {"y", ktune::ArgType::kPtr}};
  spec.key = {"pow2(n)"};
  spec.grid = {"cdiv(n, BLOCK * VEC)"};
  spec.block = {"BLOCK"};
  auto kernel = t.addKernel(spec);
  if (!kernel.ok()) return failed("addKernel", kernel.status());

  const int64_t n = 5000;
  std::vector<float> hx(n), hy(n, -1.0f);
  for (int64_t i = 0; i < n; ++i) hx[i] = float(i % 11) - 5.0f;
  auto x = t.alloc(n * 4), y = t.alloc(n * 4);
  if (!x.ok() || !y.ok()) return failed("alloc", x.ok() ? y.status() : x.status());
  if (auto s = t.copyToDevice(*x, hx.data(), n * 4); !s.ok()) return failed("copy", s);
  ktune::Value args[] = {ktune::Value::i64(n), ktune::Value::ptr(*x), ktune::Value::ptr(*y)};
  if (auto s = (*kernel)(args, 3); !s.ok()) return failed("call", s);
  if (auto s = t.copyToHost(hy.data(), *y, n * 4); !s.ok()) return failed("copy back", s);
  for (int64_t i = 0; i < n; ++i) {
    if (hy[i] != 3.0f * hx[i]) {
      std::fprintf(stderr, "FAIL: y[%lld] = %g\n", static_cast<long long>(i), hy[i]);
      return 1;
    }
  }
  auto key = kernel->key(args, 3);
  if (!key.ok()) return failed("key", key.status());
  auto report = t.report("consumer_scale", *key);
  if (!report.ok()) return failed("report", report.status());
  if (report->winner != "BLOCK=256,VEC=2" || report->candidates.size() < 7) {
    std::fprintf(stderr, "FAIL: winner %s of %zu candidates\n", report->winner.c_str(),
                 report->candidates.size());
    return 1;
  }
  // A spec with a typo in its launch rule is refused with the column.
  spec.name = "consumer_bad";
  spec.block = {"BLOCK +"};
  auto bad = t.addKernel(spec);
  if (bad.ok() || bad.status().code() != ktune::Code::kInvalidArgument)
    return failed("bad spec accepted", bad.status());
  std::printf("ktune %s: %s won among %zu candidates (key %s); bad spec: %s\n", ktune::version(),
              report->winner.c_str(), report->candidates.size(), key->c_str(),
              bad.status().message().c_str());
  return 0;
}
