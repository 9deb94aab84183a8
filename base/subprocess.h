// Running helper programs (clang-19, nvdisasm, cuobjdump, ktune workers) without a shell.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace ktune {

struct ProcessResult {
  int exit_code = -1;     // valid when !signaled
  bool signaled = false;  // killed by a signal (term_signal)
  int term_signal = 0;
  bool timed_out = false;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs argv[0] (PATH lookup) with argv, feeding `input` on stdin. timeout_ms <= 0: no limit; on
// timeout the child's process group is killed. Fails only if the program cannot be started.
Expected<ProcessResult> runProcess(const std::vector<std::string>& argv,
                                   const std::string& input = "", int timeout_ms = 0);
// Full path of `program` on PATH, or "" if absent.
std::string findProgram(const std::string& program);

}  // namespace ktune
