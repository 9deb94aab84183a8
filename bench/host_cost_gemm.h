// host_cost_bench's GEMM variants: the GEMM op with TMA and with cuBLASLt winners, pointers
// rotating over four buffer sets, against the raw launch of its own winner and CublasLt::run.
#pragma once

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ops/buffers.h"
#include "ops/gemm.h"
#include "ops/gemm_configs.h"
#include "ops/vendor/cublaslt.h"
#include "bench/host_cost.h"

namespace ktune::hostcost {

// Four rotating A/B/C sets of a 2048^3 bf16 NT GEMM.
inline Expected<std::vector<GemmCall>> gemmCalls(Bench& B) {
  const auto s = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16,
                                  2048, 2048, 2048);
  std::vector<GemmCall> calls;
  for (int i = 0; i < 4; ++i) {
    GemmCall c;
    c.shape = s;
    uint64_t seed = 10 * uint64_t(i);
    for (DevicePtr* p : {&c.buf.a, &c.buf.b, &c.buf.c}) {
      KTUNE_ASSIGN_OR_RETURN(*p, B.be->alloc(size_t(2048) * 2048 * 2));
      KTUNE_RETURN_IF_ERROR(fillRandom(*B.be, *p, DType::kBF16, 2048 * 2048, ++seed));
    }
    calls.push_back(c);
  }
  return calls;
}

inline std::shared_ptr<GemmOp> noOp(const std::string& name, const Status& s) {
  std::fprintf(stderr, "%s: %s\n", name.c_str(), s.toString().c_str());
  return nullptr;
}

// A GEMM op of its own tuner (kinds, vendor algorithms), tuned on every set; null when unavailable.
inline std::shared_ptr<GemmOp> addGemmOp(Bench& B, std::vector<Variant>& v, const std::string& name,
                                         std::vector<gemm::KernelKind> kinds, int vendor_algos,
                                         const std::vector<GemmCall>& calls) {
  auto tuner = tunerFor(B, name, vendor_algos);
  if (!tuner.ok()) return noOp(name, tuner.status());
  GemmOp::OpOptions oo;
  oo.kinds = std::move(kinds);
  auto op = GemmOp::create(*tuner, oo);
  if (!op.ok()) return noOp(name, op.status());
  std::shared_ptr<GemmOp> sop(std::move(op).value());
  for (const auto& c : calls) {
    Status s = (*sop)(c);
    if (!s.ok()) return noOp(name, s);
  }
  (void)B.be->synchronize();
  auto sel = sop->lookup(calls[0]);
  const std::string note = sel.ok() ? sel->winner_source + " " + sel->winner.substr(0, 60) : "?";
  v.push_back(
      {name, [sop, calls](int i) { return (*sop)(calls[size_t(i) % calls.size()]); }, note});
  return sop;
}

// The GEMM op's winner for calls[0] launched raw: its own code object (compiled by GemmRunner from
// the winner's config), grid, block, dynamic shared memory and parameter block, with the tensor
// maps of every buffer set encoded once, outside the timed region: what the op's call costs
// beyond this is ktune's own work. TMA winners only (the parameter block below is theirs).
inline Status addRawWinner(Bench& B, std::vector<Variant>& v, GemmOp& op,
                           const std::vector<GemmCall>& calls) {
  KTUNE_ASSIGN_OR_RETURN(KeyReport sel, op.lookup(calls[0]));
  KTUNE_ASSIGN_OR_RETURN(Config c, Config::parse(sel.winner));
  auto kind = gemm_ops::kindOf(c);
  if (sel.winner_source != "jit" || !kind.ok() || *kind != gemm::KernelKind::kTma)
    return Status::Unsupported("winner is not a TMA kernel: " + sel.winner_source + " " + sel.winner);
  const Config knobs = gemm_ops::knobsOf(c);
  const gemm::GemmShape s = withAlignment(calls[0].shape, calls[0].buf);
  auto runner = std::make_shared<GemmRunner>(*B.be, *B.cc, B.dev);
  KTUNE_ASSIGN_OR_RETURN(const CodeObject* co, runner->compile(gemm::KernelKind::kTma, knobs, s));
  KTUNE_ASSIGN_OR_RETURN(gemm::LaunchPlan plan,
                         gemm::launchPlan(gemm::KernelKind::kTma, knobs, s, B.dev));
  void* mod = nullptr;
  void* fn = nullptr;
  if (B.drv.load(&mod, co->binary.data()) != 0 ||
      B.drv.get(&fn, mod, gemm::entryName(gemm::KernelKind::kTma)) != 0 ||
      (plan.shared_bytes > 48 * 1024 && B.drv.set_attr(fn, 8, int(plan.shared_bytes)) != 0))
    return Status::LaunchError("loading the winner's code object raw failed");
  const auto scratch = gemm::tmaSplitScratch(c, std::max(1, B.dev.multiprocessors));
  const int64_t ws_bytes = std::max({plan.workspace_bytes, scratch.workspace_bytes, s.m * s.n * 4});
  const int64_t counters = std::max({plan.counters, scratch.counters, int64_t(1) << 16});
  KTUNE_ASSIGN_OR_RETURN(DevicePtr ws, B.be->alloc(size_t(ws_bytes)));
  KTUNE_ASSIGN_OR_RETURN(DevicePtr cnt, B.be->alloc(size_t(counters) * 4));
  KTUNE_RETURN_IF_ERROR(B.be->memset8(ws, 0, size_t(ws_bytes)));
  KTUNE_RETURN_IF_ERROR(B.be->memset32(cnt, 0, size_t(counters)));
  auto sets = std::make_shared<std::vector<GemmArgs>>(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    GemmArgs& g = (*sets)[i];
    const GemmBuffers& u = calls[i].buf;
    g.ptr[0] = u.a, g.ptr[1] = u.b, g.ptr[2] = u.c, g.ptr[3] = u.bias, g.ptr[4] = ws,
    g.ptr[5] = cnt;
    g.mnk[0] = int32_t(s.m), g.mnk[1] = int32_t(s.n), g.mnk[2] = int32_t(s.k);
    g.ld[0] = s.lda, g.ld[1] = s.ldb, g.ld[2] = s.ldc;
    g.ab[0] = s.alpha, g.ab[1] = s.beta;
    const gemm::TmaDescriptors d =
        gemm::tmaDescriptors(s, u.a, u.b, u.c, gemm::kTmaL2Promotion, gemm::tmaBoxRows(knobs, s));
    KTUNE_ASSIGN_OR_RETURN(g.maps[0], B.be->encodeTensorMap2D(d.a));
    KTUNE_ASSIGN_OR_RETURN(g.maps[1], B.be->encodeTensorMap2D(d.b));
    auto mc = B.be->encodeTensorMap2D(d.c);
    g.c_tma = mc.ok() && s.c != gemm::ElemType::kF32 ? 1 : 0;
    if (g.c_tma) g.maps[2] = *mc;
    g.bind();
  }
  v.push_back({"raw_gemm_winner",
               [&B, fn, plan, sets](int i) {
                 GemmArgs& g = (*sets)[size_t(i) % sets->size()];
                 return ok(B.drv.launch(fn, plan.grid.x, plan.grid.y, plan.grid.z, plan.block.x,
                                        plan.block.y, plan.block.z, unsigned(plan.shared_bytes),
                                        nullptr, g.args, nullptr),
                           "cuLaunchKernel");
               },
               "cuLaunchKernel of the TMA winner itself, params prepared per buffer set"});
  return Status::Ok();
}

inline void addGemmVariants(Bench& B, std::vector<Variant>& v) {
  auto calls = gemmCalls(B);
  if (!calls.ok())
    return (void)std::fprintf(stderr, "GEMM buffers: %s\n", calls.status().toString().c_str());
  if (auto tma = addGemmOp(B, v, "gemm_tma", {gemm::KernelKind::kTma}, 0, *calls)) {
    if (Status s = addRawWinner(B, v, *tma, *calls); !s.ok())
      std::fprintf(stderr, "raw_gemm_winner: %s\n", s.toString().c_str());
  }
  auto lt = cublaslt::CublasLt::open();
  auto lp = toLtProblem((*calls)[0].shape);
  auto ws = B.be->alloc(cublaslt::kWorkspaceBytes);
  if (lt.ok() && lp.ok() && ws.ok()) {
    auto algos = (*lt)->heuristics(*lp, 1, cublaslt::kWorkspaceBytes);
    if (algos.ok()) {
      std::shared_ptr<cublaslt::CublasLt> slt(std::move(lt).value());
      const cublaslt::LtAlgo a = algos->front();
      const cublaslt::LtProblem p = *lp;
      const DevicePtr w = *ws;
      v.push_back({"lt_run",
                   [slt, a, p, w, c = *calls](int i) {
                     const GemmBuffers& u = c[size_t(i) % c.size()].buf;
                     return slt->run(p, &a, u.a, u.b, u.c, 0, w, cublaslt::kWorkspaceBytes);
                   },
                   "CublasLt::run, heuristic #0, descriptors cached"});
    }
  }
  addGemmOp(B, v, "gemm_lt", {gemm::KernelKind::kMma}, 8, *calls);
}

}  // namespace ktune::hostcost
