#include "base/status.h"

namespace ktune {

const char* codeName(Code c) {
  switch (c) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid_argument";
    case Code::kNotFound: return "not_found";
    case Code::kUnavailable: return "unavailable";
    case Code::kUnsupported: return "unsupported";
    case Code::kCompileError: return "compile_error";
    case Code::kOutOfResources: return "out_of_resources";
    case Code::kLaunchError: return "launch_error";
    case Code::kDeviceFault: return "device_fault";
    case Code::kTimeout: return "timeout";
    case Code::kWrongResult: return "wrong_result";
    case Code::kCorrupt: return "corrupt";
    case Code::kIoError: return "io_error";
    case Code::kBusy: return "busy";
    case Code::kInternal: return "internal";
  }
  return "unknown";
}

std::string Status::toString() const {
  if (ok()) return "ok";
  return std::string(codeName(code_)) + ": " + message_;
}

Status Status::withContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace ktune
