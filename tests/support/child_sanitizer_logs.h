// Sanitizer reports of child processes (the isolation worker, the `ktune` CLI, helpers) must fail
// the test that started them, not end up as a candidate's failure reason or in a pipe nobody
// reads. When the test program itself runs under ASan/UBSan or TSan, install() points the
// children's sanitizers at a private log directory (log_path in ASAN/UBSAN/TSAN_OPTIONS, set after
// this process's own sanitizer has read its options, so only children see it) and registers a
// listener that, at the end of each test, fails that test with every report a child wrote.
// Reports written after the last test are returned by leftovers() (test_main.cc fails on them).
#pragma once

#include <string>

namespace ktune::testsupport {

// No-op when the program is not built with a sanitizer.
void installChildSanitizerLogs();
// Reports not yet attributed to a test (and removes them); "" when none.
std::string childSanitizerLeftovers();

}  // namespace ktune::testsupport
