#!/usr/bin/env bash
# ctest `scripts_check` (label unit, a few seconds): the README's code blocks are all accounted
# for (bash run by scripts/readme_blocks.sh in scripts/test.sh, text shown, programs equal to their
# files under examples/readme/), and scripts/configure.sh turns a build tree made with another
# CMake generator into a Ninja one instead of failing ("Does not match the generator used
# previously"), as every script's configure line now relies on.
#   scripts_check.sh <source-dir>
set -euo pipefail
src=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/ktune-scripts-check.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== README blocks"
python3 "$src/scripts/readme_blocks.py" "$src/README.md" "$work/blocks.sh"
grep -q 'README_LINE=' "$work/blocks.sh" || { echo "FAIL: no runnable README block"; exit 1; }
# A program block that drifted from its file, and a block of no known kind, are refused.
sed 's/^int main() {$/int main(void) {/' "$src/README.md" > "$work/README.md"
mkdir -p "$work/examples" && cp -r "$src/examples/readme" "$work/examples/"
if python3 "$src/scripts/readme_blocks.py" "$work/README.md" "$work/x.sh" 2> "$work/err"; then
  echo "FAIL: a README block that differs from its file was accepted"; exit 1
fi
grep -q "differs from examples/readme/saxpy.cc" "$work/err" || { cat "$work/err"; exit 1; }
printf '# t\n\n```sh\nls\n```\n' > "$work/README.md"
if python3 "$src/scripts/readme_blocks.py" "$work/README.md" "$work/x.sh" 2> "$work/err"; then
  echo "FAIL: a \`\`\`sh block was accepted"; exit 1
fi
grep -q 'use bash (run by CI), text' "$work/err" || { cat "$work/err"; exit 1; }

echo "== configure.sh over a Makefile tree"
mkdir -p "$work/proj"
printf 'cmake_minimum_required(VERSION 3.22)\nproject(p NONE)\n' > "$work/proj/CMakeLists.txt"
cmake -S "$work/proj" -B "$work/b" -G "Unix Makefiles" > /dev/null
bash "$src/scripts/configure.sh" "$work/b" -S "$work/proj" > /dev/null 2> "$work/err" ||
  { cat "$work/err"; echo "FAIL: configure.sh did not reconfigure a Makefile tree"; exit 1; }
grep -q "reconfiguring it with Ninja" "$work/err" || { cat "$work/err"; exit 1; }
grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$work/b/CMakeCache.txt" || { echo "FAIL: not Ninja"; exit 1; }
echo "scripts_check: ok"
