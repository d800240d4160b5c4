#!/usr/bin/env bash
# DRA allocation in the pod engine (issue 18; run by `make bench`, or alone).
# Inputs: bench/gen_dra_heavy.py SHAPE NODES PODS 42 (one ResourceSlice per node of
# 8 partitionable GPUs, 80 devices a node; see the script for the shapes).
#
# 1. mix (BENCH_DRA_NODES x BENCH_DRA_PODS, default 1000 x 2000): pending pods
#    decided per second (`bench-pods --file`, the engine's CPU time), over all
#    outcomes and per outcome (Bound, Unschedulable, UnsupportedConstraint),
#    against the same pods without claims (nodra) in the same run; DRA device
#    trials per pod of each outcome; the most trials one search made (tally's
#    bound is 200,000: the search stops at the trial after it).
# 2. The outcome check: `tally simulate -o json` of the mix file gives the same
#    Bound and Unschedulable counts as bench-pods (the CLI's answers).
# 3. The shapes on the same nodes: fit (the easy one), never (claims that fit
#    nowhere), worst (the backtracking worst case under the bound: every node
#    searched to the end) and bound (over it: stopped on the first node).
# 4. Instructions per pod (callgrind, the placements only: --toggle-collect=tly_podsched_run)
#    of each shape against nodra's; the engine's set-up (tly_podsched_create,
#    which builds the DRA indexes of the 80,000 devices), once per run. worst
#    is counted at BENCH_DRA_WORST_NODES (default 100) nodes: its cost is its
#    trials, linear in the nodes (row 3).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-build-bench/data}
NODES=${BENCH_DRA_NODES:-1000}
PODS=${BENCH_DRA_PODS:-2000}
WNODES=${BENCH_DRA_WORST_NODES:-100}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DTALLY_TESTS=OFF >/dev/null
cmake --build build-bench -j 2 --target tally bench-pods >/dev/null
mkdir -p "$OUT"
row() { printf '%-34s %10s %14s %14s %8s\n' "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
# gen SHAPE NODES PODS: the file's path, written when missing
gen() {
  local f="$OUT/dra-$1-$2-$3.json"
  [ -s "$f" ] || python3 bench/gen_dra_heavy.py "$1" "$2" "$3" 42 > "$f"
  echo "$f"
}
# field OUTPUT OUTCOME N: the Nth number of an outcome line (1 pods, 2 s, 3 pods/s, 4 trials/pod)
field() {
  sed -n "s/^outcome $2: \([0-9]*\) pods, \([0-9.]*\) s: \([0-9]*\) pods\/s, \([0-9]*\) device trials\/pod$/\1 \2 \3 \4/p" <<<"$1" \
    | awk -v n="$3" '{ print $n }'
}
all_rate() { sed -n 's/^file: .*: \([0-9]*\) pods\/s$/\1/p' <<<"$1"; }
max_trials() { sed -n 's/^dra searches: .*, most in one search \([0-9]*\)$/\1/p' <<<"$1"; }
searches() { sed -n 's/^dra searches: \([0-9]*\),.*/\1/p' <<<"$1"; }

mix=$(gen mix "$NODES" "$PODS")
nodra=$(gen nodra "$NODES" "$PODS")
size="${NODES}n/${PODS}p"
om=$(build-bench/bench-pods --file "$mix")
ob=$(build-bench/bench-pods --file "$nodra")
# baselines: nodra over the whole engine run (create + run), and its pods' own decisions
all=$(all_rate "$ob"); base=$(field "$ob" Bound 3)
row "dra mix: pending decided/s" "$size" "$(all_rate "$om")" "$all" "$(ratio "$(all_rate "$om")" "$all")"
for o in Bound Unschedulable UnsupportedConstraint; do
  row "  $o ($(field "$om" $o 1) pods) decided/s" "$size" "$(field "$om" $o 3)" "$base" \
    "$(ratio "$(field "$om" $o 3)" "$base")"
  row "  $o device trials / pod" "$size" "$(field "$om" $o 4)" "-" "-"
done
row "dra mix: most trials in one search" "$size" "$(max_trials "$om")" 200000 "$(ratio "$(max_trials "$om")" 200000)"

# The CLI's answers on the same file: the same counts.
sim=$(build-bench/tally simulate -o json "$mix" | grep -o '"state": "[A-Za-z]*"\|"reason": "UnsupportedConstraint"' | sort | uniq -c)
sb=$(awk '/"Bound"/ { print $1 }' <<<"$sim"); su=$(awk '/"Unschedulable"/ { print $1 }' <<<"$sim")
sc=$(awk '/UnsupportedConstraint/ { print $1 }' <<<"$sim")
eb=$(field "$om" Bound 1); eu=$(( $(field "$om" Unschedulable 1) + $(field "$om" UnsupportedConstraint 1) ))
if [ "${sb:-0}" != "$eb" ] || [ "${su:-0}" != "$eu" ] || [ "${sc:-0}" != "$(field "$om" UnsupportedConstraint 1)" ]; then
  echo "bench-dra.sh: tally simulate $mix: $sb Bound, $su Unschedulable ($sc UnsupportedConstraint);" \
       "bench-pods: $eb, $eu" >&2
  exit 1
fi
row "dra mix: simulate Bound/Unsched." "$size" "$sb/$su" "$eb/$eu" "same"

# The shapes: decided/s, trials per pod, searches per pod.
for spec in fit:500 never:20 worst:2 bound:4; do
  shape=${spec%%:*}; n=${spec##*:}
  o=$(build-bench/bench-pods --file "$(gen "$shape" "$NODES" "$n")")
  for oc in Bound Unschedulable UnsupportedConstraint; do
    c=$(field "$o" $oc 1)
    [ "$c" = 0 ] && continue
    row "dra $shape: $oc ($c) decided/s" "${NODES}n/${n}p" "$(field "$o" $oc 3)" "$base" \
      "$(ratio "$(field "$o" $oc 3)" "$base")"
    row "  $oc device trials / pod" "${NODES}n/${n}p" "$(field "$o" $oc 4)" "-" "-"
    row "  $oc ms CPU / pod" "${NODES}n/${n}p" "$(awk -v s="$(field "$o" $oc 2)" -v c="$c" \
      'BEGIN { printf "%.2f", s * 1000 / c }')" "-" "-"
  done
  row "  searches / pod, most in one" "${NODES}n/${n}p" "$(awk -v s="$(searches "$o")" -v n="$n" \
    'BEGIN { printf "%.0f", s / n }')" "$(max_trials "$o")" "-"
done

if command -v valgrind >/dev/null; then
  # instructions of FUNCTION (place: create + run; tly_podsched_run: the placements) over FILE
  ir() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect="$1" \
      build-bench/bench-pods --file "$2" once 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
  }
  per() { awk -v a="$1" -v n="$2" 'BEGIN { printf "%.0f", a / n }'; }
  f=$(gen nodra "$NODES" 1000)
  b=$(per "$(ir tly_podsched_run "$f")" 1000)
  row "dra: placement instr. / pod (nodra)" "${NODES}n/1000p" "$b" "$b" "1.00"
  for spec in fit:$NODES:500 never:$NODES:10 bound:$NODES:4 worst:$WNODES:1; do
    IFS=: read -r shape nn n <<<"$spec"
    f=$(gen "$shape" "$nn" "$n")
    i=$(per "$(ir tly_podsched_run "$f")" "$n")
    row "dra: placement instr. / pod ($shape)" "${nn}n/${n}p" "$i" "$b" "$(ratio "$i" "$b")"
  done
  # The engine's set-up (tly_podsched_create: the DRA indexes of 80,000 devices among it), once per run.
  row "dra: engine set-up instructions" "${NODES}n/500p" "$(ir tly_podsched_create "$(gen fit "$NODES" 500)")" "-" "-"
fi
