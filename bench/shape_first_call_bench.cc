// Host cost of the first call of an unseen GEMM key in background tuning mode (issue 35, target:
// <= 20 us more than a tuned call), against a tuned call of the same op, both as CPU time of the
// calling thread (CLOCK_THREAD_CPUTIME_ID: the tuning thread's work is not counted, its
// competition for the CPU is). Tunes two neighbour keys first (M=64 and M=128, N = K = 1024), so
// the unseen keys (M = 65..64+N_UNSEEN) get a prediction whose function is loaded; each unseen
// key is called once. The GPU is not kept busy behind a spin kernel here (unlike host_cost_bench):
// the figures include launch back-pressure if the device falls behind, which only makes them larger.
//   shape_first_call_bench [N_UNSEEN]   (default 32; needs a GPU)
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "ops/gemm.h"
#include "runtime/backend.h"

namespace {

double threadUs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ktune;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a crash later must not eat the lines printed before
  const int unseen = argc > 1 ? std::max(1, std::atoi(argv[1])) : 32;
  auto env = TunerOptions::fromEnv();
  if (!env.ok()) return std::fprintf(stderr, "%s\n", env.status().toString().c_str()), 1;
  EngineOptions o;
  o.options = *env;
  o.options.background = true;
  auto b = openBackend(env->backend);
  if (!b.ok() || (*b)->vendor() == Vendor::kSimulated) {
    // The simulated GEMM kernels live in the CLI (tools/sim_gpu.h), which bench/ may not include.
    std::printf("SKIP: needs a GPU (%s)\n", b.ok() ? "simulated backend" : b.status().toString().c_str());
    return 0;
  }
  std::shared_ptr<Backend> backend(std::move(*b));
  auto t = Engine::create(backend, o);
  if (!t.ok()) return std::fprintf(stderr, "%s\n", t.status().toString().c_str()), 1;
  std::shared_ptr<Engine> tuner(std::move(*t));
  auto op = GemmOp::create(tuner);
  if (!op.ok()) return std::fprintf(stderr, "%s\n", op.status().toString().c_str()), 1;
  const int64_t nk = 1024;
  auto shape = [nk](int64_t m) {
    return gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16, m,
                            nk, nk);
  };
  std::vector<std::shared_ptr<GemmCall>> tuned, fresh;
  for (int64_t m : {64, 128}) {
    tuned.push_back(makeGemmProblem(*backend, tuner->device(), shape(m), 1).value());
    auto r = (*op)->tune(*tuned.back());
    if (!r.ok()) return std::fprintf(stderr, "%s\n", r.status().toString().c_str()), 1;
  }
  for (int i = 0; i < unseen; ++i)
    fresh.push_back(makeGemmProblem(*backend, tuner->device(), shape(65 + i), 1).value());
  (void)backend->synchronize();
  // Tuned calls: warm, then timed one by one like the first calls below.
  std::vector<double> hit, first;
  for (int i = 0; i < 200; ++i) (void)(**op)(*tuned[0]);
  (void)backend->synchronize();
  for (int i = 0; i < 200; ++i) {
    const double t0 = threadUs();
    (void)(**op)(*tuned[i % 2]);
    hit.push_back(threadUs() - t0);
  }
  (void)backend->synchronize();
  int predicted = 0, provisional = 0;
  std::vector<double> minus_second;  // each key's first call minus its own second call
  for (auto& p : fresh) {
    const double t0 = threadUs();
    Status st = (**op)(*p);
    const double t1 = threadUs();
    first.push_back(t1 - t0);
    if (!st.ok()) return std::fprintf(stderr, "%s\n", st.toString().c_str()), 1;
    const std::string origin = (*op)->lookup(*p).value().origin;
    predicted += origin != "memory";
    provisional += origin == "provisional";  // the loaded default ran; the resolver had not replaced it yet
    const double t2 = threadUs();
    (void)(**op)(*p);
    minus_second.push_back((t1 - t0) - (threadUs() - t2));
  }
  // What an unseen key's default costs alone: lookup() of keys never called resolves only the
  // family default (for the GEMM op with cuBLASLt: the heuristic query for the new shape).
  std::vector<double> def_us;
  for (int i = 0; i < 8; ++i) {
    auto p = makeGemmProblem(*backend, tuner->device(), shape(65 + unseen + i), 1).value();
    const double t0 = threadUs();
    auto sel = (*op)->lookup(*p);
    def_us.push_back(threadUs() - t0);
    if (!sel.ok()) return std::fprintf(stderr, "%s\n", sel.status().toString().c_str()), 1;
  }
  std::printf("RESULT shape_first_call_default_lookup_us %.2f (median of %zu unseen keys)\n",
              median(def_us), def_us.size());
  const double h = median(hit), f = median(first);
  std::printf("RESULT shape_first_call tuned_us %.2f first_unseen_us %.2f extra_us %.2f "
              "max_first_us %.2f n_unseen %d still_predicted_after %d\n",
              h, f, f - h, *std::max_element(first.begin(), first.end()), unseen, predicted);
  // Not waited for (each key tunes for seconds at the default duty cycle): the tuner's destruction
  // stops the thread after the run in progress.
  std::printf("RESULT shape_first_call_minus_second_us median %.2f (each unseen key's first call "
              "minus its second call); %d of %d first calls ran the provisional default\n",
              median(minus_second), provisional, unseen);
  std::printf("background tuned so far %llu keys\n", (unsigned long long)tuner->backgroundTuned());
  return 0;
}
