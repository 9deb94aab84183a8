#!/bin/bash
# GPU machine, one call (issue 32, twentieth session): issue 32's table on the final kernels, M in
# {1..128} x the five N x K weights (40 keys), gemm_bench's fair method (interleaved rounds, read
# flush and rotation, cuBLASLt #0 and its best of 8, the read bound and the gate/up pair in the
# same rounds). Binaries from pb/ (dev/decode/stage.sh); logs under $OUT:
#   0. two `gemm_bench --compile_only` processes at once (the kernels into the cache; no timing);
#   1. process 1: `--kinds=decode,skinny` over the 25 keys of M <= 16 (the tma kind's 64/128-row
#      tiles are left out there, as the tuner leaves them out), `--kinds=decode,skinny,tma` over the
#      15 keys of M >= 32; every curated config in the pre-pass;
#   2. processes 2..PROCS: the same, `--only` the TOP fastest configs of process 1's pre-pass per
#      key, mode and variant (dev/decode/table_picks.py): a short pre-pass, the same picks;
#   3. dev/decode/issue_table.py: the table (and --detail, per process).
# Each gemm_bench run is cut at its limit or what DEADLINE leaves; a cut run loses its keys only.
#   OUT=$OUT DEADLINE=240 bash dev/decode/device_table.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-240}"
keys() { local out="" w m; for w in 4096x4096 6144x4096 14336x4096 4096x14336 28672x4096; do
           for m in $1; do out="$out,${m}x$w"; done; done; echo "${out#,}"; }
SMALL=$(keys "1 2 4 8 16"); LARGE=$(keys "32 64 128")
KS=decode,skinny; KL=decode,skinny,tma
S=$(date +%s)
timeout "${C0_S:-110}" "$B/bench/gemm_bench" --compile_only --kinds=$KS --shapes="$SMALL" > "$OUT/c0s.log" 2>&1 &
P1=$!
timeout "${C0_S:-110}" "$B/bench/gemm_bench" --compile_only --kinds=$KL --shapes="$LARGE" > "$OUT/c0l.log" 2>&1 &
P2=$!
wait $P1; r1=$?; wait $P2; r2=$?
echo "compile rc=$r1,$r2 $(( $(date +%s) - S ))s; failures: $(cat "$OUT"/c0?.log | grep -c 'compile failed')"
grep -h -m3 "compile failed" "$OUT"/c0?.log | cut -c1-240
bench() {  # P PART KINDS SHAPES LIMIT [ONLY]
  local lim=$5 s
  fits 12 "process $1 $2" || return 1
  [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 4 ))
  s=$(date +%s)
  timeout "$lim" "$B/bench/gemm_bench" --kinds="$3" --shapes="$4" --rounds="${ROUNDS:-7}" ${6:+"--only=$6"} \
    > "$OUT/b$1$2.log" 2> "$OUT/b$1$2.err"
  echo "process $1 $2 rc=$? $(( $(date +%s) - s ))s (limit $lim)"
}
bench 1 s $KS "$SMALL" "${P1S_S:-80}"
bench 1 l $KL "$LARGE" "${P1L_S:-80}"
ONLY=$(python3 dev/decode/table_picks.py "${TOP:-3}" "$OUT/b1s.err" "$OUT/b1l.err")
[ ${#ONLY} -gt 120000 ] && ONLY=$(python3 dev/decode/table_picks.py 2 "$OUT/b1s.err" "$OUT/b1l.err")  # one argument's limit
echo "the later processes' --only: $(echo "$ONLY" | tr ';' '\n' | grep -c @) entries"
for p in $(seq 2 "${PROCS:-3}"); do
  bench "$p" s $KS "$SMALL" "${PS_S:-45}" "$ONLY"
  bench "$p" l $KL "$LARGE" "${PL_S:-45}" "$ONLY"
done
echo "VERIFY not ok: $(cat "$OUT"/b*.log | grep '^VERIFY' | grep -vc ' ok ') of $(cat "$OUT"/b*.log | grep -c '^VERIFY')"
echo "CLOCKS, SM MHz (count): $(grep -h '^CLOCKS' "$OUT"/b*.log | grep -o 'sm [0-9]*' | awk '{print $2}' | sort -n | uniq -c | tr -s ' \n' ' ')"
G=""; for p in $(seq 1 "${PROCS:-3}"); do G="$G $OUT/b${p}s.log,$OUT/b${p}l.log"; done
python3 dev/decode/issue_table.py --detail $G > "$OUT/table.md" 2>&1
cat "$OUT/table.md" | head -45 | cut -c1-400
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err 2>/dev/null; rm -f ./*.log ./*.err)
