// Host cost of one call: CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID) per call, with
// the GPU kept from being the bottleneck. Before each batch a spin kernel (busy for --spin-us of
// device time) is launched and an event recorded behind it; the batch (--batch calls, below the
// launch queue's depth) is enqueued behind the spin, so no call waits for the device; after the
// batch the event is queried: a batch the GPU caught up with is counted ("gpu_caught_up") and
// left out of both sides of every per-round ratio. Variants are timed in --rounds rounds, each
// round in a freshly shuffled order (seeded), so no variant always follows the same one; every
// variant gets --warmup batches first. Like with like: every raw and Backend variant launches the
// same kernel of the same module with argument blocks prepared once, outside the timed region.
// Batches of 128 by default (behind a 4 ms spin): each batch starts cold (the synchronisation
// before it, the other variants between), and that start is spread over the batch; with 32 calls
// it adds roughly 5-10% to the paths with more code than a bare launch (bench/NOTES.md).
//   raw          cuLaunchKernel of the noop kernel (2 arguments), dlsym'ed from libcuda
//   raw_aa       the same again (an A/A control: its ratio to raw is the measurement's own bias)
//   raw_gpa      the same through the entry point ktune resolves (cuGetProcAddress_v2, legacy
//                stream, the ABI version ktune asks for)
//   backend      Backend::launch of the same kernel, arguments packed once
//   backend_pack Backend::launch, arguments packed per call into a reused KernelArgs (what the
//                registration API's call does before its launch)
//   registration the tuned noop family through the registration API (TypedKernelSpec<Noop>)
//   family_raw   cuLaunchKernel of that family's winner (its code object, block, arguments)
//   family_backend  Backend::launch of the same, arguments packed once
//   cxx_data     the same kernel registered from data, through the public C++ handle
//   c_api        the same through the C API (ktune_family_call)
//   raw_gemm_args  cuLaunchKernel of a noop kernel with the GEMM kernels' parameter block
//                (6 pointers, 3 int, 3 int64, 2 float, 3 tensor maps, 1 int: what a GEMM
//                winner's launch passes), on one block: the old, looser raw peer of gemm_tma
//   raw_gemm_winner  cuLaunchKernel of gemm_tma's own winner (its code object, grid, block, shared
//                memory; its parameter block with the tensor maps of each buffer set prepared
//                once), rotating like gemm_tma: the raw launch the op's target is measured against
//   gemm_tma     the GEMM op (tuned; TMA kernels only, no vendor candidates), A/B/C rotating
//                over 4 buffer sets so the pointers change every call
//   lt_run       CublasLt::run of cuBLASLt's heuristic #0 (descriptors cached), rotating
//   gemm_lt      the GEMM op (tuned; mma.sync and cuBLASLt candidates), rotating
//   rmsnorm / silu_mul  the tuned row-wise ops (bf16 4096 x 4096 / 4096 x 2 x 4096), free functions
//   rmsnorm_ops / silu_mul_ops  the same through a RowwiseOps object
// Output: RESULT hostcost <variant> <median_ns> <lo> <hi> <n>, RATIO lines (variant / raw), DIFF
// lines (GEMM op minus its raw launch, per round; target <= 2000 ns against raw_gemm_winner),
// each set twice: "hostcost" by the thread's CPU clock, "hostwall" by the wall clock of the batch,
// CLOCKS, and a table. Needs an NVIDIA GPU (skips, exit 0, otherwise). The GEMM variants are in
// bench/host_cost_gemm.h, the other variants in bench/host_cost_variants.h, the shared state in
// bench/host_cost.h.
//
//   host_cost_bench [--rounds=N] [--batch=N] [--spin-us=N] [--warmup=N] [--no-gemm]
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ops/buffers.h"
#include "bench/fair/fair_timing.h"
#include "ops/rowwise.h"
#include "bench/call_fixtures.h"
#include "bench/host_cost.h"
#include "bench/host_cost_gemm.h"
#include "bench/host_cost_variants.h"
#include "autotune/database.h"
#include "compiler/compiler.h"
#include "compiler/store/store.h"
#include "runtime/backend.h"

namespace ktune::hostcost {

const char* kRawSource = R"(
struct __align__(64) Map { unsigned long long o[16]; };
extern "C" __global__ void ktune_spin(long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while ((long long)(t - t0) < ns);
}
extern "C" __global__ void ktune_noop2(float* p, long long n) { if (n < 0) p[0] = 1.0f; }
extern "C" __global__ void ktune_noop_gemm_args(const void* a, const void* b, void* c,
    const void* bias, void* ws, unsigned* counters, int m, int n, int k, long long lda,
    long long ldb, long long ldc, float alpha, float beta, const Map ma, const Map mb,
    const Map mc, int c_tma) {
  if (m < 0 && c_tma == 7) ((float*)c)[0] = alpha + ma.o[0] + mb.o[0] + mc.o[0];
}
)";

double threadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

double wallNs() {
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count());
}

// Per-call ns of `call` over one gated batch, by the thread's CPU clock and by the wall clock;
// both -1 when a call failed or the GPU caught up.
struct BatchNs {
  double cpu = -1, wall = -1;
};
BatchNs gatedBatch(Bench& B, const std::function<Status(int)>& call, int* counter) {
  long long ns = B.spin_ns;
  void* spin_args[] = {&ns};
  if (B.drv.launch(B.spin, 1, 1, 1, 1, 1, 1, 0, nullptr, spin_args, nullptr) != 0) return {};
  if (!B.be->recordEvent(B.gate).ok()) return {};
  const double w0 = wallNs();
  const double t0 = threadCpuNs();
  Status s = Status::Ok();
  for (int i = 0; i < B.batch && s.ok(); ++i) s = call((*counter)++);
  const double t1 = threadCpuNs();
  const double w1 = wallNs();
  const bool gated = B.drv.query(B.gate.p) != 0;  // not complete: the spin still ran
  (void)B.be->synchronize();
  if (!s.ok()) {
    std::fprintf(stderr, "call failed: %s\n", s.toString().c_str());
    return {};
  }
  if (!gated) {
    ++B.caught_up;
    return {};
  }
  return {(t1 - t0) / B.batch, (w1 - w0) / B.batch};
}

// cuLaunchKernel through cuGetProcAddress_v2 with the flags and ABI version ktune's driver loader
// uses (runtime/cuda/cuda_driver.cc), so a gap between raw and Backend::launch that is only the
// entry point shows up as raw_gpa / raw.
void resolveLikeKtune(void* lib, Driver& drv) {
  using GetProcV2 = int (*)(const char*, void**, int, unsigned long long, int*);
  auto gp = reinterpret_cast<GetProcV2>(::dlsym(lib, "cuGetProcAddress_v2"));
  auto ver = reinterpret_cast<int (*)(int*)>(::dlsym(lib, "cuDriverGetVersion"));
  int v = 0;
  if (!gp || !ver || ver(&v) != 0) return;
  const int want = v > 0 && v < 13000 ? v : 13000;  // cuda_driver.h: kHeaderCudaVersion
  void* fn = nullptr;
  int query = 0;
  if (gp("cuLaunchKernel", &fn, want, 1 /* legacy stream */, &query) == 0 && query == 0 && fn)
    drv.launch_gpa = reinterpret_cast<decltype(drv.launch_gpa)>(fn);
}

Status setup(Bench& B) {
  KTUNE_ASSIGN_OR_RETURN(auto be, openCudaBackend());
  B.be = std::move(be);
  KTUNE_RETURN_IF_ERROR(B.be->setDevice(0));
  KTUNE_ASSIGN_OR_RETURN(auto devs, B.be->devices());
  B.dev = devs.at(0);
  KTUNE_ASSIGN_OR_RETURN(B.cc, compilerForArch(B.dev.arch));
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return Status::Unavailable("libcuda.so.1 not loaded");
  B.drv.load = reinterpret_cast<decltype(B.drv.load)>(::dlsym(lib, "cuModuleLoadData"));
  B.drv.get = reinterpret_cast<decltype(B.drv.get)>(::dlsym(lib, "cuModuleGetFunction"));
  B.drv.launch = reinterpret_cast<decltype(B.drv.launch)>(::dlsym(lib, "cuLaunchKernel"));
  B.drv.query = reinterpret_cast<decltype(B.drv.query)>(::dlsym(lib, "cuEventQuery"));
  B.drv.set_attr = reinterpret_cast<decltype(B.drv.set_attr)>(::dlsym(lib, "cuFuncSetAttribute"));
  if (!B.drv.load || !B.drv.get || !B.drv.launch || !B.drv.query || !B.drv.set_attr)
    return Status::Unavailable("driver symbols missing");
  resolveLikeKtune(lib, B.drv);
  CompileRequest r;
  r.source = kRawSource;
  r.source_name = "host_cost.cu";
  r.entry = "ktune_spin";
  r.arch = B.dev.arch;
  KTUNE_ASSIGN_OR_RETURN(CodeObject co, B.cc->compile(r));
  B.image = co.binary;
  void* mod = nullptr;
  if (B.drv.load(&mod, co.binary.data()) != 0 || B.drv.get(&B.spin, mod, "ktune_spin") != 0 ||
      B.drv.get(&B.noop2, mod, "ktune_noop2") != 0 ||
      B.drv.get(&B.gemm_args, mod, "ktune_noop_gemm_args") != 0)
    return Status::LaunchError("cuModuleLoadData/cuModuleGetFunction failed");
  KTUNE_ASSIGN_OR_RETURN(B.gate, B.be->createEvent());
  return Status::Ok();
}

int indexOf(const std::vector<Variant>& v, const std::string& name) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].name == name) return int(i);
  return -1;
}

// `rounds` rounds of every variant, each round in its own shuffled order (seeded: runs repeat), so
// no variant always runs right after the same other one. cpu[v][r] / wall[v][r] are variant v's
// per-call ns in round r, -1 when that batch was left out: rounds stay aligned across variants,
// so per-round ratios and differences pair batches of the same round.
struct Rounds {
  std::vector<std::vector<double>> cpu, wall;
};
Rounds timeRounds(Bench& B, const std::vector<Variant>& v, int rounds, int warmup, int* counter) {
  for (int w = 0; w < warmup; ++w)
    for (const Variant& x : v) (void)gatedBatch(B, x.call, counter);
  B.caught_up = 0;
  Rounds t;
  t.cpu.assign(v.size(), std::vector<double>(size_t(rounds), -1.0));
  t.wall = t.cpu;
  std::mt19937 rng(12345);
  std::vector<size_t> order(v.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      const BatchNs b = gatedBatch(B, v[i].call, counter);
      t.cpu[i][size_t(r)] = b.cpu;
      t.wall[i][size_t(r)] = b.wall;
    }
  }
  return t;
}

std::vector<double> valid(const std::vector<double>& x) {
  std::vector<double> out;
  for (double d : x)
    if (d >= 0) out.push_back(d);
  return out;
}

// `bench` names the clock in the result lines: "hostcost" (thread CPU time), "hostwall" (wall).
void report(const char* bench, const std::vector<Variant>& v, const std::vector<std::vector<double>>& t) {
  const int raw = indexOf(v, "raw");
  std::printf("\n%-14s %26s %22s  %s\n", "variant", std::strcmp(bench, "hostcost") == 0
              ? "CPU ns/call median [int]" : "wall ns/call median [int]", "x raw", "what");
  for (size_t i = 0; i < v.size(); ++i) {
    const fair::Interval iv = fair::medianInterval(valid(t[i]));
    std::printf("RESULT %s %s %.1f %.1f %.1f %d\n", bench, v[i].name.c_str(), iv.median, iv.lo, iv.hi, iv.n);
    fair::Interval r;
    if (raw >= 0) {
      r = fair::ratioInterval(t[i], t[size_t(raw)]);
      std::printf("RATIO %s %s %s/raw %.3f %.3f %.3f %d\n", bench, v[i].name.c_str(), v[i].name.c_str(),
                  r.median, r.lo, r.hi, r.n);
    }
    std::printf("%-14s %10.0f [%6.0f,%6.0f] %10.3f [%.3f,%.3f]  %s\n", v[i].name.c_str(), iv.median,
                iv.lo, iv.hi, r.median, r.lo, r.hi, v[i].note.c_str());
  }
  // GEMM op minus the raw launch of its winner's kind, per round (ns).
  for (auto [op, base] : {std::pair<const char*, const char*>{"gemm_tma", "raw_gemm_winner"},
                          {"gemm_tma", "raw_gemm_args"}, {"gemm_lt", "lt_run"}}) {
    const int a = indexOf(v, op), b = indexOf(v, base);
    if (a < 0 || b < 0) continue;
    std::vector<double> d;
    for (size_t i = 0; i < std::min(t[size_t(a)].size(), t[size_t(b)].size()); ++i)
      if (t[size_t(a)][i] >= 0 && t[size_t(b)][i] >= 0) d.push_back(t[size_t(a)][i] - t[size_t(b)][i]);
    const fair::Interval iv = fair::medianInterval(d);
    std::printf("DIFF %s %s-%s %.1f %.1f %.1f %d   (target <= 2000 ns)\n", bench, op, base, iv.median,
                iv.lo, iv.hi, iv.n);
  }
}

}  // namespace ktune::hostcost

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a run cut by a timeout keeps its lines
  using namespace ktune;
  using namespace ktune::hostcost;
  Bench B;
  int rounds = 30, warmup = 3;
  bool gemm = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--rounds=", 0) == 0) rounds = std::max(3, std::atoi(a.c_str() + 9));
    else if (a.rfind("--batch=", 0) == 0) B.batch = std::clamp(std::atoi(a.c_str() + 8), 1, 512);
    else if (a.rfind("--spin-us=", 0) == 0) B.spin_ns = 1000LL * std::max(10, std::atoi(a.c_str() + 10));
    else if (a.rfind("--warmup=", 0) == 0) warmup = std::max(0, std::atoi(a.c_str() + 9));
    else if (a == "--no-gemm") gemm = false;
  }
  if (Status s = setup(B); !s.ok()) {
    std::fprintf(stderr, "host_cost_bench: skipped: %s\n", s.toString().c_str());
    return 0;
  }
  std::vector<Variant> v;
  if (Status s = addLaunchVariants(B, v); !s.ok()) {
    std::fprintf(stderr, "host_cost_bench: %s\n", s.toString().c_str());
    return 1;
  }
  if (gemm) addGemmVariants(B, v);
  addRowwiseVariants(B, v);
  int counter = 0;
  const auto before = fair::readGpuClocks(0);
  const auto t = timeRounds(B, v, rounds, warmup, &counter);
  const auto after = fair::readGpuClocks(0);
  std::printf("host_cost_bench on %s: %d rounds (shuffled order) after %d warm-up batches, batch %d"
              " behind a %.1f ms spin, thread CPU time; %d batches left out (GPU caught up)\n",
              B.dev.name.c_str(), rounds, warmup, B.batch, B.spin_ns / 1e6, B.caught_up);
  report("hostcost", v, t.cpu);
  report("hostwall", v, t.wall);
  std::printf("CLOCKS hostcost all %s\n", fair::clocksLine(before, after).c_str());
  return 0;
}
