// Same-run peers for memory-bound kernels, and a clean L2 flush, shared by the benches (bench/)
// and the CLI (`ktune tune rmsnorm|silu_mul` prints "× same-run copy" against copyPeer()).
//
// The flush reads a buffer of at least 2x the last-level cache with the engine's read flush kernel
// (autotune/l2_flush.h): the cache ends up full of clean lines, so no write-back of the flush
// lands in the timed region (a memset flush leaves L2 full of dirty lines). Peers are timed exactly like the kernels they
// bound: device events around one launch, flushed before every run, median of the runs.
//   copy:     the best config of the ktune_copy space (templates/kernels/copy.cuh) and the
//             driver's device-to-device copy, whichever is faster; bytes = read + written.
//   read2w1:  out[i] = a[i] + b[i] over 16-byte vectors (two streams read, one written), the
//             bound of a kernel that reads twice what it writes (SiLU·Mul).
// Thread-compatible (one thread at a time). Sources go through the device's compiler, so the
// peers run on every backend that compiles the prelude (NVIDIA and AMD).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autotune/l2_flush.h"
#include "bench/fair/fair_timing.h"
#include "base/device.h"
#include "base/status.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"

namespace ktune {

class StreamPeers {
 public:
  // Kernel entries (a simulated backend registers them by these names):
  //   flush:  (const uint4* p, long long n_vectors, unsigned* sink), reads 16 * n_vectors bytes
  //   read2w1: (uint4* out, const uint4* a, const uint4* b, long long n_vectors)
  // The copy peer is rowwise::kCopyEntry (dst, src, n_bytes).
  static constexpr const char* kFlushEntry = L2Flush::kReadEntry;
  static constexpr const char* kRead2Write1Entry = "ktune_read2_write1";

  // `backend` and `compiler` must outlive the peers; setDevice() done. Compiles the flush kernel
  // (errors: the compiler's); the copy and read-2/write-1 kernels are compiled on first use.
  static Expected<std::unique_ptr<StreamPeers>> create(Backend& backend, Compiler& compiler,
                                                       const DeviceInfo& device);
  ~StreamPeers();
  StreamPeers(const StreamPeers&) = delete;
  StreamPeers& operator=(const StreamPeers&) = delete;

  // Evicts the last-level cache with clean lines (reads 2x L2, at least 64 MiB), on `stream`.
  Status flushL2(StreamHandle stream = {});
  // One device time (ms) of `launch`, flushed first. Negative never: errors are Status.
  Expected<double> timeOnceMs(const std::function<Status()>& launch, StreamHandle stream = {});
  // `reps` flushed runs after 3 warm-up launches: the samples (ms) in run order.
  Expected<std::vector<double>> samplesMs(const std::function<Status()>& launch, int reps,
                                          StreamHandle stream = {});

  // A peer for `bytes_moved` bytes (read + written): its launch (on buffers the peers own, kept
  // until destruction) and what it is, e.g. "ktune_copy THREADS=512,UNROLL=4" or "memcpyDtoD".
  struct Peer {
    std::function<Status()> launch;
    std::string what;
    int64_t bytes = 0;  // bytes moved, counted as read + written
  };
  // The copy peer: every ktune_copy config and the driver copy timed with `reps` flushed runs; the
  // fastest is returned. kUnavailable when nothing could be timed.
  Expected<Peer> copyPeer(int64_t bytes_moved, int reps = 10);
  // The read-2/write-1 peer (bytes_moved = 3 equal streams), best of a few block sizes.
  Expected<Peer> read2Write1Peer(int64_t bytes_moved, int reps = 10);
  // Median bandwidth (bytes/s) of a peer over `reps` flushed runs.
  Expected<fair::Interval> bandwidth(const Peer& peer, int reps = 25);

 private:
  StreamPeers(Backend& backend, Compiler& compiler, DeviceInfo device);
  Expected<FunctionHandle> kernel(const std::string& source, const std::string& entry,
                                  const std::vector<std::pair<std::string, std::string>>& defines);
  Expected<DevicePtr> buffer(const std::string& name, int64_t bytes);
  // The candidate with the lowest median of `reps` flushed runs; kUnavailable(none) if none ran.
  Expected<Peer> fastest(const std::vector<Peer>& cands, int reps, const char* none);

  Backend& backend_;
  Compiler& compiler_;
  DeviceInfo device_;
  std::unique_ptr<L2Flush> flush_;
  int64_t flush_bytes_ = 0;
  EventHandle e0_{}, e1_{};
  std::map<std::string, FunctionHandle> kernels_;
  std::vector<ModuleHandle> modules_;
  std::map<std::string, std::pair<DevicePtr, int64_t>> buffers_;
};

}  // namespace ktune
