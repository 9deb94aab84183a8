// What a cold tuning's compiles cost, and whether a faster compile ranks GEMM configs the same.
// Issue 34 (bench/NOTES.md, "cold compiles in one process or many"). Configs come from a file, one
// per line as a tuning report's candidates write them ("KIND=tma,BLOCK_M=128,..."); each is
// compiled as the tuner compiles it (the kind's embedded source, gemm::defines for the shape, no
// store).
//
//   compile_tier_bench --configs=FILE [--shape=MxNxK] [--layout=NT] [--arch=sm_90a] MODE
//   MODE:
//     --threads=N   every config on N threads of this process at once
//     --one=I       config I alone (a device script starts N such processes at once; --at=EPOCH_MS
//                   makes each wait until then, so they start together)
//     --seq         each config alone, one after the other
//     --rank        GPU: each config built twice, with the tuner's options and with --fast's extra
//                   options, timed interleaved (L2 flushed before each launch), outputs compared
//   --workers=PATH  with --threads: the compiles go through compile worker processes (PATH:
//                   ktune-worker; the tuner's KTUNE_COMPILE_PROCESSES=1 path), started 1.5 s
//                   before the timed compiles
//   --fast=OPT;OPT  extra NVRTC options: the fast tier of --rank, and added to the compile modes
//   --rounds=N      --rank's interleaved rounds (default 15)
// Lines: JOB <mode> <index> <wall ms> <compiler ms> <start ms> <end ms> (from the mode's start;
// --one: from --at), WALL <mode> <jobs> <ms>, RANK ... per config and RANKSUM per shape.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "autotune/compile_pool.h"
#include "autotune/compile_workers.h"
#include "base/dtype.h"
#include "bench/gemm_bench_state.h"
#include "bench/gemm_bench_timing.h"
#include "ops/gemm_configs.h"

namespace ktune {
namespace {

using Clock = std::chrono::steady_clock;
using gemm_bench::g;

struct Args {
  std::string configs, arch, layout = "NT", workers;
  int64_t m = 4096, n = 4096, k = 4096;
  int threads = 0, one = -1, rounds = 15;
  bool seq = false, rank = false;
  double at_ms = 0;
  std::vector<std::string> fast;
};

double epochMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.size()) {
    const size_t q = std::min(s.find(sep, p), s.size());
    if (q > p) out.push_back(s.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

bool parseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto val = [&](const char* name, std::string* out) {
      const std::string p = std::string(name) + "=";
      if (s.rfind(p, 0) != 0) return false;
      *out = s.substr(p.size());
      return true;
    };
    std::string v;
    if (val("--configs", &a->configs) || val("--arch", &a->arch) || val("--layout", &a->layout) ||
        val("--workers", &a->workers)) {
    } else if (val("--shape", &v)) {
      if (std::sscanf(v.c_str(), "%ldx%ldx%ld", &a->m, &a->n, &a->k) != 3) return false;
    } else if (val("--threads", &v)) {
      a->threads = std::atoi(v.c_str());
    } else if (val("--one", &v)) {
      a->one = std::atoi(v.c_str());
    } else if (val("--at", &v)) {
      a->at_ms = std::atof(v.c_str());
    } else if (val("--rounds", &v)) {
      a->rounds = std::max(3, std::atoi(v.c_str()));
    } else if (val("--fast", &v)) {
      a->fast = split(v, ';');
    } else if (s == "--seq") {
      a->seq = true;
    } else if (s == "--rank") {
      a->rank = true;
    } else {
      std::fprintf(stderr, "compile_tier_bench: unknown argument %s\n", s.c_str());
      return false;
    }
  }
  return !a->configs.empty();
}

struct Item {
  std::string text;
  gemm::KernelKind kind{};
  Config knobs;
};

std::vector<Item> readConfigs(const std::string& path) {
  std::vector<Item> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto c = Config::parse(line);
    auto kind = c.ok() ? gemm_ops::kindOf(*c) : Expected<gemm::KernelKind>(c.status());
    if (!kind.ok()) {
      std::fprintf(stderr, "compile_tier_bench: skipped '%s': %s\n", line.c_str(),
                   kind.status().toString().c_str());
      continue;
    }
    out.push_back({line, *kind, gemm_ops::knobsOf(*c)});
  }
  return out;
}

gemm::GemmShape shapeOf(const Args& a) {
  gemm::Layout l = gemm::Layout::kNT;
  for (gemm::Layout x : {gemm::Layout::kNN, gemm::Layout::kNT, gemm::Layout::kTN, gemm::Layout::kTT})
    if (a.layout == gemm::layoutName(x)) l = x;
  gemm::GemmShape s = gemm::denseShape(l, gemm::ElemType::kBF16, gemm::ElemType::kBF16, a.m, a.n, a.k);
  s.aligned16 = true;  // the tuner's buffers are
  return s;
}

CompileRequest requestOf(const Item& it, const gemm::GemmShape& s, const std::string& arch,
                         const std::vector<std::string>& extra) {
  CompileRequest req;
  req.source = std::string(gemm::kernelSource(it.kind));
  req.source_name = "gemm_family.cu";
  req.entry = gemm::entryName(it.kind);
  req.defines = gemm::defines(it.kind, it.knobs, s);
  req.arch = arch;
  req.options = extra;
  return req;
}

// The tuner's requests with extra options (the fast tier): the runner's compiles go through this.
class ExtraOptionsCompiler final : public Compiler {
 public:
  ExtraOptionsCompiler(Compiler& inner, std::vector<std::string> extra)
      : inner_(inner), extra_(std::move(extra)) {}
  std::string name() const override { return inner_.name(); }
  std::string version() const override { return inner_.version(); }
  bool supportsArch(const std::string& arch) const override { return inner_.supportsArch(arch); }
  Expected<CodeObject> compile(const CompileRequest& req) override {
    CompileRequest r = req;
    r.options.insert(r.options.end(), extra_.begin(), extra_.end());
    return inner_.compile(r);
  }

 private:
  Compiler& inner_;
  std::vector<std::string> extra_;
};

// A warm-up compile (NVRTC's own start-up is not a config's cost: a worker pays it once).
void warmUp(Compiler& cc, const std::string& arch) {
  CompileRequest req;
  req.source = "extern \"C\" __global__ void warm(float* p) { p[threadIdx.x] = 1.0f; }";
  req.entry = "warm";
  req.arch = arch;
  const auto t0 = Clock::now();
  auto r = cc.compile(req);
  std::printf("WARMUP %.1f %s\n", std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
              r.ok() ? "ok" : r.status().toString().c_str());
}

int compileModes(const Args& a, const std::vector<Item>& items, Compiler& in_process,
                 const std::string& arch) {
  const gemm::GemmShape s = shapeOf(a);
  const bool via_workers = !a.workers.empty() && a.threads > 0;
  const char* mode = a.one >= 0 ? "proc" : a.seq ? "seq" : via_workers ? "worker" : "thread";
  std::unique_ptr<ProcessCompiler> workers;
  if (via_workers) {
    workers = std::make_unique<ProcessCompiler>(
        std::shared_ptr<Compiler>(&in_process, [](Compiler*) {}), a.workers, arch, a.threads);
    // The workers start with requests that find every worker busy: one small compile per thread
    // at once starts them all, their start-up outside the timed compiles.
    std::vector<std::thread> warm;
    for (int i = 0; i < a.threads; ++i) warm.emplace_back([&] { warmUp(*workers, arch); });
    for (auto& t : warm) t.join();
  }
  Compiler& cc = workers ? static_cast<Compiler&>(*workers) : in_process;
  if (!workers) warmUp(cc, arch);
  std::vector<size_t> todo;
  if (a.one >= 0) {
    if (size_t(a.one) >= items.size()) return 2;
    todo.push_back(size_t(a.one));
    while (a.at_ms > 0 && epochMs() < a.at_ms) std::this_thread::sleep_for(std::chrono::microseconds(200));
  } else {
    for (size_t i = 0; i < items.size(); ++i) todo.push_back(i);
  }
  const auto t0 = Clock::now();
  const double base = a.one >= 0 && a.at_ms > 0 ? a.at_ms : epochMs();
  std::vector<std::string> lines(todo.size());
  auto job = [&](size_t j) {
    const size_t i = todo[j];
    const double start = epochMs() - base;
    const auto c0 = Clock::now();
    auto co = cc.compile(requestOf(items[i], s, arch, a.fast));
    const double wall = std::chrono::duration<double, std::milli>(Clock::now() - c0).count();
    char buf[512];
    std::snprintf(buf, sizeof buf, "JOB %s %zu %.1f %.1f %.1f %.1f %s%s\n", mode, i, wall,
                  co.ok() ? co->compile_ms : -1.0, start, epochMs() - base,
                  gemm::kernelKindName(items[i].kind),
                  co.ok() ? "" : (" FAILED " + co.status().toString().substr(0, 200)).c_str());
    lines[j] = buf;
  };
  const int threads = a.one >= 0 || a.seq ? 1 : std::max(1, a.threads);
  CompilePool::parallelFor(todo.size(), threads, job);
  for (auto& l : lines) std::fputs(l.c_str(), stdout);
  std::printf("WALL %s %zu %.1f threads=%d\n", mode, todo.size(),
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), threads);
  if (workers)
    std::printf("WORKERS started %d compiled %d in_process %d %s\n", workers->stats().started,
                workers->stats().compiled, workers->stats().in_process,
                workers->stats().last_failure.c_str());
  return 0;
}

// max |fast - full| / max |full| over C after one launch of each build on the same inputs.
double outputDiff(GemmRunner& full, GemmRunner& fast, const Item& it, const gemm::GemmShape& s,
                  const GemmBuffers& buf) {
  const size_t count = size_t(s.m) * size_t(s.n);
  std::vector<uint16_t> x(count), y(count);
  if (!full.launch(it.kind, it.knobs, s, buf).ok() || !g->be->synchronize().ok() ||
      !g->be->copyToHost(x.data(), buf.c, count * 2).ok())
    return -1;
  if (!fast.launch(it.kind, it.knobs, s, buf).ok() || !g->be->synchronize().ok() ||
      !g->be->copyToHost(y.data(), buf.c, count * 2).ok())
    return -1;
  double mx = 0, md = 0;
  for (size_t i = 0; i < count; ++i) {
    const double a = bf16ToFloat(x[i]), b = bf16ToFloat(y[i]);
    mx = std::max(mx, std::fabs(a));
    md = std::max(md, std::fabs(a - b));
  }
  return mx > 0 ? md / mx : md;
}

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size(); ++i) r[idx[i]] = double(i);
  return r;
}

// Spearman's rho, and the full-build time of the best among the fast build's top k over the
// full build's best (the regret of finishing k finalists picked by the fast tier), k = 1..4.
void rankSummary(const std::string& shape, const std::vector<double>& full,
                 const std::vector<double>& fast) {
  const size_t n = full.size();
  if (n < 2) return;
  const auto rf = ranks(full), rs = ranks(fast);
  double d2 = 0;
  for (size_t i = 0; i < n; ++i) d2 += (rf[i] - rs[i]) * (rf[i] - rs[i]);
  const double rho = 1 - 6 * d2 / (double(n) * (double(n) * double(n) - 1));
  std::vector<size_t> by_fast(n);
  for (size_t i = 0; i < n; ++i) by_fast[i] = i;
  std::sort(by_fast.begin(), by_fast.end(), [&](size_t a, size_t b) { return fast[a] < fast[b]; });
  const double best = *std::min_element(full.begin(), full.end());
  std::printf("RANKSUM %s n=%zu spearman=%.3f", shape.c_str(), n, rho);
  for (size_t k = 1; k <= 4 && k <= n; ++k) {
    double b = full[by_fast[0]];
    for (size_t j = 0; j < k; ++j) b = std::min(b, full[by_fast[j]]);
    std::printf(" regret_top%zu=%.4f", k, b / best);
  }
  std::printf("\n");
}

int rankMode(const Args& a, const std::vector<Item>& items) {
  if (!gemm_bench::setup()) return 0;
  gemm::GemmShape s = shapeOf(a);
  const std::string shape = std::to_string(a.m) + "x" + std::to_string(a.n) + "x" + std::to_string(a.k);
  ExtraOptionsCompiler fast_cc(*g->cc, a.fast);
  GemmRunner fast(*g->be, fast_cc, g->dev);
  GemmRunner& full = *g->runner;
  GemmBuffers buf;
  auto A = g->be->alloc(size_t(s.m * s.k * 2)), B = g->be->alloc(size_t(s.n * s.k * 2)),
       C = g->be->alloc(size_t(s.m * s.n * 2));
  if (!A.ok() || !B.ok() || !C.ok()) return 1;
  buf.a = *A, buf.b = *B, buf.c = *C;
  (void)gemm_bench::fillRandom(buf.a, dtypeOf(gemm::ElemType::kBF16), s.m * s.k, 1);
  (void)gemm_bench::fillRandom(buf.b, dtypeOf(gemm::ElemType::kBF16), s.n * s.k, 2);
  s = withAlignment(s, buf);
  const size_t n = items.size();
  std::vector<double> cms(2 * n, -1);
  const auto t0 = Clock::now();
  CompilePool::parallelFor(2 * n, CompilePool::threadsFor(2 * n, 0, false), [&](size_t j) {
    GemmRunner& r = j < n ? full : fast;
    auto co = r.compile(items[j % n].kind, items[j % n].knobs, s);
    if (co.ok()) cms[j] = (*co)->compile_ms;
  });
  std::printf("RANKCOMPILE %s %zu builds %.1f ms\n", shape.c_str(), 2 * n,
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  std::vector<std::function<Status(int)>> fns;
  for (size_t j = 0; j < 2 * n; ++j) {
    GemmRunner* r = j < n ? &full : &fast;
    const Item* it = &items[j % n];
    fns.push_back([r, it, s, buf](int) { return r->launch(it->kind, it->knobs, s, buf); });
  }
  for (auto& f : fns)
    for (int i = 0; i < 3; ++i) (void)f(i);
  int counter = 0;
  auto samples = fair::interleave(int(fns.size()), a.rounds, [&](int v) {
    return gemm_bench::sampleUs(fns[size_t(v)], ++counter, true);
  });
  std::vector<double> tf, ts;
  for (size_t i = 0; i < n; ++i) {
    const auto x = fair::medianInterval(samples[i]), y = fair::medianInterval(samples[n + i]);
    const double diff = outputDiff(full, fast, items[i], s, buf);
    std::printf("RANK %s %zu full %.2f fast %.2f ratio %.4f compile %.0f %.0f diff %.2e %s\n",
                shape.c_str(), i, x.median, y.median, x.median > 0 ? y.median / x.median : 0,
                cms[i], cms[n + i], diff, items[i].text.c_str());
    if (x.median > 0 && y.median > 0) tf.push_back(x.median), ts.push_back(y.median);
  }
  rankSummary(shape, tf, ts);
  return 0;
}

}  // namespace
}  // namespace ktune

int main(int argc, char** argv) {
  using namespace ktune;
  Args a;
  if (!parseArgs(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: compile_tier_bench --configs=FILE [--shape=MxNxK] [--layout=NT] "
                 "[--arch=sm_90a] [--fast=OPT;OPT] --threads=N|--one=I [--at=EPOCH_MS]|--seq|--rank\n");
    return 2;
  }
  const std::vector<Item> items = readConfigs(a.configs);
  if (items.empty()) {
    std::fprintf(stderr, "compile_tier_bench: no config in %s\n", a.configs.c_str());
    return 2;
  }
  if (a.rank) return rankMode(a, items);
  const std::string arch = a.arch.empty() ? "sm_90a" : a.arch;
  auto cc = compilerForArch(arch);
  if (!cc.ok()) {
    std::fprintf(stderr, "compile_tier_bench: skipped: %s\n", cc.status().toString().c_str());
    return 0;
  }
  return compileModes(a, items, **cc, arch);
}
