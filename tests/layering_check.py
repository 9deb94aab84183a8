#!/usr/bin/env python3
"""Checks that the folders' dependencies point one way (README "Architecture").

Every #include of a project header ("dir/file.h" or <dir/file.h> where dir is a top-level folder)
must name a folder its own folder may use:

  base -> runtime | compiler | templates -> autotune (the engine) -> ops -> api -> tools, bench

remote/ and report/ sit beside ops above the engine; include/ktune and python/ see only the
public headers; nothing outside tests/ includes tests/. Prints each violation as
file:line: "dir/" may not include "other/..." and exits 1 if there is any.

  tests/layering_check.py [ROOT]     # the repository at ROOT (default: this script's parent's)
  tests/layering_check.py --self-test  # the checker itself: a tree with autotune/ including ops/
                                       # must fail, a clean one must pass (ctest runs both)
"""
import os
import re
import sys
import tempfile

LOW = ["base", "ktune"]
ENGINE = LOW + ["runtime", "compiler", "templates", "autotune"]
# For each folder, the top-level folders its files may include from (itself always allowed).
ALLOWED = {
    "base": LOW,
    "runtime": LOW,
    "compiler": LOW,
    "templates": LOW,
    "autotune": ENGINE,
    "ops": ENGINE,
    "remote": ENGINE,
    "report": ENGINE + ["ops"],
    "api": ENGINE + ["ops", "remote", "report"],
    "tools": ENGINE + ["ops", "remote", "report", "bench"],
    "bench": ENGINE + ["ops", "remote", "report", "api"],
    "include": ["ktune"],
    "python": ["ktune"],
}
PROJECT_DIRS = set(ALLOWED) | {"tests", "examples", "fuzz", "dev"}
EXTENSIONS = (".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def violations(root):
    out = []
    for top, allowed in ALLOWED.items():
        base = os.path.join(root, top)
        for d, dirs, names in os.walk(base):
            dirs[:] = [x for x in dirs if not x.startswith(".")]
            for name in sorted(names):
                if not name.endswith(EXTENSIONS):
                    continue
                path = os.path.join(d, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue
                        first = m.group(1).split("/", 1)[0]
                        if first not in PROJECT_DIRS or first == top or first in allowed:
                            continue
                        out.append(f'{rel}:{lineno}: "{top}/" may not include "{m.group(1)}"')
    return out


def self_test():
    with tempfile.TemporaryDirectory() as t:
        def write(rel, text):
            p = os.path.join(t, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        write("autotune/engine.cc", '#include "autotune/engine.h"\n#include "base/status.h"\n')
        write("ops/gemm.cc", '#include "autotune/engine.h"\n#include <vector>\n')
        write("tools/cli.cc", '#include "bench/fair/peers.h"\n#include "ops/gemm.h"\n')
        if violations(t):
            print("self-test: a clean tree was reported:", violations(t))
            return 1
        write("autotune/worker.cc", '#include "ops/builtin.h"\n')
        write("base/x.h", '#  include <autotune/key.h>\n')
        write("ops/y.h", '#include "tests/unit/fixture.h"\n')
        found = violations(t)
        want = ["autotune/worker.cc:1", "base/x.h:1", "ops/y.h:1"]
        if sorted(v.split(": ")[0] for v in found) != want:
            print("self-test: expected violations at", want, "got", found)
            return 1
    print("layering self-test passed")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = violations(root)
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} include(s) against the layering (see tests/layering_check.py)")
        return 1
    print("layering: every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
