// `ktune` — the command-line front end. Subcommands live in cmd_*.cc; this file dispatches.
// Exit codes: 0 success, 1 the operation failed (message on stderr), 2 usage error,
// 3 a needed component is unavailable (no GPU, no compiler), 4 corrupt data found (cache verify).
#include <cstdio>
#include <string>
#include <vector>

#include "tools/commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return ktune::cli::dispatch(args);
}
