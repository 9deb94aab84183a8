// Tunes plugin_saxpy with isolation on and the plugin given on the command line:
//   plugin_host /path/to/libsaxpy_plugin.so        (KTUNE_BACKEND=sim without a GPU)
// Prints the winner and checks the result; exit status 1 on any error.
#include "saxpy_family.h"

static int fail(const ktune::Status& st) {
  std::fprintf(stderr, "plugin_host: %s\n", st.toString().c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) return fail(ktune::Status::InvalidArgument("usage: plugin_host PLUGIN.so"));
  auto opts = ktune::TunerOptions::fromEnv();
  if (!opts.ok()) return fail(opts.status());
  opts->isolate = true;  // candidates are timed in ktune-worker, which loads the plugin
  opts->worker_plugins = {argv[1]};
  auto created = ktune::Autotuner::create(*opts);
  if (!created.ok()) return fail(created.status());
  ktune::Autotuner& tuner = **created;
  if (tuner.backendName() == "sim") {
    ktune::Status st = tuner.registerSimKernel("plugin_saxpy", saxpySim(/*in_worker=*/false));
    if (!st.ok()) return fail(st);
  }
  auto saxpy = ktune::addTypedKernel(tuner, saxpySpec(&tuner));
  if (!saxpy.ok()) return fail(saxpy.status());
  auto p = makeSaxpy(&tuner, 5003);
  if (!p.ok()) return fail(p.status());
  auto report = saxpy->tune(**p);
  if (!report.ok()) return fail(report.status());
  if (ktune::Status st = (*saxpy)(**p); !st.ok()) return fail(st);
  if (ktune::Status st = tuner.synchronize(); !st.ok()) return fail(st);
  std::vector<float> z(5003);
  if (ktune::Status st = tuner.copyToHost(z.data(), (*p)->z, z.size() * sizeof(float)); !st.ok())
    return fail(st);
  size_t wrong = 0;
  for (size_t i = 0; i < z.size(); ++i) wrong += z[i] != 3.f * static_cast<float>(i % 7);
  std::printf("winner %s (%zu candidates), %zu of %zu elements wrong\n", report->winner.c_str(),
              report->candidates.size(), wrong, z.size());
  for (const auto& c : report->candidates)
    if (!c.reason.empty()) std::printf("  %s: %s\n", c.config.c_str(), c.reason.c_str());
  return wrong == 0 ? 0 : 1;
}
