// printf-style formatting into a std::string, for the one-number helpers ("%.4f ms", "%.3g")
// that every module otherwise writes again around a char buffer.
#pragma once

#include <string>

namespace ktune {

// The whole result, however long (no truncation).
std::string strprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace ktune
