#!/usr/bin/env bash
# The HTML report in a real browser (ctest `report_browser`). Loads the pages that report_html_test
# wrote (a database tuned on the simulated backend, hostile strings) and the ones `ktune report`
# writes from its synthetic LLM-suite database (report and --compare) in headless Chromium, and
# requires of each:
#   - no console message at all: the pages carry no script, and their Content-Security-Policy
#     (default-src 'none') makes the browser log any script, fetch or image it is asked to run —
#     a negative control page proves such messages are seen;
#   - the parsed DOM (--dump-dom) has the page's sections, and no <script> element;
#   - a screenshot of the right size that is not blank (tests/png_check.py, standard library).
#
# usage: report_browser_check.sh KTUNE_BINARY PAGES_DIR
# Exit 77 (ctest: skipped) when chromium is not installed, unless KTUNE_REQUIRE_TOOLS=1.
set -euo pipefail
KTUNE=$1
PAGES=$2
HERE=$(cd "$(dirname "$0")" && pwd)

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  if [ "${KTUNE_REQUIRE_TOOLS:-0}" = "1" ]; then
    echo "FAIL: chromium is not installed and KTUNE_REQUIRE_TOOLS=1 (apt-get install chromium)"
    exit 1
  fi
  echo "SKIPPED: chromium is not installed (apt-get install chromium; scripts/setup.sh does)"
  exit 77
fi
WORK=$(mktemp -d /tmp/ktune-browser-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# Chromium flags: no GPU, no sandbox (CI runs as root), a private profile, nothing resolvable.
browse() {
  timeout 60 "$CHROMIUM" --headless --disable-gpu --no-sandbox --no-first-run \
    --user-data-dir="$WORK/profile" --host-resolver-rules="MAP * ~NOTFOUND" \
    --enable-logging=stderr --v=0 "$@"
}

# load PAGE ID...: DOM dump + console check; the listed ids must be in the parsed page.
load() {
  local page=$1 name
  shift
  name=$(basename "$page" .html)
  browse --dump-dom "file://$page" >"$WORK/$name.dom" 2>"$WORK/$name.log" ||
    { echo "FAIL: chromium could not load $page"; cat "$WORK/$name.log"; return 1; }
  if grep -E ':CONSOLE|Uncaught|Content Security Policy' "$WORK/$name.log"; then
    echo "FAIL: $page: console messages above"
    return 1
  fi
  grep -q '</html>' "$WORK/$name.dom" || { echo "FAIL: $page: no DOM"; return 1; }
  if grep -qi '<script' "$WORK/$name.dom"; then
    echo "FAIL: $page: the parsed page has a <script> element"
    return 1
  fi
  for id in "$@"; do
    grep -q "id=\"$id\"" "$WORK/$name.dom" || { echo "FAIL: $page: no element #$id"; return 1; }
  done
  echo "ok: $page parsed, $(wc -c <"$WORK/$name.dom") bytes of DOM, no console messages"
}

# The negative control: a page whose script and image the policy blocks must be reported.
cat >"$WORK/control.html" <<'EOF'
<!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy"
content="default-src 'none'"><title>control</title></head><body><p id="x">x</p>
<script>console.error("control")</script></body></html>
EOF
if load "$WORK/control.html" x >/dev/null; then
  echo "FAIL: the control page's blocked script was not seen in the console log"
  exit 1
fi
echo "ok: the control page's blocked script is seen in the console log"
python3 "$HERE/png_check.py" --self-test "$WORK" >/dev/null ||
  { echo "FAIL: png_check.py accepts a blank picture"; exit 1; }

for f in sim.html hostile.html llm/gemm.json; do
  [ -e "$PAGES/$f" ] || { echo "FAIL: $PAGES/$f missing (report_html_test writes it)"; exit 1; }
done
"$KTUNE" report "$PAGES/llm/gemm.json" --store "$PAGES/llm/store" -o "$WORK/cli.html"
"$KTUNE" report --compare "$PAGES/llm/gemm.json" "$PAGES/llm/gemm.json" --fail-above 1.0001 \
  -o "$WORK/compare.html" >/dev/null

load "$PAGES/sim.html" summary key-0-0-0 bars-0-0-0 heat-0-0-0 scatter-0-0-0 failures-0-0-0
load "$PAGES/hostile.html" summary key-0-0-1 failures-0-0-1
load "$WORK/cli.html" summary key-0-0-0 key-0-0-7
load "$WORK/compare.html" compare

# Screenshots: the top of the LLM report (summary, validator, first bars) and the hostile page.
browse --hide-scrollbars --window-size=1024,900 --screenshot="$WORK/cli.png" \
  "file://$WORK/cli.html" >/dev/null 2>&1
python3 "$HERE/png_check.py" "$WORK/cli.png" 1024 900 64 0.10
browse --hide-scrollbars --window-size=800,600 --screenshot="$WORK/hostile.png" \
  "file://$PAGES/hostile.html" >/dev/null 2>&1
python3 "$HERE/png_check.py" "$WORK/hostile.png" 800 600 16 0.05
[ -n "${KTUNE_REPORT_KEEP:-}" ] && cp "$WORK"/*.png "$WORK"/*.html "$KTUNE_REPORT_KEEP"/
echo "report_browser: all pages render without console messages"
