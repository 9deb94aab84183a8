// The options struct is public (include/ktune/options.hpp: ktune::TunerOptions); inside the
// library it is also called Options. Every environment variable ktune reads is read in one place,
// TunerOptions::fromEnv() (base/options.cc).
#pragma once

#include "ktune/options.hpp"

namespace ktune {
using Options = TunerOptions;
}  // namespace ktune
