// A kernel family described by data (ktune::KernelSpec, the C API's ktune_family_desc) turned
// into the typed registration (ktune/typed.hpp, over DataProblem): the space from JSON, the launch
// rule, key and constraints as parsed expressions (api/expr.h), the arguments packed from typed
// values. Used by the C++ Autotuner and, through it, by the C API.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/expr.h"
#include "base/config.h"
#include "ktune/kernel.hpp"
#include "ktune/typed.hpp"

namespace ktune::api {

// The engine's problem type for data families: the caller's argument array (valid during the
// call; the engine does not keep problems past a call).
struct DataProblem {
  const Value* args = nullptr;
  size_t count = 0;
};

// Parsed spec. Slots of the expression variables: knobs first, then arguments, then the device's
// num_sms and warp_size.
struct DataFamily {
  static constexpr size_t kMaxKnobs = 32;
  static constexpr size_t kMaxArgs = 64;
  static constexpr size_t kMaxSlots = kMaxKnobs + kMaxArgs + 2;

  KernelSpec spec;
  std::vector<std::string> knobs;
  std::vector<std::vector<int64_t>> knob_values;
  std::vector<Expr> constraints;
  Config default_config;
  std::vector<Expr> key;
  std::vector<std::string> key_names;  // stable storage: KeyBuilder keeps names by pointer
  Expr grid[3], block[3], shared;
  bool has_grid[3] = {false, false, false}, has_block[3] = {false, false, false};
  bool has_shared = false;
  // The arguments a key field or the launch rule reads (integers): two calls whose values of these
  // are equal have the same key and the same launch dims (Kernel's launch plan).
  std::vector<uint32_t> plan_args;

  int slotOfArg(size_t i) const { return static_cast<int>(knobs.size() + i); }
  int slotNumSms() const { return static_cast<int>(knobs.size() + spec.args.size()); }
  int slotWarpSize() const { return slotNumSms() + 1; }

  // Checks the argument array against the signature (count and types).
  Status checkArgs(const Value* args, size_t count) const;
};

// Parses and checks `spec` (names, JSON space, every expression). kInvalidArgument naming the
// field and what is wrong.
Expected<std::shared_ptr<const DataFamily>> parseKernelSpec(const KernelSpec& spec);

// The typed registration of a parsed spec (problems: DataProblem objects).
ErasedKernelSpec toTypedSpec(std::shared_ptr<const DataFamily> fam);

}  // namespace ktune::api
