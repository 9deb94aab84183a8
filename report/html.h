// Text helpers for the HTML report: escaping of every string that comes from a file, length
// clipping that keeps UTF-8 whole, and number formatting. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ktune::report {

// `s` made safe as HTML text, as a quoted attribute value (either quote) and as SVG text:
// & < > " ' become character references; control characters other than tab and newline, and
// bytes that are not valid UTF-8, become U+FFFD. Nothing in the result can open a tag, close an
// attribute or start a character reference of the input's choosing.
std::string esc(std::string_view s);

// The first `max_chars` code points of `s`; when cut, "…" is appended. Counts code points, so a
// multi-byte character is never split.
std::string clip(std::string_view s, size_t max_chars);

// esc(clip(s, max_chars)).
inline std::string escClip(std::string_view s, size_t max_chars) {
  return esc(clip(s, max_chars));
}

// escClip(s, max_chars) with a line-break opportunity (<wbr>) after every comma, so keys and
// configs wrap between their fields rather than inside a name.
std::string escWrap(std::string_view s, size_t max_chars);

// printf("%.*f") of a finite value; "–" for NaN/inf (hand-edited files may hold anything).
std::string num(double v, int decimals);

// A duration given in milliseconds, shown in µs with 3 significant digits ("12.3 µs").
std::string micros(double ms);

}  // namespace ktune::report
