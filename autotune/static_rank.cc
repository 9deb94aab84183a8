#include "autotune/static_rank.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ktune {
namespace {

double ceilDiv(double a, double b) { return std::ceil(a / b); }

// FLOPs per byte of A and B one K step of a BM x BN tile loads; 0 when the config is no GEMM tile.
double tileIntensity(const Config& c, const gemm::GemmShape* s) {
  const double bm = double(c.getInt("BLOCK_M")), bn = double(c.getInt("BLOCK_N"));
  if (bm <= 0 || bn <= 0) return 0;
  const double elem = s ? double(gemm::elemBytes(s->ab)) : 2.0;
  return 2.0 * bm * bn / ((bm + bn) * elem);
}

// Useful over computed work on `s`: M and N rounded up to whole tiles, K to BLOCK_K * SPLIT_K.
double tileFill(const Config& c, const gemm::GemmShape& s) {
  const double bm = double(c.getInt("BLOCK_M")), bn = double(c.getInt("BLOCK_N"));
  const double bk = double(c.getInt("BLOCK_K", 1)) * double(std::max<int64_t>(1, c.getInt("SPLIT_K", 1)));
  if (bm <= 0 || bn <= 0 || bk <= 0) return 1;
  const double m = double(s.m), n = double(s.n), k = double(s.k);
  return (m * n * k) / (ceilDiv(m, bm) * bm * ceilDiv(n, bn) * bn * ceilDiv(k, bk) * bk);
}

int registersOf(const KernelReport& r) {
  return r.resources.vgpr > 0 ? r.resources.vgpr : r.resources.registers;
}

}  // namespace

std::vector<StaticRank> rankStatically(const std::vector<StaticRankInput>& in,
                                       const gemm::GemmShape* shape) {
  std::vector<StaticRank> ranked, excluded;
  double best_intensity = 0;
  for (const auto& x : in)
    if (x.status.ok()) best_intensity = std::max(best_intensity, tileIntensity(x.config, shape));
  for (size_t i = 0; i < in.size(); ++i) {
    const StaticRankInput& x = in[i];
    StaticRank r;
    r.index = i;
    const KernelReport& rep = x.report;
    r.excluded = true;
    if (!x.status.ok()) r.why = "not compiled: " + x.status.message().substr(0, 120);
    else if (rep.resources.spills()) r.why = "spills registers";
    else if (!rep.has_occupancy) r.why = "no occupancy: " + rep.occupancy_note;
    else r.excluded = false;
    if (r.excluded) {
      excluded.push_back(r);
      continue;
    }
    const bool amd = rep.arch.rfind("gfx", 0) == 0;
    const double waves = amd ? rep.amd.waves_per_eu : double(rep.nv.blocks_per_sm);
    r.occupancy = std::min(waves, 2.0) / 2.0;
    for (const auto& v : rep.isa.verdicts) r.warns += v.pass ? 0 : 1;
    r.verdicts = std::pow(0.75, r.warns);
    const double ti = tileIntensity(x.config, shape);
    if (ti > 0 && best_intensity > 0) r.intensity = ti / best_intensity;
    if (ti > 0 && shape) r.fill = tileFill(x.config, *shape);
    r.score = r.occupancy * r.verdicts * r.intensity * r.fill;
    char why[160];
    std::snprintf(why, sizeof why, "occupancy %.2f x verdicts %.2f (%d WARN) x intensity %.2f x fill %.2f",
                  r.occupancy, r.verdicts, r.warns, r.intensity, r.fill);
    r.why = why;
    ranked.push_back(r);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](const StaticRank& a, const StaticRank& b) {
    if (a.score != b.score) return a.score > b.score;
    const int ra = registersOf(in[a.index].report), rb = registersOf(in[b.index].report);
    if (ra != rb) return ra < rb;
    return in[a.index].config.toString() < in[b.index].config.toString();
  });
  ranked.insert(ranked.end(), excluded.begin(), excluded.end());
  return ranked;
}

}  // namespace ktune
