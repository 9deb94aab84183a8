#include "autotune/key.h"

#include <cstring>

namespace ktune {

KeyBuilder& KeyBuilder::add(const char* name, int64_t value) {
  if (n_ >= kMaxFields) {
    overflow_ = true;
    return *this;
  }
  f_[n_++] = Field{name, value, -1};
  return *this;
}

KeyBuilder& KeyBuilder::add(const char* name, std::string_view value) {
  if (n_ >= kMaxFields || chars_ + static_cast<int>(value.size()) > kMaxChars) {
    overflow_ = true;
    return *this;
  }
  std::memcpy(buf_ + chars_, value.data(), value.size());
  f_[n_++] = Field{name, chars_, static_cast<int16_t>(value.size())};
  chars_ += static_cast<int>(value.size());
  return *this;
}

std::string KeyBuilder::toString() const {
  // A family keyed on nothing (triton.autotune's key=[]) has one key; it needs a name the
  // database and the journal accept, and one no real key can take (those all have "name=").
  if (n_ == 0) return kNoFields;
  std::string s;
  for (int i = 0; i < n_; ++i) {
    if (i) s += ',';
    s += f_[i].name;
    s += '=';
    if (f_[i].str_len < 0) {
      s += std::to_string(f_[i].value);
    } else {
      s.append(buf_ + f_[i].value, static_cast<size_t>(f_[i].str_len));
    }
  }
  return s;
}

size_t KeyBuilder::hash() const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the values
  auto mix = [&](uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  for (int i = 0; i < n_; ++i) mix(static_cast<uint64_t>(f_[i].value) ^ (uint64_t(f_[i].str_len) << 48));
  for (int i = 0; i < chars_; ++i) mix(static_cast<unsigned char>(buf_[i]));
  return static_cast<size_t>(h);
}

bool KeyBuilder::operator==(const KeyBuilder& o) const {
  if (n_ != o.n_ || chars_ != o.chars_ || overflow_ != o.overflow_) return false;
  for (int i = 0; i < n_; ++i) {
    if (f_[i].value != o.f_[i].value || f_[i].str_len != o.f_[i].str_len) return false;
    if (f_[i].name != o.f_[i].name && std::strcmp(f_[i].name, o.f_[i].name) != 0) return false;
  }
  return std::memcmp(buf_, o.buf_, static_cast<size_t>(chars_)) == 0;
}

int64_t nextPow2(int64_t v) {
  int64_t p = 1;
  while (p < v && p < (int64_t(1) << 62)) p <<= 1;
  return p;
}
int64_t roundUpTo(int64_t v, int64_t m) { return m <= 0 ? v : (v + m - 1) / m * m; }
int64_t ceilDiv(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }
int64_t bucketPow2Capped(int64_t v, int64_t cap) {
  return v <= cap ? nextPow2(v) : roundUpTo(v, cap);
}

}  // namespace ktune
