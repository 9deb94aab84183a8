// SHA-256 (FIPS 180-4). Used for content-addressed cache keys and integrity checks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ktune {

class Sha256 {
 public:
  Sha256();
  Sha256& update(const void* data, size_t len);
  Sha256& update(std::string_view s) { return update(s.data(), s.size()); }
  // Length-prefixed field, so ("ab","c") and ("a","bc") hash differently.
  Sha256& field(std::string_view s);
  // 64 lowercase hex characters. The object must not be updated afterwards.
  std::string hexDigest();
  // The 32 raw bytes of the digest (same rule).
  std::string rawDigest();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256Hex(std::string_view data);

// HMAC-SHA256 (RFC 2104): authenticates data shared between machines with a secret key (the
// remote cache's code objects, remote/cache.h). update()/field() as Sha256's.
class HmacSha256 {
 public:
  explicit HmacSha256(std::string_view key);
  HmacSha256& update(std::string_view s) {
    inner_.update(s);
    return *this;
  }
  HmacSha256& field(std::string_view s) {
    inner_.field(s);
    return *this;
  }
  // 64 lowercase hex characters; the object must not be updated afterwards.
  std::string hexDigest();

 private:
  Sha256 inner_, outer_;
};

std::string hmacSha256Hex(std::string_view key, std::string_view data);
// Equality that takes the same time wherever the strings differ (for comparing MACs).
bool constantTimeEqual(std::string_view a, std::string_view b);

}  // namespace ktune
