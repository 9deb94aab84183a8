// Busy-stream slowdown while a key tunes in the background (issue 35): one stream runs tuned GEMMs
// back to back (batches of calls, each batch timed by wall clock after a synchronise), first alone,
// then while an unseen key is tuned in the background (its first call returns at once and queues
// it; on a GPU the candidates run in the isolation worker, another process on the same GPU), then
// alone again. The loss is 1 - (GEMMs per second while tuning) / (GEMMs per second alone, the mean
// of the runs before and after). Run once per duty cycle (KTUNE_BACKGROUND_DUTY, one tuner each,
// one cache: the foreground key is tuned once and read from the database after that).
//   shape_busy_stream_bench [--fg MxNxK] [--bg MxNxK,...] [--duty D,...] [--batch-ms 20]
//                           [--alone-s 1.5] [--max-s 60]
// Defaults: fg 4096x4096x4096, bg 777x4096x4096 then 555x4096x4096, duty 1 then 0.25 (bf16 NT).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "ops/gemm.h"
#include "runtime/backend.h"

namespace ktune {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int64_t fg[3] = {4096, 4096, 4096};
  std::vector<std::vector<int64_t>> bg{{777, 4096, 4096}, {555, 4096, 4096}};
  std::vector<double> duty{1.0, 0.25};
  double batch_ms = 20, alone_s = 1.5, max_s = 60;
};

std::vector<std::string> split(const std::string& s, char c) {
  std::vector<std::string> out;
  for (size_t at = 0; at <= s.size();) {
    const size_t end = std::min(s.find(c, at), s.size());
    out.push_back(s.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

bool parseMnk(const std::string& s, int64_t* out) {
  auto p = split(s, 'x');
  if (p.size() != 3) return false;
  for (int i = 0; i < 3; ++i) out[i] = std::atoll(p[size_t(i)].c_str());
  return out[0] > 0 && out[1] > 0 && out[2] > 0;
}

bool parseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i], v = argv[i + 1];
    if (f == "--fg") {
      if (!parseMnk(v, a->fg)) return false;
    } else if (f == "--bg") {
      a->bg.clear();
      for (const auto& one : split(v, ',')) {
        std::vector<int64_t> m(3);
        if (!parseMnk(one, m.data())) return false;
        a->bg.push_back(m);
      }
    } else if (f == "--duty") {
      a->duty.clear();
      for (const auto& one : split(v, ',')) a->duty.push_back(std::atof(one.c_str()));
    } else if (f == "--batch-ms") a->batch_ms = std::atof(v.c_str());
    else if (f == "--alone-s") a->alone_s = std::atof(v.c_str());
    else if (f == "--max-s") a->max_s = std::atof(v.c_str());
    else return false;
  }
  return (argc % 2) == 1 && a->bg.size() >= a->duty.size();
}

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

gemm::GemmShape shapeOf(const int64_t* mnk) {
  return gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16, mnk[0],
                          mnk[1], mnk[2]);
}

struct Window {
  double per_s;  // GEMMs per second in one batch
  bool tuning;   // the background key was not tuned yet when the batch ended
};

// One batch of `calls` foreground GEMMs, synchronised: GEMMs per second.
Expected<double> batch(GemmOp& op, const GemmCall& call, Backend& be, StreamHandle s, int calls) {
  const auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i) KTUNE_RETURN_IF_ERROR(op(call, s));
  KTUNE_RETURN_IF_ERROR(be.synchronize(s));
  return calls / std::max(1e-9, since(t0));
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

// One duty cycle: alone, while the background key tunes, alone again.
int phase(std::shared_ptr<Backend> be, const TunerOptions& env, const Args& a, double duty,
          const std::vector<int64_t>& bgmnk) {
  EngineOptions eo;
  eo.options = env;
  eo.options.background = true;
  eo.options.background_duty = duty;
  auto t = Engine::create(be, eo);
  if (!t.ok()) return std::fprintf(stderr, "%s\n", t.status().toString().c_str()), 1;
  std::shared_ptr<Engine> tuner(std::move(*t));
  auto op = GemmOp::create(tuner);
  if (!op.ok()) return std::fprintf(stderr, "%s\n", op.status().toString().c_str()), 1;
  auto fg = makeGemmProblem(*be, tuner->device(), shapeOf(a.fg), 1);
  auto bg = makeGemmProblem(*be, tuner->device(), shapeOf(bgmnk.data()), 2);
  if (!fg.ok() || !bg.ok()) return std::fprintf(stderr, "problem allocation failed\n"), 1;
  // The foreground key tuned first (forced, synchronous; from the database in a later phase).
  if (auto sel = (*op)->lookup(**fg); !sel.ok() || sel->origin == "default") {
    auto r = (*op)->tune(**fg);
    if (!r.ok()) return std::fprintf(stderr, "fg tune: %s\n", r.status().toString().c_str()), 1;
  }
  auto s = be->createStream();
  if (!s.ok()) return 1;
  auto per = batch(**op, **fg, *be, *s, 20);  // warm, and the batch size for batch_ms
  if (!per.ok()) return std::fprintf(stderr, "%s\n", per.status().toString().c_str()), 1;
  const int calls = std::max(1, int(*per * a.batch_ms / 1000));
  std::vector<double> before, during, after;
  auto runFor = [&](double secs, std::vector<double>& into, bool until_tuned) -> Status {
    const auto t0 = Clock::now();
    while (until_tuned ? tuner->backgroundTuned() == 0 && since(t0) < a.max_s : since(t0) < secs) {
      KTUNE_ASSIGN_OR_RETURN(double x, batch(**op, **fg, *be, *s, calls));
      into.push_back(x);
    }
    return Status::Ok();
  };
  Status st = runFor(a.alone_s, before, false);
  const auto tq = Clock::now();
  const auto c0 = Clock::now();
  if (st.ok()) st = (**op)(**bg, *s);  // unseen: runs its prediction, queues the key
  const double first_call_us = since(c0) * 1e6;
  if (st.ok()) st = runFor(0, during, true);
  const double tuning_s = since(tq);
  if (st.ok()) st = runFor(a.alone_s, after, false);
  (void)be->destroyStream(*s);
  if (!st.ok()) return std::fprintf(stderr, "%s\n", st.toString().c_str()), 1;
  std::vector<double> alone = before;
  alone.insert(alone.end(), after.begin(), after.end());
  const double base = mean(alone), busy = mean(during);
  const double worst = during.empty() ? base : *std::min_element(during.begin(), during.end());
  // The noise floor of a single batch: the slowest batch with nothing tuning, and the 95th
  // percentile of the batch losses while tuning.
  const double worst_alone = alone.empty() ? base : *std::min_element(alone.begin(), alone.end());
  std::vector<double> sorted = during;
  std::sort(sorted.begin(), sorted.end());
  const double p5 = sorted.empty() ? base : sorted[sorted.size() / 20];
  std::printf("RESULT busy_stream duty %.2f fg %ldx%ldx%ld bg %ldx%ldx%ld: alone %.1f GEMM/s "
              "(before %.1f, after %.1f), while tuning %.1f GEMM/s over %.1f s (%zu batches of %d): "
              "loss %.1f%%, worst batch %.1f%% (P95 batch %.1f%%; worst batch alone %.1f%%); "
              "bg tuned %s; bg first call %.0f us wall\n",
              duty, long(a.fg[0]), long(a.fg[1]), long(a.fg[2]), long(bgmnk[0]), long(bgmnk[1]),
              long(bgmnk[2]), base, mean(before), mean(after), busy, tuning_s, during.size(), calls,
              100 * (1 - busy / base), 100 * (1 - worst / base), 100 * (1 - p5 / base),
              100 * (1 - worst_alone / base),
              tuner->backgroundTuned() ? "yes" : "NO (max-s reached)", first_call_us);
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace ktune

int main(int argc, char** argv) {
  using namespace ktune;
  Args a;
  if (!parseArgs(argc, argv, &a)) {
    std::fprintf(stderr, "usage: shape_busy_stream_bench [--fg MxNxK] [--bg MxNxK,...] [--duty D,...] "
                         "[--batch-ms 20] [--alone-s 1.5] [--max-s 60]\n");
    return 2;
  }
  auto env = TunerOptions::fromEnv();
  if (!env.ok()) return std::fprintf(stderr, "%s\n", env.status().toString().c_str()), 1;
  auto b = openBackend(env->backend);
  if (!b.ok() || (*b)->vendor() == Vendor::kSimulated) {
    std::printf("SKIP: needs a GPU (%s)\n", b.ok() ? "simulated backend" : b.status().toString().c_str());
    return 0;
  }
  std::shared_ptr<Backend> be(std::move(*b));
  for (size_t i = 0; i < a.duty.size(); ++i)
    if (int rc = phase(be, *env, a, a.duty[i], a.bg[i]); rc != 0) return rc;
  return 0;
}
