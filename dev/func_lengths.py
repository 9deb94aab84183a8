#!/usr/bin/env python3
"""Lists the longest functions of the library code (issue 11's target: none over 120 lines).

A brace-matching scan, not a parser: comments, strings and character literals are blanked, then
every outermost `{` whose header ends in `)` (optionally followed by const/override/noexcept/
-> type, or a constructor's initializer list) starts a function that ends at its matching `}`.
Lambdas and local classes count toward the function that holds them, control statements
(if/for/while/switch/catch) are never functions. Good enough to find long functions in this
tree; it can miss a function hidden behind a macro.

  dev/func_lengths.py                 # functions over 120 lines in the library dirs (exit 1 if any)
  dev/func_lengths.py --top 20        # the 20 longest, whatever their length
  dev/func_lengths.py --limit 80 DIR  # another limit, other dirs or files
"""
import argparse
import os
import re
import sys

LIBRARY_DIRS = ["base", "runtime", "compiler", "templates", "autotune", "ops", "bench/fair", "tools",
                "api", "remote", "report"]
EXTENSIONS = (".cc", ".cpp", ".h", ".hpp", ".cuh", ".cu")
CONTROL = re.compile(r"\b(if|for|while|switch|catch|return|sizeof|decltype|alignas)\s*$")
HEADER_END = re.compile(r"\)\s*(?:const\b|override\b|final\b|noexcept\b|mutable\b|&|\s)*"
                        r"(?:->\s*[\w:<>,*&\s]+)?\s*$")
ATTRIBUTES = {"__launch_bounds__", "KTUNE_LAUNCH_BOUNDS", "__attribute__", "alignas",
              "__declspec"}
INIT_LIST = re.compile(r"\)\s*:\s*[\w:]+\s*[({]")


def blank(text):
    """Comments, strings and char literals replaced by spaces (newlines kept for line numbers)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        two = text[i:i + 2]
        if two == "//":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif two == "/*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text[i:i + 2] == 'R"' and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            # A digit separator (1'000) is not a char literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and text[i - 1] not in "uULR8":
                out.append(" ")
                i += 1
                continue
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, line count) of each outermost function body in `path`."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = blank(f.read())
    text = re.sub(r"^\s*#.*$", "", text, flags=re.M)  # preprocessor lines
    found = []
    depth = 0
    fn_depth = None  # depth at which the current function's body opened
    fn_start = fn_name = None
    stmt_start = 0  # where the text before the next `{` starts
    for i, c in enumerate(text):
        if c == "{":
            if fn_depth is None:
                header = text[stmt_start:i]
                if (HEADER_END.search(header) or INIT_LIST.search(header)) and \
                        not CONTROL.search(header.split("(")[0]):
                    name = [x for x in re.findall(r"([~\w:]+)\s*\(", header)
                            if x not in ATTRIBUTES]
                    fn_depth, fn_start = depth, i
                    fn_name = name[0] if name else "?"
            depth += 1
            stmt_start = i + 1
        elif c == "}":
            depth -= 1
            if fn_depth is not None and depth == fn_depth:
                first = text.count("\n", 0, fn_start) + 1
                last = text.count("\n", 0, i) + 1
                found.append((fn_name, first, last - first + 1))
                fn_depth = None
            stmt_start = i + 1
        elif c == ";" and fn_depth is None:
            stmt_start = i + 1
    return found


def walk(roots):
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for d, _, names in os.walk(root):
            for name in sorted(names):
                if name.endswith(EXTENSIONS):
                    yield os.path.join(d, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*", default=LIBRARY_DIRS)
    ap.add_argument("--limit", type=int, default=120, help="report functions longer than this")
    ap.add_argument("--top", type=int, default=0, help="list the N longest instead")
    args = ap.parse_args()
    rows = [(n, p, line, name) for p in walk(args.paths) for name, line, n in functions(p)]
    rows.sort(reverse=True)
    shown = rows[:args.top] if args.top else [r for r in rows if r[0] > args.limit]
    for n, p, line, name in shown:
        print(f"{n:5d}  {p}:{line}  {name}")
    if not args.top:
        print(f"{len(shown)} function(s) over {args.limit} lines in {len(rows)} scanned")
    return 1 if shown and not args.top else 0


if __name__ == "__main__":
    sys.exit(main())
