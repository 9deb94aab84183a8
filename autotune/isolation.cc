#include "autotune/isolation.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "autotune/candidate_json.h"
#include "autotune/isolation_wire.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/json_bounded.h"
#include "base/subprocess.h"

namespace ktune {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace isolation_wire;

std::string signalName(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    case SIGPIPE: return "SIGPIPE";
    default: return "signal " + std::to_string(sig);
  }
}

std::string lastLine(const std::string& s) {
  size_t end = s.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  size_t b = s.rfind('\n', end);
  return s.substr(b == std::string::npos ? 0 : b + 1, end + 1 - (b == std::string::npos ? 0 : b + 1));
}

// Vendor error names the worker may have printed last (CUDA_ERROR_ILLEGAL_ADDRESS, hipError...).
bool mentionsDeviceError(const std::string& s) {
  return s.find("CUDA_ERROR_") != std::string::npos || s.find("hipError") != std::string::npos ||
         s.find("illegal address") != std::string::npos ||
         s.find("misaligned") != std::string::npos;
}

}  // namespace

namespace {
// Directory of `path` ("" when it has no '/').
std::string dirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}
// Directory of the object (executable or shared library) this code was linked into: for the
// installed libktune.so that is <prefix>/lib, whatever the calling program is.
std::string thisObjectDir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&findWorkerExecutable), &info) == 0 || !info.dli_fname)
    return {};
  char resolved[PATH_MAX];
  if (!::realpath(info.dli_fname, resolved)) return {};
  return dirOf(resolved);
}
}  // namespace

std::vector<std::string> workerCandidates(const std::string& exe_dir, const std::string& lib_dir) {
  std::vector<std::string> cands;
  if (!exe_dir.empty()) cands = {exe_dir + "/ktune-worker", exe_dir + "/../tools/ktune-worker"};
  if (!lib_dir.empty()) {
    cands.push_back(lib_dir + "/../bin/ktune-worker");
    // A multiarch libdir (lib/x86_64-linux-gnu):
    cands.push_back(lib_dir + "/../../bin/ktune-worker");
    cands.push_back(lib_dir + "/../libexec/ktune/ktune-worker");
    cands.push_back(lib_dir + "/bin/ktune-worker");  // the Python package: ktune/{libktune, bin/}
  }
  return cands;
}

Expected<std::string> findWorkerExecutable(const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    if (::access(explicit_path.c_str(), X_OK) == 0) return explicit_path;
    return Status::NotFound("isolation worker '" + explicit_path +
                            "' is not an executable file (check KTUNE_WORKER / "
                            "TunerOptions::worker_path)");
  }
  std::string exe_dir;
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    exe_dir = dirOf(self);
  }
  std::string tried;
  for (const std::string& cand : workerCandidates(exe_dir, thisObjectDir())) {
    if (::access(cand.c_str(), X_OK) == 0) return cand;
    tried += cand + ", ";
  }
  std::string onpath = findProgram("ktune-worker");
  if (!onpath.empty()) return onpath;
  return Status::NotFound("isolation worker 'ktune-worker' not found (looked at " + tried +
                          "and PATH); build it, or set KTUNE_WORKER=<path>, or turn isolation "
                          "off with KTUNE_ISOLATE=0");
}

// ---------------------------------------------------------------- supervisor

struct WorkerSupervisor::Proc {
  pid_t pid = -1;
  int sock = -1;  // the worker's stdin+stdout
  int err = -1;   // the worker's stderr
  std::string inbuf;
  bool eof = false;
  bool ready = false;  // the hello line was read
};

WorkerSupervisor::WorkerSupervisor(WorkerLaunch launch, IsolationOptions opts)
    : launch_(std::move(launch)), opts_(std::move(opts)) {}

WorkerSupervisor::~WorkerSupervisor() {
  if (!proc_) return;
  // Polite first: EOF on stdin makes the worker return from serveWorker and exit.
  ::close(proc_->sock);
  proc_->sock = -1;
  for (int i = 0; i < 100; ++i) {
    int st;
    if (::waitpid(proc_->pid, &st, WNOHANG) == proc_->pid) {
      proc_->pid = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  killWorker();
}

std::string WorkerSupervisor::stderrTail() const { return stderr_tail_; }

void WorkerSupervisor::killWorker() {
  if (!proc_) return;
  if (proc_->pid > 0) {
    ::kill(-proc_->pid, SIGKILL);
    ::kill(proc_->pid, SIGKILL);
    int st;
    while (::waitpid(proc_->pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
  if (proc_->sock >= 0) ::close(proc_->sock);
  if (proc_->err >= 0) ::close(proc_->err);
  proc_.reset();
}

namespace {
enum class ReadResult { kLine, kTimeout, kEof };
}  // namespace

// Reads one line from the worker, collecting its stderr meanwhile, until `deadline`.
static ReadResult readLine(int sock, int err, std::string& inbuf, bool& eof, std::string& tail,
                           Clock::time_point deadline, std::string* line) {
  for (;;) {
    size_t nl = inbuf.find('\n');
    if (nl != std::string::npos) {
      *line = inbuf.substr(0, nl);
      inbuf.erase(0, nl + 1);
      return ReadResult::kLine;
    }
    if (eof) return ReadResult::kEof;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return ReadResult::kTimeout;
    pollfd fds[2] = {{sock, POLLIN, 0}, {err, POLLIN, 0}};
    int nf = err >= 0 ? 2 : 1;
    int pr = ::poll(fds, nfds_t(nf), int(std::min<long long>(left, 100)));
    if (pr < 0 && errno != EINTR) return ReadResult::kEof;
    char buf[65536];
    if (nf == 2 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t k = ::read(err, buf, sizeof(buf));
      if (k > 0) {
        tail.append(buf, size_t(k));
        if (tail.size() > 8192) tail.erase(0, tail.size() - 4096);
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t k = ::read(sock, buf, sizeof(buf));
      if (k > 0) {
        inbuf.append(buf, size_t(k));
      } else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
        eof = true;
      }
    }
  }
}

Status WorkerSupervisor::prestart() {
  if (proc_) return Status::Ok();
  return spawn();
}

Status WorkerSupervisor::prepare(const std::string& family, const std::string& args_json) {
  if (!proc_) KTUNE_RETURN_IF_ERROR(spawn());
  Json req{{"op", "prepare"}, {"family", family}, {"args", args_json}};
  if (!writeAll(proc_->sock, req.dump() + "\n"))
    return Status::Unavailable("isolation worker does not accept requests");
  return Status::Ok();
}

Status WorkerSupervisor::ensureStarted() {
  if (proc_) {
    int st;
    if (proc_->pid > 0 && ::waitpid(proc_->pid, &st, WNOHANG) == 0 && !proc_->eof)
      return proc_->ready ? Status::Ok() : awaitHello();
    if (proc_->pid > 0 && ::waitpid(proc_->pid, &st, WNOHANG) != 0) proc_->pid = -1;
    killWorker();  // died while idle (or during a pre-start): start a fresh one
  }
  KTUNE_RETURN_IF_ERROR(spawn());
  return awaitHello();
}

Status WorkerSupervisor::spawn() {
  int sv[2], ep[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return Status::IoError(std::string("isolation: socketpair: ") + std::strerror(errno));
  if (::pipe2(ep, O_CLOEXEC) != 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    return Status::IoError(std::string("isolation: pipe: ") + std::strerror(errno));
  }
  std::vector<std::string> argv = {launch_.executable, "--cache-dir", launch_.cache_dir,
                                   "--backend", launch_.backend, "--device",
                                   std::to_string(launch_.device)};
  for (const auto& p : launch_.plugins) {
    argv.push_back("--plugin");
    argv.push_back(p);
  }
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    ::close(ep[0]);
    ::close(ep[1]);
    return Status::IoError(std::string("isolation: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    // A SIGKILLed tuner must not leave its worker running (resumable tuning relies on it).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::dup2(sv[1], 0);
    ::dup2(sv[1], 1);
    ::dup2(ep[1], 2);
    ::syscall(SYS_close_range, 3u, ~0u, 0u);
    ::execv(argv[0].c_str(), args.data());
    const char msg[] = "ktune-worker: exec failed\n";
    (void)!::write(2, msg, sizeof(msg) - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no window where a kill(-pid) misses the group
  ::close(sv[1]);
  ::close(ep[1]);
  proc_ = std::make_unique<Proc>();
  proc_->pid = pid;
  proc_->sock = sv[0];
  proc_->err = ep[0];
  stderr_tail_.clear();
  ++stats_.starts;
  stats_.pids.push_back(pid);
  return Status::Ok();
}

namespace {
// The worker's own timings (IsolationStats::worker_ms) from one of its lines; non-numbers ignored.
void noteWorkerMs(IsolationStats& s, const Json& ms) {
  if (!ms.is_object()) return;
  for (const auto& [name, v] : ms.items())
    if (v.is_number()) s.worker_ms[name] = v.get<double>();
}
}  // namespace

Status WorkerSupervisor::awaitHello() {
  // Wait for the hello line (plugins loaded, device opened).
  auto deadline = Clock::now() + std::chrono::milliseconds(int64_t(opts_.startup_timeout_ms));
  std::string line;
  for (;;) {
    ReadResult rr = readLine(proc_->sock, proc_->err, proc_->inbuf, proc_->eof, stderr_tail_,
                             deadline, &line);
    if (rr == ReadResult::kLine) {
      Json j = parseJsonOrDiscarded(line);
      if (!j.is_discarded() && j.is_object() && j.value("event", "") == "hello") {
        proc_->ready = true;
        noteWorkerMs(stats_, j.value("startup_ms", Json::object()));
        return Status::Ok();
      }
      continue;  // not ours (a plugin printing to stdout): ignore
    }
    std::string why = rr == ReadResult::kTimeout ? "did not start within " +
                                                       std::to_string(int64_t(opts_.startup_timeout_ms)) +
                                                       " ms"
                                                 : "exited during start-up";
    // Drain what it said on stderr before it went away.
    readLine(-1, proc_->err, proc_->inbuf, proc_->eof, stderr_tail_,
             Clock::now() + std::chrono::milliseconds(50), &line);
    killWorker();
    return Status::Unavailable("isolation worker " + launch_.executable + " " + why +
                               (stderr_tail_.empty() ? "" : ": " + lastLine(stderr_tail_)));
  }
}

namespace {

// The bench request for the candidates of `batch` from `first` on.
Json benchRequest(const WorkerBatch& batch, size_t first, double best) {
  Json req{{"op", "bench"},   {"family", batch.family}, {"key", batch.key},
           {"args", batch.args_json}, {"best_ms", best}, {"bench", benchToJson(batch.bench)}};
  Json cs = Json::array();
  for (size_t i = first; i < batch.candidates.size(); ++i) {
    const auto& c = batch.candidates[i];
    cs.push_back(Json{{"config", c.config}, {"source", c.source},
                      {"code_object_key", c.code_object_key}});
  }
  req["candidates"] = std::move(cs);
  return req;
}

CandidateResult failedResult(const WorkerCandidate& c, Code code, std::string reason) {
  CandidateResult r;
  r.config = c.config;
  r.source = c.source;
  r.status = code;
  r.reason = std::move(reason);
  r.date = isoUtcNow();
  return r;
}

}  // namespace

std::string WorkerSupervisor::reapGone(int* st, bool* reaped) {
  // The worker is gone: reap it for the reason (signal or exit code).
  pid_t pid = proc_->pid;
  std::string drain;
  readLine(-1, proc_->err, proc_->inbuf, proc_->eof, stderr_tail_,
           Clock::now() + std::chrono::milliseconds(20), &drain);
  *reaped = false;
  for (int i = 0; i < 200 && !*reaped; ++i) {
    pid_t w = ::waitpid(pid, st, WNOHANG);
    if (w == pid) *reaped = true;
    else std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (*reaped) proc_->pid = -1;
  return !*reaped ? "closed its output"
         : WIFSIGNALED(*st) ? "was killed by " + signalName(WTERMSIG(*st))
                            : "exited with status " + std::to_string(WEXITSTATUS(*st));
}

Status WorkerSupervisor::run(const WorkerBatch& batch,
                             const std::function<void(size_t, const CandidateResult&)>& on_result) {
  const size_t n = batch.candidates.size();
  size_t next = 0;
  double best = batch.best_ms;
  int write_failures = 0;
  const double budget = batch.bench.warmup_ms + batch.bench.rep_ms;
  auto candidateTimeoutMs = [&] {
    double floor_ms = opts_.timeout_floor_ms + 2 * budget;
    double dyn = opts_.timeout_factor * best *
                 double(batch.bench.estimate_runs + batch.bench.check_every + 2);
    return std::max(floor_ms, dyn);
  };
  while (next < n) {
    const auto t_start = Clock::now();
    Status started = ensureStarted();
    stats_.worker_ms["wait_start"] += msSince(t_start);
    KTUNE_RETURN_IF_ERROR(started);
    const auto t_request = Clock::now();
    if (!writeAll(proc_->sock, benchRequest(batch, next, best).dump() + "\n")) {
      killWorker();
      if (++write_failures > 2) return Status::Unavailable("isolation worker does not accept requests");
      continue;
    }
    ++stats_.requests;
    const size_t offset = next;
    bool problem_ready = false;
    auto deadline = Clock::now() + std::chrono::milliseconds(int64_t(opts_.startup_timeout_ms));
    bool restart = false;
    while (!restart) {
      std::string line;
      ReadResult rr = readLine(proc_->sock, proc_->err, proc_->inbuf, proc_->eof, stderr_tail_,
                               deadline, &line);
      if (rr == ReadResult::kTimeout) {
        killWorker();
        if (!problem_ready) {
          return Status::Timeout("isolation worker: building the problem of " + batch.family +
                                 " took more than " +
                                 std::to_string(int64_t(opts_.startup_timeout_ms)) + " ms");
        }
        CandidateResult r = failedResult(
            batch.candidates[next], Code::kTimeout,
            "hung: no result within " + std::to_string(int64_t(candidateTimeoutMs())) +
                " ms (watchdog killed the worker)");
        ++stats_.timeouts;
        ++stats_.candidates_sent;
        on_result(next++, r);
        restart = true;
        break;
      }
      if (rr == ReadResult::kEof) {
        int st = 0;
        bool reaped = false;
        const std::string how = reapGone(&st, &reaped);
        std::string said = lastLine(stderr_tail_);
        killWorker();
        if (!problem_ready) {
          return Status::Unavailable("isolation worker " + how + " before benchmarking " +
                                     batch.family + (said.empty() ? "" : ": " + said));
        }
        CandidateResult r = failedResult(
            batch.candidates[next], Code::kDeviceFault,
            "worker " + how + " while running this candidate" +
                (said.empty() ? "" : " (last worker output: " + said + ")"));
        if (!WIFSIGNALED(st) && !mentionsDeviceError(said) && reaped && WEXITSTATUS(st) == 0) {
          r.status = Code::kInternal;  // a clean exit mid-candidate is a worker bug, not the kernel
        }
        ++stats_.crashes;
        ++stats_.candidates_sent;
        on_result(next++, r);
        restart = true;
        break;
      }
      Json j = parseJsonOrDiscarded(line);
      if (j.is_discarded() || !j.is_object() || !j.contains("event")) continue;  // stray output
      std::string ev = j.value("event", "");
      if (ev == "problem") {
        problem_ready = true;
        noteWorkerMs(stats_, Json{{"problem", j.value("problem_ms", 0.0)},
                                  {"bench_prepare", j.value("bench_prepare_ms", 0.0)}});
        stats_.worker_ms["wait_problem"] += msSince(t_request);
        deadline = Clock::now() + std::chrono::milliseconds(int64_t(candidateTimeoutMs()));
      } else if (ev == "result") {
        size_t idx = offset + j.value("index", size_t(0));
        if (idx != next || !j.contains("result")) {
          killWorker();
          return Status::Internal("isolation worker protocol: result for candidate " +
                                  std::to_string(idx) + ", expected " + std::to_string(next));
        }
        CandidateResult r = resultFromJson(j["result"]);
        if (r.status == Code::kOk && r.stats.runs > 0 && (best <= 0 || r.stats.median_ms < best))
          best = r.stats.median_ms;
        ++stats_.candidates_sent;
        on_result(next++, r);
        deadline = Clock::now() + std::chrono::milliseconds(int64_t(candidateTimeoutMs()));
      } else if (ev == "exit") {
        // The worker leaves after a device fault (its context is lost); nothing is in flight.
        int st;
        if (proc_->pid > 0 && ::waitpid(proc_->pid, &st, 0) == proc_->pid) proc_->pid = -1;
        killWorker();
        restart = true;
      } else if (ev == "done") {
        if (next != n) {
          killWorker();
          return Status::Internal("isolation worker protocol: done after " + std::to_string(next) +
                                  " of " + std::to_string(n) + " candidates");
        }
        return Status::Ok();
      } else if (ev == "error") {
        Code c = candidatejson::codeFromName(j.value("code", std::string("internal")));
        return Status(c == Code::kOk ? Code::kInternal : c,
                      "isolation worker: " + j.value("message", std::string()));
      }
    }
  }
  return Status::Ok();
}

}  // namespace ktune
