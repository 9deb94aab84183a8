// A throw-away redis-server for the remote tests: started on a free loopback port (127.0.0.1
// only, never any other address), no persistence (--save '' --appendonly no), in a temporary
// directory, killed (SIGKILL) and reaped when the object dies. Tests skip, visibly, when
// redis-server is missing.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/fs.h"
#include "base/subprocess.h"
#include "remote/client.h"
#include "tests/support/tools.h"

namespace ktune::remotetest {

// A port the kernel just handed out on 127.0.0.1 (closed again; redis-server binds it next).
inline int freeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

class RedisServer {
 public:
  // Starts the server and waits (at most 10 s) until it answers PING. ok() says whether it did;
  // why() says why not. With a password the server requires it (--requirepass); url() has it,
  // urlWithoutPassword() does not.
  explicit RedisServer(std::string password = "") : password_(std::move(password)) {
    std::string bin = findProgram("redis-server");
    if (bin.empty()) {
      why_ = "redis-server not found (Debian: redis-server)";
      return;
    }
    char tmpl[] = "/tmp/ktune-redis-XXXXXX";
    dir_ = mkdtemp(tmpl);
    for (int attempt = 0; attempt < 3 && !ok_; ++attempt) start(bin);
  }
  ~RedisServer() {
    kill();
    if (!dir_.empty()) (void)removeTree(dir_);
  }
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }
  int port() const { return port_; }
  std::string url() const {
    return "redis://" + (password_.empty() ? "" : password_ + "@") + "127.0.0.1:" +
           std::to_string(port_) + "/0";
  }
  std::string urlWithoutPassword() const {
    return "redis://127.0.0.1:" + std::to_string(port_) + "/0";
  }
  // SIGKILL now (the remote "dies"); later commands to it fail.
  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  // A client with a short timeout and no breaker cooldown (tests decide what they ask).
  std::shared_ptr<remote::RemoteClient> client(int cooldown_ms = 0) const {
    remote::ClientOptions o;
    o.url = *parseRemoteUrl(url());
    o.timeout_ms = 1000;
    o.cooldown_ms = cooldown_ms;
    return std::make_shared<remote::RemoteClient>(o);
  }

 private:
  void start(const std::string& bin) {
    port_ = freeLoopbackPort();
    pid_t pid = ::fork();
    if (pid == 0) {
      std::string port = std::to_string(port_), log = dir_ + "/redis.log";
      std::vector<const char*> argv = {bin.c_str(), "--port", port.c_str(), "--bind", "127.0.0.1",
                                       "--save", "", "--appendonly", "no", "--dir", dir_.c_str(),
                                       "--logfile", log.c_str(), "--daemonize", "no"};
      if (!password_.empty()) argv.insert(argv.end(), {"--requirepass", password_.c_str()});
      argv.push_back(nullptr);
      ::execv(bin.c_str(), const_cast<char* const*>(argv.data()));
      ::_exit(127);
    }
    pid_ = pid;
    auto c = client();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      auto r = c->run({"PING"});
      if (r.ok() && r->str == "PONG") {
        ok_ = true;
        return;
      }
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) break;  // died (port taken?): try another
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill();
    why_ = "redis-server did not answer on 127.0.0.1:" + std::to_string(port_);
  }
  std::string password_;
  std::string dir_;
  int port_ = -1;
  pid_t pid_ = -1;
  bool ok_ = false;
  std::string why_;
};

}  // namespace ktune::remotetest

#define KTUNE_REQUIRE_REDIS(server)                                   \
  do {                                                                \
    if (!(server).ok()) KTUNE_SKIP_WITHOUT_TOOL("no redis: " << (server).why()); \
  } while (0)
