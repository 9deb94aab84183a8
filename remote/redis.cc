#include "remote/redis.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

namespace ktune::remote {
namespace {

using Clock = Connection::Clock;

int msLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : int(std::min<long long>(left, 1 << 30));
}

// Waits for `events` on fd until the deadline: OK, or kUnavailable naming the deadline.
Status waitFor(int fd, short events, Clock::time_point deadline, const std::string& where) {
  for (;;) {
    int left = msLeft(deadline);
    if (left == 0) return Status::Unavailable("remote " + where + ": deadline passed");
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, left);
    if (n > 0) return Status::Ok();
    if (n == 0) return Status::Unavailable("remote " + where + ": deadline passed");
    if (errno != EINTR) return Status::Unavailable("remote " + where + ": poll: " + std::strerror(errno));
  }
}

// A non-blocking socket connected to host:port before the deadline (every address tried).
Expected<int> dial(const RemoteUrl& url, Clock::time_point deadline, const std::string& where) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(url.host.c_str(), std::to_string(url.port).c_str(), &hints, &res);
  if (rc != 0) return Status::Unavailable("remote " + where + ": " + ::gai_strerror(rc));
  std::string last = "no address";
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    int s = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (s < 0) continue;
    int err = ::connect(s, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      Status w = waitFor(s, POLLOUT, deadline, where);
      socklen_t len = sizeof(err);
      if (!w.ok()) err = ETIMEDOUT;
      else if (::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
    if (err == 0) {
      fd = s;
    } else {
      last = err == ETIMEDOUT ? "connect: deadline passed" : std::string("connect: ") + std::strerror(err);
      ::close(s);
    }
  }
  ::freeaddrinfo(res);
  if (fd < 0) return Status::Unavailable("remote " + where + ": " + last);
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

std::string encode(const std::vector<std::string>& argv) {
  std::string out = "*" + std::to_string(argv.size()) + "\r\n";
  for (const auto& a : argv) out.append("$").append(std::to_string(a.size())).append("\r\n").append(a).append("\r\n");
  return out;
}

// A RESP length: -1 (nil) or a non-negative decimal that fits; false otherwise.
bool parseLength(const std::string& s, long long* out) {
  if (s == "-1") {
    *out = -1;
    return true;
  }
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoll(s);
  return true;
}

}  // namespace

std::string clientName() { return "ktune RESP2 client"; }

Expected<std::unique_ptr<Connection>> Connection::connect(const RemoteUrl& url,
                                                          Clock::time_point deadline,
                                                          ConnLimits limits) {
  std::unique_ptr<Connection> conn(new Connection());
  conn->limits_ = limits;
  conn->where_ = url.display();
  KTUNE_ASSIGN_OR_RETURN(conn->fd_, dial(url, deadline, conn->where_));
  auto check = [&](const std::vector<std::string>& argv, const char* what) -> Status {
    KTUNE_ASSIGN_OR_RETURN(Reply r, conn->command(argv, deadline));
    if (r.kind == Reply::Kind::kError) {
      return Status::Unavailable("remote unavailable: " + r.str + " (" + what + " on " +
                                 conn->where_ + ")");
    }
    return Status::Ok();
  };
  if (!url.password.empty()) {
    std::vector<std::string> auth{"AUTH"};
    if (!url.user.empty()) auth.push_back(url.user);
    auth.push_back(url.password);
    KTUNE_RETURN_IF_ERROR(check(auth, "AUTH"));
  }
  if (url.db != 0) KTUNE_RETURN_IF_ERROR(check({"SELECT", std::to_string(url.db)}, "SELECT"));
  return conn;
}

Connection::~Connection() {
  if (fd_ >= 0) ::close(fd_);
}

Status Connection::sendAll(const std::string& bytes, Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      KTUNE_RETURN_IF_ERROR(waitFor(fd_, POLLOUT, deadline, where_));
      continue;
    }
    return Status::Unavailable("remote " + where_ + ": send: " + std::strerror(errno));
  }
  return Status::Ok();
}

// Reads what the socket has (waiting until the deadline for at least one byte).
Status Connection::fill(Clock::time_point deadline) {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  char chunk[65536];
  for (;;) {
    ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      buf_.append(chunk, size_t(n));
      return Status::Ok();
    }
    if (n == 0) return Status::Unavailable("remote " + where_ + ": connection closed by the server");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::Unavailable("remote " + where_ + ": recv: " + std::strerror(errno));
    }
    KTUNE_RETURN_IF_ERROR(waitFor(fd_, POLLIN, deadline, where_));
  }
}

Expected<std::string> Connection::line(Clock::time_point deadline) {
  for (;;) {
    size_t eol = buf_.find("\r\n", pos_);
    if (eol != std::string::npos) {
      std::string out = buf_.substr(pos_, eol - pos_);
      pos_ = eol + 2;
      return out;
    }
    // A header or a simple string is short; a server streaming an endless line is refused.
    if (buf_.size() - pos_ > 64 * 1024) {
      return Status::Unavailable("remote " + where_ + ": reply line over 64 KiB refused");
    }
    KTUNE_RETURN_IF_ERROR(fill(deadline));
  }
}

Expected<Reply> Connection::readReply(int depth, size_t* bytes, size_t* elements,
                                      Clock::time_point deadline) {
  KTUNE_ASSIGN_OR_RETURN(std::string l, line(deadline));
  auto bad = [&](const std::string& why) {
    return Status::Unavailable("remote " + where_ + ": " + why);
  };
  if (l.empty()) return bad("malformed reply (empty line)");
  *bytes += l.size();
  if (*bytes > limits_.max_reply_bytes) return bad("reply too large");
  Reply r;
  const std::string body = l.substr(1);
  long long n = 0;
  switch (l[0]) {
    case '+': r.kind = Reply::Kind::kStatus; r.str = body; return r;
    case '-': r.kind = Reply::Kind::kError; r.str = body; return r;
    case ':': {
      char* end = nullptr;
      r.kind = Reply::Kind::kInteger;
      r.integer = std::strtoll(body.c_str(), &end, 10);
      if (body.empty() || *end != '\0') return bad("malformed integer reply");
      return r;
    }
    case '$': {
      if (!parseLength(body, &n)) return bad("malformed bulk length '" + body.substr(0, 32) + "'");
      if (n < 0) return r;  // nil
      // Refused on the declared size, before reading any of it.
      if (size_t(n) > limits_.max_reply_bytes - *bytes) {
        return bad("reply too large (declares a " + std::to_string(n) + "-byte string; limit " +
                   std::to_string(limits_.max_reply_bytes) + " bytes)");
      }
      *bytes += size_t(n);
      while (buf_.size() - pos_ < size_t(n) + 2) KTUNE_RETURN_IF_ERROR(fill(deadline));
      if (buf_.compare(pos_ + size_t(n), 2, "\r\n") != 0) return bad("malformed bulk string");
      r.kind = Reply::Kind::kString;
      r.str = buf_.substr(pos_, size_t(n));
      pos_ += size_t(n) + 2;
      return r;
    }
    case '*': {
      if (!parseLength(body, &n)) return bad("malformed array length '" + body.substr(0, 32) + "'");
      if (n < 0) return r;
      if (depth >= limits_.max_depth) return bad("reply nested too deeply");
      if (size_t(n) > limits_.max_elements - *elements) return bad("reply has too many elements");
      *elements += size_t(n);
      r.kind = Reply::Kind::kArray;
      r.elements.reserve(size_t(std::min<long long>(n, 1024)));
      for (long long i = 0; i < n; ++i) {
        KTUNE_ASSIGN_OR_RETURN(Reply e, readReply(depth + 1, bytes, elements, deadline));
        r.elements.push_back(std::move(e));
      }
      return r;
    }
    default: return bad("malformed reply (type '" + std::string(1, l[0]) + "')");
  }
}

Expected<Reply> Connection::command(const std::vector<std::string>& argv, Clock::time_point deadline) {
  if (broken_) return Status::Unavailable("remote connection is broken");
  Status s = sendAll(encode(argv), deadline);
  if (s.ok()) {
    size_t bytes = 0, elements = 0;
    auto r = readReply(0, &bytes, &elements, deadline);
    if (r.ok()) return r;
    s = r.status();
  }
  broken_ = true;  // the stream position is unknown: the caller reconnects
  return s;
}

}  // namespace ktune::remote
