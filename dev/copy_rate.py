#!/usr/bin/env python3
"""The GPU's device-to-device copy rate (torch, 1 GiB, median of 10 after 3 warm-ups): the memory
bound the device scripts quote their figures against, measured in the same call.
  python3 dev/copy_rate.py     prints: COPY d2d 1 GiB: median ... us, ... GB/s (read + write)"""
import torch

x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
y = torch.empty_like(x)
for _ in range(3):
    y.copy_(x)
s, e = torch.cuda.Event(True), torch.cuda.Event(True)
ts = []
for _ in range(10):
    s.record()
    y.copy_(x)
    e.record()
    e.synchronize()
    ts.append(s.elapsed_time(e))
ts.sort()
print("COPY d2d 1 GiB: median %.1f us, %.0f GB/s (read + write)"
      % (ts[5] * 1e3, 2 * x.numel() / ts[5] / 1e6))
