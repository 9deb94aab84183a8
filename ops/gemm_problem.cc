// GEMM problems as JSON (offline tuning, isolation worker): a call's shape to JSON and back, and
// a call with its own random-filled buffers.
#include "ops/gemm.h"

#include <cfloat>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>

#include "ops/buffers.h"
#include "base/dtype.h"
#include "base/json_bounded.h"
#include "base/json_fields.h"

namespace ktune {
namespace {

using Json = nlohmann::json;

Status badField(const char* name, const std::string& what) {
  return Status::InvalidArgument(std::string("GEMM args JSON: field '") + name + "' " + what);
}

// The field, or nullptr when it is absent (or null) and optional.
Expected<const Json*> findField(const Json& j, const char* name, bool required) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    if (required)
      return badField(name, "is missing (the line was not written by ktune, or was cut)");
    return static_cast<const Json*>(nullptr);
  }
  return &*it;
}

// A numeric field read as T (jsonfields::checkedNumber); nullopt when optional and absent. Only
// integers when `integer`: 4096.5 or "4096" are not sizes (checkedNumber would truncate a float).
template <class T>
Expected<std::optional<T>> numberField(const Json& j, const char* name, bool required,
                                       bool integer) {
  KTUNE_ASSIGN_OR_RETURN(const Json* v, findField(j, name, required));
  if (!v) return std::optional<T>();
  if (integer ? !v->is_number_integer() : !v->is_number())
    return badField(name, std::string(integer ? "must be an integer" : "must be a number") +
                              ", got " + v->dump());
  try {
    return std::optional<T>(jsonfields::checkedNumber<T>(*v, name));
  } catch (const std::exception&) {
    return badField(name,
                    "value " + v->dump() + (integer ? " is out of range" : " is not a number"));
  }
}

// An integer field in [lo, hi]; `fallback` when optional and absent.
Expected<int64_t> intField(const Json& j, const char* name, bool required, int64_t fallback,
                           int64_t lo, int64_t hi) {
  KTUNE_ASSIGN_OR_RETURN(std::optional<int64_t> v, numberField<int64_t>(j, name, required, true));
  if (!v) return fallback;
  if (*v < lo || *v > hi)
    return badField(name, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                              "], got " + std::to_string(*v));
  return *v;
}

Expected<float> floatField(const Json& j, const char* name, float fallback) {
  KTUNE_ASSIGN_OR_RETURN(std::optional<double> d, numberField<double>(j, name, false, false));
  if (!d) return fallback;
  if (!std::isfinite(*d) || std::fabs(*d) > double(FLT_MAX))
    return badField(name, "must be a finite float, got " + Json(*d).dump());
  return static_cast<float>(*d);
}

Expected<bool> boolField(const Json& j, const char* name, bool fallback) {
  KTUNE_ASSIGN_OR_RETURN(const Json* v, findField(j, name, false));
  if (!v) return fallback;
  if (!v->is_boolean()) return badField(name, "must be true or false, got " + v->dump());
  return v->get<bool>();
}

template <class T>
Expected<T> enumField(const Json& j, const char* name, bool required, T fallback,
                      Expected<T> (*parse)(const std::string&), const char* accepted) {
  KTUNE_ASSIGN_OR_RETURN(const Json* v, findField(j, name, required));
  if (!v) return fallback;
  if (!v->is_string())
    return badField(name, std::string("must be a string (") + accepted + "), got " + v->dump());
  auto r = parse(v->get<std::string>());
  if (!r.ok())
    return badField(name, std::string("must be one of ") + accepted + ", got " + v->dump());
  return r;
}

// A GemmCall that owns its buffers (what make_problem returns, as a shared_ptr<GemmCall> whose
// deleter destroys this type).
struct OwnedGemmCall : GemmCall {
  Backend* backend = nullptr;
  std::vector<DevicePtr> allocations;
  OwnedGemmCall() = default;
  OwnedGemmCall(const OwnedGemmCall&) = delete;
  OwnedGemmCall& operator=(const OwnedGemmCall&) = delete;
  ~OwnedGemmCall() {
    for (DevicePtr p : allocations) (void)backend->free(p);
  }
};

}  // namespace

std::string gemmCallToJson(const GemmCall& call) {
  const gemm::GemmShape& s = call.shape;
  // The alignment the call's pointers give (what its key records); the shape's own flag for a
  // call without buffers.
  const bool aligned16 =
      (call.buf.a || call.buf.b) ? withAlignment(s, call.buf).aligned16 : s.aligned16;
  // Written by hand, not through nlohmann::json: this runs on the first call of every unseen key
  // in background tuning (the resolver rebuilds the problem from it), where the JSON object's
  // allocations were a quarter of the call's host cost. Same text as json::dump(): keys in
  // alphabetical order, floats in their shortest round-trip form with a ".0" when integral.
  auto num = [](double v) {
    char b[64];
    auto r = std::to_chars(b, b + sizeof(b), v);
    std::string t(b, r.ptr);
    if (t.find_first_of(".eEn") == std::string::npos) t += ".0";
    return t;
  };
  auto str = [](const char* v) { return std::string("\"") + v + "\""; };
  std::string j;
  j.reserve(256);
  j += "{\"ab\":" + str(gemm::elemTypeName(s.ab));
  j += ",\"act\":" + str(gemm::activationName(s.act));
  j += std::string(",\"aligned16\":") + (aligned16 ? "true" : "false");
  j += ",\"alpha\":" + num(s.alpha);
  j += ",\"beta\":" + num(s.beta);
  j += std::string(",\"bias\":") + (s.has_bias ? "true" : "false");
  j += ",\"c\":" + str(gemm::elemTypeName(s.c));
  j += ",\"k\":" + std::to_string(s.k);
  j += ",\"layout\":" + str(gemm::layoutName(s.layout));
  j += ",\"lda\":" + std::to_string(s.lda);
  j += ",\"ldb\":" + std::to_string(s.ldb);
  j += ",\"ldc\":" + std::to_string(s.ldc);
  j += ",\"m\":" + std::to_string(s.m);
  j += ",\"n\":" + std::to_string(s.n) + "}";
  return j;
}

Expected<gemm::GemmShape> gemmShapeFromJson(const std::string& text) {
  const Json j = parseJsonOrDiscarded(text);
  if (j.is_discarded() || !j.is_object())
    return Status::InvalidArgument("GEMM args JSON is not a JSON object: '" + text.substr(0, 80) +
                                   "' (expected what gemmCallToJson writes)");
  constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();
  constexpr int64_t kMaxLd = int64_t(1) << 60;  // gemm::validate bounds the spans further
  KTUNE_ASSIGN_OR_RETURN(gemm::Layout layout,
                         enumField<gemm::Layout>(j, "layout", true, gemm::Layout::kNN,
                                                 gemm::parseLayout, "NN, NT, TN, TT"));
  KTUNE_ASSIGN_OR_RETURN(gemm::ElemType ab,
                         enumField<gemm::ElemType>(j, "ab", true, gemm::ElemType::kBF16,
                                                   gemm::parseElemType, "bf16, f16, f8e4m3, f8e5m2"));
  KTUNE_ASSIGN_OR_RETURN(gemm::ElemType c,
                         enumField<gemm::ElemType>(j, "c", true, gemm::ElemType::kBF16,
                                                   gemm::parseElemType, "bf16, f16, f32"));
  KTUNE_ASSIGN_OR_RETURN(int64_t m, intField(j, "m", true, 0, 1, kMaxDim));
  KTUNE_ASSIGN_OR_RETURN(int64_t n, intField(j, "n", true, 0, 1, kMaxDim));
  KTUNE_ASSIGN_OR_RETURN(int64_t k, intField(j, "k", true, 0, 1, kMaxDim));
  gemm::GemmShape s = gemm::denseShape(layout, ab, c, m, n, k);
  KTUNE_ASSIGN_OR_RETURN(s.lda, intField(j, "lda", false, s.lda, 1, kMaxLd));
  KTUNE_ASSIGN_OR_RETURN(s.ldb, intField(j, "ldb", false, s.ldb, 1, kMaxLd));
  KTUNE_ASSIGN_OR_RETURN(s.ldc, intField(j, "ldc", false, s.ldc, 1, kMaxLd));
  KTUNE_ASSIGN_OR_RETURN(s.alpha, floatField(j, "alpha", 1.0f));
  KTUNE_ASSIGN_OR_RETURN(s.beta, floatField(j, "beta", 0.0f));
  KTUNE_ASSIGN_OR_RETURN(s.has_bias, boolField(j, "bias", false));
  KTUNE_ASSIGN_OR_RETURN(s.act,
                         enumField<gemm::Activation>(j, "act", false, gemm::Activation::kNone,
                                                     gemm::parseActivation, "none, silu, gelu"));
  KTUNE_ASSIGN_OR_RETURN(s.aligned16, boolField(j, "aligned16", true));
  Status v = gemm::validate(s);
  if (!v.ok()) return Status::InvalidArgument("GEMM args JSON: " + v.message());
  return s;
}

Expected<std::shared_ptr<GemmCall>> makeGemmProblem(Backend& backend, const DeviceInfo& device,
                                                    const gemm::GemmShape& shape, uint64_t seed) {
  KTUNE_RETURN_IF_ERROR(gemm::validate(shape));
  const DType ab = dtypeOf(shape.ab), cd = dtypeOf(shape.c);
  // Whole rows x leading dimension (C is snapshotted and poisoned that way by the op); A gets 16
  // spare bytes for the misaligned start. validate() bounds the spans by 2^60 bytes, but a huge
  // leading dimension on the last row is not in the span, so the products are checked here.
  const int64_t a_rows = gemm::storedRowsA(shape), b_rows = gemm::storedRowsB(shape);
  int64_t a_bytes = 0, b_bytes = 0, c_bytes = 0, total = 0;
  if (__builtin_mul_overflow(a_rows, shape.lda, &a_bytes) ||
      __builtin_mul_overflow(a_bytes, int64_t(sizeOf(ab)), &a_bytes) ||
      __builtin_add_overflow(a_bytes, int64_t(16), &a_bytes) ||
      __builtin_mul_overflow(b_rows, shape.ldb, &b_bytes) ||
      __builtin_mul_overflow(b_bytes, int64_t(sizeOf(ab)), &b_bytes) ||
      __builtin_mul_overflow(shape.m, shape.ldc, &c_bytes) ||
      __builtin_mul_overflow(c_bytes, int64_t(sizeOf(cd)), &c_bytes) ||
      __builtin_add_overflow(a_bytes, b_bytes, &total) ||
      __builtin_add_overflow(total, c_bytes, &total) || total > (int64_t(1) << 60))
    return Status::InvalidArgument(
        "GEMM problem: A, B and C need more than 2^60 bytes; check the leading dimensions");
  const int64_t bias_bytes = shape.has_bias ? shape.n * int64_t(sizeOf(cd)) : 0;
  total += bias_bytes;
  if (device.global_mem_bytes > 0 && total > device.global_mem_bytes)
    return Status::OutOfResources("GEMM problem needs " + std::to_string(total) +
                                  " bytes of device memory for A, B and C, more than the " +
                                  std::to_string(device.global_mem_bytes) + " bytes of " +
                                  device.name + "; tune a smaller shape on this device");
  auto call = std::make_shared<OwnedGemmCall>();
  call->backend = &backend;
  call->shape = shape;
  auto alloc = [&](int64_t bytes) -> Expected<DevicePtr> {
    KTUNE_ASSIGN_OR_RETURN(DevicePtr p, backend.alloc(static_cast<size_t>(bytes)));
    call->allocations.push_back(p);
    return p;
  };
  KTUNE_ASSIGN_OR_RETURN(DevicePtr a, alloc(a_bytes));
  // Allocations are at least 16-byte aligned on every backend, so +2 bytes makes A (and with it
  // the whole call) take the unaligned path, as the recorded call did.
  call->buf.a = shape.aligned16 ? a : a + 2;
  KTUNE_ASSIGN_OR_RETURN(call->buf.b, alloc(b_bytes));
  KTUNE_ASSIGN_OR_RETURN(call->buf.c, alloc(c_bytes));
  if (shape.has_bias) {
    KTUNE_ASSIGN_OR_RETURN(call->buf.bias, alloc(bias_bytes));
  }
  KTUNE_RETURN_IF_ERROR(fillRandom(backend, call->buf.a, ab, a_rows * shape.lda, seed));
  KTUNE_RETURN_IF_ERROR(fillRandom(backend, call->buf.b, ab, b_rows * shape.ldb, seed + 1));
  KTUNE_RETURN_IF_ERROR(fillRandom(backend, call->buf.c, cd, shape.m * shape.ldc, seed + 2));
  if (shape.has_bias) {
    KTUNE_RETURN_IF_ERROR(fillRandom(backend, call->buf.bias, cd, shape.n, seed + 3));
  }
  call->shape = withAlignment(shape, call->buf);
  return std::shared_ptr<GemmCall>(std::move(call));
}

}  // namespace ktune
