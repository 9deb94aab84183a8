#!/usr/bin/env python3
"""The README's performance section, generated from bench/NOTES.md.

A block of NOTES.md (a table, a list or a paragraph) goes into the README when it is wrapped in
markers that name it and the run it comes from:

  <!-- readme:gemm title="GEMM vs cuBLASLt" device="NVIDIA H100 80GB HBM3" date="2026-11-24" -->
  | shape | ... |
  <!-- /readme:gemm -->

title, device and date (YYYY-MM-DD) are required; note="..." (how it was measured, in a sentence)
is printed under the title; order="N" (default 50) places the block in the README (then NOTES.md's
order). When several blocks share a name, the latest date wins (then the
later one in the file): a newer measurement of the same thing replaces the older one in the
README by carrying the same name. replaces="a,b" (optional) retires other names too: a chosen
block drops the chosen blocks of those names that are not newer than itself (one table that
now covers what several older ones measured). The README section lies between `<!-- readme-perf:begin -->`
and `<!-- readme-perf:end -->`; each block becomes a subsection "title — device, date" with the
NOTES.md heading it sits under.

  bench/readme_perf.py            # check: exit 1 (with a diff) when README.md's section is stale
  bench/readme_perf.py --write    # regenerate the section in README.md
  bench/readme_perf.py --print    # the generated section on stdout
  bench/readme_perf.py --self-test
  --root DIR                      # the repository (default: this script's parent's parent)
"""
import argparse
import difflib
import os
import re
import sys
import tempfile
import textwrap

BEGIN = "<!-- readme-perf:begin -->"
END = "<!-- readme-perf:end -->"
OPEN = re.compile(r"^<!--\s*readme:([A-Za-z0-9_.-]+)((?:\s+[a-z_]+=\"[^\"]*\")*)\s*-->\s*$")
CLOSE = re.compile(r"^<!--\s*/readme:([A-Za-z0-9_.-]+)\s*-->\s*$")
ATTR = re.compile(r'([a-z_]+)="([^"]*)"')
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
INTRO = """\
Every figure in this section is a block of `bench/NOTES.md` (where the method, the command, the
peers and the intervals of each run are), copied by `bench/readme_perf.py`; the ctest
`readme_perf` fails when this section differs from what NOTES.md gives. To add a table, wrap it in
NOTES.md in `<!-- readme:NAME title="..." device="..." date="YYYY-MM-DD" -->` ...
`<!-- /readme:NAME -->` and run `python3 bench/readme_perf.py --write`. Ratios are same-run ratios
(peer time / ktune time: above 1, ktune is faster) unless the table says otherwise."""


class NotesError(Exception):
    pass


def parse_blocks(notes_text):
    """The marked blocks of NOTES.md: dicts with name, attrs, body, heading, line."""
    blocks, current, heading = [], None, ""
    for i, line in enumerate(notes_text.splitlines(), 1):
        m_open, m_close = OPEN.match(line), CLOSE.match(line)
        if line.startswith("<!--") and "readme:" in line and not (m_open or m_close):
            raise NotesError(f"NOTES.md:{i}: malformed readme marker: {line.strip()}")
        if m_open:
            if current:
                raise NotesError(f"NOTES.md:{i}: block '{m_open.group(1)}' opens inside "
                                 f"'{current['name']}' (line {current['line']})")
            attrs = dict(ATTR.findall(m_open.group(2)))
            for key in ("title", "device", "date"):
                if not attrs.get(key, "").strip():
                    raise NotesError(f"NOTES.md:{i}: block '{m_open.group(1)}' has no "
                                     f"{key}=\"...\" (every figure in the README names its "
                                     "device and date)")
            if not DATE.match(attrs["date"]):
                raise NotesError(f"NOTES.md:{i}: block '{m_open.group(1)}': date must be "
                                 f"YYYY-MM-DD, got '{attrs['date']}'")
            try:
                attrs["order"] = int(attrs.get("order", "50"))
            except ValueError:
                raise NotesError(f"NOTES.md:{i}: order must be an integer") from None
            current = {"name": m_open.group(1), "attrs": attrs, "body": [], "heading": heading,
                       "line": i}
        elif m_close:
            if not current or current["name"] != m_close.group(1):
                raise NotesError(f"NOTES.md:{i}: '/readme:{m_close.group(1)}' closes no open block")
            body = "\n".join(current["body"]).strip("\n")
            if not body.strip():
                raise NotesError(f"NOTES.md:{current['line']}: block '{current['name']}' is empty")
            current["body"] = body
            blocks.append(current)
            current = None
        elif current:
            current["body"].append(line)
        elif line.startswith("#"):
            heading = line.lstrip("#").strip()
    if current:
        raise NotesError(f"NOTES.md:{current['line']}: block '{current['name']}' is never closed")
    return blocks


def latest(blocks):
    """One block per name: the latest date, then the later one in the file; then the names a
    chosen block replaces (no newer than it) are dropped."""
    chosen = {}
    for b in blocks:
        old = chosen.get(b["name"])
        if old is None or (b["attrs"]["date"], b["line"]) >= (old["attrs"]["date"], old["line"]):
            chosen[b["name"]] = b
    for b in list(chosen.values()):
        for name in filter(None, (x.strip() for x in b["attrs"].get("replaces", "").split(","))):
            old = chosen.get(name)
            if old is not None and old is not b and old["attrs"]["date"] <= b["attrs"]["date"]:
                del chosen[name]
    return sorted(chosen.values(), key=lambda b: (b["attrs"]["order"], b["line"]))


def generate(notes_text):
    """The README section (between and including the begin/end markers)."""
    out = [BEGIN, "", INTRO, ""]
    for b in latest(parse_blocks(notes_text)):
        a = b["attrs"]
        note = a.get("note", "").strip()
        note = (note.rstrip(".") + ". ") if note else ""
        source = textwrap.fill(f"{note}From `bench/NOTES.md`, \"{b['heading']}\".", width=100,
                               break_on_hyphens=False, break_long_words=False)
        out += [f"### {a['title']} — {a['device']}, {a['date']}", "", source, "", b["body"], ""]
    out.append(END)
    return "\n".join(out)


def split_readme(readme_text):
    """(before, section, after) of README.md around the markers."""
    start, end = readme_text.find(BEGIN), readme_text.find(END)
    if start < 0 or end < start:
        raise NotesError(f"README.md has no '{BEGIN}' ... '{END}' section")
    end += len(END)
    return readme_text[:start], readme_text[start:end], readme_text[end:]


def run(root, mode, out=sys.stdout):
    notes_path = os.path.join(root, "bench", "NOTES.md")
    readme_path = os.path.join(root, "README.md")
    with open(notes_path, encoding="utf-8") as f:
        section = generate(f.read())
    if mode == "print":
        print(section, file=out)
        return 0
    with open(readme_path, encoding="utf-8") as f:
        readme = f.read()
    before, current, after = split_readme(readme)
    if current == section:
        print("README.md's performance section matches bench/NOTES.md", file=out)
        return 0
    if mode == "write":
        with open(readme_path, "w", encoding="utf-8") as f:
            f.write(before + section + after)
        print("README.md's performance section regenerated from bench/NOTES.md", file=out)
        return 0
    diff = difflib.unified_diff(current.splitlines(), section.splitlines(), "README.md (now)",
                                "generated from bench/NOTES.md", lineterm="", n=1)
    print("\n".join(diff), file=out)
    print("README.md's performance section differs from bench/NOTES.md: edit NOTES.md, then run "
          "`python3 bench/readme_perf.py --write`", file=out)
    return 1


def self_test():
    notes = ("# Notes\n## Old run\n"
             "<!-- readme:t title=\"T\" device=\"GPU A\" date=\"2026-01-01\" -->\n"
             "| a | 1 |\n<!-- /readme:t -->\n## New run\n"
             "<!-- readme:t title=\"T\" device=\"GPU B\" date=\"2026-02-01\" -->\n| a | 2 |\n"
             "<!-- /readme:t -->\n"
             "<!-- readme:u title=\"U\" device=\"GPU A\" date=\"2026-01-01\" -->\n| u | 1 |\n"
             "<!-- /readme:u -->\n"
             "<!-- readme:w title=\"W\" device=\"GPU A\" date=\"2026-03-01\" -->\n| w | 1 |\n"
             "<!-- /readme:w -->\n"
             "<!-- readme:v title=\"V\" device=\"GPU B\" date=\"2026-02-01\" replaces=\"u,w\" -->\n"
             "| v | 1 |\n<!-- /readme:v -->\n")
    with tempfile.TemporaryDirectory() as root, open(os.devnull, "w") as quiet:
        os.makedirs(os.path.join(root, "bench"))
        with open(os.path.join(root, "bench", "NOTES.md"), "w") as f:
            f.write(notes)
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write(f"# R\n{BEGIN}\n| a | 1 |\n{END}\ntail\n")
        checks = [(run(root, "check", quiet), 1, "a stale section fails the check")]
        checks.append((run(root, "write", quiet), 0, "--write succeeds"))
        checks.append((run(root, "check", quiet), 0, "the written section passes"))
        with open(os.path.join(root, "README.md")) as f:
            text = f.read()
        checks.append(("| a | 2 |" in text and "| a | 1 |" not in text, True,
                       "the latest block wins"))
        checks.append(("| v | 1 |" in text and "| u | 1 |" not in text and "| w | 1 |" in text,
                       True, "replaces drops an older name, never a newer one"))
        checks.append(("GPU B, 2026-02-01" in text and text.endswith("tail\n"), True,
                       "device and date named, the rest of the README kept"))
        for bad in ('<!-- readme:x title="X" date="2026-01-01" -->\n|1|\n<!-- /readme:x -->\n',
                    '<!-- readme:x title="X" device="D" date="yesterday" -->\n|1|\n'
                    '<!-- /readme:x -->\n',
                    '<!-- readme:x title="X" device="D" date="2026-01-01" -->\n|1|\n'):
            try:
                parse_blocks(bad)
                checks.append((False, True, "refused: " + bad.splitlines()[0]))
            except NotesError:
                pass
    failed = [what for got, want, what in checks if got != want]
    for what in failed:
        print("self-test failed:", what)
    if not failed:
        print("readme_perf self-test passed")
    return 1 if failed else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true")
    g.add_argument("--print", action="store_true")
    g.add_argument("--self-test", action="store_true")
    args = ap.parse_args(argv[1:])
    if args.self_test:
        return self_test()
    try:
        return run(args.root, "write" if args.write else "print" if args.print else "check")
    except (NotesError, OSError) as e:
        print(f"readme_perf: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
