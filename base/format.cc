#include "base/format.h"

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

namespace ktune {

std::string strprintf(const char* fmt, ...) {
  char small[128];
  va_list ap;
  va_start(ap, fmt);
  va_list again;
  va_copy(again, ap);
  const int n = std::vsnprintf(small, sizeof(small), fmt, ap);
  va_end(ap);
  std::string out;
  if (n < 0) {
    out.clear();
  } else if (static_cast<size_t>(n) < sizeof(small)) {
    out.assign(small, static_cast<size_t>(n));
  } else {
    out.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(out.data(), out.size(), fmt, again);
    out.resize(static_cast<size_t>(n));
  }
  va_end(again);
  return out;
}

namespace {
// Length of the valid UTF-8 sequence at s[i] (2 to 4), or 0; its code point in *cp.
size_t utf8Length(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n = b >= 0xf0 && b <= 0xf4 ? 4 : b >= 0xe0 ? 3 : b >= 0xc2 && b < 0xe0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  uint32_t c = b & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto cb = static_cast<unsigned char>(s[i + k]);
    if ((cb & 0xc0) != 0x80) return 0;
    c = (c << 6) | (cb & 0x3f);
  }
  const uint32_t min = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
  if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
  *cp = c;
  return n;
}
}  // namespace

std::string printable(std::string_view text, bool keep_lines) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&out](unsigned char b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\x%02x", b);
    out += buf;
  };
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b == '\\' && !keep_lines) {
      out += "\\\\";
      ++i;
    } else if ((b >= 0x20 && b < 0x7f) || (keep_lines && (b == '\n' || b == '\t'))) {
      out += char(b);
      ++i;
    } else if (b < 0x80) {
      escape(b);
      ++i;
    } else {
      uint32_t cp = 0;
      const size_t n = utf8Length(text, i, &cp);
      if (n == 0 || cp <= 0x9f) {  // not UTF-8, or a C1 control (U+0080..U+009F)
        for (size_t k = 0; k < std::max<size_t>(n, 1); ++k)
          escape(static_cast<unsigned char>(text[i + k]));
        i += std::max<size_t>(n, 1);
      } else {
        out.append(text.substr(i, n));
        i += n;
      }
    }
  }
  return out;
}

namespace {

void expandInto(std::string_view text,
                const std::function<std::string_view(std::string_view)>& lookup, int depth,
                int max_depth, std::string& out) {
  constexpr std::string_view kInc = "#include \"";
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    std::string_view body;
    if (depth < max_depth && line.substr(0, kInc.size()) == kInc &&
        line.size() > kInc.size() + 1 && line.back() == '"')
      body = lookup(line.substr(kInc.size(), line.size() - kInc.size() - 1));
    if (!body.empty()) {
      expandInto(body, lookup, depth + 1, max_depth, out);
      if (out.empty() || out.back() != '\n') out += '\n';
    } else {
      out.append(line);
      if (end < text.size()) out += '\n';
    }
    pos = end + 1;
  }
}

}  // namespace

std::string expandIncludes(std::string_view text,
                           const std::function<std::string_view(std::string_view)>& lookup,
                           int max_depth) {
  std::string out;
  expandInto(text, lookup, 0, max_depth, out);
  return out;
}

}  // namespace ktune
