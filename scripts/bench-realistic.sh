#!/usr/bin/env bash
# The realistic cluster of issue 16 (run by `make bench`, or alone):
# `tally-gen cluster SCALE 42` (bench/gen_cluster.c): SCALE x (5,000 nodes with
# GPU products told apart by labels, taints and cordons; 500 queues in three
# levels; 20 AccountedResources; 100,000 pods, half running and half pending,
# the pending half mostly over a queue limit or fitting no node).
#
# 1. Pending pods decided per second by the pod engine (`bench-pods
#    --realistic SCALE`, the engine's CPU time, create + run), over all outcomes
#    and per outcome (Bound, Gated, Unschedulable), against issue 16's target
#    of 68,000; at BENCH_REAL_SCALES (default "1 2 4 8").
# 2. Instructions per decided pod (callgrind, 1x, the engine only).
# 3. `tally simulate -o json` of the 1x file as a user runs it: CPU (median of
#    BENCH_RUNS), against 3 s; with callgrind, the engines' share against 1 s.
# 4. The answer check: the sha256 of that JSON output must equal
#    bench/realistic-1x.sha256, recorded with the engine before issue 16's
#    changes, so a faster engine that decides anything differently fails here.
#    BENCH_REAL_RECORD=1 writes the file instead (only for an intended change
#    of the answers, with the reason in the commit).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-build-bench/data}
RUNS=${BENCH_RUNS:-3}
SCALES=${BENCH_REAL_SCALES:-1 2 4 8}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DTALLY_TESTS=OFF >/dev/null
cmake --build build-bench -j 2 --target tally tally-gen bench-pods >/dev/null
mkdir -p "$OUT"
. scripts/bench-lib.sh
row() { printf '%-34s %10s %14s %14s %8s\n' "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

for sc in $SCALES; do
  out=$(build-bench/bench-pods --realistic "$sc" 42)
  all=$(sed -n 's/^realistic: .*: \([0-9]*\) pods\/s$/\1/p' <<<"$out")
  row "realistic: pending decided/s" "${sc}x" "$all" 68000 "$(ratio "$all" 68000)"
  for o in Bound Gated Unschedulable; do
    read -r n r < <(sed -n "s/^outcome $o: \([0-9]*\) pods, [0-9.]* s: \([0-9]*\) pods\/s$/\1 \2/p" <<<"$out")
    row "  $o ($n pods) decided/s" "${sc}x" "$r" 68000 "$(ratio "$r" 68000)"
  done
done

f="$OUT/realistic-1.json"
[ -s "$f" ] || build-bench/tally-gen cluster 1 42 > "$f"
if command -v valgrind >/dev/null; then
  ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect=place \
       build-bench/bench-pods --realistic 1 42 once 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  row "realistic: instructions / decided" "1x" "$(awk -v a="$ir" 'BEGIN { printf "%.0f", a / 50000 }')" "-" "-"
fi

cpus=()
tf=$(mktemp)
for _ in $(seq "$RUNS"); do
  /usr/bin/time -o "$tf" -f "%U %S %M" build-bench/tally simulate -o json "$f" > "$tf.json" 2>/dev/null || true
  read -r u s rss < "$tf"
  cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')")
done
cpu=$(printf '%s\n' "${cpus[@]}" | sort -n | sed -n "$(( (${#cpus[@]} + 1) / 2 ))p")
row "realistic: simulate CPU (vs 3 s)" "1x" "${cpu}s" "3.00s" "$(ratio "$cpu" 3)"
row "realistic: simulate peak RSS" "1x" "$((rss / 1024))MB" "$(($(stat -c %s "$f") / 1048576))MB" \
  "$(ratio "$((rss * 1024))" "$(stat -c %s "$f")")"
sum=$(sha256sum < "$tf.json" | cut -d' ' -f1)
if [ "${BENCH_REAL_RECORD:-0}" = 1 ]; then
  echo "$sum" > bench/realistic-1x.sha256
  echo "bench-realistic.sh: recorded $sum in bench/realistic-1x.sha256" >&2
elif [ "$sum" != "$(cat bench/realistic-1x.sha256)" ]; then
  echo "bench-realistic.sh: tally simulate -o json $f differs from the recorded answers" \
       "(sha256 $sum, recorded $(cat bench/realistic-1x.sha256)); kept in $tf.json" >&2
  exit 1
fi
row "realistic: answers = recorded" "1x" "same" "$(cut -c1-12 bench/realistic-1x.sha256)" "-"
rm -f "$tf" "$tf.json"

if command -v valgrind >/dev/null && [ "${BENCH_REAL_CALLGRIND_SIM:-1}" != 0 ]; then
  read -r total load eng < <(simulate_split build-bench/tally "$f")
  row "realistic: simulate instructions" "1x" "$total" "-" "-"
  for part in "load:$load" "engines:$eng" "output etc.:$((total - load - eng))"; do
    row "  ${part%%:*}" "1x" "${part##*:}" "$total" "$(ratio "${part##*:}" "$total")"
  done
  # The engines' CPU from their share of the instructions (callgrind cannot time).
  row "  engines' CPU, estimated (vs 1 s)" "1x" "$(awk -v c="$cpu" -v e="$eng" -v t="$total" \
    'BEGIN { printf "%.2fs", c * e / t }')" "1.00s" "$(awk -v c="$cpu" -v e="$eng" -v t="$total" \
    'BEGIN { printf "%.2f", c * e / t }')"
fi
