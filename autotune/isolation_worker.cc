// The isolation worker's side (isolation.h: serveWorker) and the wire helpers both sides use
// (isolation_wire.h).
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "autotune/candidate_json.h"
#include "autotune/isolation.h"
#include "autotune/isolation_wire.h"
#include "base/clock.h"
#include "base/format.h"
#include "base/json_bounded.h"
#include "base/timeline.h"

namespace ktune {

using Json = nlohmann::json;

namespace isolation_wire {

Json benchToJson(const BenchOptions& b) {
  return Json{{"warmup_ms", b.warmup_ms},         {"rep_ms", b.rep_ms},
              {"estimate_runs", b.estimate_runs}, {"min_runs", b.min_runs},
              {"max_runs", b.max_runs},           {"flush_l2", b.flush_l2},
              {"flush_kind", flushKindName(b.flushKind())},
              {"l2_flush_bytes", b.l2_flush_bytes}, {"rotate_buffers", b.rotate_buffers},
              {"abort_factor", b.abort_factor},
              {"check_every", b.check_every}, {"reverify", b.reverify},
              {"verify", b.verify}, {"target_ci", b.target_ci},
              {"verify_within", b.verify_within}, {"count_overhead", b.count_overhead},
              {"pace_duty", b.pace_duty},         {"pace_slice_ms", b.pace_slice_ms}};
}

BenchOptions benchFromJson(const Json& j) {
  BenchOptions b;
  if (!j.is_object()) return b;
  b.warmup_ms = j.value("warmup_ms", b.warmup_ms);
  b.rep_ms = j.value("rep_ms", b.rep_ms);
  b.estimate_runs = j.value("estimate_runs", b.estimate_runs);
  b.min_runs = j.value("min_runs", b.min_runs);
  b.max_runs = j.value("max_runs", b.max_runs);
  b.flush_l2 = j.value("flush_l2", b.flush_l2);
  b.l2_flush_bytes = j.value("l2_flush_bytes", b.l2_flush_bytes);
  b.flush_read = parseFlushKind(j.value("flush_kind", "read")).value_or(b.flushKind()) ==
                 FlushKind::kRead;
  b.rotate_buffers = j.value("rotate_buffers", b.rotate_buffers);
  b.abort_factor = j.value("abort_factor", b.abort_factor);
  b.pace_duty = j.value("pace_duty", b.pace_duty);
  b.pace_slice_ms = j.value("pace_slice_ms", b.pace_slice_ms);
  b.check_every = j.value("check_every", b.check_every);
  b.reverify = j.value("reverify", b.reverify);
  b.verify = j.value("verify", b.verify);
  b.target_ci = j.value("target_ci", b.target_ci);
  b.verify_within = j.value("verify_within", b.verify_within);
  b.count_overhead = j.value("count_overhead", b.count_overhead);
  return b;
}

CandidateResult resultFromJson(const Json& j) {
  try {
    return candidatejson::candidateFromJson(j, Code::kInternal);
  } catch (const std::exception& e) {
    CandidateResult r;
    r.status = Code::kInternal;
    r.reason = std::string("malformed result from the isolation worker: ") + e.what();
    return r;
  }
}

bool writeAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t w = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (w < 0 && errno == ENOTSOCK) w = ::write(fd, s.data() + off, s.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<size_t>(w);
  }
  return true;
}

}  // namespace isolation_wire

using namespace isolation_wire;

std::string candidateResultToJson(const CandidateResult& r) {
  return candidatejson::candidateToJson(r).dump();
}

Expected<CandidateResult> candidateResultFromJson(const std::string& text) {
  Json j = parseJsonOrDiscarded(text);
  if (j.is_discarded() || !j.is_object())
    return Status::InvalidArgument("candidate result is not a JSON object: " + text.substr(0, 200));
  return resultFromJson(j);
}

namespace {
}  // namespace

Status serveWorker(CandidateBench& tuner, int in_fd, int out_fd,
                   const std::map<std::string, double>& startup_ms) {
  auto send = [&](const Json& j) -> Status {
    if (!writeAll(out_fd, j.dump() + "\n"))
      return Status::IoError(std::string("worker: cannot write results: ") + std::strerror(errno));
    return Status::Ok();
  };
  KTUNE_RETURN_IF_ERROR(send(Json{{"event", "hello"}, {"pid", int64_t(::getpid())},
                                  {"startup_ms", Json(startup_ms)}}));
  // The default flush (the read kernel, loaded from the store when it holds it) readied while the
  // parent sets up its first request, rather than after that request came.
  tuner.prepareBench(BenchOptions{});
  std::string inbuf;
  std::string cached_family, cached_args;
  std::shared_ptr<void> problem;
  double problem_ms = 0;  // the last problem's build (reported with the "problem" event)
  char buf[65536];
  for (;;) {
    size_t nl;
    while ((nl = inbuf.find('\n')) == std::string::npos) {
      ssize_t k = ::read(in_fd, buf, sizeof(buf));
      if (k == 0) return Status::Ok();
      if (k < 0) {
        if (errno == EINTR) continue;
        return Status::Ok();
      }
      inbuf.append(buf, size_t(k));
    }
    std::string line = inbuf.substr(0, nl);
    inbuf.erase(0, nl + 1);
    Json req = parseJsonOrDiscarded(line);
    if (req.is_object() && req.value("op", "") == "prepare") {
      // Build (and cache) the problem ahead of the first bench request; no reply. A failure is
      // reported by the bench request, which tries again.
      std::string family = req.value("family", ""), args = req.value("args", "");
      if (!problem || family != cached_family || args != cached_args) {
        problem.reset();
        const auto t0 = std::chrono::steady_clock::now();
        auto p = tuner.makeProblem(family, args);
        problem_ms = msSince(t0);
        timelineMark("worker_problem", strprintf("%.1f ms (prepare)", problem_ms));
        if (p.ok()) {
          problem = std::move(p).value();
          cached_family = family;
          cached_args = args;
        }
      }
      continue;
    }
    if (req.is_discarded() || !req.is_object() || req.value("op", "") != "bench" ||
        !req.contains("candidates") || !req["candidates"].is_array()) {
      KTUNE_RETURN_IF_ERROR(send(Json{{"event", "error"},
                                      {"code", codeName(Code::kInvalidArgument)},
                                      {"message", "not a bench request: " + line.substr(0, 200)}}));
      continue;
    }
    std::string family = req.value("family", "");
    std::string args = req.value("args", "");
    if (!problem || family != cached_family || args != cached_args) {
      problem.reset();  // free the previous problem's buffers first
      const auto t0 = std::chrono::steady_clock::now();
      auto p = tuner.makeProblem(family, args);
      problem_ms = msSince(t0);
      timelineMark("worker_problem", strprintf("%.1f ms (request)", problem_ms));
      if (!p.ok()) {
        KTUNE_RETURN_IF_ERROR(send(Json{{"event", "error"},
                                        {"code", codeName(p.status().code())},
                                        {"message", p.status().toString()}}));
        continue;
      }
      problem = std::move(p).value();
      cached_family = family;
      cached_args = args;
    }
    BenchOptions bench = benchFromJson(req.value("bench", Json::object()));
    // Still under the supervisor's start-up deadline: the "problem" event starts the first
    // candidate's, which should not pay for compiling the flush kernel.
    const auto t_prep = std::chrono::steady_clock::now();
    tuner.prepareBench(bench);
    const double prepare_ms = msSince(t_prep);
    timelineMark("worker_request", strprintf("%zu candidates, bench prepare %.1f ms",
                                             req["candidates"].size(), prepare_ms));
    KTUNE_RETURN_IF_ERROR(send(Json{{"event", "problem"}, {"problem_ms", problem_ms},
                                    {"bench_prepare_ms", prepare_ms}}));
    double best = req.value("best_ms", 0.0);
    const Json& cs = req["candidates"];
    for (size_t i = 0; i < cs.size(); ++i) {
      WorkerCandidate wc;
      if (cs[i].is_object()) {
        wc.config = cs[i].value("config", "");
        wc.source = cs[i].value("source", "jit");
        wc.code_object_key = cs[i].value("code_object_key", "");
      }
      CandidateResult r = tuner.benchmarkCandidate(family, problem.get(), wc, bench, best);
      if (r.status == Code::kOk && r.stats.runs > 0 && (best <= 0 || r.stats.median_ms < best))
        best = r.stats.median_ms;
      KTUNE_RETURN_IF_ERROR(send(Json{{"event", "result"}, {"index", i}, {"result", candidatejson::candidateToJson(r)}}));
      if (r.status == Code::kDeviceFault) {
        // A faulted CUDA/HIP context stays broken: leave, the supervisor starts a fresh worker.
        KTUNE_RETURN_IF_ERROR(send(Json{{"event", "exit"}, {"reason", "device fault"}}));
        return Status::DeviceFault("worker: candidate " + wc.config + " faulted: " + r.reason);
      }
    }
    KTUNE_RETURN_IF_ERROR(send(Json{{"event", "done"}}));
    timelineMark("worker_request_done");
  }
}

}  // namespace ktune
