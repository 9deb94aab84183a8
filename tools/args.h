// Command-line parsing for the `ktune` CLI, kept separate from main() so it can be unit-tested and
// fuzzed. A spec lists the flags a subcommand accepts; anything else is a usage error naming the
// offending word, never a crash.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace ktune::cli {

struct FlagSpec {
  FlagSpec(std::string n, bool value = false, bool repeat = false, std::string short_alias = "")
      : name(std::move(n)), takes_value(value), repeatable(repeat), alias(std::move(short_alias)) {}
  std::string name;         // "--arch"
  bool takes_value = false;
  bool repeatable = false;  // -D KEY=VAL, --dump isa --dump ptx
  std::string alias;        // "-D"
};

struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> values;  // flag -> values (empty string for booleans)
  bool help = false;  // --help or -h anywhere before "--": every subcommand prints its usage
  bool has(const std::string& flag) const { return values.count(flag) > 0; }
  // Last value of a flag, or `fallback`.
  std::string get(const std::string& flag, const std::string& fallback = "") const;
  const std::vector<std::string>& all(const std::string& flag) const;
};

// Parses argv (without the program and subcommand words). Accepts "--flag value", "--flag=value",
// "-DKEY=VAL" and "-D KEY=VAL". "--" ends flags. "--help" / "-h" are accepted by every spec.
Expected<ParsedArgs> parseArgs(const std::vector<std::string>& argv, const std::vector<FlagSpec>& spec);
// Integer flag value with range check: "--rows must be a positive integer, got 'x'".
Expected<long long> parseIntFlag(const std::string& flag, const std::string& value, long long min,
                                 long long max);

}  // namespace ktune::cli
