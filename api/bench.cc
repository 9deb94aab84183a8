// ktune::Autotuner::benchmark: the engine's do_bench harness (autotune/benchmarker.h) for a
// caller's function, so every language binding times with the code that times candidates.
#include <utility>

#include "api/internal.h"
#include "autotune/benchmarker.h"

namespace ktune {

Expected<BenchStats> Autotuner::benchmark(const std::function<Status()>& fn,
                                          const BenchSettings& settings, StreamHandle stream,
                                          const std::function<Status()>& before_run) {
  if (!fn) return Status::InvalidArgument("benchmark: no function to time");
  if (!(settings.warmup_ms >= 0) || !(settings.rep_ms >= 0) || settings.min_runs < 1 ||
      settings.max_runs < settings.min_runs)
    return Status::InvalidArgument("benchmark: budgets must be >= 0 and 1 <= min_runs <= max_runs");
  const BenchOptions o(settings);  // the engine's harness options are the public settings, extended
  std::function<Status(int)> before;
  if (before_run) before = [&before_run](int) { return before_run(); };
  // A harness of its own: the tuner's is used by tuning threads, and its flush buffer is freed
  // when this one goes.
  Engine& t = *impl_->tuner;
  Benchmarker b(*impl_->backend, t.device(), L2Flush::compilerFor(*impl_->backend, t.compiler()));
  std::vector<double> samples;
  KTUNE_ASSIGN_OR_RETURN(BenchStats s, b.measure(stream, fn, o, before, nullptr, &samples));
  s.samples_ms = std::move(samples);  // the engine's own type: nothing to copy across
  return s;
}

}  // namespace ktune
