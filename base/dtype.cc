#include "base/dtype.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace ktune {

size_t sizeOf(DType t) {
  switch (t) {
    case DType::kF32: case DType::kTF32: case DType::kI32: return 4;
    case DType::kF16: case DType::kBF16: return 2;
    case DType::kF64: return 8;
    case DType::kI8: case DType::kU8: case DType::kF8E4M3: case DType::kF8E5M2: return 1;
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
    case DType::kF8E4M3: return "f8e4m3";
    case DType::kF8E5M2: return "f8e5m2";
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
  if (n == "f8e4m3" || n == "fp8e4m3" || n == "e4m3" || n == "float8_e4m3fn") return DType::kF8E4M3;
  if (n == "f8e5m2" || n == "fp8e5m2" || n == "e5m2" || n == "float8_e5m2") return DType::kF8E5M2;
  return Status::InvalidArgument("unknown dtype '" + std::string(n) +
                                 "' (expected f32, f16, bf16, tf32, f64, i32, i8, u8, f8e4m3 or "
                                 "f8e5m2)");
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
// The two formats: mantissa bits, exponent bias, largest finite magnitude's bit pattern.
struct Fp8Format {
  int man, bias;
  uint8_t max_bits;
};
Fp8Format fp8Format(DType t) {
  return t == DType::kF8E4M3 ? Fp8Format{3, 7, 0x7e} : Fp8Format{2, 15, 0x7b};
}
}  // namespace

float fp8ToFloat(uint8_t v, DType t) {
  const Fp8Format f = fp8Format(t);
  const int e_bits = 7 - f.man, e = (v >> f.man) & ((1 << e_bits) - 1), m = v & ((1 << f.man) - 1);
  const float sign = (v & 0x80) ? -1.0f : 1.0f;
  if (t == DType::kF8E4M3 && (v & 0x7f) == 0x7f) return std::nanf("");
  if (t == DType::kF8E5M2 && e == 31) return m ? std::nanf("") : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(static_cast<float>(m), 1 - f.bias - f.man);
  return sign * std::ldexp(static_cast<float>((1 << f.man) | m), e - f.bias - f.man);
}

uint8_t floatToFp8(float x, DType t) {
  const Fp8Format f = fp8Format(t);
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return t == DType::kF8E4M3 ? 0x7f : 0x7e;
  const float a = std::fabs(x);
  const float max = fp8ToFloat(f.max_bits, t);
  if (a >= max) return static_cast<uint8_t>(sign | f.max_bits);
  // Spacing of the representable values around a: 2^(exponent - man), at least the subnormal step.
  int exp = 0;
  std::frexp(a, &exp);  // a = frac * 2^exp, frac in [0.5, 1)
  const int min_exp = 1 - f.bias;  // exponent of the smallest normal, as 2^min_exp
  const float step = std::ldexp(1.0f, std::max(exp - 1, min_exp) - f.man);
  const float q = std::nearbyint(a / step) * step;  // round half to even (default mode)
  if (q >= max) return static_cast<uint8_t>(sign | f.max_bits);
  if (q == 0.0f) return sign;
  int qe = 0;
  const float qf = std::frexp(q, &qe);  // q = qf * 2^qe
  const int biased = qe - 1 + f.bias;
  if (biased <= 0)  // subnormal: q / 2^(min_exp - man)
    return static_cast<uint8_t>(sign | static_cast<int>(q / std::ldexp(1.0f, min_exp - f.man)));
  const int man = static_cast<int>((qf * 2.0f - 1.0f) * static_cast<float>(1 << f.man));
  return static_cast<uint8_t>(sign | (biased << f.man) | man);
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
    case DType::kF8E4M3: case DType::kF8E5M2: return fp8ToFloat(b[i], t);
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
    case DType::kF8E4M3: case DType::kF8E5M2: b[i] = floatToFp8(static_cast<float>(v), t); return;
  }
}

}  // namespace ktune
