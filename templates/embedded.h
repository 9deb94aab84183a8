// Kernel template sources compiled into the library (see embed.cmake).
#pragma once

#include <string_view>

namespace ktune::templates {
// Text of templates/kernels/<name> (e.g. "prelude.cuh"); empty if there is no such file.
std::string_view embeddedSource(const char* name);
// nullptr-terminated list of embedded file names.
const char* const* embeddedSourceNames();
}  // namespace ktune::templates
