#include "remote/redis.h"

#include <sys/time.h>

#include <mutex>

#include "base/dylib.h"

#if KTUNE_HAVE_HIREDIS_HEADERS
#include <hiredis/hiredis.h>
#define KTUNE_STR2(x) #x
#define KTUNE_STR(x) KTUNE_STR2(x)
#endif

namespace ktune::remote {

#if KTUNE_HAVE_HIREDIS_HEADERS
namespace {

// The hiredis functions ktune calls, resolved from the library matching the build's headers.
struct Api {
  decltype(&::redisConnectWithTimeout) connect = nullptr;
  decltype(&::redisSetTimeout) set_timeout = nullptr;
  decltype(&::redisCommandArgv) command_argv = nullptr;
  decltype(&::freeReplyObject) free_reply = nullptr;
  decltype(&::redisFree) free_ctx = nullptr;
  DynLib lib;
  Status status;
};

const Api& api() {
  static Api a;
  static std::once_flag once;
  std::call_once(once, [] {
    // The SONAME the headers belong to first: the reply struct's layout differs between versions.
    auto lib = DynLib::open({"libhiredis.so." KTUNE_STR(HIREDIS_SONAME), "libhiredis.so"},
                            "hiredis (libhiredis.so." KTUNE_STR(HIREDIS_SONAME)
                            "; Debian: libhiredis0.14 / libhiredis-dev)");
    if (!lib.ok()) {
      a.status = Status::Unavailable("hiredis not found: " + lib.status().message());
      return;
    }
    a.lib = std::move(lib).value();
    Status s = a.lib.bind(a.connect, "redisConnectWithTimeout");
    if (s.ok()) s = a.lib.bind(a.set_timeout, "redisSetTimeout");
    if (s.ok()) s = a.lib.bind(a.command_argv, "redisCommandArgv");
    if (s.ok()) s = a.lib.bind(a.free_reply, "freeReplyObject");
    if (s.ok()) s = a.lib.bind(a.free_ctx, "redisFree");
    a.status = s;
  });
  return a;
}

Reply copyReply(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_STRING: out.kind = Reply::Kind::kString; break;
    case REDIS_REPLY_STATUS: out.kind = Reply::Kind::kStatus; break;
    case REDIS_REPLY_ERROR: out.kind = Reply::Kind::kError; break;
    case REDIS_REPLY_INTEGER: out.kind = Reply::Kind::kInteger; break;
    case REDIS_REPLY_ARRAY: out.kind = Reply::Kind::kArray; break;
    default: out.kind = Reply::Kind::kNil; break;
  }
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
      r->type == REDIS_REPLY_ERROR) {
    out.str.assign(r->str, r->len);
  }
  out.integer = r->integer;
  if (r->type == REDIS_REPLY_ARRAY) {
    out.elements.reserve(r->elements);
    for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(copyReply(r->element[i]));
  }
  return out;
}

timeval toTimeval(int ms) {
  timeval tv{};
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  return tv;
}

}  // namespace

Status hiredisStatus() { return api().status; }
std::string hiredisLibrary() { return api().status.ok() ? api().lib.path() : std::string(); }

Expected<std::unique_ptr<Connection>> Connection::connect(const RemoteUrl& url, int timeout_ms) {
  const Api& a = api();
  if (!a.status.ok()) return a.status;
  const std::string where = url.display();
  redisContext* c = a.connect(url.host.c_str(), url.port, toTimeval(timeout_ms));
  if (!c) return Status::Unavailable("remote " + where + ": out of memory connecting");
  std::unique_ptr<Connection> conn(new Connection());
  conn->ctx_ = c;
  if (c->err) return Status::Unavailable("remote " + where + ": " + c->errstr);
  if (a.set_timeout(c, toTimeval(timeout_ms)) != REDIS_OK) {
    return Status::Unavailable("remote " + where + ": cannot set the command timeout");
  }
  auto check = [&](std::vector<std::string> argv, const char* what) -> Status {
    auto r = conn->command(argv);
    if (!r.ok()) return r.status();
    if (r->kind == Reply::Kind::kError) {
      return Status::Unavailable("remote " + where + ": " + what + " refused: " + r->str);
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
  if (ctx_) api().free_ctx(static_cast<redisContext*>(ctx_));
}

Expected<Reply> Connection::command(const std::vector<std::string>& argv) {
  if (broken_) return Status::Unavailable("remote connection is broken");
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const auto& s : argv) {
    ptrs.push_back(s.data());
    lens.push_back(s.size());
  }
  auto* ctx = static_cast<redisContext*>(ctx_);
  void* raw = api().command_argv(ctx, int(argv.size()), ptrs.data(), lens.data());
  if (!raw) {
    broken_ = true;  // hiredis cannot resynchronise after an I/O error or timeout
    return Status::Unavailable(std::string("remote I/O error: ") +
                               (ctx->err ? ctx->errstr : "no reply"));
  }
  Reply out = copyReply(static_cast<redisReply*>(raw));
  api().free_reply(raw);
  return out;
}

#else  // !KTUNE_HAVE_HIREDIS_HEADERS

Status hiredisStatus() {
  return Status::Unavailable(
      "hiredis not found: ktune was built without hiredis headers (install libhiredis-dev and "
      "reconfigure)");
}
std::string hiredisLibrary() { return ""; }
Expected<std::unique_ptr<Connection>> Connection::connect(const RemoteUrl&, int) {
  return hiredisStatus();
}
Connection::~Connection() = default;
Expected<Reply> Connection::command(const std::vector<std::string>&) { return hiredisStatus(); }

#endif

}  // namespace ktune::remote
