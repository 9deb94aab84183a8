// Subcommands of the `ktune` CLI. Each takes the words after its name and returns an exit code.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/options.h"
#include "base/status.h"
#include "tools/args.h"

namespace ktune::cli {

enum ExitCode { kExitOk = 0, kExitFailed = 1, kExitUsage = 2, kExitUnavailable = 3, kExitCorrupt = 4 };

int dispatch(const std::vector<std::string>& args);
int cmdInfo(const std::vector<std::string>& args);
int cmdCompile(const std::vector<std::string>& args, bool explain);
int cmdCache(const std::vector<std::string>& args);
int cmdTune(const std::vector<std::string>& args);
int cmdDb(const std::vector<std::string>& args);
int cmdReport(const std::vector<std::string>& args);
int cmdOccupancy(const std::vector<std::string>& args);
int cmdRemote(const std::vector<std::string>& args);
int cmdServe(const std::vector<std::string>& args);
int cmdRegret(const std::vector<std::string>& args);
int cmdPredict(const std::vector<std::string>& args);
// The remote as `ktune info` shows it: JSON text {"url", "client", "reachable", "ping_ms",
// "summary", "problem" (when configured but unusable)}; asks the remote once, within its timeout.
std::string remoteInfoJson(const Options& o);
// `ktune tune --from-file F --queue URL`: puts the file's keys on the queue for `ktune serve`.
int enqueueFile(const std::string& path, const std::string& url, const std::string& queue, bool json);

// Prints "ktune: <message>" (plus a hint line when given) to stderr and returns the exit code that
// fits the status (usage errors -> 2, unavailable -> 3, corrupt -> 4, else 1).
int fail(const Status& s, const std::string& hint = "");
// NotFound for a family without a database file at `path`, naming the families that have one
// (<cache>/db/*.json) and, when one of them contains `family`, "did you mean ...?".
Status noDatabaseFor(const Options& o, const std::string& family, const std::string& path);
int usage(const std::string& message, const std::string& usage_line);
// `--help`: the subcommand's usage on stdout, exit 0.
int help(const std::string& usage_text);
// As fail(), for a problem with the environment (an unsafe or unreadable directory or file): it
// is never a usage error, so kInvalidArgument gives 1, not 2.
int failEnv(const Status& s, const std::string& hint = "");
// What a command with subcommands (`ktune cache ls`, `ktune db show`, `ktune remote ping`) starts
// from: its parsed flags, the environment's Options and the subcommand word.
struct SubcommandCall {
  ParsedArgs args;
  Options opts;
  std::string sub;  // args.positional[0]
};
// Parses `argv` against `spec`, answers --help with `usage_text`, requires the subcommand word and
// reads the Options. An exit code when the command stops there (usage error, help, bad
// environment), else nothing and *out filled. `command` names it in messages ("cache").
std::optional<int> startSubcommand(const std::vector<std::string>& argv,
                                   const std::vector<FlagSpec>& spec, const std::string& usage_text,
                                   const std::string& command, SubcommandCall* out);
// Whether progress lines belong on stderr: a terminal, not --quiet, not --json.
bool progressWanted(bool quiet, bool json);

}  // namespace ktune::cli
