#include "ops/gemm_host_cache.h"

#include <string>
#include <variant>

namespace ktune {

namespace {

bool sameDesc(const TensorMap2DDesc& x, const TensorMap2DDesc& y) {
  return x.base == y.base && x.elem_bytes == y.elem_bytes && x.rows == y.rows && x.cols == y.cols &&
         x.row_stride_bytes == y.row_stride_bytes && x.box_rows == y.box_rows &&
         x.box_cols == y.box_cols && x.swizzle_bytes == y.swizzle_bytes &&
         x.l2_promotion_bytes == y.l2_promotion_bytes && x.planes == y.planes &&
         x.plane_stride_bytes == y.plane_stride_bytes && x.box_planes == y.box_planes;
}

size_t mix(size_t h, uint64_t v) { return h ^ (std::hash<uint64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

size_t hashDesc(size_t h, const TensorMap2DDesc& d) {
  h = mix(h, d.base);
  h = mix(h, d.rows);
  h = mix(h, d.cols);
  h = mix(h, d.row_stride_bytes);
  h = mix(h, (uint64_t(d.box_rows) << 32) | d.box_cols);
  h = mix(h, uint64_t(uint32_t(d.l2_promotion_bytes)));
  h = mix(h, d.planes);
  h = mix(h, d.plane_stride_bytes);
  h = mix(h, d.box_planes);
  return mix(h, (uint64_t(uint32_t(d.elem_bytes)) << 32) | uint32_t(d.swizzle_bytes));
}

// Every GemmShape field that a launch rule may read (alpha only scales; beta only as != 0).
bool sameShape(const gemm::GemmShape& x, const gemm::GemmShape& y) {
  return x.layout == y.layout && x.ab == y.ab && x.c == y.c && x.m == y.m && x.n == y.n &&
         x.k == y.k && x.lda == y.lda && x.ldb == y.ldb && x.ldc == y.ldc &&
         (x.beta != 0.0f) == (y.beta != 0.0f) && x.has_bias == y.has_bias && x.act == y.act &&
         x.aligned16 == y.aligned16;
}

size_t hashScratchKey(const Config& c, const gemm::GemmShape& s) {
  size_t h = 0;
  for (const auto& [name, value] : c.params()) {
    h = mix(h, std::hash<std::string>()(name));
    h = mix(h, std::holds_alternative<int64_t>(value)
                   ? static_cast<uint64_t>(std::get<int64_t>(value))
                   : std::hash<std::string>()(std::get<std::string>(value)));
  }
  for (int64_t v : {s.m, s.n, s.k, s.lda, s.ldb, s.ldc}) h = mix(h, static_cast<uint64_t>(v));
  return mix(h, (static_cast<uint64_t>(s.layout) << 16) | (static_cast<uint64_t>(s.ab) << 12) |
                    (static_cast<uint64_t>(s.c) << 8) | (static_cast<uint64_t>(s.act) << 4) |
                    (s.has_bias ? 1u : 0u) | (s.beta != 0.0f ? 2u : 0u) | (s.aligned16 ? 4u : 0u));
}

}  // namespace

Expected<ScratchPlanCache::Need> ScratchPlanCache::get(const Config& c, const gemm::GemmShape& s,
                                                       const PlanFn& plan) {
  const size_t h = hashScratchKey(c, s);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto [it, end] = entries_.equal_range(h); it != end; ++it)
      if (it->second.config == c && sameShape(it->second.shape, s)) return it->second.need;
  }
  KTUNE_ASSIGN_OR_RETURN(gemm::LaunchPlan p, plan(c, s));  // outside the lock: it may be slow
  const Need need{p.workspace_bytes, p.counters};
  std::lock_guard<std::mutex> lock(mu_);
  ++plans_;
  if (entries_.size() >= capacity_) entries_.clear();
  entries_.emplace(h, Entry{c, s, need});
  return need;
}

int64_t ScratchPlanCache::plans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_;
}

bool TensorMapCache::Key::operator==(const Key& o) const {
  return sameDesc(a, o.a) && sameDesc(b, o.b) && sameDesc(c, o.c);
}

size_t TensorMapCache::Hash::operator()(const Key& k) const {
  return hashDesc(hashDesc(hashDesc(0, k.a), k.b), k.c);
}

TensorMapCache::Maps TensorMapCache::get(const gemm::TmaDescriptors& d, const Encode& encode) {
  const Key key{d.a, d.b, d.c};
  std::lock_guard<std::mutex> lock(mu_);
  auto it = maps_.find(key);
  if (it != maps_.end()) return it->second;
  Maps m;
  auto one = [&](const TensorMap2DDesc& desc, TensorMap& out, bool& ok) {
    auto r = encode(desc);
    ++encodes_;
    ok = r.ok();
    out = ok ? *r : TensorMap{};
  };
  one(d.a, m.a, m.a_ok);
  one(d.b, m.b, m.b_ok);
  one(d.c, m.c, m.c_ok);
  if (maps_.size() >= capacity_ && !order_.empty()) {
    maps_.erase(order_.front());
    order_.pop_front();
  }
  maps_.emplace(key, m);
  order_.push_back(key);
  return m;
}

int64_t TensorMapCache::encodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return encodes_;
}

size_t TensorMapCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return maps_.size();
}

}  // namespace ktune
