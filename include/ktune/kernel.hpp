// ktune — registering a kernel family from data, and calling it.
//
//   ktune::KernelSpec s;
//   s.name = "saxpy"; s.source = kSource; s.entry = "my_saxpy";
//   s.space_json = R"({"params": {"BLOCK": [128, 256, 512], "VEC": [1, 2, 4]},
//                     "constraints": ["BLOCK * VEC <= 2048"]})";
//   s.args = {{"n", ktune::ArgType::kI64}, {"x", ktune::ArgType::kPtr},
//             {"y", ktune::ArgType::kPtr}, {"a", ktune::ArgType::kF32}};
//   s.key = {"pow2(n)"};
//   s.grid = {"cdiv(n, BLOCK * VEC)"};
//   s.block = {"BLOCK"};
//   KTUNE_ASSIGN_OR_RETURN(ktune::Kernel saxpy, tuner->addKernel(s));
//   KTUNE_RETURN_IF_ERROR(saxpy({ktune::Value::i64(n), ktune::Value::ptr(x),
//                               ktune::Value::ptr(y), ktune::Value::f32(2.f)}));
//
// Every knob of the space reaches the kernel as a -D NAME=value define. The launch rule (grid,
// block, shared bytes), the key fields and the constraints are integer expressions: literals,
// + - * / % (C semantics), comparisons, && || !, c ? a : b, cdiv(a, b), min, max, pow2(a), and
// names: the space's knobs, the integer arguments (i32/i64) by name, and the device's `num_sms`
// and `warp_size`. Constraints may name knobs only. Everything is parsed and checked when the
// kernel is registered; a mistake is a kInvalidArgument naming the expression and the column.
// At call time an expression that overflows or divides by zero gives a zero grid, which the
// launch rejects with an error (never undefined behaviour).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "ktune/export.h"
#include "ktune/report.hpp"
#include "ktune/status.hpp"
#include "ktune/types.hpp"

namespace ktune {

// Kernel argument types, in the kernel's parameter order. The numbering is the C API's
// (KTUNE_ARG_*).
enum class ArgType : int32_t { kPtr = 0, kI32 = 1, kI64 = 2, kF32 = 3, kF64 = 4 };

// One typed argument value. Same layout as the C API's ktune_value.
struct Value {
  ArgType type = ArgType::kI64;
  int32_t reserved_ = 0;
  union {
    DevicePtr ptr;
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
  } v = {0};

  static Value ptr(DevicePtr p) { Value x; x.type = ArgType::kPtr; x.v.ptr = p; return x; }
  static Value i32(int32_t i) { Value x; x.type = ArgType::kI32; x.v.i32 = i; return x; }
  static Value i64(int64_t i) { Value x; x.type = ArgType::kI64; x.v.i64 = i; return x; }
  static Value f32(float f) { Value x; x.type = ArgType::kF32; x.v.f32 = f; return x; }
  static Value f64(double f) { Value x; x.type = ArgType::kF64; x.v.f64 = f; return x; }
};

struct ArgSpec {
  std::string name;  // [A-Za-z_][A-Za-z0-9_]*; integer arguments are usable in expressions
  ArgType type = ArgType::kPtr;
};

// A kernel family described by data (what the C API's ktune_family_desc carries).
struct KernelSpec {
  std::string name;         // [A-Za-z0-9_.-]+; names the family's tuning database
  std::string source;       // CUDA/HIP C++ kernel source (may #include "prelude.cuh")
  std::string entry;        // extern "C" entry name
  // {"params": {"KNOB": [int, ...], ...}, "constraints": ["expr", ...],
  //  "default": {"KNOB": int, ...}}. Knob values are integers. "default" (optional; default:
  // the first value of every knob) is what runs when tuning is off.
  std::string space_json;
  std::vector<ArgSpec> args;       // the kernel's parameters, in order
  std::vector<std::string> key;    // key fields: expressions over integer arguments
  std::vector<std::string> grid;   // 1 to 3 expressions (x, y, z); missing ones are 1
  std::vector<std::string> block;  // 1 to 3 expressions
  std::string shared_bytes;        // dynamic shared memory; "" = 0
  std::vector<std::string> compile_options;  // extra compiler flags
};

class Autotuner;

// Handle to a registered kernel family; cheap to copy; valid while its Autotuner lives.
// Thread safety: calls may come from any thread.
class KTUNE_API Kernel {
 public:
  Kernel() = default;
  // Runs the kernel with `args` (count and types must match the spec) on `stream`; tunes first
  // when the key is new (and tuning is on). kInvalidArgument for mismatched arguments.
  Status operator()(const Value* args, size_t count, StreamHandle stream = {}) const;
  Status operator()(std::initializer_list<Value> args, StreamHandle stream = {}) const {
    return (*this)(args.begin(), args.size(), stream);
  }
  // Forces a tuning run for the arguments' key and returns what was tried.
  Expected<KeyReport> tune(const Value* args, size_t count, StreamHandle stream = {}) const;
  // The key string of `args` ("pow2(n)=1024").
  Expected<std::string> key(const Value* args, size_t count) const;
  const std::string& name() const;
  bool valid() const { return impl_ != nullptr; }

  struct Impl;

 private:
  friend class Autotuner;
  explicit Kernel(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace ktune
