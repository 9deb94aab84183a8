#include "tools/tune_detach.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

namespace ktune::cli {

namespace {
int g_status_fd = -1;  // the child's end of the status pipe

[[noreturn]] void parentWaits(pid_t child, int fd) {
  unsigned char rc = 0;
  ssize_t n;
  do n = ::read(fd, &rc, 1); while (n < 0 && errno == EINTR);
  if (n == 1) ::_exit(rc);
  int st = 0;  // the child died without a status: its own exit status or signal
  while (::waitpid(child, &st, 0) < 0 && errno == EINTR) {}
  if (WIFEXITED(st)) ::_exit(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    std::signal(WTERMSIG(st), SIG_DFL);
    ::raise(WTERMSIG(st));
    ::_exit(128 + WTERMSIG(st));
  }
  ::_exit(1);
}
}  // namespace

void detachTeardown() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  if (pid > 0) {
    ::close(fds[1]);
    parentWaits(pid, fds[0]);
  }
  ::close(fds[0]);
  // A kill of the parent (the caller's SIGTERM, timeout) must reach the tuning.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(1);
  g_status_fd = fds[1];
}

void reportExitStatus(int rc) {
  if (g_status_fd < 0) return;
  std::fflush(nullptr);
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::close(null);
  }
  const unsigned char b = static_cast<unsigned char>(rc);
  ssize_t n;
  do n = ::write(g_status_fd, &b, 1); while (n < 0 && errno == EINTR);
  ::close(g_status_fd);
  g_status_fd = -1;
}

}  // namespace ktune::cli
