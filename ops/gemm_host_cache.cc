#include "ops/gemm_host_cache.h"

namespace ktune {

namespace {

bool sameDesc(const TensorMap2DDesc& x, const TensorMap2DDesc& y) {
  return x.base == y.base && x.elem_bytes == y.elem_bytes && x.rows == y.rows && x.cols == y.cols &&
         x.row_stride_bytes == y.row_stride_bytes && x.box_rows == y.box_rows &&
         x.box_cols == y.box_cols && x.swizzle_bytes == y.swizzle_bytes;
}

size_t mix(size_t h, uint64_t v) { return h ^ (std::hash<uint64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

size_t hashDesc(size_t h, const TensorMap2DDesc& d) {
  h = mix(h, d.base);
  h = mix(h, d.rows);
  h = mix(h, d.cols);
  h = mix(h, d.row_stride_bytes);
  h = mix(h, (uint64_t(d.box_rows) << 32) | d.box_cols);
  return mix(h, (uint64_t(uint32_t(d.elem_bytes)) << 32) | uint32_t(d.swizzle_bytes));
}

}  // namespace

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
