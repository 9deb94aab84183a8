// gemm_bench's state: the CUDA context (backend, compiler, cuBLASLt, the L2 flush), the command
// line's switches, the candidate configs of a shape, and the summary table's rows. Included by
// bench/gemm_bench.cc only (one program, one translation unit).
#pragma once

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/fair/fair_timing.h"
#include "bench/fair/peers.h"
#include "compiler/compiler.h"
#include "ops/gemm.h"
#include "ops/vendor/cublaslt.h"
#include "runtime/backend.h"
#include "templates/gemm.h"

namespace ktune::gemm_bench {

struct Ctx {
  std::unique_ptr<Backend> be;
  std::unique_ptr<Compiler> cc;
  DeviceInfo dev;
  std::unique_ptr<GemmRunner> runner;
  std::unique_ptr<cublaslt::CublasLt> lt;
  std::unique_ptr<StreamPeers> peers;  // the read-based L2 flush
  DevicePtr ws = 0;
  // The GEMM op's cuBLASLt workspace (cublaslt::kWorkspaceBytes, the one size everywhere), so heuristic #0
  // here is the op's vendor default.
  int64_t ws_bytes = cublaslt::kWorkspaceBytes;
  EventHandle e0, e1;
  int rounds = 15;
};
inline Ctx* g = nullptr;
inline bool g_wgmma = false;  // --wgmma: also try the Hopper kernels (wgmma, tma)
// --kinds=mma,tma,...: only these kernel kinds (default: mma, skinny, decode, and with --wgmma
// wgmma, tma)
inline std::vector<gemm::KernelKind> g_kinds;
inline std::string g_shape_filter;  // --shapes=large (M >= 1024) | small | decode (M <= 128) | MxNxK,...

inline bool kindEnabled(gemm::KernelKind k) {
  if (!g_kinds.empty()) return std::find(g_kinds.begin(), g_kinds.end(), k) != g_kinds.end();
  if (k == gemm::KernelKind::kWgmma || k == gemm::KernelKind::kTma) return g_wgmma;
  return k == gemm::KernelKind::kMma || k == gemm::KernelKind::kSkinny ||
         k == gemm::KernelKind::kDecode;
}
inline constexpr gemm::KernelKind kNvidiaKinds[] = {gemm::KernelKind::kMma, gemm::KernelKind::kSkinny,
                                             gemm::KernelKind::kWgmma, gemm::KernelKind::kTma,
                                             gemm::KernelKind::kDecode};
inline int g_rounds_flag = 0;  // --rounds=N (>= 3)
inline bool g_rot_reset = true;  // --rot_reset=0: rotated batches without the read flush before them
inline bool g_sweep = false;  // --sweep: also time a spread of each kernel's space (printed per config)
// --only=CONFIG;CONFIG...: the JIT candidates are exactly these configs (where they apply);
// --profile: launch each candidate and cuBLASLt #0 once per shape, no timing (for ncu);
// --profile_lt=I,J,...: the cuBLASLt heuristic ranks launched there instead of #0 alone (an
// entry "I@MxNxK" for that shape only; --profile_lt= launches none).
inline std::vector<std::string> g_only;
inline bool g_profile = false;
inline int g_trace = 0;  // --trace=N: traceShape (bench/gemm_bench_modes.h) instead of the timing
inline std::vector<std::string> g_profile_lt = {"0"};
// --twin=CONFIG;CONFIG...: configs of the winner's kind timed in the same interleaved rounds as
// ktune's pick (RESULT twinN, RATIO twinN/ktune): an A/B of two JIT configs under one clock, which
// the pre-pass (each config timed in turn) cannot give. An entry "X@MxNxK" for that shape only.
inline std::vector<std::string> g_twin;

// An --only or --profile_lt entry "X@MxNxK" applies to that shape only; "X" to every shape.
inline bool forShape(const std::string& entry, const gemm::GemmShape& s) {
  const size_t at = entry.find('@');
  return at == std::string::npos || entry.substr(at + 1) == std::to_string(s.m) + "x" +
                                        std::to_string(s.n) + "x" + std::to_string(s.k);
}

// Whether every knob of `c` is one of kind k's (an --only list over several --kinds holds other
// kinds' configs; a probe value outside the space is still allowed).
inline bool ownKnobs(gemm::KernelKind k, const Config& c) {
  const auto& ps = gemm::configSpace(k).params();
  return std::all_of(c.params().begin(), c.params().end(), [&](const auto& kv) {
    return std::any_of(ps.begin(), ps.end(), [&](const auto& p) { return p.name == kv.first; });
  });
}

// The configs timed in the pre-pass: the curated set, plus with --sweep a spread of the space
// (skinny: every accepted config with the problem's A tile; wgmma: every accepted config that
// applies). Every candidate's time goes to stderr ("cand ..." lines) so a run documents them all.
inline std::string g_curated;  // --curated=FILE: a curated-table overlay (probe configs), before the shipped list
inline std::vector<Config> candidates(gemm::KernelKind k, const gemm::GemmShape& s) {
  if (!g_only.empty()) {
    std::vector<Config> out;
    for (const std::string& t : g_only) {
      if (!forShape(t, s)) continue;
      auto c = Config::parse(t.substr(0, t.find('@')));
      if (c.ok() && ownKnobs(k, *c) && gemm::applicable(k, *c, s).ok()) out.push_back(*c);
    }
    return out;
  }
  auto overlaid = gemm::curatedConfigs(k, s, g->dev, g_curated);
  if (!overlaid.ok()) std::fprintf(stderr, "--curated: %s\n", overlaid.status().toString().c_str());
  auto out = overlaid.ok() ? *overlaid : gemm::curatedConfigs(k, s);
  if (!g_sweep || k == gemm::KernelKind::kMma) return out;
  const int64_t mt = std::clamp<int64_t>((s.m + 7) / 8, 1, 8);
  for (const Config& c : gemm::configSpace(k).enumerate("cuda", g->dev.shared_per_block_optin).accepted) {
    if (!gemm::applicable(k, c, s).ok()) continue;
    if (k == gemm::KernelKind::kSkinny &&
        (s.m > 16 || c.getInt("SK_MT") != mt || c.getInt("SK_NT") > 2 ||
         (c.getInt("NUM_WARPS") != 8 && c.getInt("SK_PF") != 1) ||
         (c.getInt("SK_PF") == 2 && c.getInt("SK_DEPTH") != 4)))
      continue;
    if (k == gemm::KernelKind::kWgmma && c.getInt("SPLIT_K") > 1 && s.m * s.n > 1024 * 1024) continue;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

// The --twin configs that apply to kind k at shape s, other than `pick`; `why` says on stderr why
// an entry for this shape is left out.
inline std::vector<Config> twins(gemm::KernelKind k, const gemm::GemmShape& s, const Config& pick,
                                 bool why = true) {
  std::vector<Config> out;
  for (const std::string& t : g_twin) {
    if (!forShape(t, s)) continue;
    auto c = Config::parse(t.substr(0, t.find('@')));
    Status st = c.ok() ? gemm::applicable(k, *c, s) : c.status();
    if (st.ok() && *c == pick) st = Status::InvalidArgument("the pick itself");
    if (st.ok()) out.push_back(*c);
    else if (why) std::fprintf(stderr, "--twin %s: %s\n", t.c_str(), st.toString().c_str());
  }
  return out;
}

struct ShapeSpec {
  int64_t m, n, k;
  gemm::Layout layout;
  gemm::ElemType ab = gemm::ElemType::kBF16;  // A and B (C is bf16)
};

// One (shape, mode) of the summary table: every variant's median with its interval, and the
// per-round ratios of each peer to ktune (> 1: ktune faster).
struct Row {
  std::string name, mode, config, lt_best;
  double flops = 0;
  fair::Interval ktune, lt0, ltbest, read, gated;  // us; gated: the same config with act silu_mul
  fair::Interval lt0_ratio, ltbest_ratio, read_ratio, gated_ratio;  // peer time / ktune time
  fair::Interval resid, resid_ratio;  // the same config with beta = 1 (C += A*B^T: the residual add)
  std::string clocks;
};
inline std::vector<Row> g_rows;

// Opens the CUDA backend, its compiler, cuBLASLt, the L2 flush, the workspace and the events;
// false (with a 'skipped' line on stderr) when any is missing.
inline bool setup() {
  g = new Ctx();
  auto be = openCudaBackend();
  if (!be.ok()) {
    std::fprintf(stderr, "gemm_bench: skipped, no GPU: %s\n", be.status().toString().c_str());
    return false;
  }
  g->be = std::move(be).value();
  auto devs = g->be->devices();
  if (!devs.ok() || devs->empty() || !g->be->setDevice(0).ok()) {
    std::fprintf(stderr, "gemm_bench: skipped, no CUDA device\n");
    return false;
  }
  g->dev = (*devs)[0];
  auto cc = compilerForArch(g->dev.arch);
  if (!cc.ok()) {
    std::fprintf(stderr, "gemm_bench: skipped: %s\n", cc.status().toString().c_str());
    return false;
  }
  g->cc = std::move(cc).value();
  auto lt = cublaslt::CublasLt::open();
  if (!lt.ok()) {
    std::fprintf(stderr, "gemm_bench: skipped: %s\n", lt.status().toString().c_str());
    return false;
  }
  g->lt = std::move(lt).value();
  g->runner = std::make_unique<GemmRunner>(*g->be, *g->cc, g->dev);
  auto peers = StreamPeers::create(*g->be, *g->cc, g->dev);
  if (!peers.ok()) {
    std::fprintf(stderr, "gemm_bench: skipped: L2 flush kernel: %s\n", peers.status().toString().c_str());
    return false;
  }
  g->peers = std::move(peers).value();
  auto w = g->be->alloc(static_cast<size_t>(g->ws_bytes));
  auto e0 = g->be->createEvent();
  auto e1 = g->be->createEvent();
  if (!w.ok() || !e0.ok() || !e1.ok()) return false;
  g->ws = *w;
  g->e0 = *e0;
  g->e1 = *e1;
  std::fprintf(stderr, "gemm_bench: %s (%s), %s\n", g->dev.name.c_str(), g->dev.arch.c_str(),
               g->lt->version().c_str());
  return true;
}

}  // namespace ktune::gemm_bench
