#include "ops/gemm_configs.h"

#include <algorithm>
#include <tuple>

namespace ktune::gemm_ops {

Expected<gemm::KernelKind> kindOf(const Config& c) {
  const std::string k = c.getStr("KIND");
  for (gemm::KernelKind kind :
       {gemm::KernelKind::kMma, gemm::KernelKind::kSkinny, gemm::KernelKind::kMfma,
        gemm::KernelKind::kWgmma, gemm::KernelKind::kTma, gemm::KernelKind::kDecode})
    if (k == gemm::kernelKindName(kind)) return kind;
  return Status::InvalidArgument("GEMM config without a valid KIND: " + c.toString());
}

Config knobsOf(const Config& c) {
  Config out;
  for (const auto& [n, v] : c.params())
    if (n != "KIND") out.set(n, v);
  return out;
}

Config withKind(Config c, gemm::KernelKind k) {
  c.set("KIND", std::string(gemm::kernelKindName(k)));
  return c;
}

PruneLaunch configLaunch(const Config& c, const DeviceInfo& dev) {
  PruneLaunch l;
  auto k = kindOf(c);
  if (!k.ok()) return l;
  for (int64_t m : {4096, 16, 1}) {
    auto plan = gemm::launchPlan(*k, knobsOf(c),
                                 gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16,
                                                  gemm::ElemType::kBF16, m, 4096, 4096),
                                 dev);
    if (!plan.ok()) continue;
    l.threads_per_block = int(plan->block.x * plan->block.y * plan->block.z);
    l.dynamic_shared = plan->shared_bytes;
    break;
  }
  return l;
}

int64_t verifyTile(const std::vector<Config>& configs) {
  int64_t t = 0;
  for (const Config& c : configs) {
    const int64_t bm = c.getInt("BLOCK_M", 0);
    if (bm >= 32 && (t == 0 || bm < t)) t = bm;
  }
  return t > 0 ? t : 64;
}

Expected<std::vector<Config>> familyConfigs(const std::vector<gemm::KernelKind>& kinds,
                                            const std::string& backend, bool full,
                                            int64_t shared_limit, const DeviceInfo& dev,
                                            const std::string& curated_path) {
  std::vector<Config> out;
  auto add = [&](gemm::KernelKind k, const Config& c) {
    Config kc = withKind(c, k);
    if (std::find(out.begin(), out.end(), kc) == out.end()) out.push_back(kc);
  };
  for (gemm::KernelKind k : kinds) {
    if (full) {
      // Configs whose shared memory exceeds the device's limit are left out before compiling.
      for (const Config& c : gemm::configSpace(k).enumerate(backend, shared_limit).accepted)
        add(k, c);
      continue;
    }
    // One representative shape per tier of the M-dependent knobs (DC_MT "auto": 1, 2, 4, 8, 16 row
    // tiles, and rows of A for the decode kind's FMA body, DC_WG = 3; SK_MT "auto") and per N
    // bound of the curated tables (min_n 8192: the persistent decode grids for wide N): a key's
    // candidates include the curated configs of its own tier. Keys of 2..8 rows had no FMA
    // candidate (its DC_MT counts rows, and only M = 1 was represented) and keys with N >= 8192
    // none of the wide-N decode configs, so the tuned op could not pick what gemm_bench, which
    // takes each shape's own curated list, measured fastest. N = 6144: the decode twin curated at
    // that N alone (min_n = max_n = 6144, 9..16 rows).
    std::vector<std::tuple<int64_t, int64_t, int64_t>> reps = {{4096, 4096, 4096}};
    for (int64_t m : {1, 2, 4, 8, 16, 32, 64, 128})
      for (int64_t n : {4096, 6144, 28672}) reps.emplace_back(m, n, 4096);
    for (auto [m, n, kk] : reps) {
      const auto s = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16,
                                      gemm::ElemType::kBF16, m, n, kk);
      KTUNE_ASSIGN_OR_RETURN(auto curated, gemm::curatedConfigs(k, s, dev, curated_path));
      for (const Config& c : curated) add(k, c);
    }
  }
  return out;
}

std::vector<std::string> dominatedKinds(const std::vector<Config>& configs, int64_t m, int64_t n,
                                        int sms, bool gated) {
  std::vector<std::string> why(configs.size());
  auto kind = [](const Config& c) {
    auto k = kindOf(c);
    return k.ok() ? int(*k) : -1;
  };
  const bool tma = std::any_of(configs.begin(), configs.end(), [&](const Config& c) {
    return kind(c) == int(gemm::KernelKind::kTma);
  });
  if (!tma) return why;
  const bool decode = std::any_of(configs.begin(), configs.end(), [&](const Config& c) {
    return kind(c) == int(gemm::KernelKind::kDecode);
  });
  if (decode && !gated && m <= kDecodeRows) {
    const std::string reason = "the decode kind covers " + std::to_string(m) +
                               " rows, where 64- and 128-row tiles are at most a quarter full";
    for (size_t i = 0; i < configs.size(); ++i) {
      const int k = kind(configs[i]);
      if (k == int(gemm::KernelKind::kTma) || k == int(gemm::KernelKind::kWgmma) ||
          k == int(gemm::KernelKind::kMma))
        why[i] = std::string(gemm::kernelKindName(gemm::KernelKind(k))) + " kind: " + reason;
    }
    return why;
  }
  const int64_t tiles = ((m + 127) / 128) * ((n + 127) / 128);
  if (sms <= 0 || tiles < int64_t(kDominatedWaves) * sms) return why;
  const std::string reason = "the tma kind's 128 x 128 tiles fill the device's " +
                             std::to_string(sms) + " SMs " + std::to_string(tiles / sms) +
                             " times over at " + std::to_string(m) + " x " + std::to_string(n);
  for (size_t i = 0; i < configs.size(); ++i) {
    const int k = kind(configs[i]);
    if (k == int(gemm::KernelKind::kMma) || k == int(gemm::KernelKind::kSkinny))
      why[i] = std::string(gemm::kernelKindName(gemm::KernelKind(k))) + " kind: " + reason;
  }
  return why;
}

Config idleSplitTwin(const Config& c, const gemm::GemmShape& s, const DeviceInfo& dev) {
  auto k = kindOf(c);
  if (!k.ok() || *k != gemm::KernelKind::kTma || !gemm::tmaSplitTailIdle(knobsOf(c), s, dev))
    return c;
  Config twin = c;
  twin.set("SPLIT_K", int64_t{1});
  return twin;
}

std::vector<std::string> guidedLeaveOut(const std::vector<Config>& configs,
                                        const gemm::GemmShape& s, const DeviceInfo& dev) {
  std::vector<std::string> why = dominatedKinds(configs, s.m, s.n, dev.multiprocessors,
                                                s.act == gemm::Activation::kSiluMul);
  std::vector<size_t> kept;
  for (size_t i = 0; i < configs.size(); ++i)
    if (why[i].empty()) kept.push_back(i);
  for (size_t i : kept) {
    const Config twin = idleSplitTwin(configs[i], s, dev);
    if (twin == configs[i]) continue;
    const bool raced = std::any_of(kept.begin(), kept.end(), [&](size_t j) {
      return configs[j] == twin;
    });
    if (raced)
      why[i] = "its split tail (SPLIT_K " + std::to_string(configs[i].getInt("SPLIT_K", 1)) +
               ") splits nothing at this shape: the same schedule as its SPLIT_K 1 twin, which is raced";
  }
  return why;
}

}  // namespace ktune::gemm_ops
