// Helpers shared by the fuzz targets (not part of ktune). Each target works in a private temporary
// directory made once per process, so fuzzing never touches a real cache.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/fs.h"

namespace ktune::fuzz {

// A fresh 0700 directory under $TMPDIR (or /tmp), removed at exit.
inline const std::string& scratchDir(const char* tag) {
  static const std::string dir = [tag] {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/ktune-" + tag + "-XXXXXX";
    if (!::mkdtemp(tmpl.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    std::atexit([] { (void)removeTree(dir); });
    return tmpl;
  }();
  return dir;
}

// Plain write (no fsync: the fuzzer rewrites these files thousands of times per second).
inline void writeRaw(const std::string& path, std::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror(path.c_str());
    std::abort();
  }
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n <= 0) {
      std::perror(path.c_str());
      std::abort();
    }
    off += size_t(n);
  }
  ::close(fd);
}

[[noreturn]] inline void die(const char* target, const std::string& what) {
  std::fprintf(stderr, "%s: property violated: %s\n", target, what.c_str());
  std::abort();
}

}  // namespace ktune::fuzz
