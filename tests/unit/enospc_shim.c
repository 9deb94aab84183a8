// LD_PRELOAD interposer that makes the disk look full (ENOSPC) for files under one directory.
//
// A real full disk cannot be produced portably in CI (no root, no loop devices), and the
// RLIMIT_FSIZE trick gives EFBIG, not ENOSPC, and hits every file of the process. This library
// wraps the calls ktune's writers make and fails them the way a full file system does:
//
//   KTUNE_TEST_ENOSPC_DIR=<dir>     only descriptors opened (open/openat/creat and their 64-bit
//                                   and fortified variants) on paths below <dir> are affected, so
//                                   gtest's output, pipes and every other file behave normally.
//   KTUNE_TEST_ENOSPC_AFTER=<bytes> byte budget for those descriptors (all of them together).
//                                   A write that crosses it is shortened to what fits (a short
//                                   write, as the kernel does), the next one fails with ENOSPC.
//                                   Unset or negative: unlimited.
//   KTUNE_TEST_ENOSPC_MODE=fsync    writes always succeed (counted); once the budget is exceeded,
//                                   fsync/fdatasync/close of such a descriptor fail with ENOSPC
//                                   (delayed allocation, NFS: the error shows up late).
//
// Wrapped: write, pwrite(64), writev, pwritev(64), fallocate(64), posix_fallocate(64), fsync,
// fdatasync, close, dup/dup2/dup3 (to follow descriptors). ktune writes through these only (no
// stdio, no iostreams, no mmap for output: see base/fs.cc and autotune/database.cc), so stdio is
// deliberately not wrapped: glibc's fwrite calls its internal write, which interposition cannot
// see anyway.
//
// A process that loads the shim can steer it directly (tests do, to lift the budget and retry):
// ktune_enospc_set_budget(bytes) resets the used count and sets a new budget (negative:
// unlimited), ktune_enospc_failures() counts the ENOSPC errors returned so far,
// ktune_enospc_syncs() the fsync/fdatasync calls on descriptors below <dir>. Look them up with
// dlsym(RTLD_DEFAULT, ...); their absence means the shim is not loaded.
//
// Built without sanitizers: under ASan the process needs ASAN_OPTIONS=verify_asan_link_order=0
// (the shim then comes before libasan; each wrapper calls the next definition, which is ASan's
// interceptor, which calls libc).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_FD 65536

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_dir[PATH_MAX];
static size_t g_dir_len;
static long long g_budget = -1;  // guarded by g_mu
static long long g_used;         // guarded by g_mu
static int g_fsync_mode;
static atomic_uchar g_tracked[MAX_FD];
static atomic_long g_failures;
static atomic_long g_syncs;  // fsync/fdatasync calls on descriptors below the directory

typedef int (*open_fn)(const char*, int, ...);
typedef int (*openat_fn)(int, const char*, int, ...);
typedef int (*open2_fn)(const char*, int);
typedef int (*openat2_fn)(int, const char*, int);
typedef int (*creat_fn)(const char*, mode_t);
typedef ssize_t (*write_fn)(int, const void*, size_t);
typedef ssize_t (*pwrite_fn)(int, const void*, size_t, off_t);
typedef ssize_t (*writev_fn)(int, const struct iovec*, int);
typedef ssize_t (*pwritev_fn)(int, const struct iovec*, int, off_t);
typedef int (*fallocate_fn)(int, int, off_t, off_t);
typedef int (*posix_fallocate_fn)(int, off_t, off_t);
typedef int (*fd_fn)(int);
typedef int (*dup2_fn)(int, int);
typedef int (*dup3_fn)(int, int, int);

static void* next(const char* name) { return dlsym(RTLD_NEXT, name); }

static void init(void) {
  const char* dir = getenv("KTUNE_TEST_ENOSPC_DIR");
  if (dir && *dir && strlen(dir) < sizeof(g_dir)) {
    strcpy(g_dir, dir);
    g_dir_len = strlen(g_dir);
    while (g_dir_len > 1 && g_dir[g_dir_len - 1] == '/') g_dir[--g_dir_len] = '\0';
  }
  const char* after = getenv("KTUNE_TEST_ENOSPC_AFTER");
  if (after && *after) g_budget = strtoll(after, NULL, 10);
  const char* mode = getenv("KTUNE_TEST_ENOSPC_MODE");
  g_fsync_mode = mode && strcmp(mode, "fsync") == 0;
}
static void ensureInit(void) { pthread_once(&g_once, init); }

// True if `path` (resolved against dirfd or the working directory when relative) lies below g_dir.
static int underDir(int dirfd, const char* path) {
  ensureInit();
  if (g_dir_len == 0 || !path) return 0;
  char abs[PATH_MAX * 2];
  if (path[0] == '/') {
    snprintf(abs, sizeof(abs), "%s", path);
  } else {
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
      if (!getcwd(base, sizeof(base))) return 0;
    } else {
      char link[64];
      snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
      ssize_t n = readlink(link, base, sizeof(base) - 1);
      if (n <= 0) return 0;
      base[n] = '\0';
    }
    snprintf(abs, sizeof(abs), "%s/%s", base, path);
  }
  if (strncmp(abs, g_dir, g_dir_len) != 0) return 0;
  return abs[g_dir_len] == '/' || abs[g_dir_len] == '\0';
}

static void track(int fd, int on) {
  if (fd >= 0 && fd < MAX_FD) atomic_store(&g_tracked[fd], (unsigned char)on);
}
static int tracked(int fd) { return fd >= 0 && fd < MAX_FD && atomic_load(&g_tracked[fd]); }

static void noteOpen(int fd, int dirfd, const char* path) {
  if (fd >= 0) track(fd, underDir(dirfd, path));
}

// How many of `want` bytes may be written now: want, fewer (a short write), or -1 (ENOSPC, errno
// set). Charges the budget. In fsync mode writes are never refused, only counted.
static long long reserve(long long want) {
  pthread_mutex_lock(&g_mu);
  long long allowed = want;
  if (g_budget >= 0 && !g_fsync_mode) {
    long long left = g_budget - g_used;
    if (left <= 0 && want > 0) {
      pthread_mutex_unlock(&g_mu);
      atomic_fetch_add(&g_failures, 1);
      errno = ENOSPC;
      return -1;
    }
    if (allowed > left) allowed = left;
  }
  g_used += allowed;
  pthread_mutex_unlock(&g_mu);
  return allowed;
}
// Gives back bytes reserved but not written (the real call failed or wrote less).
static void unreserve(long long n) {
  if (n <= 0) return;
  pthread_mutex_lock(&g_mu);
  g_used -= n;
  pthread_mutex_unlock(&g_mu);
}
static int overBudget(void) {
  pthread_mutex_lock(&g_mu);
  int over = g_budget >= 0 && g_used > g_budget;
  pthread_mutex_unlock(&g_mu);
  return over;
}
static int lateFailure(int fd) {
  if (!g_fsync_mode || !tracked(fd) || !overBudget()) return 0;
  atomic_fetch_add(&g_failures, 1);
  return 1;
}

EXPORT void ktune_enospc_set_budget(long long bytes) {
  ensureInit();
  pthread_mutex_lock(&g_mu);
  g_budget = bytes;
  g_used = 0;
  pthread_mutex_unlock(&g_mu);
}
EXPORT long ktune_enospc_failures(void) { return atomic_load(&g_failures); }
EXPORT long ktune_enospc_syncs(void) { return atomic_load(&g_syncs); }

// ---- descriptor creation ------------------------------------------------------------------

static mode_t modeArg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

#define DEFINE_OPEN(name)                                  \
  EXPORT int name(const char* path, int flags, ...) {      \
    static open_fn real;                                   \
    if (!real) real = (open_fn)next(#name);                \
    va_list ap;                                            \
    va_start(ap, flags);                                   \
    mode_t mode = modeArg(flags, ap);                      \
    va_end(ap);                                            \
    int fd = real(path, flags, mode);                      \
    int e = errno;                                         \
    noteOpen(fd, AT_FDCWD, path);                          \
    errno = e;                                             \
    return fd;                                             \
  }
DEFINE_OPEN(open)
DEFINE_OPEN(open64)

#define DEFINE_OPENAT(name)                                          \
  EXPORT int name(int dirfd, const char* path, int flags, ...) {     \
    static openat_fn real;                                           \
    if (!real) real = (openat_fn)next(#name);                        \
    va_list ap;                                                      \
    va_start(ap, flags);                                             \
    mode_t mode = modeArg(flags, ap);                                \
    va_end(ap);                                                      \
    int fd = real(dirfd, path, flags, mode);                         \
    int e = errno;                                                   \
    noteOpen(fd, dirfd, path);                                       \
    errno = e;                                                       \
    return fd;                                                       \
  }
DEFINE_OPENAT(openat)
DEFINE_OPENAT(openat64)

#define DEFINE_OPEN2(name)                             \
  EXPORT int name(const char* path, int flags) {       \
    static open2_fn real;                              \
    if (!real) real = (open2_fn)next(#name);           \
    int fd = real(path, flags);                        \
    int e = errno;                                     \
    noteOpen(fd, AT_FDCWD, path);                      \
    errno = e;                                         \
    return fd;                                         \
  }
DEFINE_OPEN2(__open_2)
DEFINE_OPEN2(__open64_2)

#define DEFINE_OPENAT2(name)                                     \
  EXPORT int name(int dirfd, const char* path, int flags) {      \
    static openat2_fn real;                                      \
    if (!real) real = (openat2_fn)next(#name);                   \
    int fd = real(dirfd, path, flags);                           \
    int e = errno;                                               \
    noteOpen(fd, dirfd, path);                                   \
    errno = e;                                                   \
    return fd;                                                   \
  }
DEFINE_OPENAT2(__openat_2)
DEFINE_OPENAT2(__openat64_2)

#define DEFINE_CREAT(name)                              \
  EXPORT int name(const char* path, mode_t mode) {      \
    static creat_fn real;                               \
    if (!real) real = (creat_fn)next(#name);            \
    int fd = real(path, mode);                          \
    int e = errno;                                      \
    noteOpen(fd, AT_FDCWD, path);                       \
    errno = e;                                          \
    return fd;                                          \
  }
DEFINE_CREAT(creat)
DEFINE_CREAT(creat64)

EXPORT int dup(int fd) {
  static fd_fn real;
  if (!real) real = (fd_fn)next("dup");
  int nfd = real(fd);
  if (nfd >= 0) track(nfd, tracked(fd));
  return nfd;
}
EXPORT int dup2(int fd, int nfd) {
  static dup2_fn real;
  if (!real) real = (dup2_fn)next("dup2");
  int r = real(fd, nfd);
  if (r >= 0) track(r, tracked(fd));
  return r;
}
EXPORT int dup3(int fd, int nfd, int flags) {
  static dup3_fn real;
  if (!real) real = (dup3_fn)next("dup3");
  int r = real(fd, nfd, flags);
  if (r >= 0) track(r, tracked(fd));
  return r;
}

// ---- writes -------------------------------------------------------------------------------

EXPORT ssize_t write(int fd, const void* buf, size_t n) {
  static write_fn real;
  if (!real) real = (write_fn)next("write");
  if (!tracked(fd)) return real(fd, buf, n);
  long long allowed = reserve((long long)n);
  if (allowed < 0) return -1;
  ssize_t r = real(fd, buf, (size_t)allowed);
  int e = errno;
  unreserve(allowed - (r > 0 ? r : 0));
  errno = e;
  return r;
}

#define DEFINE_PWRITE(name)                                                \
  EXPORT ssize_t name(int fd, const void* buf, size_t n, off_t off) {      \
    static pwrite_fn real;                                                 \
    if (!real) real = (pwrite_fn)next(#name);                              \
    if (!tracked(fd)) return real(fd, buf, n, off);                        \
    long long allowed = reserve((long long)n);                             \
    if (allowed < 0) return -1;                                            \
    ssize_t r = real(fd, buf, (size_t)allowed, off);                       \
    int e = errno;                                                         \
    unreserve(allowed - (r > 0 ? r : 0));                                  \
    errno = e;                                                             \
    return r;                                                              \
  }
DEFINE_PWRITE(pwrite)
DEFINE_PWRITE(pwrite64)

// Shortens an iovec array to `allowed` bytes in `out` (at most IOV_MAX entries); returns its count.
static int clipIov(const struct iovec* iov, int cnt, long long allowed, struct iovec* out) {
  int k = 0;
  for (int i = 0; i < cnt && k < IOV_MAX && allowed > 0; ++i) {
    out[k] = iov[i];
    if ((long long)out[k].iov_len > allowed) out[k].iov_len = (size_t)allowed;
    allowed -= (long long)out[k].iov_len;
    ++k;
  }
  return k;
}
static long long iovBytes(const struct iovec* iov, int cnt) {
  long long total = 0;
  for (int i = 0; i < cnt; ++i) total += (long long)iov[i].iov_len;
  return total;
}

EXPORT ssize_t writev(int fd, const struct iovec* iov, int cnt) {
  static writev_fn real;
  if (!real) real = (writev_fn)next("writev");
  if (!tracked(fd) || cnt <= 0 || cnt > IOV_MAX) return real(fd, iov, cnt);
  long long allowed = reserve(iovBytes(iov, cnt));
  if (allowed < 0) return -1;
  struct iovec clipped[IOV_MAX];
  int k = clipIov(iov, cnt, allowed, clipped);
  ssize_t r = real(fd, clipped, k);
  int e = errno;
  unreserve(allowed - (r > 0 ? r : 0));
  errno = e;
  return r;
}

#define DEFINE_PWRITEV(name)                                                          \
  EXPORT ssize_t name(int fd, const struct iovec* iov, int cnt, off_t off) {          \
    static pwritev_fn real;                                                           \
    if (!real) real = (pwritev_fn)next(#name);                                        \
    if (!tracked(fd) || cnt <= 0 || cnt > IOV_MAX) return real(fd, iov, cnt, off);    \
    long long allowed = reserve(iovBytes(iov, cnt));                                  \
    if (allowed < 0) return -1;                                                       \
    struct iovec clipped[IOV_MAX];                                                    \
    int k = clipIov(iov, cnt, allowed, clipped);                                      \
    ssize_t r = real(fd, clipped, k, off);                                            \
    int e = errno;                                                                    \
    unreserve(allowed - (r > 0 ? r : 0));                                             \
    errno = e;                                                                        \
    return r;                                                                         \
  }
DEFINE_PWRITEV(pwritev)
DEFINE_PWRITEV(pwritev64)

// Preallocation reserves all or nothing: a full disk refuses it without allocating a part.
static int reserveAll(long long want) {
  pthread_mutex_lock(&g_mu);
  int ok = g_budget < 0 || g_fsync_mode || g_budget - g_used >= want;
  if (ok) g_used += want;
  pthread_mutex_unlock(&g_mu);
  if (!ok) atomic_fetch_add(&g_failures, 1);
  return ok;
}

#define DEFINE_FALLOCATE(name)                                         \
  EXPORT int name(int fd, int mode, off_t off, off_t len) {            \
    static fallocate_fn real;                                          \
    if (!real) real = (fallocate_fn)next(#name);                       \
    if (tracked(fd) && !reserveAll((long long)len)) {                  \
      errno = ENOSPC;                                                  \
      return -1;                                                       \
    }                                                                  \
    return real(fd, mode, off, len);                                   \
  }
DEFINE_FALLOCATE(fallocate)
DEFINE_FALLOCATE(fallocate64)

// posix_fallocate reports the error as its return value, not in errno.
#define DEFINE_POSIX_FALLOCATE(name)                                     \
  EXPORT int name(int fd, off_t off, off_t len) {                        \
    static posix_fallocate_fn real;                                      \
    if (!real) real = (posix_fallocate_fn)next(#name);                   \
    if (tracked(fd) && !reserveAll((long long)len)) return ENOSPC;       \
    return real(fd, off, len);                                           \
  }
DEFINE_POSIX_FALLOCATE(posix_fallocate)
DEFINE_POSIX_FALLOCATE(posix_fallocate64)

// ---- late failures (fsync mode) and descriptor release ------------------------------------

EXPORT int fsync(int fd) {
  static fd_fn real;
  if (!real) real = (fd_fn)next("fsync");
  if (tracked(fd)) atomic_fetch_add(&g_syncs, 1);
  if (lateFailure(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd);
}
EXPORT int fdatasync(int fd) {
  static fd_fn real;
  if (!real) real = (fd_fn)next("fdatasync");
  if (tracked(fd)) atomic_fetch_add(&g_syncs, 1);
  if (lateFailure(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd);
}
EXPORT int close(int fd) {
  static fd_fn real;
  if (!real) real = (fd_fn)next("close");
  int late = lateFailure(fd);
  track(fd, 0);
  int r = real(fd);  // the descriptor is released even when close reports an error (Linux)
  if (late && r == 0) {
    errno = ENOSPC;
    return -1;
  }
  return r;
}
