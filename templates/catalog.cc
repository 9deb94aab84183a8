#include "templates/embedded.h"
