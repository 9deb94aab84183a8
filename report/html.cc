#include "report/html.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace ktune::report {
namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one (overlong forms,
// surrogates and values above U+10FFFF included).
size_t utf8Length(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return 1;
  size_t n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
  if (n == 0 || b > 0xF4 || i + n > s.size()) return 0;
  uint32_t cp = b & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3F);
  }
  const bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  if (overlong || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return n;
}

}  // namespace

std::string esc(std::string_view s) {
  std::string o;
  o.reserve(s.size() + s.size() / 8);
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const size_t n = utf8Length(s, i);
    if (n == 0) {
      o += kReplacement;
      ++i;
      continue;
    }
    if (n > 1) {
      // C1 controls (U+0080..U+009F) are parse errors in HTML too.
      const bool c1 = static_cast<unsigned char>(c) == 0xC2 &&
                      static_cast<unsigned char>(s[i + 1]) < 0xA0;
      if (c1) {
        o += kReplacement;
      } else {
        o.append(s.data() + i, n);
      }
      i += n;
      continue;
    }
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      case '\t':
      case '\n': o += c; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
          o += kReplacement;
        else
          o += c;
    }
    ++i;
  }
  return o;
}

std::string clip(std::string_view s, size_t max_chars) {
  size_t i = 0, chars = 0;
  while (i < s.size() && chars < max_chars) {
    const size_t n = utf8Length(s, i);
    i += n == 0 ? 1 : n;
    ++chars;
  }
  if (i >= s.size()) return std::string(s);
  return std::string(s.substr(0, i)) + "\xE2\x80\xA6";  // …
}

std::string escWrap(std::string_view s, size_t max_chars) {
  std::string o;
  for (char c : escClip(s, max_chars)) {
    o += c;
    if (c == ',') o += "<wbr>";
  }
  return o;
}

std::string num(double v, int decimals) {
  if (!std::isfinite(v)) return "\xE2\x80\x93";  // –
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string micros(double ms) {
  if (!std::isfinite(ms)) return "\xE2\x80\x93";
  const double us = ms * 1e3;
  const double a = std::fabs(us);
  if (a < 5e-4) return "0 \xC2\xB5s";
  const int decimals = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f \xC2\xB5s", decimals, us);
  return buf;
}

}  // namespace ktune::report
