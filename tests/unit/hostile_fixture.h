// Shared by the hostile_*_test.cc programs (hostile input through the public APIs, one program
// per module): a private scratch directory per test, read-only directories, and a file-size
// limit that makes a write fail half way (the kernel's EFBIG takes the same path as ENOSPC).
#pragma once

// gcc 12 at -O3 reports a false -Wrestrict inside libstdc++'s std::string concatenation in the
// hostile tests' gtest code (GCC bug 105329). Every hostile_*_test.cc includes this header first,
// so the pragma precedes the library headers whose inlined code it covers. The library itself
// builds clean.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

// EXPECT that `hay` contains `needle` (plain gtest; the unit tests do not link gmock).
#define EXPECT_HAS(hay, needle)                                                   \
  EXPECT_NE(std::string(hay).find(needle), std::string::npos)                     \
      << "'" << std::string(hay) << "' does not contain '" << (needle) << "'"

namespace ktune::hostile {

namespace fs = std::filesystem;

// A private scratch directory per test, removed afterwards (immutable flags cleared first).
class Hostile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "ktune-hostile-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const auto& p : immutable_) setImmutable(p, false);
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Makes `p` read-only for everyone including root: chattr +i (needs CAP_LINUX_IMMUTABLE, which
  // root has in CI) or, for a normal user, chmod 0500. False when neither takes effect.
  bool makeReadOnly(const std::string& p) {
    if (::geteuid() == 0) {
      if (!setImmutable(p, true)) return false;
      immutable_.push_back(p);
    } else {
      if (::chmod(p.c_str(), 0500) != 0) return false;
    }
    // Probe: can we still create a file there?
    std::string probe = p + "/.probe";
    int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      ::close(fd);
      ::unlink(probe.c_str());
      return false;
    }
    return true;
  }
  static bool setImmutable(const std::string& p, bool on) {
    int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return false;
    int flags = 0;
    bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (ok) {
      flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
      ok = ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    ::close(fd);
    return ok;
  }

  std::string dir_;
  std::vector<std::string> immutable_;
};

// Lowers RLIMIT_FSIZE for the scope (SIGXFSZ ignored), so a write past `bytes` fails with EFBIG
// from the kernel: a real mid-write failure without root, mounts or LD_PRELOAD.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit r = saved_;
    r.rlim_cur = bytes;
    ok_ = ::setrlimit(RLIMIT_FSIZE, &r) == 0;
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  sighandler_t old_handler_ = SIG_DFL;
  bool ok_ = false;
};

inline std::vector<std::string> tempFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path());
  }
  return out;
}

}  // namespace ktune::hostile
