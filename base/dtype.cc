#include "base/dtype.h"

#include <cmath>
#include <string>

namespace ktune {

size_t sizeOf(DType t) {
  switch (t) {
    case DType::kF32: case DType::kTF32: case DType::kI32: return 4;
    case DType::kF16: case DType::kBF16: return 2;
    case DType::kF64: return 8;
    case DType::kI8: case DType::kU8: return 1;
  }
  return 1;
}

const char* dtypeName(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kTF32: return "tf32";
    case DType::kF64: return "f64";
    case DType::kI32: return "i32";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
  }
  return "unknown";
}

Expected<DType> parseDType(std::string_view n) {
  if (n == "f32" || n == "fp32" || n == "float32" || n == "float") return DType::kF32;
  if (n == "f16" || n == "fp16" || n == "float16" || n == "half") return DType::kF16;
  if (n == "bf16" || n == "bfloat16") return DType::kBF16;
  if (n == "tf32") return DType::kTF32;
  if (n == "f64" || n == "fp64" || n == "float64" || n == "double") return DType::kF64;
  if (n == "i32" || n == "int32") return DType::kI32;
  if (n == "i8" || n == "int8") return DType::kI8;
  if (n == "u8" || n == "uint8") return DType::kU8;
  return Status::InvalidArgument("unknown dtype '" + std::string(n) +
                                 "' (expected f32, f16, bf16, tf32, f64, i32, i8 or u8)");
}

bool isFloating(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kTF32 ||
         t == DType::kF64;
}

uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (absx < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    // Shift the mantissa (with its implicit bit) into subnormal position, rounding to even.
    if (absx < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25 rounds to 0
    int e = static_cast<int>(absx >> 23);
    uint32_t m = (absx & 0x7fffffu) | 0x800000u;
    int shift = 126 - e;  // 113 - e + 13
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t r = absx - 0x38000000u;  // rebias exponent 127 -> 15
  uint32_t q = r >> 13;
  uint32_t rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0) {
    if (m == 0) return bitsToFloat(sign);
    float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  if (e == 31) return bitsToFloat(sign | 0x7f800000u | (m << 13));
  return bitsToFloat(sign | ((e + 112) << 23) | (m << 13));
}

namespace {

// Element i of an array of T at `b`, read and written bytewise (no alignment assumed).
template <typename T>
T loadAt(const unsigned char* b, int64_t i) {
  T v;
  std::memcpy(&v, b + sizeof(T) * i, sizeof(T));
  return v;
}

template <typename T>
void storeAt(unsigned char* b, int64_t i, T v) {
  std::memcpy(b + sizeof(T) * i, &v, sizeof(T));
}

}  // namespace

double loadAsDouble(const void* data, DType t, int64_t i) {
  const auto* b = static_cast<const unsigned char*>(data);
  switch (t) {
    case DType::kF32: case DType::kTF32: return loadAt<float>(b, i);
    case DType::kF16: return halfToFloat(loadAt<uint16_t>(b, i));
    case DType::kBF16: return bf16ToFloat(loadAt<uint16_t>(b, i));
    case DType::kF64: return loadAt<double>(b, i);
    case DType::kI32: return loadAt<int32_t>(b, i);
    case DType::kI8: return static_cast<int8_t>(b[i]);
    case DType::kU8: return b[i];
  }
  return 0;
}

void storeFromDouble(void* data, DType t, int64_t i, double v) {
  auto* b = static_cast<unsigned char*>(data);
  switch (t) {
    case DType::kF32: case DType::kTF32: return storeAt(b, i, static_cast<float>(v));
    case DType::kF16: return storeAt(b, i, floatToHalf(static_cast<float>(v)));
    case DType::kBF16: return storeAt(b, i, floatToBf16(static_cast<float>(v)));
    case DType::kF64: return storeAt(b, i, v);
    case DType::kI32: return storeAt(b, i, static_cast<int32_t>(v));
    case DType::kI8: b[i] = static_cast<unsigned char>(static_cast<int8_t>(v)); return;
    case DType::kU8: b[i] = static_cast<unsigned char>(v); return;
  }
}

}  // namespace ktune
