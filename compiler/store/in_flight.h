// One compile per code-object key at a time in a process (one instance serves every store of the
// process: CodeObjectStore::getOrCompile). A caller asking for a key whose compile
// another thread is running waits for that compile and takes its result instead of compiling the
// same object again: a tuning run and a look-ahead precompile of the next key (Engine::precompile)
// often want the same kernels, and an NVRTC compile of a Hopper GEMM is seconds of one core.
// Thread-safe. Processes do not share it (the store's atomic writes keep two processes' compiles
// of one key harmless; they are only wasted work).
#pragma once

#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>

#include "base/status.h"
#include "compiler/compiler.h"

namespace ktune {

class InFlightCompiles {
 public:
  using Result = Expected<CodeObject>;
  // fn() for `key` unless a call for `key` runs in another thread: then that call's result once it
  // ends (*joined = true). A result is never kept past its call: the store holds what lasts.
  Result run(const std::string& key, const std::function<Result()>& fn, bool* joined);

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_future<Result>> running_;
};

}  // namespace ktune
