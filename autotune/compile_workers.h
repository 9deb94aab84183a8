// Compiles in helper processes (`ktune-worker --compile`) instead of threads of this process: a
// Compiler that forwards each request to an idle worker and hands back its code object, so
// parallel compiles share no compiler state, lock or allocator (Options::compile_processes,
// KTUNE_COMPILE_PROCESSES). Names, versions and store keys are the in-process compiler's: a
// worker's result is the same code object.
//
// Protocol (a socket pair per worker, on its stdin/stdout), both directions in frames: one JSON
// header line, then header["bytes"] raw bytes.
//   parent -> {"compiler","arch","source_name","entry","defines","options","language","bytes"}
//             + the source
//   worker -> {"ok":true,"facts":{...},"format","log","bytes"} + the binary
//          or {"ok":false,"code":"compile_error",...,"message"}
// The worker opens its compiler once (`ktune-worker --compile ARCH COMPILER`: the arch's
// compiler, or the simulated one for "sim") and serves. Workers start when a request finds every
// worker busy (never ahead: a run that compiles nothing starts none), so a request is already
// waiting for a new worker and it does no warm-up compile of its own.
// Priority: a request runs in a worker at the calling thread's nice value (Linux: per thread), so a
// background compile (the CLI's look-ahead at nice 10) stays below the key being tuned and its
// benchmarks as its threads did. Each nice value has its own workers (a worker cannot lower its
// nice again), up to `processes` each.
// A worker that fails (cannot start, dies, answers nonsense, or compiles with another compiler
// version) is dropped and that request is compiled in this process: the results are the same. One
// that fails before answering anything (an older ktune-worker without --compile, a compiler that
// does not open there) turns the workers off: every later request compiles in this process.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compiler/compiler.h"

namespace ktune {

class ProcessCompiler final : public Compiler {
 public:
  // inner: this process's compiler (its name and version name the results; it compiles what a
  // worker cannot: dumps, languages other than C++, any worker failure). executable: ktune-worker.
  // processes: at most this many workers at once (>= 1).
  ProcessCompiler(std::shared_ptr<Compiler> inner, std::string executable, std::string arch,
                  int processes);
  ~ProcessCompiler() override;
  ProcessCompiler(const ProcessCompiler&) = delete;
  ProcessCompiler& operator=(const ProcessCompiler&) = delete;

  std::string name() const override { return inner_->name(); }
  std::string version() const override { return inner_->version(); }
  bool supportsArch(const std::string& arch) const override { return inner_->supportsArch(arch); }
  Expected<CodeObject> compile(const CompileRequest& req) override;

  struct Stats {
    int started = 0;     // worker processes started
    int compiled = 0;    // requests a worker answered (compile errors included)
    int in_process = 0;  // requests compiled here instead (dumps, other languages, failures)
    std::string last_failure;  // why the last worker was dropped
    std::vector<int> pids;     // the workers' pids, in start order
  };
  Stats stats() const;
  Compiler& inner() { return *inner_; }

 private:
  struct Proc {
    pid_t pid = -1;
    int fd = -1;
    std::string buf;  // bytes read past the last frame
    int answered = 0;  // requests it answered
    int nice = 0;
  };
  std::unique_ptr<Proc> spawn(int nice);  // null when the worker cannot start (why in stats_)
  std::unique_ptr<Proc> acquire(int nice);
  void release(std::unique_ptr<Proc> p);
  void drop(std::unique_ptr<Proc> p, const std::string& why);
  Expected<CodeObject> viaWorker(Proc& p, const CompileRequest& req, bool* worker_failed);

  std::shared_ptr<Compiler> inner_;
  std::string executable_, arch_;
  int max_ = 1;
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  std::map<int, std::vector<std::unique_ptr<Proc>>> idle_;  // by nice value
  std::map<int, int> live_;  // by nice value: workers started and not dropped (idle or busy)
  bool disabled_ = false;  // a worker could not start or compiled with another version
  Stats stats_;
};

// The worker side: serves compile frames from in_fd on out_fd until EOF, with the compiler
// `open(compiler_name, arch)` returns (opened once, before the first request), at `nice` (> 0:
// lower than the worker was started with). OK on EOF.
using OpenCompilerFn =
    std::function<Expected<std::shared_ptr<Compiler>>(const std::string& name, const std::string& arch)>;
Status serveCompiles(int in_fd, int out_fd, const std::string& arch, const std::string& compiler,
                     const OpenCompilerFn& open, int nice = 0);

}  // namespace ktune
