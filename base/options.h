// The options struct is public (include/ktune/options.hpp: ktune::TunerOptions); inside the
// library it is also called Options. Every environment variable ktune reads is read in one place,
// TunerOptions::fromEnv() (base/options.cc), and the test suite's own settings beside it.
#pragma once

#include <string>

#include "base/status.h"
#include "ktune/options.hpp"

namespace ktune {
using Options = TunerOptions;

// Settings of ktune's own test suite (tests/README.md), not of the library (which ignores them),
// so they are no part of the public TunerOptions; read with the other variables in options.cc.
struct TestSettings {
  // KTUNE_REQUIRE_TOOLS=1: a test whose compiler or tool is missing fails instead of skipping
  // (CI sets it: there every tool is installed, so a skip would hide a broken install).
  bool require_tools = false;
  // KTUNE_TEST_QUICK=1: the slowest sweeps sample their spaces instead of covering them all.
  bool test_quick = false;
};
// Defaults overlaid with the environment; kInvalidArgument naming the variable for a bad value.
Expected<TestSettings> testSettingsFromEnv();

// KTUNE_TIMELINE=FILE: where base/timeline.h's marks go (a measuring aid for where a tuning
// run's wall time goes, outside TunerOptions: it reaches the workers too); "" when unset.
std::string timelinePathFromEnv();

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
