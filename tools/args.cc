#include "tools/args.h"

#include <cerrno>
#include <cstdlib>

namespace ktune::cli {

std::string ParsedArgs::get(const std::string& flag, const std::string& fallback) const {
  auto it = values.find(flag);
  if (it == values.end() || it->second.empty()) return fallback;
  return it->second.back();
}

const std::vector<std::string>& ParsedArgs::all(const std::string& flag) const {
  static const std::vector<std::string> kEmpty;
  auto it = values.find(flag);
  return it == values.end() ? kEmpty : it->second;
}

Expected<ParsedArgs> parseArgs(const std::vector<std::string>& argv,
                               const std::vector<FlagSpec>& spec) {
  ParsedArgs out;
  auto find = [&](const std::string& name) -> const FlagSpec* {
    for (const auto& f : spec) {
      if (f.name == name || (!f.alias.empty() && f.alias == name)) return &f;
    }
    return nullptr;
  };
  bool flags_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (flags_done || a.empty() || a[0] != '-' || a == "-") {
      out.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      flags_done = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      out.help = true;
      continue;
    }
    std::string name = a, value;
    bool inline_value = false;
    if (a.rfind("--", 0) == 0) {
      size_t eq = a.find('=');
      if (eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inline_value = true;
      }
    } else if (a.size() > 2) {
      // -DKEY=VAL style: short alias glued to its value.
      name = a.substr(0, 2);
      value = a.substr(2);
      inline_value = true;
    }
    const FlagSpec* f = find(name);
    if (!f) return Status::InvalidArgument("unknown option '" + name + "'");
    if (f->takes_value) {
      if (!inline_value) {
        if (i + 1 >= argv.size())
          return Status::InvalidArgument("option '" + f->name + "' needs a value");
        value = argv[++i];
      }
    } else if (inline_value) {
      return Status::InvalidArgument("option '" + f->name + "' takes no value");
    }
    auto& slot = out.values[f->name];
    if (!slot.empty() && !f->repeatable)
      return Status::InvalidArgument("option '" + f->name + "' given more than once");
    slot.push_back(value);
  }
  return out;
}

Expected<long long> parseIntFlag(const std::string& flag, const std::string& value, long long min,
                                 long long max) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || end != value.c_str() + value.size() || errno == ERANGE || v < min ||
      v > max) {
    return Status::InvalidArgument(flag + " must be an integer in [" + std::to_string(min) + ", " +
                                   std::to_string(max) + "], got '" + value + "'");
  }
  return v;
}

}  // namespace ktune::cli
