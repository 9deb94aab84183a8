#include "runtime/driver_common.h"

#include <cstring>

namespace ktune::driver_common {

Status callError(Code code, const char* call, const std::string& text, const std::string& detail) {
  std::string msg = std::string(call) + ": " + text;
  if (!detail.empty()) msg += "\n" + detail;
  return Status(code, std::move(msg));
}

std::string resultText(int r, const char* type, const char* name, const char* description) {
  std::string s = name ? name : std::string(type) + " " + std::to_string(r);
  if (description && (name == nullptr || std::strcmp(description, name) != 0))
    s += std::string(": ") + description;
  return s;
}

}  // namespace ktune::driver_common
