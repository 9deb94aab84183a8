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

// The guided search's GEMM kinds that cannot win (FamilyExtras::guided_leave_out): where the tma
// kind (sm_90a: TMA-fed warpgroup MMA) has a config among `configs` and a grid of 128 x 128 tiles
// over the m x n output fills the device's `sms` at least kDominatedWaves times, the mma kind
// (mma.sync) and the skinny kind (a few rows of A) are left out. There the tma kind's waves are
// nearly full, so the smaller tiles of another kind gain little on quantisation, while mma.sync
// runs at a fraction of warpgroup MMA's rate (at 4096^3 on an H200 the best mma config took 2.2x
// the tma winner's time; bench/NOTES.md). Decode rows: where m <= kDecodeRows and the decode
// kind (the few-row kernel with mma.sync, wgmma, TMA-fed and FMA bodies) has a config beside a tma
// one, the kinds of 64- and 128-row tiles (tma, wgmma, mma) are left out: their tiles are at most a
// quarter full, and at the LLM suite's 16-row keys on the GPU the best of them took 1.14-3x the
// decode winner's time while their compiles (0.5-1.9 s each) were most of those keys' cold tuning
// (bench/NOTES.md, issue 34).
// Not for the gate/up pair (`gated`: only the decode and tma kinds compute it; not measured). A
// reason per config ("" keeps it).
inline constexpr int kDominatedWaves = 4;
inline constexpr int64_t kDecodeRows = 16;
std::vector<std::string> dominatedKinds(const std::vector<Config>& configs, int64_t m, int64_t n,
                                        int sms, bool gated = false);

// A tma config (with KIND) whose split tail is idle for `s` on `dev` (gemm::tmaSplitTailIdle: its
// persistent schedule splits nothing, e.g. 4096^3's last round of 116 of 132 tiles) as its
// SPLIT_K = 1 twin, the same schedule without the exchange code; any other config as it is. The
// twin measured 0.2-0.5% faster than the split default at 4096^3 and 4096x4096x14336 in each of 3
// processes, and compiles in about 0.8x the time (the 4096^3 default was a cold run's
// slowest compile; bench/NOTES.md, issue 34).
Config idleSplitTwin(const Config& c, const gemm::GemmShape& s, const DeviceInfo& dev);
// The guided search's leave-outs for a key (FamilyExtras::guided_leave_out): dominatedKinds, then
// every tma config of those kept whose split tail is idle at `s` and whose SPLIT_K = 1 twin is
// kept among `configs` (that twin is raced in its place). A reason per config ("" keeps it).
std::vector<std::string> guidedLeaveOut(const std::vector<Config>& configs,
                                        const gemm::GemmShape& s, const DeviceInfo& dev);

}  // namespace ktune::gemm_ops
