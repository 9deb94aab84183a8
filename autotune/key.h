// Problem keys: what a family's key function builds from a problem, and the bucketing helpers
// that let nearby shapes share one key (and one tuning run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ktune {

// A problem's cache key: up to kMaxFields named integer or short-string fields, built without
// allocation on the hot path. Field names must be string literals (they are kept by pointer);
// string values are copied (at most kMaxChars bytes in total, longer is an error at tuning time).
class KeyBuilder {
 public:
  static constexpr int kMaxFields = 12;
  static constexpr int kMaxChars = 96;
  KeyBuilder& add(const char* name, int64_t value);
  KeyBuilder& add(const char* name, std::string_view value);
  KeyBuilder& add(const char* name, const char* value) { return add(name, std::string_view(value)); }
  KeyBuilder& add(const char* name, int value) { return add(name, int64_t(value)); }
  // "M=128,N=4096,dtype=bf16" (field order as added); kNoFields for a key with no fields.
  std::string toString() const;
  static constexpr const char* kNoFields = "(no fields)";
  bool overflowed() const { return overflow_; }
  size_t hash() const;
  bool operator==(const KeyBuilder& o) const;
  void clear() { n_ = 0; chars_ = 0; overflow_ = false; }

 private:
  struct Field {
    const char* name;
    int64_t value;     // integer value, or offset of the string in chars_ buffer
    int16_t str_len;   // -1: integer field
  };
  Field f_[kMaxFields];
  char buf_[kMaxChars];
  int n_ = 0, chars_ = 0;
  bool overflow_ = false;
};
struct KeyBuilderHash {
  size_t operator()(const KeyBuilder& k) const { return k.hash(); }
};

// Bucketing helpers for key functions: nearby shapes share one key (and one tuning).
int64_t nextPow2(int64_t v);                  // 1, 2, 4, ...; v <= 1 -> 1
int64_t roundUpTo(int64_t v, int64_t multiple);
int64_t ceilDiv(int64_t a, int64_t b);
// Powers of two up to `cap`, then multiples of `cap` (e.g. row counts: 1..1024 pow2, then 1024s).
int64_t bucketPow2Capped(int64_t v, int64_t cap);

}  // namespace ktune
