// The built-in ops' recorded args (an untuned-keys line, a `ktune serve` queue item, the isolation
// worker's args_json), checked field by field before a problem is built from them: the engine's
// TuneItem (autotune/tune_item.h) carries them, and only the ops know what their fields mean.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "autotune/tune_item.h"
#include "base/status.h"

namespace ktune {

// The args of a built-in op's family, each field checked for type and range: rmsnorm_* (rows,
// cols, x_stride / y_stride: 0 or at least cols, eps, dtype, weight, residual), silu_mul_* (rows,
// d, x_stride >= 2d, out_stride >= d, dtype) and gemm (its whole shape, gemmShapeFromJson); then
// the bytes the problem needs against kMaxTuneItemBytes. Other families' args need only be an
// object (their make_problem reads them). kInvalidArgument naming the field and the reason.
// A TuneArgsCheck. Pure; thread-safe.
Status checkBuiltinTuneArgs(const std::string& family, const nlohmann::json& args);

// parseTuneItem with checkBuiltinTuneArgs: what the CLI's `tune --from-file` and `serve` accept.
Expected<TuneItem> parseBuiltinTuneItem(std::string_view line);

}  // namespace ktune
