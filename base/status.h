// Status / Expected are part of the public API (include/ktune/status.hpp); the engine uses the
// same types, so nothing is converted at the API boundary.
#pragma once

#include "ktune/status.hpp"
