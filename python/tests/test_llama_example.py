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
    a = llama.parse_args(["--shapes", "d1,p2048", "--layers", "2", "--json", "/tmp/x/llama.json"])
    argv = llama_procs.child_argv(a, "timing", "/tmp/x/p2.json", variants=("torch", "ktune"),
                                  rounds=3, breakdown=(), deadline_s=42)
    child = llama.parse_args(argv[2:])
    assert child.child == "timing" and child.shapes == ["d1", "p2048"] and child.layers == 2
    assert child.variants == ["torch", "ktune"] and child.rounds == 3 and child.breakdown == []
    assert child.deadline_s == 42 and child.json == "/tmp/x/p2.json"
    env = llama_procs.tunableop_env(a)
    assert env["PYTORCH_TUNABLEOP_FILENAME"] == "/tmp/x/llama_tunableop_results%d.csv"
    assert "PYTORCH_TUNABLEOP_ENABLED" not in env


def _entry(variant, shape, ms, setup_s=1.0):
    return dict(variant=variant, shape=shape, setup_s=setup_s, err=0.01, graph_err=0.0,
                graph_ms=[ms, ms * 1.01, ms * 0.99], eager_ms=[2 * ms, 2 * ms, 2 * ms])


def test_report_prints_ratios_tuning_time_and_processes(capsys):
    entries = [_entry("torch", "d1", 2.0), _entry("ktune", "d1", 1.6, 10.0),
               _entry("compile", "d1", 1.5, 40.0), _entry("torch@child", "d1", 2.0),
               _entry("tunableop", "d1", 2.0, 0.1)]
    res = dict(device="GPU", torch="2", cfg={}, compile_scope="layer", order_ktune=["d1"],
               layers=8, context=1024, rounds=3, entries=entries, ops={}, kernels={},
               total_s=1.0, procs=[dict(entries=[_entry("torch", "d1", 2.2),
                                                 _entry("ktune", "d1", 1.6)])])
    llama_report.report(res)
    out = capsys.readouterr().out
    assert "whole model: ktune 10.0 s, max-autotune 40.0 s" in out
    assert "ktune / max-autotune over the shapes both ran: 0.250" in out
    assert "over 2 processes" in out
    summary = next(line for line in out.splitlines() if line.startswith("  d1 ") and "torch," in line)
    assert summary.split()[3] == "1.250"  # ktune/torch G: 2.0 / 1.6 per round
