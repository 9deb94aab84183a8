#!/usr/bin/env python3
"""The engine's include graph (ctest `autotune_layering`; well under a second).

Rules for autotune/ (its own files; ops/ and vendor/ sit above the engine and are not scanned):
  1. No cycle between modules, a module being a file stem (engine.h + engine.cc, with its private
     parts named stem_*: tuning_run_bench.cc belongs to tuning_run): a .cc that
     includes a header whose includes lead back to the .cc's own header is a ring
     (engine.cc -> tuning_run.h -> engine.h), even though every header has an include guard.
  2. No engine file includes the facade, autotune/autotuner.h: the facade includes the engine,
     never the reverse. The facade's own files and programs over it are listed in FACADE.
  3. The tuning run's stages, the finalists and the device pool (STAGES) use the engine through its
     narrow interface (TunerEngine's methods): they name none of its fields (`e_.opts`,
     `e_.worker->...`), which stay the facade's and the engine's own files' business.
  4. TunerEngine (autotune/engine.h) declares no data member before its `private:` section: the
     facade and every other caller go through its methods (the compiler then enforces rule 3 too).
  5. One registration type: every family, the engine's own unit tests included, registers a
     TypedKernelSpec<P> (ktune/typed.hpp), with FamilyExtras beside it where the engine needs more.
     The engine's typed twin of it, KernelFamily<P>, is gone: the name appears in no source,
     header, script or doc of the repository (bench/NOTES.md, the measurements' history, and this
     checker excepted), so it cannot come back under its old name.
Prints each violation and exits 1; exits 0 with a one-line summary otherwise. `--self-test` checks
rule 4's reading of a class and rule 5's scan on small examples (ctest
autotune_layering_self_test).
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DIR = "autotune"
FACADE_HEADER = "autotune/autotuner.h"
# Files allowed to include the facade: the facade itself, the Engine methods it declares
# (offline.cc: Engine::tuneFromFile). (The worker program, api/worker.cc, is outside this folder.)
FACADE = {"autotune/autotuner.h", "autotune/autotuner.cc", "autotune/offline.cc"}
STAGES = {"autotune/tuning_run.cc", "autotune/tuning_run_bench.cc", "autotune/tuning_run_race.cc",
          "autotune/tuning_run_stages.h", "autotune/tuning_run.h", "autotune/device_pool.cc",
          "autotune/finalists.cc", "autotune/partial_record.cc", "autotune/run_candidate.cc"}
ENGINE_FIELDS = ("backend opts device compiler store ir_mu ir_compiler validator space_backend "
                 "families_mu families modules_mu functions modules bench_mu bench worker "
                 "iso_fallback iso_warned devices progress_mu shared_warned").split()
# An engine reached as e / e_ / x.e (the stages' names for it), then one of its fields.
FIELD_USE = re.compile(r"\be_?\.(" + "|".join(ENGINE_FIELDS) + r")\b(?!\s*\()")
# A data member's declaration: a line ending in ';' with no parenthesis (methods have one).
MEMBER_DECL = re.compile(r"^\s*[A-Za-z_][\w:<>,\s\*&]*[\s\*&](\w+)"
                         r"\s*(\{[^()]*\}|=[^;()]*)?\s*;\s*(//.*)?$")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def files():
    out = []
    for name in sorted(os.listdir(os.path.join(ROOT, DIR))):
        if name.endswith((".h", ".cc")) and not name.endswith("_test.cc"):
            out.append(DIR + "/" + name)
    return out


def modules_of(paths):
    """file -> module: its stem, or the stem of another module it extends (tuning_run_bench.cc,
    tuning_run_stages.h -> tuning_run; isolation_wire.h -> isolation): a module's private parts."""
    stems = {os.path.splitext(p)[0] for p in paths}
    out = {}
    for p in paths:
        stem = os.path.splitext(p)[0]
        owners = [s for s in stems if stem.startswith(s + "_")]
        out[p] = max(owners, key=len) if owners else stem
    return out


def public_fields(text):
    """Data members TunerEngine declares before `private:` (rule 4), or None when there is no
    `class TunerEngine` with a private section."""
    start = text.find("class TunerEngine {")
    if start < 0:
        return None
    end = text.find("\n private:", start)
    if end < 0:
        return None
    out = []
    for line in text[start:end].splitlines()[1:]:
        if line.lstrip().startswith("//") or "(" in line or ")" in line or line.strip() == "public:":
            continue
        m = MEMBER_DECL.match(line)
        if m and not line.lstrip().startswith(("using ", "return ", "friend ")):
            out.append(m.group(1))
    return out


# Rule 5: the retired second registration type. bench/NOTES.md is the measurements' history and
# keeps the names of its time; this checker names what it forbids.
SECOND_NAME = re.compile(r"\bKernelFamily\b")
SCANNED = (".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh", ".py", ".md", ".txt", ".cmake", ".sh",
           ".in", ".json")
EXEMPT = {"bench/NOTES.md", "dev/include_graph.py"}


def second_name_lines(rel, text):
    """Rule 5 on one file's text: a violation per line that names KernelFamily."""
    if rel in EXEMPT or not rel.endswith(SCANNED):
        return []
    return [f"{rel}:{n}: names KernelFamily, the retired typed twin of the engine's family "
            "(register a TypedKernelSpec, with FamilyExtras for engine objects)"
            for n, line in enumerate(text.splitlines(), 1) if SECOND_NAME.search(line)]


def second_names():
    out = []
    for d, dirs, names in os.walk(ROOT):
        # Hidden folders (.git, .devwork) and build trees (build, build-asan, ...) are not sources.
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "build")))
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(d, name), ROOT)
            if rel in EXEMPT or not rel.endswith(SCANNED):
                continue
            with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as fh:
                out += second_name_lines(rel, fh.read())
    return out


def main():
    paths = files()
    own = set(paths)
    mod = modules_of(paths)
    module = mod.__getitem__
    edges = {}  # module -> {module: (file, included header)}
    errors = []
    for p in paths:
        with open(os.path.join(ROOT, p), encoding="utf-8") as fh:
            text = fh.read()
        if p == "autotune/engine.h":
            pub = public_fields(text)
            if pub is None:
                errors.append(f"{p}: no `class TunerEngine {{` with a `private:` section (rule 4)")
            for name in pub or []:
                errors.append(f"{p}: TunerEngine's public part declares the field '{name}' "
                              "(make it private and add a method)")
        if p in STAGES:
            for n, line in enumerate(text.splitlines(), 1):
                if line.lstrip().startswith("//"):
                    continue
                m = FIELD_USE.search(line)
                if m:
                    errors.append(f"{p}:{n}: a stage reaches into the engine's field "
                                  f"'{m.group(1)}' (use TunerEngine's interface)")
        for inc in INCLUDE.findall(text):
            if inc == FACADE_HEADER and p not in FACADE:
                errors.append(f"{p}: includes the facade {FACADE_HEADER} (engine files must not)")
            if inc not in own:
                continue
            a, b = module(p), module(inc)
            if a != b:
                edges.setdefault(a, {}).setdefault(b, (p, inc))
    # Cycle search over modules (iterative DFS, colours).
    colour = {}
    stack_path = []

    def dfs(start):
        todo = [(start, iter(sorted(edges.get(start, {}))))]
        colour[start] = 1
        stack_path.append(start)
        while todo:
            node, it = todo[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack_path.pop()
                todo.pop()
                continue
            c = colour.get(nxt, 0)
            if c == 1:
                ring = stack_path[stack_path.index(nxt):] + [nxt]
                hops = []
                for x, y in zip(ring, ring[1:]):
                    f, h = edges[x][y]
                    hops.append(f"{f} includes {h}")
                errors.append("include ring " + " -> ".join(ring) + ": " + "; ".join(hops))
            elif c == 0:
                colour[nxt] = 1
                stack_path.append(nxt)
                todo.append((nxt, iter(sorted(edges.get(nxt, {})))))

    for m in sorted(set(mod.values())):
        if colour.get(m, 0) == 0:
            dfs(m)
    errors += second_names()
    for e in errors:
        print("autotune layering: " + e)
    if errors:
        return 1
    n = sum(len(v) for v in edges.values())
    print(f"autotune layering: {len(paths)} files, {n} module edges, no ring, facade not included, "
          "stages use the engine's interface, its fields are private, one registration type")
    return 0


def self_test():
    """Rule 4 on examples: a public field is named, methods and private fields are not."""
    head = "class TunerEngine {\n public:\n  const Options& options() const { return opts; }\n"
    tail = " private:\n  EngineOptions opts;\n};\n"
    cases = [
        (head + tail, []),
        (head + "  std::mutex bench_mu;  // one at a time\n" + tail, ["bench_mu"]),
        (head + "  std::atomic<bool> warned{false};\n  int n = 0;\n" + tail, ["warned", "n"]),
        (head + "  Expected<int> f(int a,\n                  int b = 0);\n"
         "  using Fn = std::function<void(int)>;\n" + tail, []),
        ("struct TunerEngine {\n  int x;\n};\n", None),
    ]
    bad = 0
    for text, want in cases:
        got = public_fields(text)
        if got != want:
            print(f"autotune layering self-test: expected {want}, got {got} for:\n{text}")
            bad += 1
    # Rule 5: the old name is found anywhere (engine and tests included), whole words only.
    names = [
        ("tests/unit/x_test.cc", "int a;\n  KernelFamily<Scale> f;\n", [2]),
        ("autotune/family.h", "template <class P>\nstruct KernelFamily {\n", [2]),
        ("README.md", "register a `KernelFamily<P>`\n", [1]),
        ("tests/unit/x_test.cc", "TypedKernelSpec<Scale> s;  // MyKernelFamily2\n", []),
        ("bench/NOTES.md", "KernelFamily<Gemm> (then)\n", []),
        ("tests/unit/blob.bin", "KernelFamily\n", []),
    ]
    for rel, text, want in names:
        got = [int(v.split(":")[1]) for v in second_name_lines(rel, text)]
        if got != want:
            print(f"autotune layering self-test: rule 5 expected lines {want}, got {got} in {rel}")
            bad += 1
    cases += names
    if not bad:
        print(f"autotune layering self-test: {len(cases)} cases pass")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(self_test() if sys.argv[1:] == ["--self-test"] else main())
