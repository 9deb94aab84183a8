// The wire format between the isolation supervisor (isolation.cc) and the worker
// (isolation_worker.cc): JSON lines over a socket pair. Internal to autotune/.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "autotune/isolation.h"

namespace ktune::isolation_wire {

nlohmann::json benchToJson(const BenchOptions& b);
// Missing fields keep BenchOptions' defaults.
BenchOptions benchFromJson(const nlohmann::json& j);
// A result line from the worker; a malformed one is an internal failure of that candidate.
CandidateResult resultFromJson(const nlohmann::json& j);
// Writes all of `s` to a socket/pipe without raising SIGPIPE; false on a write error.
bool writeAll(int fd, const std::string& s);

}  // namespace ktune::isolation_wire
