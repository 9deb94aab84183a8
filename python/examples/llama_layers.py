"""One decoder layer, kernel by kernel (llama.py, a Llama-style decoder end to end): the profiler's
kernels of a few eager steps in launch order (llama_timing.kernel_table) cut into the step's
layers, so each variant's layer reads as its kernels in order with their median time over the
layers and steps. Every variant's layers repeat the same kernels (max-autotune runs one compiled
layer for all of them), which is what finds the cut; kernels outside the layers (the step's first
norm, ktune's input copy) are listed apart."""
import statistics


def layer_cut(names, layers):
    """(head, period, tail) of one step's kernel names: `head` kernels, then `layers` repeats of
    the same `period` names, then `tail`. The fewest kernels outside the layers wins, then the
    shortest tail (a layer ends with its last kernel, the next layer's norm). None if the names
    do not repeat per layer."""
    n = len(names)
    best = None
    for period in range(1, n // layers + 1):
        outside = n - period * layers
        for head in range(outside + 1):
            tail = outside - head
            if best is not None and (outside, tail) >= (best[0], best[3]):
                continue
            if all(names[head + i] == names[head + i % period] for i in range(period * layers)):
                best = (outside, head, period, tail)
    return None if best is None else best[1:]


def layer_kernels(seq, steps, layers):
    """seq: (name, us) of `steps` steps in launch order. Returns {"layer": [(name, median us,
    min, max)] over the layers and steps, "outside": [(name, median us)] per step, "layer_us",
    "outside_us"}, or None when the steps differ or do not repeat per layer."""
    if steps < 1 or not seq or len(seq) % steps:
        return None
    per = len(seq) // steps
    step_names = [[nm for nm, _ in seq[s * per:(s + 1) * per]] for s in range(steps)]
    if any(names != step_names[0] for names in step_names[1:]):
        return None
    cut = layer_cut(step_names[0], layers)
    if cut is None:
        return None
    head, period, tail = cut
    layer = []
    for j in range(period):
        us = [seq[s * per + head + li * period + j][1] for s in range(steps) for li in range(layers)]
        layer.append((step_names[0][head + j], statistics.median(us), min(us), max(us)))
    outside_idx = list(range(head)) + list(range(per - tail, per))
    outside = [(step_names[0][i], statistics.median(seq[s * per + i][1] for s in range(steps)))
               for i in outside_idx]
    return {"layer": layer, "outside": outside, "layer_us": sum(x[1] for x in layer),
            "outside_us": sum(x[1] for x in outside)}


def report(seqs, width=90):
    """Per shape, each variant's layer kernel by kernel (us, median over layers and steps)."""
    if not seqs:
        return
    print("\n== one layer kernel by kernel (torch.profiler, eager steps, launch order; us, median "
          "over the layers and steps [min, max]); outside = the kernels of a step outside its "
          "layers, per step")
    for key in sorted(seqs, key=lambda k: k.split()[::-1]):
        d = seqs[key]
        if not d:
            print(f"  -- {key}: the step's kernels do not repeat per layer (not cut)")
            continue
        print(f"  -- {key}: {len(d['layer'])} kernels, {d['layer_us']:.1f} us per layer; outside "
              f"the layers {d['outside_us']:.1f} us per step (" +
              ", ".join(f"{n[:40]} {us:.1f}" for n, us in d["outside"]) + ")")
        for i, (name, us, lo, hi) in enumerate(d["layer"]):
            print(f"     {i + 1:2d}. {us:7.1f} [{lo:.1f}, {hi:.1f}]  {name[:width]}")
