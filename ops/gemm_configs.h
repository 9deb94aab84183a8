// The GEMM family's configs (internal to ops/): a config is a kernel template's knobs plus
// KIND (which template), and the family's candidates are the curated sets of representative
// problems or every config of the spaces.
#pragma once

#include <string>
#include <vector>

#include "base/config.h"
#include "base/device.h"
#include "base/status.h"
#include "autotune/static_prune.h"
#include "templates/gemm.h"

namespace ktune::gemm_ops {

// The config's KIND; kInvalidArgument when it has none or an unknown one.
Expected<gemm::KernelKind> kindOf(const Config& c);
// The config without KIND (what the kernel templates and their spaces know).
Config knobsOf(const Config& c);
Config withKind(Config c, gemm::KernelKind k);
// What occupancy depends on besides the code object, for a GEMM family config on `dev`: the
// launch rule's block size and dynamic shared memory (0 for the MFMA kernel's static LDS) on a
// nominal NT problem (they depend on the config only). Zeros when the config has no KIND or no
// nominal problem takes it. The static pruner and `ktune report` use it.
PruneLaunch configLaunch(const Config& c, const DeviceInfo& dev);
// Smallest BLOCK_M (at least 32) among the configs: every tile boundary is a multiple of it.
int64_t verifyTile(const std::vector<Config>& configs);
// Candidate configs for a backend: the curated sets of representative problems (large, decode
// M = 1/16/64, small-M split-K) for this device with the user's overlay (gemm::curatedConfigs), or
// every config of the spaces (`full`), configs over `shared_limit` left out before compiling.
Expected<std::vector<Config>> familyConfigs(const std::vector<gemm::KernelKind>& kinds,
                                            const std::string& backend, bool full,
                                            int64_t shared_limit, const DeviceInfo& dev,
                                            const std::string& curated_path);

}  // namespace ktune::gemm_ops
