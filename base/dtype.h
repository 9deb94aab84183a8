// ktune — element types and host-side conversions.
//
// DType names the storage type of a buffer (what a kernel reads/writes). kTF32 is not a storage
// type: it names fp32 storage computed with TF32 inputs (10-bit mantissa), used by the verifier to
// widen tolerances. fp16/bf16 conversions are exact bit manipulations with round-to-nearest-even,
// the same rounding the GPUs' cvt instructions use, so host references match device rounding.
// Everything here is pure and thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/status.h"

namespace ktune {

// kF8E4M3 (the OCP "e4m3fn": no infinities, largest finite 448) and kF8E5M2 (IEEE-like, largest
// finite 57344) are the 8-bit float formats of Hopper's FP8 tensor cores (GEMM inputs only).
enum class DType { kF32, kF16, kBF16, kTF32, kF64, kI32, kI8, kU8, kF8E4M3, kF8E5M2 };

// Bytes per element (kTF32 -> 4). Never 0.
size_t sizeOf(DType t);
// "f32", "f16", "bf16", "tf32", "f64", "i32", "i8", "u8", "f8e4m3", "f8e5m2" — a static string.
const char* dtypeName(DType t);
// Inverse of dtypeName; also accepts "fp32", "float32", "fp16", "half", "float16", "bfloat16",
// "fp8e4m3", "e4m3", "float8_e4m3fn" (torch's name), "fp8e5m2", "e5m2", "float8_e5m2".
// kInvalidArgument naming the accepted spellings otherwise.
Expected<DType> parseDType(std::string_view name);
// True for kF32, kF16, kBF16, kTF32, kF64 (the 8-bit floats are storage-only GEMM inputs: isFp8).
bool isFloating(DType t);
// True for kF8E4M3 and kF8E5M2.
inline bool isFp8(DType t) { return t == DType::kF8E4M3 || t == DType::kF8E5M2; }

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// bf16 <-> float. NaN stays a (quiet) NaN; rounding is to nearest even.
inline uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16ToFloat(uint16_t h) { return bitsToFloat(static_cast<uint32_t>(h) << 16); }

// IEEE binary16 <-> float, round to nearest even, subnormals and overflow to inf handled.
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);

// fp8 <-> float. Rounding is to nearest even; values beyond the largest finite one saturate to it
// (the "satfinite" conversion of the GPUs' cvt, and what scaled FP8 quantisation wants); NaN stays
// NaN. Decoding is exact (every fp8 value is a float).
uint8_t floatToFp8(float f, DType t);
float fp8ToFloat(uint8_t v, DType t);

// Reads element i of a host buffer of type t as double (kTF32 reads fp32).
double loadAsDouble(const void* data, DType t, int64_t i);
// Writes v (rounded to t) to element i of a host buffer.
void storeFromDouble(void* data, DType t, int64_t i, double v);

}  // namespace ktune
