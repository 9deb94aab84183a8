#!/usr/bin/env bash
# Counts the skipped tests in the gtest XML reports that the unit test programs wrote during the
# last ctest run (tests/CMakeLists.txt points GTEST_OUTPUT at <build>/tests/results/<label>/),
# prints the count and each skipped test with its reason, and exits 1 if any unit test skipped
# while KTUNE_REQUIRE_TOOLS=1 (CI: every tool is installed there, so a skip hides something).
#   bash tests/check_skips.sh [BUILD_DIR] [LABEL]     (defaults: build, unit)
# Clear the reports before the ctest run (rm -rf BUILD/tests/results/LABEL) so that only that
# run's programs are counted.
set -euo pipefail
BUILD=${1:-build}
LABEL=${2:-unit}
DIR="$BUILD/tests/results/$LABEL"
shopt -s nullglob
files=("$DIR"/*.xml)
if [ ${#files[@]} -eq 0 ]; then
  echo "check_skips.sh: no test reports under $DIR (did ctest run the $LABEL tests?)" >&2
  exit 1
fi
skipped=0
total=0
for f in "${files[@]}"; do
  prog=$(basename "$f" .xml)
  n=$(grep -c 'result="skipped"' "$f" || true)
  t=$(grep -c '<testcase ' "$f" || true)
  total=$((total + t))
  [ "$n" -eq 0 ] && continue
  skipped=$((skipped + n))
  # One line per skipped test: program and suite.name (the reason is in the XML report).
  grep 'result="skipped"' "$f" | sed -E 's/.*<testcase name="([^"]*)".*classname="([^"]*)".*/\2.\1/' |
    sed "s|^|  SKIPPED $prog: |"
done
echo "$LABEL tests: $skipped skipped of $total in ${#files[@]} programs"
if [ "$skipped" -gt 0 ] && [ "${KTUNE_REQUIRE_TOOLS:-0}" = "1" ]; then
  echo "check_skips.sh: $skipped $LABEL test(s) skipped with KTUNE_REQUIRE_TOOLS=1 (see above)" >&2
  exit 1
fi
