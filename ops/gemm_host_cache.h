// Per-call host work of a GEMM launch, cached: the TMA kernels take three 128-byte tensor maps
// (A, B, C) whose encoding costs about a microsecond each, and a caller that changes pointers
// every call (rotating activations, a KV cache) would pay it on every call. The cache keys the
// maps by the full descriptors (pointer, shape, strides, box, swizzle), so a pointer seen before
// costs one hash lookup.
//
// Thread-safe. Bounded: when `capacity` descriptor triples are held the oldest is dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "base/device.h"
#include "base/status.h"
#include "templates/gemm.h"

namespace ktune {

class TensorMapCache {
 public:
  using Encode = std::function<Expected<TensorMap>(const TensorMap2DDesc&)>;
  struct Maps {
    TensorMap a, b, c;
    bool a_ok = false, b_ok = false, c_ok = false;  // encoded (else the map is zeroed)
  };
  explicit TensorMapCache(size_t capacity = 64) : capacity_(capacity ? capacity : 1) {}

  // The maps of `d`, encoded with `encode` on the first sight of these descriptors. An encoding
  // failure is cached as a zeroed map with its *_ok flag false (the caller decides what that means).
  Maps get(const gemm::TmaDescriptors& d, const Encode& encode);
  // Encodings done so far (each descriptor of a miss counts one), for tests and benches.
  int64_t encodes() const;
  size_t size() const;

 private:
  struct Key {
    TensorMap2DDesc a, b, c;
    bool operator==(const Key& o) const;
  };
  struct Hash {
    size_t operator()(const Key& k) const;
  };
  const size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<Key, Maps, Hash> maps_;
  std::deque<Key> order_;  // insertion order, for eviction
  int64_t encodes_ = 0;
};

}  // namespace ktune
