// One offline tuning item: a line of an untuned-keys file (`ktune tune --from-file`,
// Engine::tuneFromFile) or a `ktune serve` queue item, {"family", "key", "date", ...the problem's
// args}. Items come from outside the process (a file anyone may have edited, a shared queue), so
// each is checked field by field here, before a problem is built from it: a wrong type, a
// negative stride or a problem too large to allocate is a Status naming the field, never an
// exception or gigabytes of memory.
#pragma once

#include <cstdint>
#include <functional>
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

// Checks one family's args (field types and ranges, the memory its problem needs against
// kMaxTuneItemBytes) before a problem is built from them: kInvalidArgument naming the field and
// the reason, OK for a family it does not know. The built-in ops' check is
// ops/tune_args.h's checkBuiltinTuneArgs; the engine knows no family's args.
using TuneArgsCheck =
    std::function<Status(const std::string& family, const nlohmann::json& args)>;

// An item as parsed JSON: an object with a string "family" (1..128 characters), an optional
// string "key" (up to 4096) and "date", and args that pass `check` when one is given (without
// one, any object: the family's make_problem reads and checks them).
Expected<TuneItem> validateTuneItem(const nlohmann::json& item, const TuneArgsCheck& check = {});

// A line of text: parsed by the bounded JSON reader, then validateTuneItem.
Expected<TuneItem> parseTuneItem(std::string_view line, const TuneArgsCheck& check = {});

}  // namespace ktune
