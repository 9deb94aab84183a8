// The last-level cache flush before a timed run, shared by the engine's harness
// (autotune/benchmarker.h: candidates, Autotuner::benchmark, ktune.do_bench) and the same-run
// peers of the benches and the CLI (bench/fair/peers.h).
//
// kRead: a compiled kernel reads the flush buffer (grid-stride, 16-byte loads folded into a value
// that is stored only when it is impossible): the cache ends up full of clean lines, so nothing
// of the flush is written back inside the timed region that follows. kMemset: the driver's
// memset of the buffer, which leaves the cache full of dirty lines whose write-back is charged to
// the next timed run (a bandwidth-bound kernel reads slower after it).
// The read kernel goes through the given Compiler and is loaded through the Backend; its code
// object is compiled once per process per (compiler, version, arch). Where it cannot run, a read
// flush falls back to the memset, never an error: silently where no compiler was given (the
// simulated backend, see compilerFor), with one line per process on the log after a compile or
// load failure.
// Thread-compatible: one thread at a time per L2Flush.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "base/device.h"
#include "base/status.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"

namespace ktune {

enum class FlushKind { kRead, kMemset };
const char* flushKindName(FlushKind k);  // "read" / "memset"
std::optional<FlushKind> parseFlushKind(std::string_view s);

// One wave of resident blocks of `threads` threads (at least one block per multiprocessor): the
// grid of a grid-stride streaming kernel.
unsigned residentGrid(const DeviceInfo& dev, int threads);

class L2Flush {
 public:
  // The read kernel's entry (a simulated backend registers it by this name):
  //   (const uint4* p, long long n_vectors, unsigned* sink), reads 16 * n_vectors bytes.
  static constexpr const char* kReadEntry = "ktune_flush_read";
  static constexpr int kReadThreads = 512;

  // `backend` (setDevice() done) and `compiler` must outlive this; `compiler` null: memset only.
  // `log` null: std::cerr.
  L2Flush(Backend& backend, Compiler* compiler, DeviceInfo device, std::ostream* log = nullptr);
  ~L2Flush();
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;

  // The compiler a tuner hands its flush: none on the simulated device (its compiler's counters
  // and hooks belong to the test that made it, and it has no read kernel unless one is registered).
  static Compiler* compilerFor(const Backend& backend, Compiler& compiler);

  // Compiles and loads the read kernel unless done; its error if that fails (no fallback).
  Status prepareRead();
  // Flushes `bytes` (rounded down to 16, at least 16) on `stream` with `kind`. Returns the kind
  // that ran: kMemset where the read kernel is unavailable (see above).
  Expected<FlushKind> flush(FlushKind kind, int64_t bytes, StreamHandle stream = {});

 private:
  Status ensureBuffer(int64_t bytes);
  Status launchRead(int64_t bytes, StreamHandle stream);

  Backend& backend_;
  Compiler* compiler_;
  DeviceInfo device_;
  std::ostream* log_;
  enum class ReadState { kUntried, kReady, kFailed } read_ = ReadState::kUntried;
  Status read_error_;
  ModuleHandle module_{};
  FunctionHandle fn_{};
  DevicePtr buf_ = 0, sink_ = 0;
  int64_t buf_bytes_ = 0;
  bool buf_filled_ = false;  // written once before its first read (any content will do)
};

}  // namespace ktune
