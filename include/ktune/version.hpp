// ktune — library version.
#pragma once

#include "ktune/export.h"

namespace ktune {

// "MAJOR.MINOR.PATCH" of the library that is running (not of the headers compiled against).
KTUNE_API const char* version();

}  // namespace ktune
