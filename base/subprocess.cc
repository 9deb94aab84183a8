#include "base/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace ktune {

std::string findProgram(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    return ::access(program.c_str(), X_OK) == 0 ? program : "";
  }
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= p.size()) {
    size_t c = p.find(':', pos);
    if (c == std::string::npos) c = p.size();
    std::string dir = p.substr(pos, c - pos);
    if (!dir.empty()) {
      std::string full = dir + "/" + program;
      struct stat st;
      if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(full.c_str(), X_OK) == 0)
        return full;
    }
    pos = c + 1;
  }
  return "";
}

Expected<ProcessResult> runProcess(const std::vector<std::string>& argv, const std::string& input,
                                   int timeout_ms) {
  if (argv.empty()) return Status::InvalidArgument("runProcess: empty argv");
  std::string exe = findProgram(argv[0]);
  if (exe.empty()) return Status::Unavailable("program '" + argv[0] + "' not found on PATH");
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) || ::pipe2(out_pipe, O_CLOEXEC) || ::pipe2(err_pipe, O_CLOEXEC))
    return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return Status::IoError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execv(exe.c_str(), args.data());
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ProcessResult r;
  size_t in_off = 0;
  if (input.empty()) {
    ::close(in_pipe[1]);
    in_pipe[1] = -1;
  } else {
    ::fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    pollfd fds[3];
    int n = 0;
    int io = -1, oo = -1, eo = -1;
    if (in_pipe[1] >= 0) { io = n; fds[n++] = {in_pipe[1], POLLOUT, 0}; }
    if (out_open) { oo = n; fds[n++] = {out_pipe[0], POLLIN, 0}; }
    if (err_open) { eo = n; fds[n++] = {err_pipe[0], POLLIN, 0}; }
    int wait_ms = 200;
    if (timeout_ms > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) {
        r.timed_out = true;
        ::kill(-pid, SIGKILL);
        break;
      }
      wait_ms = int(std::min<long long>(left, 200));
    }
    int pr = ::poll(fds, nfds_t(n), wait_ms);
    if (pr < 0 && errno != EINTR) break;
    char buf[65536];
    if (io >= 0 && (fds[io].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = ::write(in_pipe[1], input.data() + in_off, input.size() - in_off);
      if (w > 0) in_off += size_t(w);
      if (w < 0 && errno != EAGAIN) in_off = input.size();
      if (in_off >= input.size()) { ::close(in_pipe[1]); in_pipe[1] = -1; }
    }
    if (oo >= 0 && (fds[oo].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t k = ::read(out_pipe[0], buf, sizeof(buf));
      if (k > 0) r.out.append(buf, size_t(k)); else if (k == 0 || errno != EINTR) out_open = false;
    }
    if (eo >= 0 && (fds[eo].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t k = ::read(err_pipe[0], buf, sizeof(buf));
      if (k > 0) r.err.append(buf, size_t(k)); else if (k == 0 || errno != EINTR) err_open = false;
    }
  }
  if (in_pipe[1] >= 0) ::close(in_pipe[1]);
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(status)) {
    r.signaled = true;
    r.term_signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  }
  if (r.exit_code == 127 && !r.signaled && r.out.empty() && r.err.empty())
    return Status::Unavailable("could not execute '" + exe + "'");
  return r;
}

}  // namespace ktune
