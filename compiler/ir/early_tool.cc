// A pipeline tool started before its input exists (ir_util.h: EarlyTool). The LLVM and MLIR tools
// spend tens of milliseconds loading libLLVM/libMLIR before they read a byte; started early, that
// overlaps the step before them. The input goes through a FIFO the tool opens by path (no file
// data on disk, no inherited descriptor a concurrently spawned process could keep open); we open
// its writing end only after the tool opened it for reading.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/subprocess.h"
#include "compiler/compiler_util.h"
#include "compiler/ir/ir_util.h"

namespace ktune::ir_detail {

namespace {
constexpr int kToolTimeoutMs = 300000;
constexpr const char* kInputToken = "{input}";
// write(2) that reports a reader gone as EPIPE without raising SIGPIPE (which would end the
// process): the signal is blocked in this thread for the call and a raised one consumed.
ssize_t writeNoSigpipe(int fd, const char* data, size_t n) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  const ssize_t w = ::write(fd, data, n);
  const int err = errno;
  if (w < 0 && err == EPIPE) {
    const timespec zero{0, 0};
    (void)sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return w;
}

}  // namespace

Expected<std::unique_ptr<EarlyTool>> EarlyTool::start(std::vector<std::string> argv) {
  auto t = std::unique_ptr<EarlyTool>(new EarlyTool());
  KTUNE_ASSIGN_OR_RETURN(auto dir, compiler_detail::TempDir::create("ktune-ir-"));
  t->dir_.emplace(std::move(dir));
  const std::string fifo = t->dir_->file("input");
  if (::mkfifo(fifo.c_str(), 0600) != 0)
    return Status::IoError("mkfifo " + fifo + ": " + std::strerror(errno));
  t->fifo_ = fifo;
  for (auto& a : argv)
    if (a == kInputToken) a = fifo;
  t->argv_ = argv;
  t->result_ = std::async(std::launch::async, [argv] { return runProcess(argv, "", kToolTimeoutMs); });
  return t;
}

EarlyTool::~EarlyTool() {
  // An unused tool is blocked opening its input or about to: open the writing end and close it,
  // so it reads an empty input and exits.
  if (result_.valid() && openInput()) ::close(fd_);
  if (result_.valid()) result_.wait();
}

// Opens the FIFO for writing once the tool has opened it for reading (before that, a writer's
// close would drop the data and the tool would wait forever); false when the tool exited first.
bool EarlyTool::openInput() {
  for (;;) {
    fd_ = ::open(fifo_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ >= 0) return true;
    if (errno != ENXIO && errno != EINTR) return false;
    if (result_.wait_for(std::chrono::milliseconds(1)) == std::future_status::ready) return false;
  }
}

bool EarlyTool::exited() const {
  return result_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

Expected<std::string> EarlyTool::run(const std::string& input, const CompileRequest& req) {
  if (!result_.valid()) return Status::Internal("EarlyTool::run called twice");
  const bool opened = openInput();
  for (size_t off = 0; opened && off < input.size();) {
    const ssize_t w = writeNoSigpipe(fd_, input.data() + off, input.size() - off);
    if (w > 0) {
      off += size_t(w);
    } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
      break;
    } else if (exited()) {
      break;  // the tool stopped reading; its status says why
    } else {
      pollfd p{fd_, POLLOUT, 0};
      (void)::poll(&p, 1, 50);  // until the tool drains the pipe
    }
  }
  if (opened) ::close(fd_);
  fd_ = -1;
  Expected<ProcessResult> r = result_.get();
  if (!r.ok()) return r.status();
  const std::string tool = argv_[0].substr(argv_[0].rfind('/') + 1);
  if (r->timed_out)
    return Status::Timeout(tool + " did not finish within " + std::to_string(kToolTimeoutMs) + " ms");
  if (r->signaled || r->exit_code != 0)
    return compiler_detail::compileError(tool, req, r->err.empty() ? r->out : r->err,
                                         std::vector<std::string>(argv_.begin() + 1, argv_.end()));
  return std::move(r->out);
}

Expected<std::string> runToolOrEarly(EarlyTool* early, const std::vector<std::string>& argv,
                                     const std::string& input, const CompileRequest& req) {
  return early ? early->run(input, req) : runTool(argv, input, req);
}

}  // namespace ktune::ir_detail
