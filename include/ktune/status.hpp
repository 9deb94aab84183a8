// ktune — errors as values.
//
// Status carries a code and a human-readable message with context. Expected<T> holds either a
// value or a non-OK Status. No exception crosses a ktune public header; library code never calls
// exit(). Both types are cheap to move and safe to pass between threads (no shared state).
#pragma once

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "ktune/export.h"

namespace ktune {

enum class Code {
  kOk = 0,
  kInvalidArgument,   // bad input from the caller: shape, pointer, config string, option
  kNotFound,          // no such key, file, template, function, device
  kUnavailable,       // a library or device is not present (no libcuda, no GPU, no hiprtc)
  kUnsupported,       // present but cannot do this (unknown arch, dtype, feature)
  kCompileError,      // the JIT compiler rejected the source; message holds log + options
  kOutOfResources,    // config does not fit: shared/LDS, registers, threads, device memory
  kLaunchError,       // the driver refused or failed a launch
  kDeviceFault,       // a kernel faulted (illegal address, trap); the context may be lost
  kTimeout,           // a kernel or worker ran past its deadline
  kWrongResult,       // verification against the reference failed
  kCorrupt,           // on-disk data failed a hash or parse check
  kIoError,           // file system error (ENOSPC, EACCES, EROFS, ...)
  kBusy,              // a lock is held by someone else
  kInternal,          // a ktune bug
};

// Stable lower-case name of a code ("invalid_argument").
KTUNE_API const char* codeName(Code c);

class [[nodiscard]] KTUNE_API Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status Unsupported(std::string m) { return {Code::kUnsupported, std::move(m)}; }
  static Status CompileError(std::string m) { return {Code::kCompileError, std::move(m)}; }
  static Status OutOfResources(std::string m) { return {Code::kOutOfResources, std::move(m)}; }
  static Status LaunchError(std::string m) { return {Code::kLaunchError, std::move(m)}; }
  static Status DeviceFault(std::string m) { return {Code::kDeviceFault, std::move(m)}; }
  static Status Timeout(std::string m) { return {Code::kTimeout, std::move(m)}; }
  static Status WrongResult(std::string m) { return {Code::kWrongResult, std::move(m)}; }
  static Status Corrupt(std::string m) { return {Code::kCorrupt, std::move(m)}; }
  static Status IoError(std::string m) { return {Code::kIoError, std::move(m)}; }
  static Status Busy(std::string m) { return {Code::kBusy, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "compile_error: <message>" or "ok".
  std::string toString() const;
  // Returns a copy whose message is "<context>: <message>".
  Status withContext(const std::string& context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Either a T or a non-OK Status. Constructing from an OK Status is a bug (asserts, and in release
// builds becomes Code::kInternal).
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Status s) : v_(std::move(s)) {       // NOLINT
    if (std::get<Status>(v_).ok()) {
      assert(false && "Expected constructed from OK status");
      v_ = Status::Internal("Expected constructed from OK status");
    }
  }

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  // value() (and * / ->) on an error is a bug in the caller: check ok() first, or use
  // KTUNE_ASSIGN_OR_RETURN. Rather than std::bad_variant_access escaping (an exception across
  // this header, "terminate called ..." with no reason), it prints the Status and aborts.
  T& value() & { return std::get<T>(checked()); }
  const T& value() const& { return std::get<T>(checked()); }
  T&& value() && { return std::get<T>(std::move(checked())); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status>& checked() {
    if (!ok()) onError();
    return v_;
  }
  const std::variant<T, Status>& checked() const {
    if (!ok()) onError();
    return v_;
  }
  [[noreturn]] void onError() const {
    std::fprintf(stderr,
                 "ktune: Expected::value() called on an error (check ok() first): %s\n",
                 std::get<Status>(v_).toString().c_str());
    std::abort();
  }
  std::variant<T, Status> v_;
};

}  // namespace ktune

// Propagate a non-OK Status from an expression returning Status.
#define KTUNE_RETURN_IF_ERROR(expr)         \
  do {                                      \
    ::ktune::Status _ktune_st = (expr);     \
    if (!_ktune_st.ok()) return _ktune_st;  \
  } while (0)

#define KTUNE_CONCAT_INNER(a, b) a##b
#define KTUNE_CONCAT(a, b) KTUNE_CONCAT_INNER(a, b)
// `KTUNE_ASSIGN_OR_RETURN(auto x, f());` declares x from an Expected or returns its Status.
#define KTUNE_ASSIGN_OR_RETURN(decl, expr) \
  KTUNE_ASSIGN_OR_RETURN_IMPL(KTUNE_CONCAT(_ktune_ex_, __LINE__), decl, expr)
#define KTUNE_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  decl = std::move(tmp).value()
