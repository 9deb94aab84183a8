// The options struct is public (include/ktune/options.hpp: ktune::TunerOptions); inside the
// library it is also called Options. Every environment variable ktune reads is read in one place,
// TunerOptions::fromEnv() (base/options.cc).
#pragma once

#include <string>

#include "base/status.h"
#include "ktune/options.hpp"

namespace ktune {
using Options = TunerOptions;

// A Redis location, parsed from redis://[user:password@]host:port/db (port default 6379, db
// default 0). Only the parser in options.cc builds one.
struct RemoteUrl {
  std::string user, password, host;
  int port = 6379;
  int db = 0;
  // "redis://host:port/db" (the user is shown, the password never is: this goes to logs).
  std::string display() const;
};
// kInvalidArgument naming what is wrong (scheme, port, db, empty host).
Expected<RemoteUrl> parseRemoteUrl(const std::string& text);
}  // namespace ktune
