#include "base/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

namespace ktune {
namespace {
Status errnoStatus(const std::string& what, const std::string& path, int err) {
  std::string msg = what + " '" + path + "': " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return Status::NotFound(msg);  // ENOTDIR: a parent is a file
  // strerror already says "No space left on device"; add what to do about it.
  if (err == ENOSPC || err == EDQUOT) {
    return Status::IoError(msg + " (disk full or quota exceeded: free space there, or point "
                                 "KTUNE_CACHE_DIR / the output path at another file system)");
  }
  if (err == EROFS) return Status::IoError(msg + " (read-only file system)");
  return Status::IoError(msg);
}
std::string tempSuffix() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}());
  return ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++) + "." +
         std::to_string(rng() & 0xffffff);
}
// lstat(path): false when nothing is there (ENOENT/ENOTDIR), an error for any other failure.
Expected<bool> lstatIfExists(const std::string& path, struct stat* st) {
  if (::lstat(path.c_str(), st) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  return errnoStatus("cannot stat", path, errno);
}

}  // namespace

Expected<std::string> readFile(const std::string& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return errnoStatus("cannot open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return errnoStatus("cannot stat", path, e);
  }
  auto refuse = [&](const std::string& why) {
    ::close(fd);
    return Status::InvalidArgument("'" + path + "' " + why);
  };
  if (S_ISDIR(st.st_mode)) return refuse("is a directory, not a file");
  if (!S_ISREG(st.st_mode)) return refuse("is not a regular file (a FIFO, socket or device)");
  const std::string too_big = "is larger than " + std::to_string(max_bytes) + " bytes";
  if (uint64_t(st.st_size) > max_bytes) return refuse(too_big);
  std::string out;
  out.reserve(size_t(st.st_size));
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return errnoStatus("cannot read", path, e);
    }
    if (n == 0) break;
    if (out.size() + size_t(n) > max_bytes) return refuse(too_big);
    out.append(buf, size_t(n));
  }
  ::close(fd);
  return out;
}

Status writeFileAtomic(const std::string& path, const std::string& data, unsigned mode,
                       bool durable) {
  std::string tmp = path + tempSuffix();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return errnoStatus("cannot create", tmp, errno);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return errnoStatus("cannot write", tmp, e);
    }
    off += size_t(n);
  }
  if (durable && ::fsync(fd) != 0) {
    int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return errnoStatus("cannot fsync", tmp, e);
  }
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return errnoStatus("cannot close", tmp, e);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return errnoStatus("cannot rename into", path, e);
  }
  return Status::Ok();
}

bool pathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Status makeDirs(const std::string& path, unsigned mode) {
  if (path.empty()) return Status::InvalidArgument("empty directory path");
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    size_t next = path.find('/', pos + 1);
    cur = path.substr(0, next);
    pos = next;
    if (cur.empty() || cur == "/") continue;
    if (::mkdir(cur.c_str(), mode) != 0 && errno != EEXIST) {
      return errnoStatus("cannot create directory", cur, errno);
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return errnoStatus("cannot stat", path, errno);
  if (!S_ISDIR(st.st_mode)) return Status::IoError("'" + path + "' exists and is not a directory");
  return Status::Ok();
}

Status checkPrivateDir(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return errnoStatus("cannot stat", path, errno);
  if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument("'" + path + "' is not a directory");
  if (st.st_uid != ::geteuid()) {
    return Status::InvalidArgument("cache directory '" + path + "' is owned by uid " +
                                   std::to_string(st.st_uid) + ", not by you (uid " +
                                   std::to_string(::geteuid()) +
                                   "); refusing to load code from it. Set KTUNE_CACHE_DIR to a "
                                   "directory of your own.");
  }
  if (st.st_mode & 022) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%o", unsigned(st.st_mode & 0777));
    return Status::InvalidArgument("cache directory '" + path + "' has mode " + mode +
                                   " (writable by group or others); refusing to load code from "
                                   "it. Fix with: chmod 700 '" + path + "'");
  }
  return Status::Ok();
}

std::string parentDir(const std::string& path) {
  std::string s = path;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  const auto i = s.rfind('/');
  return i == std::string::npos ? "." : s.substr(0, i == 0 ? 1 : i);
}

Status checkPrivateFile(const std::string& path) {
  struct stat st;
  KTUNE_ASSIGN_OR_RETURN(bool exists, lstatIfExists(path, &st));
  if (!exists) return Status::Ok();  // nothing there yet
  if (!S_ISREG(st.st_mode))
    return Status::InvalidArgument("'" + path + "' is not a regular file (a link, FIFO or device)");
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%o", unsigned(st.st_mode & 0777));
  if (st.st_uid != ::geteuid() || (st.st_mode & 022)) {
    return Status::InvalidArgument(
        "'" + path + "' is owned by uid " + std::to_string(st.st_uid) + " with mode " + mode +
        " (only its owner, uid " + std::to_string(::geteuid()) +
        ", may write it); refusing to use it. Fix with: chown $(id -u) '" + path +
        "' && chmod 600 '" + path + "'");
  }
  const std::string dir = parentDir(path);
  struct stat ds;
  if (::stat(dir.c_str(), &ds) != 0) return errnoStatus("cannot stat", dir, errno);
  if ((ds.st_mode & 022) && !(ds.st_mode & S_ISVTX)) {
    std::snprintf(mode, sizeof(mode), "%o", unsigned(ds.st_mode & 0777));
    return Status::InvalidArgument("directory '" + dir + "' of '" + path + "' has mode " + mode +
                                   " (writable by group or others): they could replace the file; refusing "
                                   "it. Keep the file in a directory of your own (chmod 700)");
  }
  return Status::Ok();
}

Expected<std::vector<std::string>> listDir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  if (!d) {
    if (errno == ENOENT) return out;
    return errnoStatus("cannot list", path, errno);
  }
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(std::move(n));
  }
  ::closedir(d);
  return out;
}

Status removeFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errnoStatus("cannot remove", path, errno);
  return Status::Ok();
}

Status removeTree(const std::string& path) {
  struct stat st;
  KTUNE_ASSIGN_OR_RETURN(bool exists, lstatIfExists(path, &st));
  if (!exists) return Status::Ok();  // nothing there yet
  if (S_ISDIR(st.st_mode)) {
    KTUNE_ASSIGN_OR_RETURN(auto names, listDir(path));
    for (const auto& n : names) KTUNE_RETURN_IF_ERROR(removeTree(joinPath(path, n)));
    if (::rmdir(path.c_str()) != 0) return errnoStatus("cannot remove directory", path, errno);
    return Status::Ok();
  }
  return removeFile(path);
}

uint64_t treeSize(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return 0;
  if (S_ISREG(st.st_mode)) return uint64_t(st.st_size);
  if (!S_ISDIR(st.st_mode)) return 0;
  uint64_t total = 0;
  auto names = listDir(path);
  if (!names.ok()) return 0;
  for (const auto& n : *names) total += treeSize(joinPath(path, n));
  return total;
}

std::string joinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (a.back() == '/') return a + b;
  return a + "/" + b;
}

bool isSafeFileName(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.size() > 255) return false;
  for (char c : name) {
    if (c == '/' || c == '\0') return false;
  }
  return true;
}

FileLock::~FileLock() { release(); }
FileLock::FileLock(FileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

Expected<FileLock> FileLock::acquire(const std::string& path, int timeout_ms, bool shared) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EROFS || errno == EACCES) && shared) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) return errnoStatus("cannot open lock file", path, errno);
  auto start = std::chrono::steady_clock::now();
  int op = (shared ? LOCK_SH : LOCK_EX) | LOCK_NB;
  int sleep_us = 200;
  while (::flock(fd, op) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      int e = errno;
      ::close(fd);
      return errnoStatus("cannot lock", path, e);
    }
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
    if (timeout_ms >= 0 && waited >= timeout_ms) {
      ::close(fd);
      return Status::Busy("lock '" + path + "' still held by another process after " +
                          std::to_string(timeout_ms) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    sleep_us = std::min(sleep_us * 2, 20000);
  }
  FileLock l;
  l.fd_ = fd;
  return l;
}

void FileLock::release() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
    fd_ = -1;
  }
}

Status appendLocked(const std::string& path, const std::string& text, const std::string& what,
                    int lock_timeout_ms) {
  const std::string ctx = "cannot append to " + what + " '" + path + "'";
  auto lock = FileLock::acquire(path + ".lock", lock_timeout_ms);
  if (!lock.ok()) return lock.status().withContext(ctx);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError(ctx + ": " + std::strerror(errno));
  // Every appender holds the lock, so the size is stable: a failed write is cut back to it.
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return Status::IoError(ctx + ": " + std::strerror(e));
  }
  const off_t start = st.st_size;
  auto failed = [&](int e) {
    (void)!::ftruncate(fd, start);
    ::close(fd);
    std::string msg = ctx + ": " + std::strerror(e);
    if (e == ENOSPC) msg += " (disk full; the file is unchanged)";
    return Status::IoError(msg);
  };
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return failed(errno);
    }
    off += size_t(n);
  }
  if (::close(fd) != 0) return Status::IoError(ctx + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace ktune
