"""Does a flush leave the timed callable's own data in the L2? (dev probe, GPU machine)

For the small SiLU·Mul shape the Python bench's per-call method (torch.sum of a 2x-L2 buffer as the
flush) and the engine's harness (a plain-load read kernel as the flush) disagree by ~7% on the
ratio to copy. This times, with CUDA events after each kind of flush, interleaved in rounds:
  read_src  a plain 16-byte read of the copy's 25 MB source (at HBM speed it takes ~8.5 us; much
            less means the flush left those lines in the L2),
  copy      dst.copy_(src) (the bench's copy peer), and
  silu_mul  ktune.ops.silu_mul(x) (tuned first),
after: torch.sum of the 2x-L2 float buffer (the bench's flush), the same over 4x L2, a ktune read
kernel over the 2x-L2 buffer (plain loads, as the engine's flush), and a memset of the buffer.
Usage: python3 dev/flush_probe.py"""
import statistics

import torch

import ktune

READ = r"""
#include "prelude.cuh"
KTUNE_KERNEL void probe_read(const ktune::Vec<unsigned, 4>* p, long long nv, unsigned* sink) {
  unsigned acc = 0;
  const long long stride = (long long)ktune::gdim_x() * ktune::bdim_x();
  for (long long i = (long long)ktune::bid_x() * ktune::bdim_x() + ktune::tid_x(); i < nv;
       i += stride) {
    const ktune::Vec<unsigned, 4> v = p[i];
    acc ^= v[0] ^ v[1] ^ v[2] ^ v[3];
  }
  if (acc == 0x9e3779b9u) sink[ktune::tid_x()] = acc;
}
"""


def main():
    props = torch.cuda.get_device_properties(0)
    l2 = props.L2_cache_size
    sms = props.multi_processor_count
    read = ktune.autotune(configs=[{"THREADS": 512}], key=[], warmup=1, rep=3)(
        ktune.kernel(READ, "probe_read", grid=f"{sms * 4}", block="THREADS",
                     signature=[("p", "ptr"), ("nv", "i64"), ("sink", "ptr")]))
    sink = torch.zeros(1024, dtype=torch.int32, device="cuda")
    fb2 = torch.ones(2 * l2 // 4, dtype=torch.float32, device="cuda")
    fb4 = torch.ones(4 * l2 // 4, dtype=torch.float32, device="cuda")
    out0 = torch.empty((), dtype=torch.float32, device="cuda")
    r, d = 4096, 2048
    x = torch.randn(r, 2 * d, device="cuda", dtype=torch.bfloat16)
    src = torch.randn(r * 3 * d // 2, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    ktune.ops.silu_mul(x)  # tunes (or reads the database)
    flushes = {
        "torch.sum 2xL2": lambda: torch.sum(fb2, dim=0, out=out0),
        "torch.sum 4xL2": lambda: torch.sum(fb4, dim=0, out=out0),
        "read kernel 2xL2": lambda: read(fb2, fb2.numel() * 4 // 16, sink),
        "memset 2xL2": lambda: fb2.zero_(),
    }
    fns = {
        "read_src": lambda: read(src, src.numel() * 2 // 16, sink),
        "copy": lambda: dst.copy_(src),
        "silu_mul": lambda: ktune.ops.silu_mul(x),
    }
    for f in list(flushes.values()) + list(fns.values()):
        f()
    torch.cuda.synchronize()
    times = {(fk, fn): [] for fk in flushes for fn in fns}
    rounds = 30
    for _ in range(rounds):
        ev = []
        for fk, flush in flushes.items():
            for fn, call in fns.items():
                s = torch.cuda.Event(enable_timing=True)
                e = torch.cuda.Event(enable_timing=True)
                flush()
                s.record()
                call()
                e.record()
                ev.append((fk, fn, s, e))
        torch.cuda.synchronize()
        for fk, fn, s, e in ev:
            times[(fk, fn)].append(s.elapsed_time(e) * 1e3)
    src_mb = src.numel() * 2 / 1e6
    print(f"{props.name}: L2 {l2 >> 20} MB; median us over {rounds} interleaved rounds "
          f"(read_src reads {src_mb:.1f} MB; copy moves 2x that; silu_mul the same bytes)")
    print(f"{'flush':20s} {'read_src':>9s} {'GB/s':>6s} {'copy':>8s} {'silu_mul':>9s} "
          f"{'silu/copy':>9s}")
    for fk in flushes:
        m = {fn: statistics.median(times[(fk, fn)]) for fn in fns}
        print(f"{fk:20s} {m['read_src']:9.2f} {src_mb * 1e3 / m['read_src']:6.0f} "
              f"{m['copy']:8.2f} {m['silu_mul']:9.2f} {m['copy'] / m['silu_mul']:9.3f}")


if __name__ == "__main__":
    main()
