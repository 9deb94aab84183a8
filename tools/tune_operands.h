#pragma once
// The random GEMM operands `ktune tune gemm` fills for its keys (internal to the CLI).
#include <cstdint>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "ops/buffers.h"
#include "ops/gemm.h"
#include "runtime/backend.h"

namespace ktune::cli {

// Random device buffer of `count` elements of `t`, values in [-1, 1).
inline Expected<DevicePtr> randomBuffer(Backend& b, DType t, int64_t count, uint64_t seed) {
  KTUNE_ASSIGN_OR_RETURN(DevicePtr p, b.alloc(size_t(count) * sizeOf(t)));
  Status s = fillRandom(b, p, t, count, seed);
  if (!s.ok()) {
    (void)b.free(p);
    return s;
  }
  return p;
}

// The random operands of a GEMM key: (dtype, element count, seed) of A, B, C and the bias.
struct GemmOperand {
  DType t;
  int64_t count;
  uint64_t seed;
};
inline std::vector<GemmOperand> gemmOperands(const gemm::GemmShape& s) {
  const DType ab = s.ab == gemm::ElemType::kF16 ? DType::kF16 : DType::kBF16;
  const DType cd = s.c == gemm::ElemType::kF32 ? DType::kF32
                   : s.c == gemm::ElemType::kF16 ? DType::kF16 : DType::kBF16;
  std::vector<GemmOperand> o = {{ab, gemm::storedRowsA(s) * s.lda, 11},
                                {ab, gemm::storedRowsB(s) * s.ldb, 12},
                                {cd, s.m * s.ldc, 13}};
  if (s.has_bias) o.push_back({cd, s.n, 14});
  return o;
}

// The GEMM operands of a command's keys, shared by them: an operand is filled again only when a
// key needs more of it than the fill so far holds (then at that key's count). fillRandom's element
// i does not depend on the count, so the first n elements of a larger fill are a fill of n, bit
// for bit, and a key sees the inputs it would have had alone. Key by key, the LLM suite filled its
// 28672-wide operands twice and every operand of every key; growing as the keys need it keeps each
// key's fill no larger than the isolation worker's for the same key (its kept fills grow the same
// way, ops/buffers.h), which runs at the same time. C is filled again for a key that reads it
// (beta != 0): the keys before wrote it.
class SharedOperands {
 public:
  explicit SharedOperands(Backend& b) : b_(&b) {}
  ~SharedOperands() {
    for (const Slot& s : slots_) (void)b_->free(s.p);
  }
  SharedOperands(const SharedOperands&) = delete;
  SharedOperands& operator=(const SharedOperands&) = delete;

  Expected<GemmCall> call(const gemm::GemmShape& s) {
    GemmCall call;
    call.shape = s;
    const auto ops = gemmOperands(s);
    DevicePtr* dst[] = {&call.buf.a, &call.buf.b, &call.buf.c, &call.buf.bias};
    for (size_t i = 0; i < ops.size(); ++i) {
      KTUNE_ASSIGN_OR_RETURN(*dst[i], get(ops[i], /*refill=*/i == 2 && s.beta != 0.0f));
    }
    return call;
  }

 private:
  struct Slot {
    DType t;
    uint64_t seed;
    int64_t count;
    DevicePtr p;
  };
  Expected<DevicePtr> get(const GemmOperand& o, bool refill) {
    for (auto it = slots_.begin(); it != slots_.end(); ++it) {
      if (int(it->t) != int(o.t) || it->seed != o.seed) continue;
      if (it->count >= o.count) {
        if (refill) KTUNE_RETURN_IF_ERROR(fillRandom(*b_, it->p, o.t, o.count, o.seed));
        return it->p;
      }
      (void)b_->free(it->p);
      slots_.erase(it);
      break;
    }
    KTUNE_ASSIGN_OR_RETURN(DevicePtr p, randomBuffer(*b_, o.t, o.count, o.seed));
    slots_.push_back({o.t, o.seed, o.count, p});
    return p;
  }
  Backend* b_;
  std::vector<Slot> slots_;
};

}  // namespace ktune::cli
