// One offline tuning item: a line of an untuned-keys file (`ktune tune --from-file`,
// Tuner::tuneFromFile) or a `ktune serve` queue item, {"family", "key", "date", ...the problem's
// args}. Items come from outside the process (a file anyone may have edited, a shared queue), so
// each is checked field by field here, before a problem is built from it: a wrong type, a
// negative stride or a problem too large to allocate is a Status naming the field, never an
// exception or gigabytes of memory.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace ktune {

struct TuneItem {
  std::string family, key;  // key may be empty (the family's key function rebuilds it)
  nlohmann::json args;      // an object: the item without family, key and date
};

// The most memory a problem re-created from an item may need, all its buffers together. A GEMM
// of 16384^3 (bf16 in, f32 out) needs 2 GiB; a larger problem is tuned from a program that
// holds its buffers, not from a recorded key.
constexpr int64_t kMaxTuneItemBytes = int64_t(4) << 30;

// The args of a built-in op's family, each field checked for type and range: rmsnorm_* (rows,
// cols, x_stride / y_stride: 0 or at least cols, eps, dtype, weight, residual), silu_mul_* (rows,
// d, x_stride >= 2d, out_stride >= d, dtype) and gemm (its whole shape, gemmShapeFromJson); then
// the bytes the problem needs against kMaxTuneItemBytes. Other families' args need only be an
// object (their make_problem reads them). kInvalidArgument naming the field and the reason.
Status checkTuneArgs(const std::string& family, const nlohmann::json& args);

// An item as parsed JSON: an object with a string "family" (1..128 characters), an optional
// string "key" (up to 4096) and "date", and args that pass checkTuneArgs.
Expected<TuneItem> validateTuneItem(const nlohmann::json& item);

// A line of text: parsed by the bounded JSON reader, then validateTuneItem.
Expected<TuneItem> parseTuneItem(std::string_view line);

}  // namespace ktune
