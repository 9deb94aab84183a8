#include "base/version.h"
namespace ktune {
const char* ktuneVersion() { return KTUNE_VERSION; }
}  // namespace ktune
