#include <unistd.h>

#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>

#include "base/format.h"
#include "base/version.h"
#include "tools/commands.h"

namespace ktune::cli {

static const char* kHelp =
    "ktune — JIT kernel autotuner\n"
    "\n"
    "usage: ktune <command> [options]\n"
    "\n"
    "  info                         backends, devices, compilers, cache; what is missing and why\n"
    "  compile <template|file.cu>   JIT-compile one config: --arch A [-D K=V ...] [--entry NAME]\n"
    "                               [--dump isa|ptx|sass|llvm|mlir|source ...] [--resources] [--report]\n"
    "  explain <template|file.cu>   resource, occupancy and ISA report of one config (as compile --report)\n"
    "  tune rmsnorm|silu_mul|gemm   tune on the GPU (without one: compile and analyse the space)\n"
    "  regret [--set ci|gpu]        guided search vs exhaustive, per key (docs/search.md)\n"
    "  predict gemm --m M --n N --k K  the config an untuned shape runs, from tuned neighbours\n"
    "  cache ls|show|dump|rm|clear|verify|diff|path   inspect the code-object cache\n"
    "  db ls|show|verify|rm|export|import   inspect the tuning database\n"
    "  report FAMILY|--all|--compare  a tuning run as one HTML page; compare two databases\n"
    "  occupancy --arch A --vgpr N  AMD occupancy from raw counts (the MI300X guide's formula)\n"
    "  remote ping|ls|stats|push|pull   the shared tuning cache on Redis (KTUNE_REMOTE_CACHE)\n"
    "  serve --queue redis://...    tune the keys of a queue filled by tune --from-file F --queue\n"
    "  version                      print the version\n"
    "\n"
    "`ktune <command> --help` shows a command's options. Every command takes --json for\n"
    "machine-readable output. Environment: KTUNE_CACHE_DIR,\n"
    "KTUNE_TUNING, KTUNE_DB, KTUNE_VERBOSE, ... (see README).\n";

namespace {
int dispatchUnchecked(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kHelp, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  const std::string& cmd = args[0];
  if (cmd == "version" || cmd == "--version") {
    bool json = false;
    for (const auto& a : rest) {
      if (a == "--json") json = true;
      else if (a == "--help" || a == "-h") return help("ktune version [--json]");
      else return usage("unknown option '" + a + "'", "ktune version [--json]");
    }
    if (json)
      std::printf("%s\n", nlohmann::json({{"version", KTUNE_VERSION}, {"schema", KTUNE_SCHEMA_VERSION}})
                              .dump()
                              .c_str());
    else
      std::printf("ktune %s (schema %d)\n", KTUNE_VERSION, KTUNE_SCHEMA_VERSION);
    return kExitOk;
  }
  if (cmd == "info") return cmdInfo(rest);
  if (cmd == "compile") return cmdCompile(rest, false);
  if (cmd == "explain") return cmdCompile(rest, true);
  if (cmd == "cache") return cmdCache(rest);
  if (cmd == "tune") return cmdTune(rest);
  if (cmd == "regret") return cmdRegret(rest);
  if (cmd == "predict") return cmdPredict(rest);
  if (cmd == "db") return cmdDb(rest);
  if (cmd == "report") return cmdReport(rest);
  if (cmd == "occupancy") return cmdOccupancy(rest);
  if (cmd == "remote") return cmdRemote(rest);
  if (cmd == "serve") return cmdServe(rest);
  return usage("unknown command '" + cmd + "'", "ktune help");
}
}  // namespace

int dispatch(const std::vector<std::string>& args) {
  // The commands read files they did not write; whatever slips past their checks ends here as a
  // clear error, never as an abort.
  try {
    return dispatchUnchecked(args);
  } catch (const nlohmann::json::exception& e) {
    std::fprintf(stderr, "ktune: corrupt data: %s\n", e.what());
    return kExitCorrupt;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ktune: internal error: %s\n", e.what());
    return kExitFailed;
  }
}

int help(const std::string& usage_text) {
  std::printf("usage: %s\n", usage_text.c_str());
  return kExitOk;
}

std::optional<int> startSubcommand(const std::vector<std::string>& argv,
                                   const std::vector<FlagSpec>& spec, const std::string& usage_text,
                                   const std::string& command, SubcommandCall* out) {
  auto args = parseArgs(argv, spec);
  if (!args.ok()) return usage(args.status().message(), usage_text);
  if (args->help) return help(usage_text);
  if (args->positional.empty()) return usage("missing " + command + " subcommand", usage_text);
  auto opts = Options::fromEnv();
  if (!opts.ok()) return fail(opts.status());
  out->args = std::move(*args);
  out->opts = std::move(*opts);
  out->sub = out->args.positional[0];
  return std::nullopt;
}

int failEnv(const Status& s, const std::string& hint) {
  int code = fail(s, hint);
  return code == kExitUsage ? kExitFailed : code;
}

bool progressWanted(bool quiet, bool json) { return !quiet && !json && ::isatty(2); }

int fail(const Status& s, const std::string& hint) {
  // Messages quote keys, configs and reasons read from files: no raw control sequence reaches
  // the terminal.
  std::fprintf(stderr, "ktune: %s\n", printable(s.toString(), /*keep_lines=*/true).c_str());
  if (!hint.empty()) std::fprintf(stderr, "hint: %s\n", hint.c_str());
  switch (s.code()) {
    case Code::kInvalidArgument: return kExitUsage;
    case Code::kUnavailable: return kExitUnavailable;
    case Code::kCorrupt: return kExitCorrupt;
    default: return kExitFailed;
  }
}

int usage(const std::string& message, const std::string& usage_line) {
  std::fprintf(stderr, "ktune: %s\nusage: %s\n", message.c_str(), usage_line.c_str());
  return kExitUsage;
}

}  // namespace ktune::cli
