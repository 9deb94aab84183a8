#include "tests/support/child_sanitizer_logs.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "base/fs.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KTUNE_TEST_SANITIZED 1
#else
#define KTUNE_TEST_SANITIZED 0
#endif

namespace ktune::testsupport {
namespace {

std::string& logDir() {
  static std::string dir;
  return dir;
}

// Every report file in the log directory, concatenated with its name; the files are removed.
std::string collect() {
  if (logDir().empty()) return "";
  std::string out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(logDir(), ec)) {
    auto text = readFile(e.path().string());
    out += "---- " + e.path().filename().string() + "\n" + (text.ok() ? *text : "(unreadable)\n");
    std::filesystem::remove(e.path(), ec);
  }
  return out;
}

class ChildReportChecker : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo&) override {
    const std::string reports = collect();
    if (!reports.empty())
      ADD_FAILURE() << "a child process of this test wrote sanitizer reports:\n" << reports;
  }
};

void appendOption(const char* var, const std::string& opt) {
  const char* old = ::getenv(var);
  std::string v = (old && *old) ? std::string(old) + ":" + opt : opt;
  ::setenv(var, v.c_str(), 1);
}

}  // namespace

void installChildSanitizerLogs() {
  if (!KTUNE_TEST_SANITIZED) return;
  std::string tmpl =
      (std::filesystem::temp_directory_path() / "ktune-child-sanitizer-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return;
  logDir() = tmpl;
  // Each sanitizer appends ".<pid>" to log_path.
  appendOption("ASAN_OPTIONS", "log_path=" + tmpl + "/asan");
  appendOption("UBSAN_OPTIONS", "log_path=" + tmpl + "/ubsan");
  appendOption("TSAN_OPTIONS", "log_path=" + tmpl + "/tsan");
  // Appended, not prepended: reports must be counted before the printer shows the result.
  ::testing::UnitTest::GetInstance()->listeners().Append(new ChildReportChecker);
}

std::string childSanitizerLeftovers() {
  std::string r = collect();
  if (!logDir().empty()) {
    std::error_code ec;
    std::filesystem::remove(logDir(), ec);
  }
  return r;
}

}  // namespace ktune::testsupport
