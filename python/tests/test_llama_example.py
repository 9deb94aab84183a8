"""python/examples/llama_ktune.py (llama.py's ktune variant): its fused rotary + KV-cache write
(llama_rope_kv), the kernel source read from examples/llama_kernels.h (the C++ decoder's),
registers as a ktune family, and its key expressions evaluate as the C++ decoder's do
(examples/llama.cc --check prints the same key on the simulated backend)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

import llama_ktune  # noqa: E402  (python/examples/llama_ktune.py: stdlib imports only)


def test_rope_kv_family_registers_and_keys(sim):
    fam = llama_ktune.rope_kv_family()
    assert fam is not None, "examples/llama_kernels.h not found beside python/examples"
    p = 1 << 20  # stand-in addresses: a key reads none
    # qkv, ld, q, kc, vc, cos, sin, then B, T, nq, nkv, hd, S, pos0 (the tiny model's decode)
    key = fam.key_of(p, 256, p, p, p, p, p, 2, 1, 8, 2, 32, 17, 16)
    assert key == "pow2(B * T)=2,nq=8,nkv=2,hd=32"


# llama.py's own logic, without torch or a GPU (llama.py, llama_procs.py and llama_report.py import
# torch only inside the functions that run the model).
import llama  # noqa: E402
import llama_procs  # noqa: E402
import llama_report  # noqa: E402
import llama_timing  # noqa: E402


def test_tuning_order_tunes_the_decode_ends_and_the_prefill_first():
    # Batch 8 and 32 then start from both ends' winners (the guided search's neighbour prior).
    assert llama.tuning_order(["d1", "d8", "d32", "d128", "p2048"]) == \
        ["d1", "d128", "p2048", "d32", "d8"]
    assert llama.tuning_order(["d32", "d1"]) == ["d1", "d32"]
    assert llama.tuning_order(["p2048"]) == ["p2048"]


def test_entries_time_fewer_prefill_steps_per_batch():
    assert llama_timing.Entry("ktune", "d1", lambda: None).calls == 20
    assert llama_timing.Entry("ktune", "p2048", lambda: None, calls=3).calls == 3


def test_children_get_the_run_shape_and_their_own_variants():
    a = llama.parse_args(["--shapes", "d1,p2048", "--layers", "2", "--json", "/tmp/x/llama.json",
                          "--compile-shapes", "d1"])
    argv = llama_procs.child_argv(a, "timing", "/tmp/x/p2.json",
                                  variants=("torch", "tunableop", "ktune", "compile"), rounds=3,
                                  breakdown=(), deadline_s=42)
    child = llama.parse_args(argv[2:])
    assert child.child == "timing" and child.shapes == ["d1", "p2048"] and child.layers == 2
    assert child.variants == ["torch", "tunableop", "ktune", "compile"]
    assert child.compile_shapes == ["d1"] and child.compile_scope == "layer"
    assert child.rounds == 3 and child.breakdown == []
    assert child.deadline_s == 42 and child.json == "/tmp/x/p2.json"


def test_repeat_processes_stop_when_the_last_one_would_not_fit(monkeypatch):
    a = llama.parse_args(["--json", "/tmp/x/llama.json", "--procs", "4"])
    runs = []
    monkeypatch.setattr(llama_procs, "_run",
                        lambda argv, env, timeout, out, log, what: runs.append(out) or {"x": 1})
    left = iter([100.0, 60.0, 2.0])  # the third repeat finds 2 s left: skipped
    logs = []
    procs = llama_procs.run_repeats(a, ["torch", "ktune"], logs.append, lambda: next(left))
    assert [p["process"] for p in procs] == [2, 3]
    assert runs == ["/tmp/x/llama_proc2.json", "/tmp/x/llama_proc3.json"]
    assert any("process 4 of 4: skipped" in m for m in logs)


def _entry(variant, shape, ms, setup_s=1.0):
    return dict(variant=variant, shape=shape, setup_s=setup_s, err=0.01, graph_err=0.0,
                graph_ms=[ms, ms * 1.01, ms * 0.99], eager_ms=[2 * ms, 2 * ms, 2 * ms])


def _proc(torch_ms, ktune_ms, compile_ms):
    return dict(rounds=3, entries=[_entry("torch", "d1", torch_ms), _entry("tunableop", "d1",
                                                                            torch_ms),
                                   _entry("ktune", "d1", ktune_ms),
                                   _entry("compile", "d1", compile_ms)])


def test_report_prints_ratios_tuning_time_and_processes(capsys):
    entries = [_entry("torch", "d1", 2.0), _entry("ktune", "d1", 1.6, 10.0),
               _entry("compile", "d1", 1.5, 40.0), _entry("tunableop", "d1", 2.0, 0.1)]
    res = dict(device="GPU", torch="2", cfg={}, compile_scope="layer", order_ktune=["d1"],
               layers=8, context=1024, rounds=3, entries=entries, ops={}, kernels={},
               total_s=1.0, copy={"tbs": 4.0, "bytes": 2 << 30}, step_bytes={"d1": 4e9},
               first_ops={"d1": {"qkv": 1.0, "down": 2.5}, "init_s": {"ktune": 0.25}},
               tunableop_results=[["GemmTunableOp_BFloat16_TN", "tn_1_2_3", "Default", "0.1"]],
               procs=[_proc(2.2, 1.6, 1.5), _proc(2.4, 1.6, 1.7)])
    llama_report.report(res)
    out = capsys.readouterr().out
    # ktune's own set-up (0.25 s) counts as tuning, max-autotune's does not
    assert "whole model: ktune 10.2 s (set-up 0.25 s included), max-autotune 40.0 s" in out
    assert "ktune / max-autotune (every shape): 0.256" in out
    assert "TunableOp's choices: Default x1 (1 GEMM shapes)" in out
    assert "over 3 processes" in out
    summary = next(line for line in out.splitlines()
                   if line.startswith("  d1 ") and "torch," in line)
    assert summary.split()[3] == "1.250"  # ktune/torch G: 2.0 / 1.6 per round
    # the floor: 4 GB at 4 TB/s = 1 ms; ktune's graphed step 1.6 ms
    assert "d1     4.000 GB  floor 1.000 ms" in out and "ktune 1.600 (0.62)" in out
    first = [line.split() for line in out.splitlines() if line.startswith("  all ")]
    assert first == [["all", "1.00", "2.50", "3.50"]]  # ktune's first call by op, summed
    assert "before its first call" in out and "ktune 0.25" in out
    # the table: ktune/torch G per process 1.250, 1.375, 1.500 -> median 1.375 [1.250, 1.500]
    row = next(line for line in out.splitlines() if line.startswith("| 1 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == "1.375 [1.250, 1.500]"
    assert cells[4] == "1.375 [1.250, 1.500]"  # vs TunableOp (same times as torch here)
    assert cells[6] == "0.938 [0.938, 1.062]"  # vs max-autotune: 1.5 / 1.6, 1.5 / 1.6, 1.7 / 1.6


def test_waiting_for_the_package_built_beside_the_harness(tmp_path, monkeypatch):
    # The device script starts the harness while ktune is still being built into a folder that
    # is on sys.path but missing: once the marker exists, the import must find the new folder.
    import importlib
    import threading
    pkg = tmp_path / "kpy"
    monkeypatch.syspath_prepend(str(pkg))
    assert importlib.util.find_spec("llama_wait_probe_mod") is None  # caches the missing folder
    monkeypatch.setenv("LLAMA_WAIT_FOR", str(tmp_path / "kpy.done"))

    def build():
        pkg.mkdir()
        (pkg / "llama_wait_probe_mod.py").write_text("VALUE = 42\n")
        (tmp_path / "kpy.done").touch()
    timer = threading.Timer(0.3, build)
    timer.start()
    logs = []
    llama._wait_for_package(logs.append, limit_s=30)
    timer.join()
    assert importlib.import_module("llama_wait_probe_mod").VALUE == 42
    assert logs and "waited" in logs[0]


class _Ops:
    """Stand-in ops that log their calls (strings for tensors): llama.py's layer logic only."""

    def __init__(self, residual_gemm):
        self.calls = []
        if residual_gemm:
            self.linear_add = lambda a, w, x: self.calls.append(("linear_add", a, w, x)) or x + "'"

    def linear(self, a, w):
        self.calls.append(("linear", a, w))
        return a + "@" + w

    def norm(self, x, w):
        self.calls.append(("norm", x, w))
        return "n(" + x + ")"

    def add_norm(self, d, x, w):
        self.calls.append(("add_norm", d, x, w))
        return "n(" + x + "+" + d + ")", x + "+" + d


def test_the_residual_add_goes_into_the_gemm_where_the_ops_offer_it():
    # ktune: x += a @ w.T in the GEMM's epilogue, then a plain norm (the step's one norm key per
    # shape); the op names stay the unfused form's, so the breakdown's columns line up.
    names = []
    rec = lambda name, fn, *args: names.append(name) or fn(*args)  # noqa: E731
    ops = _Ops(residual_gemm=True)
    h, x = llama._proj_add_norm(ops, rec, "down", "a", "w", "x", "nw")
    assert ops.calls == [("linear_add", "a", "w", "x"), ("norm", "x'", "nw")]
    assert (h, x) == ("n(x')", "x'") and names == ["down", "add_norm"]
    # torch (and ktune --ktune-add norm): GEMM, then add + norm in one op
    names.clear()
    ops = _Ops(residual_gemm=False)
    h, x = llama._proj_add_norm(ops, rec, "o_proj", "a", "w", "x", "nw")
    assert ops.calls == [("linear", "a", "w"), ("add_norm", "a@w", "x", "nw")]
    assert (h, x) == ("n(x+a@w)", "x+a@w") and names == ["o_proj", "add_norm"]


def test_children_keep_the_residual_form_and_the_unfused_shapes():
    a = llama.parse_args(["--ktune-add", "norm", "--json", "/tmp/x/llama.json",
                          "--unfused-shapes", "d1"])
    child = llama.parse_args(llama_procs.child_argv(a, "timing", "/tmp/x/p2.json")[2:])
    assert child.ktune_add == "norm" and child.unfused_shapes == ["d1"]
    d = llama.parse_args([])
    assert d.ktune_add == "gemm" and d.unfused_shapes == ["d1", "d8"]
    assert "ktune_unfused" in d.variants


def test_the_report_names_the_kernel_class_that_loses_to_max_autotune():
    kern = {"ktune p2048": [("ktune_gemm_tma_x", 900.0, 40), ("ktune_silu_mul_x", 45.0, 8),
                            ("flash_fwd", 300.0, 8)],
            "compile p2048": [("triton_tem_fused_mm_1", 880.0, 40),
                              ("triton_poi_fused_mul_silu_2", 50.0, 8), ("flash_fwd", 300.0, 8)],
            "ktune d1": [("ktune_gemm_decode", 500.0, 8)]}
    cmp = llama_report.vs_compile(kern)
    assert list(cmp) == ["p2048"]  # d1 has no max-autotune table
    d = cmp["p2048"]
    assert d["loses"] == ["gemm"] and d["ktune_us"] == 1245.0 and d["compile_us"] == 1230.0


def test_the_report_counts_the_rounds_that_ran():
    # A run whose budget stopped the timing after 3 of 5 rounds says 3 (it said 5).
    e = llama_timing.Entry("ktune", "d1", lambda: None)
    e.times["graph"], e.times["eager"] = [1.0, 1.1, 1.2], [2.0, 2.1, 2.2]
    f = llama_timing.Entry("torch", "d1", lambda: None)
    f.times["eager"] = [2.0, 2.1]  # failed in round 3
    assert llama_timing.rounds_done([e, f], 5) == 3
    assert llama_timing.rounds_done([], 5) == 5


import llama_keys  # noqa: E402
import llama_layers  # noqa: E402


def test_each_tuning_run_is_placed_at_the_first_call_that_tuned_it():
    # The engine's KTUNE_VERBOSE=1 lines (autotune/tuning_run*.cc): race rounds and finalists
    # come before the key's tree, its wall figures after; a repeat process's lines are not read.
    key = "layout=NT,ab=bf16,c=bf16,M=1,N=6144,K=4096,lda=4096,ldb=4096,ldc=6144,epi=16"
    log = f"""  [first call] ktune d1 norm
rmsnorm_bf16 [cols=4096,rows=1,w=1,res=0,align=16]: 12 candidates, 12 compiled, 0 store hits
  winner: X 0.0020 ms
  compile 812 ms, bench 420 ms (300 ms of it while compiling), total 1.06e+03 ms (host wall)
  [first call] ktune d1 qkv
ktune: gemm [{key}]: guided: 2 of 49 raced, leader 0.01983 ms, 1 since a new leader, regret 3%
ktune: gemm [{key}]: guided: round 1 4.2e+03 ms (vendor candidates 310 ms, 16 raced, 14 compiled)
ktune: gemm [{key}]: guided: round 2 230 ms (5 candidates)
ktune: gemm [{key}]: guided: round 3 120 ms (2 candidates)
ktune: gemm [{key}]: finalists 650 ms (3 finalists, 4 rounds: default kept: within noise)
gemm [{key}]: 137 candidates, 14 compiled, 2 store hits, guided: 16 raced, 121 not reached, regret <= 1.00%, at the launch floor
  ├─ * KIND=decode 0.0120 ms (p20 0.0119, p80 0.0121, 40 runs)
  └─   KIND=mma  compile error: spills
  compile 3.9e+03 ms, bench 1.2e+03 ms (800 ms of it while compiling), total 5.5e+03 ms (host wall)
  [first call] ktune d1 rope_kv
process 2: child process llama.py --child timing
rmsnorm_bf16 [cols=4096,rows=1,w=1,res=0,align=16]: 12 candidates, 0 compiled, 12 store hits
"""
    runs = llama_keys.parse(log.splitlines())
    assert [(r["shape"], r["op"], r["family"]) for r in runs] == [
        ("d1", "norm", "rmsnorm_bf16"), ("d1", "qkv", "gemm")]
    g = runs[1]
    assert (g["candidates"], g["compiled"], g["store_hits"], g["raced"], g["not_reached"]) == \
        (137, 14, 2, 16, 121)
    assert abs(g["round1_s"] - 4.2) < 1e-9 and abs(g["vendor_s"] - 0.31) < 1e-9
    assert abs(g["later_s"] - 0.35) < 1e-9 and abs(g["finalists_s"] - 0.65) < 1e-9
    assert (g["compile_s"], g["bench_s"], g["total_s"]) == (3.9, 1.2, 5.5)
    assert abs(runs[0]["total_s"] - 1.06) < 1e-9 and runs[0]["raced"] == 0
    assert g["launch_floor"] and not runs[0]["launch_floor"]
    assert llama_keys.short_key(key) == "M=1,N=6144,K=4096,epi=16"


def test_the_key_table_sets_each_first_call_beside_its_keys(capsys):
    runs = [dict(variant="ktune", shape="d1", op="qkv", family="gemm", key="M=1,N=2", candidates=9,
                 compiled=4, store_hits=0, raced=5, not_reached=4, round1_s=3.0, vendor_s=0.3,
                 later_s=0.5, finalists_s=0.4, compile_s=3.5, bench_s=1.0, overlap_s=0.5,
                 total_s=4.0)]
    llama_keys.report(runs, {"d1": {"qkv": 6.5, "attn": 0.001}})
    out = capsys.readouterr().out
    assert "| ktune d1 qkv | gemm | M=1,N=2 | 9 | 4 / 0 | 5 | 3.00 (0.30) | 0.50 | 0.40 | " \
        "3.50 | 1.00 | **4.00** |" in out
    # 2.5 s of the op's first call were outside its key's run; the attention (no key) not listed
    assert "| d1 qkv | 6.50 | 1 | 4.00 | 2.50 |" in out and "d1 attn" not in out
    assert "all: 1 keys, 4 compiles, compile 3.50 s, bench 1.00 s" in out


def test_a_step_is_cut_into_its_layers():
    # ktune's step: its input copy and the first norm, then 3 layers ending with the next norm;
    # the layer could also be read as starting with the norm (then the last norm is outside):
    # the shorter tail is the model's own cut.
    layer = ["qkv", "rope", "sdpa", "o_proj", "rms", "gate_up", "down", "rms"]
    names = ["copy", "rms"] + layer * 3
    assert llama_layers.layer_cut(names, 3) == (2, 8, 0)
    assert llama_layers.layer_cut(["a", "b", "c", "d", "e", "f", "g"], 3) is None
    us = {"qkv": 17.0, "rope": 4.0, "sdpa": 20.0, "o_proj": 14.0, "rms": 5.0, "gate_up": 63.0,
          "down": 30.0, "copy": 2.0}
    seq = [(n, us[n] + 0.1 * s) for s in range(2) for n in names]  # two steps
    d = llama_layers.layer_kernels(seq, 2, 3)
    assert [x[0] for x in d["layer"]] == layer
    assert abs(d["layer"][5][1] - 63.05) < 1e-9 and d["layer"][5][2] == 63.0
    assert [x[0] for x in d["outside"]] == ["copy", "rms"]
    assert abs(d["layer_us"] - (sum(us[n] for n in layer) + 0.05 * 8)) < 1e-9
    assert llama_layers.layer_kernels(seq[:-1], 2, 3) is None  # the steps differ


def test_children_keep_the_nopdl_shapes_and_it_is_a_variant():
    a = llama.parse_args(["--json", "/tmp/x/llama.json", "--nopdl-shapes", "d1",
                          "--breakdown", "none"])
    assert a.breakdown == []
    child = llama.parse_args(llama_procs.child_argv(a, "timing", "/tmp/x/p2.json")[2:])
    assert child.nopdl_shapes == ["d1"]
    d = llama.parse_args([])
    assert d.nopdl_shapes == ["d1", "d8"] and "ktune_nopdl" in d.variants
    assert "ktune_nopdl" in llama_report.VARIANTS


def test_children_keep_the_fused_shapes_and_it_is_a_variant():
    # ktune_fused: gate/up + SiLU·Mul fused up to 16 rows where ktune (4 rows) runs the pair.
    a = llama.parse_args(["--json", "/tmp/x/llama.json", "--fused-shapes", "d8,d16"])
    child = llama.parse_args(llama_procs.child_argv(a, "timing", "/tmp/x/p2.json")[2:])
    assert child.fused_shapes == ["d8", "d16"]
    d = llama.parse_args([])
    assert d.fused_shapes == [] and "ktune_fused" in d.variants
    assert "ktune_fused" in llama_report.VARIANTS and "ktune_fused" in llama.KTUNE_VARIANTS
    assert llama.FUSED_ROWS_ALT > llama_ktune.KtuneOps.FUSED_MAX_ROWS


def test_pdl_switch_sets_the_option_only_when_it_changes(monkeypatch):
    # Each ktune variant's pre: pdl=True for ktune, pdl=False for ktune_nopdl; set_options() makes
    # the ops take another tuner, so it must not run before every call of the same variant.
    import types
    calls = []
    fake = types.SimpleNamespace(
        set_options=lambda **o: calls.append(o),
        get_tuner=lambda: types.SimpleNamespace(options=lambda: {"pdl": True}))
    monkeypatch.setitem(sys.modules, "ktune", fake)
    monkeypatch.setattr(llama_ktune, "_PDL", [None])
    on, off = llama_ktune.pdl_switch(True), llama_ktune.pdl_switch(False)
    for pre in (on, on, off, off, on):
        pre()
    assert calls == [{"pdl": True}, {"pdl": False}, {"pdl": True}]
