// gemm_bench's timing and checking: one sample and the median of a launch (after a read flush or
// back to back over rotating copies), the weight-read bound timed the same way, a shape's buffers
// and cuBLASLt view, and the VERIFY lines against cuBLASLt #0. Included by bench/gemm_bench.cc
// only.
#pragma once

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "autotune/verifier.h"
#include "base/dtype.h"
#include "bench/gemm_bench_state.h"
#include "bench/gemm_read_bound.h"
#include "ops/buffers.h"

namespace ktune::gemm_bench {

// One sample (us) of fn: with flush, the L2 evicted by reads, then one timed launch fn(i);
// otherwise 20 back-to-back launches fn(i * 20 + j) over rotating copies, divided by 20 (the
// decode pattern: no dirty L2, no host launch gap inside the timed region), after the same read
// flush outside the timed region (g_rot_reset, --rot_reset=0 to leave it out): without it a batch
// found the rotating copies' lines left by the variant before it in the round, and evict-first
// streams (the read bound's ld.global.cs, DC_EF) do not displace default lines, so they hit on them
// (bench/NOTES.md, issue 32, twenty-fifth session). -1 on failure.
template <class F>
double sampleUs(F&& fn, int i, bool flush) {
  constexpr int kBatch = 20;
  if ((flush || g_rot_reset) && !g->peers->flushL2().ok()) return -1;
  (void)g->be->recordEvent(g->e0);
  Status s = Status::Ok();
  if (flush) s = fn(i);
  else
    for (int j = 0; j < kBatch && s.ok(); ++j) s = fn(i * kBatch + j);
  (void)g->be->recordEvent(g->e1);
  (void)g->be->synchronizeEvent(g->e1);
  if (!s.ok()) return -1;
  auto ms = g->be->elapsedMs(g->e0, g->e1);
  if (!ms.ok()) return -1;
  return 1000.0 * *ms / (flush ? 1 : kBatch);
}

// Median of `runs` samples (fewer batches when back to back) after 3 warm-up launches.
template <class F>
double timeUs(F&& fn, int runs, bool flush = true) {
  for (int i = 0; i < 3; ++i) (void)fn(i);  // warm-up
  std::vector<double> t;
  const int samples = flush ? runs : std::max(3, runs / 4);
  for (int i = 0; i < samples; ++i) {
    const double us = sampleUs(fn, i + 1, flush);
    if (us < 0) return -1;
    t.push_back(us);
  }
  return fair::medianInterval(std::move(t)).median;
}

struct Bufs {
  DevicePtr a = 0, b = 0, c = 0;
};

inline Status fillRandom(DevicePtr p, DType t, int64_t count, uint32_t seed) {
  return ktune::fillRandom(*g->be, p, t, count, seed);
}

inline bench::ReadKernels g_read;  // the weight-read bound's kernels (bench/gemm_read_bound.h)

// The fastest pure read of `bytes` at `ptrs` (rotation when flush is false), timed like the GEMMs.
inline bench::ReadChoice readBound(const std::vector<DevicePtr>& ptrs, int64_t bytes, bool flush) {
  bench::ReadChoice best;
  for (bench::ReadChoice& c : bench::readLaunches(*g->be, g->dev, g_read, ptrs, bytes)) {
    c.us = timeUs(c.fn, 10, flush);
    if (c.us > 0 && (best.us < 0 || c.us < best.us)) best = c;
  }
  return best;
}

// What one shape's timing needs: its problem, cuBLASLt view and buffers (sets: rotating copies).
struct ShapeRun {
  std::string name;
  ShapeSpec sp;
  gemm::GemmShape s;
  cublaslt::LtProblem lp;
  GemmBuffers buf;
  std::vector<GemmBuffers> sets;
  double flops = 0;
};

inline Status ltLaunch(const ShapeRun& r, const cublaslt::LtAlgo& a, bool flush, int i) {
  const GemmBuffers& u = flush ? r.buf : r.sets[static_cast<size_t>(i) % r.sets.size()];
  return g->lt->run(r.lp, &a, u.a, u.b, u.c, 0, g->ws, g->ws_bytes);
}

// Runs `launch` into a NaN-poisoned C on the first input set and compares all of C with cuBLASLt
// #0's result on the same inputs (bf16 tolerance for a K-long fp32 reduction, scaled by sqrt(K)
// for the magnitude of unit-scale random products). Prints a VERIFY line.
inline void verifyOne(const ShapeRun& r, const std::string& what, const cublaslt::LtAlgo& lt0,
               const std::function<Status(const GemmBuffers&)>& launch) {
  const int64_t mn = r.sp.m * r.sp.n;
  auto ref = g->be->alloc(static_cast<size_t>(mn * 2));
  auto out = g->be->alloc(static_cast<size_t>(mn * 2));
  std::string verdict = "FAIL", detail;
  if (ref.ok() && out.ok()) {
    GemmBuffers rb = r.buf, ob = r.buf;
    rb.c = *ref;
    ob.c = *out;
    Status st = poisonNaN(*g->be, *out, DType::kBF16, mn);
    if (st.ok()) st = g->lt->run(r.lp, &lt0, rb.a, rb.b, rb.c, 0, g->ws, g->ws_bytes);
    if (st.ok()) st = launch(ob);
    if (st.ok()) st = g->be->synchronize();
    Tolerance tol = toleranceFor(DType::kBF16, r.sp.k);
    tol.atol *= std::sqrt(static_cast<double>(r.sp.k));
    auto v = st.ok() ? compareDeviceToTrusted(*g->be, *out, *ref, DType::kBF16, mn, tol)
                     : Expected<VerifyResult>(st);
    if (v.ok() && v->ok) verdict = "ok";
    detail = v.ok() ? v->summary() : v.status().toString();
  } else {
    detail = "allocation failed";
  }
  if (ref.ok()) (void)g->be->free(*ref);
  if (out.ok()) (void)g->be->free(*out);
  std::printf("VERIFY gemm %s %s %s %s\n", r.name.c_str(), what.c_str(), verdict.c_str(), detail.c_str());
}

inline void verifyLt(const ShapeRun& r, const cublaslt::LtAlgo& lt0, const cublaslt::LtAlgo& a) {
  verifyOne(r, "cublaslt:idx=" + std::to_string(a.index), lt0, [&](const GemmBuffers& u) {
    return g->lt->run(r.lp, &a, u.a, u.b, u.c, 0, g->ws, g->ws_bytes);
  });
}

template <class Cand>
void verifyTimed(const ShapeRun& r, const cublaslt::LtAlgo& lt0, const Cand& best, const Cand& rbest) {
  for (const Cand* c : {&best, &rbest}) {
    if (c == &rbest && rbest.k == best.k && rbest.c == best.c) break;
    verifyOne(r, std::string(gemm::kernelKindName(c->k)) + ":" + c->c.toString(), lt0,
              [&](const GemmBuffers& u) { return g->runner->launch(c->k, c->c, r.s, u); });
  }
}

}  // namespace ktune::gemm_bench
