#include "remote/client.h"

#include <algorithm>
#include <utility>

namespace ktune::remote {

namespace {
bool startsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
}  // namespace

bool isAuthError(const Reply& r) {
  return r.kind == Reply::Kind::kError &&
         (startsWith(r.str, "NOAUTH") || startsWith(r.str, "WRONGPASS") ||
          startsWith(r.str, "NOPERM") || startsWith(r.str, "ERR AUTH"));
}

RemoteClient::RemoteClient(ClientOptions o) : o_(std::move(o)) {}

Expected<std::shared_ptr<RemoteClient>> RemoteClient::fromOptions(const Options& o) {
  KTUNE_ASSIGN_OR_RETURN(RemoteUrl url, parseRemoteUrl(o.remote_cache));
  ClientOptions c;
  c.url = url;
  c.timeout_ms = o.remote_timeout_ms > 0 ? o.remote_timeout_ms : 250;
  return std::make_shared<RemoteClient>(c);
}

Expected<Reply> RemoteClient::run(const std::vector<std::string>& argv) {
  std::lock_guard<std::mutex> l(mu_);
  if (Clock::now() < open_until_) {
    ++stats_.skipped;
    std::string why = "remote ";
    why.append(o_.url.display()).append(" skipped for a while after: ").append(open_reason_);
    return Status::Unavailable(why);
  }
  Status failure;
  // One deadline for everything this command needs, a reconnect included.
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(1, o_.timeout_ms));
  if (!conn_ || conn_->broken()) {
    conn_.reset();
    auto c = Connection::connect(o_.url, deadline, o_.limits);
    if (c.ok()) conn_ = std::move(c).value();
    else failure = c.status();
  }
  if (conn_) {
    auto r = conn_->command(argv, deadline);
    if (r.ok() && !isAuthError(*r)) {
      ++stats_.commands;
      return r;
    }
    std::string where = "remote ";
    where.append(o_.url.display()).append(" (").append(argv[0]).append(")");
    // Not data: a server that wants a password answers every command this way, and reading it as
    // an answer (a lease "held elsewhere") would stall the caller until its waits run out.
    failure = r.ok() ? Status::Unavailable("remote unavailable: " + r->str + " (" + where + ")")
                     : r.status().withContext(where);
    conn_.reset();
  }
  ++stats_.failures;
  stats_.last_error = failure.message();
  open_reason_ = failure.message();
  open_until_ = Clock::now() + std::chrono::milliseconds(o_.cooldown_ms);
  return failure;
}

void RemoteClient::resetBreaker() {
  std::lock_guard<std::mutex> l(mu_);
  open_until_ = {};
}

bool RemoteClient::breakerOpen() const {
  std::lock_guard<std::mutex> l(mu_);
  return Clock::now() < open_until_;
}

ClientStats RemoteClient::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

std::string describe(const Reply& r) {
  switch (r.kind) {
    case Reply::Kind::kNil: return "(nil)";
    case Reply::Kind::kInteger: return std::to_string(r.integer);
    case Reply::Kind::kArray: return std::to_string(r.elements.size()).append(" elements");
    case Reply::Kind::kError: return std::string("error: ").append(r.str);
    default: return r.str.size() > 80 ? r.str.substr(0, 80).append("...") : r.str;
  }
}

}  // namespace ktune::remote
