// The "bench" stage of a tuning run (internal): one candidate verified and timed in this process,
// or a batch sent to the isolation worker; each result recorded as a partial result at once.
#pragma once

#include <atomic>

#include <string>
#include <vector>

#include "autotune/engine.h"
#include "autotune/partial_record.h"
#include "autotune/run_candidate.h"

namespace ktune {
namespace detail {

// Benchmarks the batch through the worker; false (with *why) when the worker cannot be used, so
// the caller decides what becomes of the candidates left (those with done[i] == false).
bool benchIsolated(TunerEngine& e, IsolatedBatch& b, std::string* why);

}  // namespace detail
}  // namespace ktune
