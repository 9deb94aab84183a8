// File-system helpers with the guarantees the cache and database rely on.
//
// writeFileAtomic: readers see the old content or the new, never a torn file (temp file in the
// same directory, fsync, rename). FileLock: an advisory cross-process lock (flock) that also
// excludes threads of one process (each FileLock opens its own descriptor). Every failure is a
// Status naming the path and the errno text (ENOSPC, EROFS and EACCES come back as kIoError).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ktune {

// The largest file readFile() reads unless told otherwise. Nothing ktune itself writes comes near
// it; it keeps a hostile path (a huge file) from growing memory without bound.
constexpr uint64_t kReadFileMaxBytes = uint64_t(1) << 30;
// Reads a whole regular file. A FIFO, socket, device (/dev/zero) or directory is refused with
// kInvalidArgument without blocking (opened O_NONBLOCK, checked with fstat before any read), and
// so is a file larger than max_bytes (checked on the size and again while reading, so a file that
// grows meanwhile cannot exceed it). kNotFound when it does not exist, kIoError otherwise.
Expected<std::string> readFile(const std::string& path, uint64_t max_bytes = kReadFileMaxBytes);
// Writes `data` to `path` atomically; `mode` applies to the new file. durable: fsync the data
// before the rename (survives power loss). Without it the file is still never torn and survives a
// killed process (the page cache holds it); use that for frequent, re-creatable writes.
Status writeFileAtomic(const std::string& path, const std::string& data, unsigned mode = 0600,
                       bool durable = true);
bool pathExists(const std::string& path);
// mkdir -p with `mode` for every directory created.
Status makeDirs(const std::string& path, unsigned mode = 0700);
// Refuses a directory that is not owned by the current user or is writable by group/others
// (a shared or hijacked cache could feed us code objects). Returns kInvalidArgument with advice.
Status checkPrivateDir(const std::string& path);
// The same for a file others could swap or edit (a tuning database): a regular file owned by the
// current user and not writable by group/others, in a directory others cannot write to (unless
// it is sticky, like /tmp). OK when the file does not exist yet. kInvalidArgument with advice.
Status checkPrivateFile(const std::string& path);
// Entries (names only) of a directory; empty on ENOENT.
Expected<std::vector<std::string>> listDir(const std::string& path);
Status removeFile(const std::string& path);
Status removeTree(const std::string& path);
// Sum of regular-file sizes below `path`.
uint64_t treeSize(const std::string& path);
std::string joinPath(const std::string& a, const std::string& b);
// The directory part of `path` (trailing slashes ignored): "a/b" -> "a", "/a" -> "/", "a" -> ".".
std::string parentDir(const std::string& path);
// True if `name` is a plain file name (no '/', not "." or "..", no NUL) — used before any path
// from a database or the command line is joined onto the cache directory.
bool isSafeFileName(const std::string& name);

class FileLock {
 public:
  FileLock() = default;
  ~FileLock();
  FileLock(FileLock&& o) noexcept;
  FileLock& operator=(FileLock&& o) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Blocks up to timeout_ms (negative: forever) for an exclusive lock on `path` (created 0600).
  static Expected<FileLock> acquire(const std::string& path, int timeout_ms = -1,
                                    bool shared = false);
  void release();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Appends `text` (whole lines) to `path` (created 0600) while holding the FileLock <path>.lock,
// so lines of concurrent writers never interleave. A write that stops part-way (disk full) is cut
// back to where it began: readers never see a torn line. Errors name `what` (e.g. "untuned-keys
// file") and the path; kIoError also when the lock is not had within lock_timeout_ms.
Status appendLocked(const std::string& path, const std::string& text, const std::string& what,
                    int lock_timeout_ms);

}  // namespace ktune
