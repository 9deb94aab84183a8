// Kernel template sources compiled into the library (see cmake/embed.cmake).
#pragma once

#include <string_view>

namespace ktune::templates {
// Text of templates/kernels/<name> (e.g. "rmsnorm.cuh"); empty if there is no such file. The
// prelude the kernels include belongs to the compilers (compiler/prelude.cuh).
std::string_view embeddedSource(const char* name);
// nullptr-terminated list of embedded file names.
const char* const* embeddedSourceNames();
}  // namespace ktune::templates
