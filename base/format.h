// printf-style formatting into a std::string, for the one-number helpers ("%.4f ms", "%.3g")
// that every module otherwise writes again around a char buffer.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace ktune {

// The whole result, however long (no truncation).
std::string strprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Text from a file or another machine (a database key, a config, a reason) made safe to print
// on a terminal: control characters (ESC of an ANSI sequence, CR, BEL, DEL, the C1 range U+0080
// to U+009F) and bytes that are not UTF-8 are written as \xNN escapes; a backslash as \\.
// keep_lines: newline, tab and backslash pass as they are (a multi-line message such as a
// compiler log).
std::string printable(std::string_view text, bool keep_lines = false);

// `text` with every line `#include "NAME"` replaced by lookup(NAME)'s text, itself expanded the
// same way (up to `max_depth` levels); a line whose NAME lookup leaves empty stays as it is. For
// kernel sources assembled from embedded files (the templates' parts, the compilers' prelude).
std::string expandIncludes(std::string_view text,
                           const std::function<std::string_view(std::string_view)>& lookup,
                           int max_depth = 4);

}  // namespace ktune
