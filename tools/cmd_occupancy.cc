// `ktune occupancy`: AMD occupancy from raw counts, without compiling anything — the MI300X guide's
// worked example ("170 VGPRs -> 176 allocated -> 2 waves/EU") and any kernel descriptor's numbers
// (.vgpr_count, .sgpr_count, .group_segment_fixed_size) can be checked by hand against LLVM's own
// "; Occupancy:" comment.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "compiler/analysis/occupancy.h"
#include "compiler/resources_json.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace ktune::cli {
namespace {

const char* kUsage =
    "ktune occupancy --arch gfx90a|gfx942|... --vgpr N [--agpr N] [--sgpr N] [--lds BYTES] "
    "[--waves N | --threads N] [--json]\n"
    "  --vgpr is the kernel descriptor's .vgpr_count (AGPRs included on gfx90a/gfx94x); with "
    "--agpr it is the architectural VGPR count alone and the AGPRs are added the way LLVM does";

}  // namespace

int cmdOccupancy(const std::vector<std::string>& argv) {
  auto args = parseArgs(argv, {{"--arch", true}, {"--vgpr", true}, {"--agpr", true},
                               {"--sgpr", true}, {"--lds", true}, {"--waves", true},
                               {"--threads", true}, {"--json"}});
  if (!args.ok()) return usage(args.status().message(), kUsage);
  if (args->help) return help(kUsage);
  if (!args->positional.empty()) return usage("unexpected '" + args->positional[0] + "'", kUsage);
  if (!args->has("--arch") || !args->has("--vgpr"))
    return usage("--arch and --vgpr are required", kUsage);
  auto lim = amdArchLimits(args->get("--arch"));
  if (!lim.ok()) return fail(lim.status());
  long long n[5] = {0, 0, 0, 0, 4};  // vgpr, agpr, sgpr, lds, waves
  const char* flags[5] = {"--vgpr", "--agpr", "--sgpr", "--lds", "--waves"};
  const long long max[5] = {4096, 4096, 1024, 1 << 24, 64};
  for (int i = 0; i < 5; ++i) {
    if (!args->has(flags[i])) continue;
    auto v = parseIntFlag(flags[i], args->get(flags[i]), i == 4 ? 1 : 0, max[i]);
    if (!v.ok()) return usage(v.status().message(), kUsage);
    n[i] = *v;
  }
  if (args->has("--threads")) {
    if (args->has("--waves")) return usage("give --waves or --threads, not both", kUsage);
    auto t = parseIntFlag("--threads", args->get("--threads"), 1, 1024);
    if (!t.ok()) return usage(t.status().message(), kUsage);
    n[4] = (*t + lim->wave_size - 1) / lim->wave_size;
  }
  const int total = args->has("--agpr") ? amdTotalVgprs(*lim, static_cast<int>(n[0]),
                                                        static_cast<int>(n[1]))
                                        : static_cast<int>(n[0]);
  auto o = amdOccupancy(*lim, total, static_cast<int>(n[1]), n[3], static_cast<int>(n[4]),
                        static_cast<int>(n[2]));
  if (!o.ok()) return fail(o.status());
  if (args->has("--json")) {
    nlohmann::json j = occupancyToJson(*o);
    j["arch"] = lim->arch;
    j["vgpr_count"] = total;
    if (n[3] <= 0) j.erase("occ_lds");  // no --lds: no LDS limit to report
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%s: %d VGPRs (.vgpr_count) -> %d allocated (granule %d of %d per lane) -> "
              "occ_vgpr %d waves/EU\n",
              lim->arch.c_str(), total, o->vgpr_allocated, lim->vgpr_granule, lim->vgprs_per_simd,
              o->occ_vgpr);
  if (n[3] > 0)
    std::printf("LDS %lld B per workgroup -> occ_lds = floor(%lld / %lld) = %d workgroups/CU\n", n[3],
                static_cast<long long>(lim->lds_per_cu), n[3], o->occ_lds);
  if (n[2] > 0) std::printf("SGPR %lld -> occ_sgpr %d waves/EU\n", n[2], o->occ_sgpr);
  std::printf("%lld waves/workgroup -> %d workgroups/CU\n", n[4], o->workgroups_per_cu);
  std::printf("occupancy %g waves/EU (the guide's occ: whole workgroups), limited by %s\n",
              o->waves_per_eu, o->limiter.c_str());
  std::printf("LLVM's bound (the \"; Occupancy:\" comment of clang -S): %d waves/EU\n",
              o->llvm_waves_per_eu);
  return kExitOk;
}

}  // namespace ktune::cli
