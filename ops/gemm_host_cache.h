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

#include "base/config.h"
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

// The scratch a GEMM launch needs (gemm::launchPlan's workspace_bytes and counters), cached per
// (config, problem): the launch rule is asked once, a later launch of the same pair costs a hash
// and a compare, no allocation. The op sizes its split-K workspace from it, so a kernel's own rule
// (stream-K ranges that cut tiles, a persistent grid's split tail) decides, never its kind.
// Thread-safe. Bounded: at `capacity` entries the cache starts over.
class ScratchPlanCache {
 public:
  struct Need {
    int64_t workspace_bytes = 0, counters = 0;
  };
  using PlanFn = std::function<Expected<gemm::LaunchPlan>(const Config&, const gemm::GemmShape&)>;
  explicit ScratchPlanCache(size_t capacity = 4096) : capacity_(capacity ? capacity : 1) {}

  // `c` is the op's config (KIND and knobs); errors are the plan's (not cached).
  Expected<Need> get(const Config& c, const gemm::GemmShape& s, const PlanFn& plan);
  // Launch rules asked so far (tests).
  int64_t plans() const;

 private:
  struct Entry {
    Config config;
    gemm::GemmShape shape;
    Need need;
  };
  const size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_multimap<size_t, Entry> entries_;  // by hash of (config, shape)
  int64_t plans_ = 0;
};

}  // namespace ktune
