#include "autotune/compile_workers.h"

#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "autotune/isolation_wire.h"
#include "compiler/resources_json.h"

extern char** environ;

namespace ktune {
namespace {

using Json = nlohmann::json;
constexpr size_t kMaxFrameBytes = size_t(1) << 30;

bool writeFrame(int fd, Json header, const std::string& payload) {
  header["bytes"] = payload.size();
  return isolation_wire::writeAll(fd, header.dump() + "\n") &&
         isolation_wire::writeAll(fd, payload);
}

bool readMore(int fd, std::string& buf, std::string* why) {
  char tmp[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n > 0) {
      buf.append(tmp, size_t(n));
      return true;
    }
    if (n == 0) {
      *why = "the other side closed the connection";
      return false;
    }
    if (errno != EINTR) {
      *why = std::string("read: ") + std::strerror(errno);
      return false;
    }
  }
}

// One frame: false on EOF, a read error or a malformed header (*why says which).
bool readFrame(int fd, std::string& buf, Json* header, std::string* payload, std::string* why) {
  size_t nl;
  while ((nl = buf.find('\n')) == std::string::npos)
    if (!readMore(fd, buf, why)) return false;
  *header = Json::parse(buf.begin(), buf.begin() + long(nl), nullptr, false);
  buf.erase(0, nl + 1);
  if (!header->is_object() || !(*header)["bytes"].is_number_unsigned() ||
      (*header)["bytes"].get<size_t>() > kMaxFrameBytes) {
    *why = "malformed frame header";
    return false;
  }
  const size_t bytes = (*header)["bytes"].get<size_t>();
  while (buf.size() < bytes)
    if (!readMore(fd, buf, why)) return false;
  payload->assign(buf, 0, bytes);
  buf.erase(0, bytes);
  return true;
}

Json requestHeader(const CompileRequest& r, const std::string& compiler) {
  Json defines = Json::array();
  for (const auto& [k, v] : r.defines) defines.push_back({k, v});
  return {{"compiler", compiler}, {"arch", r.arch},       {"source_name", r.source_name},
          {"entry", r.entry},     {"defines", defines},   {"options", r.options},
          {"language", int(r.language)}};
}

// Throws nlohmann's exceptions on a mistyped header (the worker answers an internal error).
CompileRequest requestFrom(const Json& h, std::string source) {
  CompileRequest r;
  r.source = std::move(source);
  r.source_name = h.at("source_name").get<std::string>();
  r.entry = h.at("entry").get<std::string>();
  r.arch = h.at("arch").get<std::string>();
  r.options = h.at("options").get<std::vector<std::string>>();
  for (const auto& d : h.at("defines")) r.defines.emplace_back(d.at(0).get<std::string>(), d.at(1).get<std::string>());
  r.language = Language(h.at("language").get<int>());
  return r;
}

Json replyHeader(const Expected<CodeObject>& co) {
  if (!co.ok())
    return {{"ok", false}, {"code", int(co.status().code())}, {"message", co.status().message()}};
  return {{"ok", true},
          {"facts", codeObjectFactsToJson(*co)},
          {"format", co->format},
          {"log", co->log}};
}

// The calling thread's nice value (Linux keeps one per thread).
int threadNice() {
  errno = 0;
  const int n = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)));
  return errno == 0 ? n : 0;
}

// A worker holds nothing to save (the store is written by the parent), so it is killed, not
// asked to finish: the parent then waits for no worker's own exit (NVRTC's teardown), and a worker
// still opening its compiler is not waited for either.
void reap(pid_t pid) {
  int st;
  while (pid > 0 && ::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

ProcessCompiler::ProcessCompiler(std::shared_ptr<Compiler> inner, std::string executable,
                                 std::string arch, int processes)
    : inner_(std::move(inner)), executable_(std::move(executable)), arch_(std::move(arch)),
      max_(std::max(1, processes)) {}

ProcessCompiler::~ProcessCompiler() {
  std::vector<std::unique_ptr<Proc>> procs;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [nice, v] : idle_)
      for (auto& p : v) procs.push_back(std::move(p));
    idle_.clear();
  }
  for (auto& p : procs) {  // all killed first, then reaped: their exits overlap
    ::close(p->fd);
    if (p->pid > 0) ::kill(p->pid, SIGKILL);
  }
  for (auto& p : procs) reap(p->pid);
}

std::unique_ptr<ProcessCompiler::Proc> ProcessCompiler::spawn(int nice) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    std::lock_guard<std::mutex> l(mu_);
    stats_.last_failure = std::string("socketpair: ") + std::strerror(errno);
    return nullptr;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
  std::vector<std::string> argv = {executable_, "--compile", arch_, inner_->name(),
                                   std::to_string(nice)};
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, executable_.c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    std::lock_guard<std::mutex> l(mu_);
    stats_.last_failure = "cannot start " + executable_ + ": " + std::strerror(rc);
    return nullptr;
  }
  auto p = std::make_unique<Proc>();
  p->pid = pid;
  p->fd = sv[0];
  p->nice = nice;
  std::lock_guard<std::mutex> l(mu_);
  ++stats_.started;
  stats_.pids.push_back(int(pid));
  return p;
}

std::unique_ptr<ProcessCompiler::Proc> ProcessCompiler::acquire(int nice) {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    if (disabled_) return nullptr;
    auto& idle = idle_[nice];
    if (!idle.empty()) {
      auto p = std::move(idle.back());
      idle.pop_back();
      return p;
    }
    if (live_[nice] < max_) {
      ++live_[nice];
      l.unlock();
      auto p = spawn(nice);
      if (p) return p;
      l.lock();
      --live_[nice];
      disabled_ = true;
      idle_cv_.notify_all();
      return nullptr;
    }
    idle_cv_.wait(l);
  }
}

void ProcessCompiler::release(std::unique_ptr<Proc> p) {
  std::lock_guard<std::mutex> l(mu_);
  const int nice = p->nice;
  idle_[nice].push_back(std::move(p));
  idle_cv_.notify_all();  // waiters of several nice values share the condition
}

void ProcessCompiler::drop(std::unique_ptr<Proc> p, const std::string& why) {
  ::close(p->fd);
  if (p->pid > 0) ::kill(p->pid, SIGKILL);
  reap(p->pid);
  std::lock_guard<std::mutex> l(mu_);
  --live_[p->nice];
  if (p->answered == 0) disabled_ = true;  // it never worked: its replacements would not either
  stats_.last_failure = why;
  idle_cv_.notify_all();  // a waiting compile may start a replacement
}

Expected<CodeObject> ProcessCompiler::viaWorker(Proc& p, const CompileRequest& req, bool* failed) {
  *failed = true;
  if (!writeFrame(p.fd, requestHeader(req, inner_->name()), req.source))
    return Status::Unavailable("compile worker does not accept requests");
  Json h;
  std::string payload, why;
  if (!readFrame(p.fd, p.buf, &h, &payload, &why))
    return Status::Unavailable("compile worker: " + why);
  if (!h["ok"].is_boolean()) return Status::Unavailable("compile worker: malformed reply");
  if (!h["ok"].get<bool>()) {
    if (!h["code"].is_number_integer() || !h["message"].is_string())
      return Status::Unavailable("compile worker: malformed error reply");
    *failed = false;
    return Status(Code(h["code"].get<int>()), h["message"].get<std::string>());
  }
  CodeObject co;
  try {
    codeObjectFactsFromJson(h.at("facts"), &co);
    co.format = h.at("format").get<std::string>();
    co.log = h.at("log").get<std::string>();
  } catch (const std::exception& e) {
    return Status::Unavailable(std::string("compile worker: malformed code object: ") + e.what());
  }
  if (co.compiler != inner_->name() || co.compiler_version != inner_->version()) {
    std::lock_guard<std::mutex> l(mu_);
    disabled_ = true;  // its objects would be stored under this compiler's keys
    return Status::Unavailable("compile worker compiles with " + co.compiler + " " +
                               co.compiler_version + ", this process with " + inner_->name() +
                               " " + inner_->version());
  }
  co.binary = std::move(payload);
  *failed = false;
  return co;
}

Expected<CodeObject> ProcessCompiler::compile(const CompileRequest& req) {
  auto here = [&] {
    std::lock_guard<std::mutex> l(mu_);
    ++stats_.in_process;
  };
  if (req.dumps != kDumpNone || req.language != Language::kCpp) {
    here();
    return inner_->compile(req);
  }
  std::unique_ptr<Proc> p = acquire(threadNice());
  if (!p) {
    here();
    return inner_->compile(req);
  }
  bool failed = false;
  Expected<CodeObject> r = viaWorker(*p, req, &failed);
  if (failed) {
    drop(std::move(p), r.status().message());
    here();
    return inner_->compile(req);
  }
  ++p->answered;
  release(std::move(p));
  {
    std::lock_guard<std::mutex> l(mu_);
    ++stats_.compiled;
  }
  return r;
}

ProcessCompiler::Stats ProcessCompiler::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

Status serveCompiles(int in_fd, int out_fd, const std::string& arch, const std::string& compiler,
                     const OpenCompilerFn& open, int nice) {
  if (nice > 0) (void)::setpriority(PRIO_PROCESS, 0, nice);  // best effort, as the caller's
  KTUNE_ASSIGN_OR_RETURN(std::shared_ptr<Compiler> cc, open(compiler, arch));
  std::string buf;
  for (;;) {
    Json h;
    std::string payload, why;
    if (!readFrame(in_fd, buf, &h, &payload, &why)) return Status::Ok();  // EOF: the parent is done
    Expected<CodeObject> co = Status::Internal("compile worker: malformed request");
    try {
      CompileRequest req = requestFrom(h, std::move(payload));
      co = cc->compile(req);
    } catch (const std::exception& e) {
      co = Status::Internal(std::string("compile worker: malformed request: ") + e.what());
    }
    if (!writeFrame(out_fd, replyHeader(co), co.ok() ? co->binary : std::string()))
      return Status::IoError("compile worker: cannot write its reply");
  }
}

}  // namespace ktune
