#include "base/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>

#include "base/fs.h"
#include "base/options.h"

namespace ktune {

namespace {
int openTimeline() {
  const std::string path = timelinePathFromEnv();
  if (path.empty()) return -1;
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}
int timelineFd() {
  static const int fd = openTimeline();
  return fd;
}
}  // namespace

bool timelineOn() { return timelineFd() >= 0; }

void timelineMark(const char* label, const std::string& detail) {
  const int fd = timelineFd();
  if (fd < 0) return;
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  const double ms = double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
  char head[96];
  std::snprintf(head, sizeof(head), "%.3f %d ", ms, int(::getpid()));
  std::string line = std::string(head) + label + (detail.empty() ? "" : " " + detail) + "\n";
  (void)!::write(fd, line.data(), line.size());
}

double processAgeMs() {
  std::string stat, up;
  if (auto s = readFile("/proc/self/stat"); s.ok()) stat = *s;
  if (auto u = readFile("/proc/uptime"); u.ok()) up = *u;
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || up.empty()) return 0;
  std::istringstream in(stat.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && (in >> field); ++i) {}  // field 22: start time in clock ticks
  const double ticks = std::atof(field.c_str()), hz = double(::sysconf(_SC_CLK_TCK));
  if (ticks <= 0 || hz <= 0) return 0;
  return std::max(0.0, 1e3 * (std::atof(up.c_str()) - ticks / hz));
}

}  // namespace ktune
