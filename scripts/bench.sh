#!/usr/bin/env bash
# `make bench`: tally's benchmark suite. Builds with optimisation (CMake's
# Release flags, -O3) in build-bench/, generates deterministic inputs with tally-gen, and prints one
# table: what was measured, the size, tally's figure, the baseline measured
# side by side in the same run, and the ratio.
#
# Load benchmark: `tally validate FILE` (the loader, every decoder and the
# cross-object rules; no scheduling engine) against `jq . FILE >/dev/null`
# on the same `kubectl get pods -o json`-style file. Wall time is the median
# of RUNS runs; peak RSS comes from /usr/bin/time. Instruction counts come
# from callgrind on the 10k file (stable on a noisy machine).
#
# Sizes: BENCH_SIZES (default "10000 100000"); add 1000000 for the 1M-pod
# file (about 2 GB of JSON and several minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${BENCH_SIZES:-"10000 100000"}
RUNS=${BENCH_RUNS:-3}
OUT=${BENCH_OUT:-build-bench/data}

cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DTALLY_TESTS=OFF >/dev/null
cmake --build build-bench -j 2 --target tally tally-gen >/dev/null
mkdir -p "$OUT"
TALLY=build-bench/tally

. scripts/bench-lib.sh
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }

# median wall seconds, peak RSS (KiB) and median CPU seconds (user + sys) of a
# command over $RUNS runs
measure() {
  local times=() cpus=() rss=0 t m u s tf
  tf=$(mktemp)
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -o "$tf" -f "%e %M %U %S" "$@" >/dev/null 2>&1 || true
    read -r t m u s < "$tf"
    times+=("$t")
    cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')")
    [ "$m" -gt "$rss" ] && rss=$m
  done
  rm -f "$tf"
  printf '%s %s %s\n' "$(median "${times[@]}")" "$rss" "$(median "${cpus[@]}")"
}

printf '%-34s %10s %14s %14s %8s\n' "measure" "size" "tally" "baseline" "ratio"
printf '%-34s %10s %14s %14s %8s\n' "-------" "----" "-----" "--------" "-----"
for n in $SIZES; do
  f="$OUT/pods-$n.json"
  [ -s "$f" ] || build-bench/tally-gen pods "$n" 42 > "$f"
  bytes=$(stat -c %s "$f")
  read -r tt tr _ < <(measure "$TALLY" validate "$f")
  read -r jt jr _ < <(measure jq . "$f")
  printf '%-34s %10s %13ss %13ss %8s\n' "load pods (wall, vs jq .)" "$n" "$tt" "$jt" \
    "$(awk -v a="$tt" -v b="$jt" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
  printf '%-34s %10s %12sMB %12sMB %8s\n' "load pods (peak RSS, vs jq .)" "$n" \
    "$((tr / 1024))" "$((jr / 1024))" \
    "$(awk -v a="$tr" -v b="$jr" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
  printf '%-34s %10s %12sMB %12sMB %8s\n' "load pods (peak RSS, vs file size)" "$n" \
    "$((tr / 1024))" "$((bytes / 1048576))" \
    "$(awk -v a="$tr" -v b="$bytes" 'BEGIN { printf "%.2f", a * 1024 / b }')"
done

if command -v valgrind >/dev/null; then
  n=10000
  f="$OUT/pods-$n.json"
  [ -s "$f" ] || build-bench/tally-gen pods "$n" 42 > "$f"
  ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$TALLY" validate "$f" 2>&1 \
       | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  bytes=$(stat -c %s "$f")
  printf '%-34s %10s %14s %14s %8s\n' "load pods (instructions / byte)" "$n" \
    "$(awk -v a="$ir" -v b="$bytes" 'BEGIN { printf "%.1f", a / b }')" "-" "-"
  printf '%-34s %10s %14s %14s %8s\n' "load pods (instructions / pod)" "$n" \
    "$(awk -v a="$ir" -v b="$n" 'BEGIN { printf "%.0f", a / b }')" "-" "-"
fi

# ---- Decoding JSON (issue 13): the native reader against libfyaml, compact and indented ----
# Input: cluster-N.json, `tally-gen pods N 42` plus what its pods refer to
# (bench/cluster.jq: the PriorityClass, the Queues, one PodGroup per
# namespace and pod-group-name, so `tally validate` prints nothing), written
# by jq indented (`jq .`) and compact (`jq -c .`: one line, as the API server
# and `jq -c` write it). Rows, MB of input per CPU second (the machine's 2
# cores are shared, so wall time would count other work too):
#   raw parse  bytes to trees (the native reader, every object's tree built
#              and dropped) against libfyaml's events with no tree at all:
#              bench-json's best of 5 passes over the file in memory;
#   full load  the loader's whole path (UTF-8 check, parse, decoders, store,
#              finish) against the loader's libfyaml path: bench-json --once,
#              a fresh process mapping the file as the loader does, median
#              of $RUNS runs;
#   validate   `tally validate FILE`, median CPU time (user + sys) of $RUNS runs.
# Peak RSS / file size from the same --once runs and tally validate's.
# libfyaml keeps a whole line's tokens (about 54 times a one-line file), so
# it is skipped on one-line files over BENCH_JSON_FY_MAX_MB (64).
# Instructions per input byte (callgrind, stable) for the same modes on a
# 4,000-pod cluster.
cmake --build build-bench -j 2 --target bench-json >/dev/null
JSON_SIZES=${BENCH_JSON_SIZES:-"20000 100000"}
JSON_FY_MAX_MB=${BENCH_JSON_FY_MAX_MB:-64}
# a / b, or - when either is not a figure
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b + 0 > 0) printf "%.2f", a / b; else printf "-" }'; }
# KiB over a byte count, as a ratio
per_byte() { awk -v k="$1" -v b="$2" 'BEGIN { printf "%.2f", k * 1024 / b }'; }
# median MB/s and peak RSS (KiB) of $RUNS runs of bench-json --once MODE FILE
once_run() {
  local mb=() rss=0 tf o m
  tf=$(mktemp)
  for _ in $(seq "$RUNS"); do
    o=$(/usr/bin/time -o "$tf" -f "%M" build-bench/bench-json --once "$1" "$2")
    mb+=("$(sed -n 's/.*: \([0-9.]*\) MB\/s once$/\1/p' <<<"$o")")
    m=$(tail -1 "$tf")
    [ "$m" -gt "$rss" ] && rss=$m
  done
  rm -f "$tf"
  printf '%s %s\n' "$(median "${mb[@]}")" "$rss"
}
row() { printf '%-34s %10s %14s %14s %8s\n' "$@"; }
for n in $JSON_SIZES; do
  pods="$OUT/pods-$n.json"
  [ -s "$pods" ] || build-bench/tally-gen pods "$n" 42 > "$pods"
  [ -s "$OUT/cluster-$n.json" ] || jq -f bench/cluster.jq "$pods" > "$OUT/cluster-$n.json"
  [ -s "$OUT/cluster-$n.c.json" ] || jq -c . "$OUT/cluster-$n.json" > "$OUT/cluster-$n.c.json"
  for form in indented compact; do
    f="$OUT/cluster-$n.json"; [ "$form" = compact ] && f="$OUT/cluster-$n.c.json"
    bytes=$(stat -c %s "$f")
    fy=yes
    [ "$form" = compact ] && [ "$bytes" -gt $((JSON_FY_MAX_MB * 1048576)) ] && fy=no
    out=$(build-bench/bench-json "$f" 5 parse $([ "$fy" = yes ] && echo fy-parse))
    a=$(sed -n 's/^parse: \([0-9.]*\) MB\/s best.*/\1/p' <<<"$out")
    b=$(sed -n 's/^fy-parse: \([0-9.]*\) MB\/s best.*/\1/p' <<<"$out")
    row "json raw parse MB/s ($form)" "$n" "$a" "${b:-skipped}" "$(ratio "$a" "$b")"
    read -r _ ra < <(once_run parse "$f")
    rb=skipped; [ "$fy" = yes ] && read -r _ rb < <(once_run fy-parse "$f") && rb=$(per_byte "$rb" "$bytes")
    ra=$(per_byte "$ra" "$bytes")
    row "json raw parse RSS/file ($form)" "$n" "$ra" "$rb" "$(ratio "$ra" "$rb")"
    read -r la lr < <(once_run load "$f")
    lb=skipped lrb=skipped
    [ "$fy" = yes ] && read -r lb lrb < <(once_run fy-load "$f") && lrb=$(per_byte "$lrb" "$bytes")
    lr=$(per_byte "$lr" "$bytes")
    row "json full load MB/s ($form)" "$n" "$la" "$lb" "$(ratio "$la" "$lb")"
    row "json full load RSS/file ($form)" "$n" "$lr" "$lrb" "$(ratio "$lr" "$lrb")"
    read -r _ vr vc < <(measure "$TALLY" validate "$f")
    row "json validate MB/s cpu ($form)" "$n" \
      "$(awk -v b="$bytes" -v t="$vc" 'BEGIN { printf "%.1f", (t > 0 ? b / 1e6 / t : 0) }')" "-" "-"
    row "json validate RSS/file ($form)" "$n" "$(per_byte "$vr" "$bytes")" "$((bytes / 1048576))MB" "-"
  done
done
if command -v valgrind >/dev/null; then
  n=4000
  f="$OUT/cluster-$n.json"
  [ -s "$f" ] || build-bench/tally-gen pods "$n" 42 | jq -f bench/cluster.jq > "$f"
  [ -s "$OUT/cluster-$n.c.json" ] || jq -c . "$f" > "$OUT/cluster-$n.c.json"
  # instructions of bench-json --once MODE FILE, per input byte
  ir() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null build-bench/bench-json --once "$1" "$2" 2>&1 \
      | sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | awk -v b="$(stat -c %s "$2")" '{ printf "%.1f", $1 / b }'
  }
  for form in indented compact; do
    f="$OUT/cluster-$n.json"; [ "$form" = compact ] && f="$OUT/cluster-$n.c.json"
    for row in "parse:fy-parse:raw parse" "load:fy-load:full load"; do
      IFS=: read -r mine theirs what <<<"$row"
      a=$(ir "$mine" "$f"); b=$(ir "$theirs" "$f")
      row "json $what instr/byte ($form)" "$n" "$a" "$b" "$(ratio "$a" "$b")"
    done
  done
fi

# ---- Run placement (issue 3): tally's scheduler against a full fit-scan ----
cmake --build build-bench -j 2 --target bench-runs bench-pods bench-mem >/dev/null
# A leading b in a size is the backlog shape (bench-runs --backlog): Pods with
# an eighth of the capacity, so 84% of the Runs stay Pending and one in 20
# fits nowhere (issue 16's Runs target: 100,000 Runs on 1,000 Runtime Pods
# with a large pending backlog).
RUNS_SIZES=${BENCH_RUNS_SIZES:-b1000:100000 1000:100000 10000:10000}
for spec in $RUNS_SIZES; do
  flag=; [ "${spec#b}" != "$spec" ] && { flag=--backlog; spec=${spec#b}; }
  pods=${spec%%:*}; runs=${spec##*:}
  out=$(build-bench/bench-runs $flag "$pods" "$runs" both)
  [ -n "$flag" ] && pods="b$pods"
  printf '%-34s %10s %14s %14s %8s\n' "engine seconds (Pending left)" "${pods}p/${runs}r" \
    "$(sed -n 's/^engine:.* in \([0-9.]*\) s.*/\1/p' <<<"$out")" \
    "$(sed -n 's/^engine:.*(\([0-9]*\) Pending).*/\1/p' <<<"$out")" "-"
  e=$(sed -n 's/^engine:.*: \([0-9]*\) Runs\/s$/\1/p' <<<"$out")
  sc=$(sed -n 's/^scan: .*: \([0-9]*\) Runs\/s$/\1/p' <<<"$out")
  ff=$(sed -n 's/^first: .*: \([0-9]*\) Runs\/s$/\1/p' <<<"$out")
  printf '%-34s %10s %14s %14s %8s\n' "Runs/s vs full fit-scan" "${pods}p/${runs}r" "$e" "$sc" \
    "$(awk -v a="$e" -v b="$sc" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
  printf '%-34s %10s %14s %14s %8s\n' "Runs/s vs first-fit (early exit)" "${pods}p/${runs}r" "$e" "$ff" \
    "$(awk -v a="$e" -v b="$ff" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
done
if command -v valgrind >/dev/null; then
  for mode in engine scan; do
    ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect=$mode \
         build-bench/bench-runs 1000 2000 $mode 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
    printf '%-34s %10s %14s %14s %8s\n' "instructions / Run ($mode)" "1000p/2000r" \
      "$(awk -v a="$ir" 'BEGIN { printf "%.0f", a / 2000 }')" "-" "-"
  done
  # The backlog, whole (a minute under callgrind): instructions per Run decided.
  for mode in engine scan; do
    ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect=$mode \
         build-bench/bench-runs --backlog 1000 100000 $mode 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
    printf '%-34s %10s %14s %14s %8s\n' "instructions / Run ($mode)" "b1000p/100000r" \
      "$(awk -v a="$ir" 'BEGIN { printf "%.0f", a / 100000 }')" "-" "-"
  done
fi

# ---- Pod placement under queue policy (issue 4): scaling curves ----
PODS_SIZES=${BENCH_PODS_SIZES:-500:50:20:5000 1000:50:20:5000 2000:50:20:5000 4000:50:20:5000 500:100:20:5000 500:200:20:5000 500:400:20:5000 500:50:40:5000 500:50:80:5000 5000:500:20:100000}
for spec in $PODS_SIZES; do
  IFS=: read -r n q a p <<<"$spec"
  out=$(build-bench/bench-pods "$n" "$q" "$a" "$p")
  r=$(sed -n 's/.*: \([0-9]*\) pods\/s$/\1/p' <<<"$out")
  printf '%-34s %10s %14s %14s %8s\n' "pods/s vs target 100x680 (n/q/a/p)" "$n/$q/$a/$p" "$r" "68000" \
    "$(awk -v a="$r" 'BEGIN { printf "%.2f", a / 68000 }')"
done
# AccountedResources that match no pod (resources no pod requests, node
# labels no node has): the placement's cost must not grow with them. Rows
# n/q/a/p+u: u such AccountedResources on top of a; baseline = u = 0.
UNREL=${BENCH_PODS_UNRELATED:-80 320}
base=$(build-bench/bench-pods 500 50 20 5000 0 | sed -n 's/.*: \([0-9]*\) pods\/s$/\1/p')
for u in $UNREL; do
  r=$(build-bench/bench-pods 500 50 20 5000 "$u" | sed -n 's/.*: \([0-9]*\) pods\/s$/\1/p')
  printf '%-34s %10s %14s %14s %8s\n' "pods/s, +u ARs matching nothing" "500/50/20/5000+$u" "$r" "$base" \
    "$(awk -v a="$r" -v b="$base" 'BEGIN { printf "%.2f", a / b }')"
done
if command -v valgrind >/dev/null; then
  ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect=place \
       build-bench/bench-pods 500 50 20 2000 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  printf '%-34s %10s %14s %14s %8s\n' "instructions / pod" "500/50/20/2000" \
    "$(awk -v a="$ir" 'BEGIN { printf "%.0f", a / 2000 }')" "-" "-"
  # The placements alone (tly_podsched_run, without the per-run set-up), as
  # AccountedResources that match (a) and that match nothing (+u) grow.
  run0=""
  for spec in 20+0 80+0 160+0 20+80 20+320; do
    a=${spec%+*}; u=${spec#*+}
    ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect=tly_podsched_run \
         build-bench/bench-pods 500 50 "$a" 2000 "$u" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
    per=$(awk -v x="$ir" 'BEGIN { printf "%.0f", x / 2000 }')
    [ -z "$run0" ] && run0=$per
    printf '%-34s %10s %14s %14s %8s\n' "placement instructions / pod" "500/50/$a/2000+$u" "$per" "$run0" \
      "$(awk -v x="$per" -v y="$run0" 'BEGIN { printf "%.2f", x / y }')"
  done
fi

# ---- The realistic cluster (issue 16): pending pods decided per second by outcome, instructions
# per decided pod, `tally simulate` CPU, and the check that the answers equal the recorded ones
# (scripts/bench-realistic.sh). The pods table above is the easy shape (every pod fits the first
# node it tries); this one is what a busy cluster's backlog looks like. BENCH_REALISTIC=0 skips it.
if [ "${BENCH_REALISTIC:-1}" != 0 ]; then
  scripts/bench-realistic.sh
fi

# ---- DRA allocation (issue 18): 1,000 nodes of 8 partitionable GPUs, pods with 1-4 claims; decided/s
# by outcome against the same pods without claims, device trials per pod, the backtracking worst case
# under and over tally's bound, instructions per pod (scripts/bench-dra.sh). BENCH_DRA=0 skips it.
if [ "${BENCH_DRA:-1}" != 0 ]; then
  scripts/bench-dra.sh
fi

# ---- A full `tally simulate` of the 5,000-node cluster (issue 8): CPU against 1 s ----
# The cluster of the pods table's largest case (5,000 nodes, 500 leaf queues,
# 20 AccountedResources), written by `bench-pods --emit` and run through the
# command line: `tally simulate -o json FILE` (load, both engines, the JSON
# output). 10,000 pending pods: two per node, asking for about 7,000 of the
# 40,000 GPUs, so all of them fit under the queue limits and are Bound and the
# run measures the full placement of a large backlog; the pods table's
# 100,000-pod case covers the failure scans of an overfull cluster. CPU is
# user + sys from /usr/bin/time (median of $RUNS runs), also at 2x, 4x and 8x
# the nodes with the same pods. Instructions: one callgrind run at 5,000
# nodes, split by function (inclusive): load = tly_store_load_path +
# tly_store_finish, engines = tly_runsched_create/run + tly_podsched_create/run,
# the rest = the JSON output, start-up and freeing.
SIM_PODS=${BENCH_SIM_PODS:-10000}
SIM_NODES=${BENCH_SIM_NODES:-5000 10000 20000 40000}
for n in $SIM_NODES; do
  size="$n/500/20/$SIM_PODS"
  f="$OUT/sim-$n-$SIM_PODS.yaml"
  [ -s "$f" ] || build-bench/bench-pods --emit "$n" 500 20 "$SIM_PODS" > "$f"
  bound=$("$TALLY" simulate -o json "$f" | grep -c '"state": "Bound"' || true)
  if [ "$bound" != "$SIM_PODS" ]; then
    echo "bench.sh: tally simulate $f placed $bound of $SIM_PODS pods" >&2
    exit 1
  fi
  read -r _ sr sc < <(measure "$TALLY" simulate -o json "$f")
  printf '%-34s %10s %13ss %13ss %8s\n' "simulate (CPU user+sys, vs 1 s)" "$size" "$sc" "1.00" \
    "$(awk -v a="$sc" 'BEGIN { printf "%.2f", a }')"
  printf '%-34s %10s %12sMB %12sMB %8s\n' "simulate (peak RSS, vs file size)" "$size" \
    "$((sr / 1024))" "$(($(stat -c %s "$f") / 1048576))" \
    "$(awk -v a="$sr" -v b="$(stat -c %s "$f")" 'BEGIN { printf "%.2f", a * 1024 / b }')"
done
if command -v valgrind >/dev/null; then
  n=${SIM_NODES%% *}
  f="$OUT/sim-$n-$SIM_PODS.yaml"
  read -r total load eng < <(simulate_split "$TALLY" "$f")
  size="$n/500/20/$SIM_PODS"
  printf '%-34s %10s %14s %14s %8s\n' "simulate instructions (whole run)" "$size" "$total" "-" "-"
  for part in "load:$load" "engines:$eng" "output etc.:$((total - load - eng))"; do
    printf '%-34s %10s %14s %14s %8s\n' "simulate instructions: ${part%%:*}" "$size" \
      "${part##*:}" "$total" "$(awk -v a="${part##*:}" -v b="$total" 'BEGIN { printf "%.2f", a / b }')"
  done
fi

# ---- Memory per node and per pod in the state (issue 8) ----
# bench-mem loads tally-gen's kubectl-style node List (N and 2N GPU nodes) and
# pod List (M and 2M pods, the load benchmark's input) through the loader and
# takes what the finished store holds resident (/proc/self/statm, before and after); the
# difference between the two sizes over the count is the cost of one more
# node or pod. Baseline column: the input bytes of one object, for scale.
MEM_NODES=${BENCH_MEM_NODES:-5000}
MEM_PODS=${BENCH_MEM_PODS:-20000}
out=$(build-bench/bench-mem "$MEM_NODES" "$MEM_PODS")
for what in node pod; do
  read -r sz h a i < <(sed -n "s/^per $what (\([0-9]*\) -> \([0-9]*\)): resident \([0-9]*\) B, arena \([0-9]*\) B, input \([0-9]*\) B$/\1->\2 \3 \4 \5/p" <<<"$out")
  printf '%-34s %10s %13sB %13sB %8s\n' "state resident / $what (vs input)" "$sz" "$h" "$i" \
    "$(awk -v a="$h" -v b="$i" 'BEGIN { printf "%.2f", a / b }')"
  printf '%-34s %10s %13sB %13sB %8s\n' "state arena used / $what (vs input)" "$sz" "$a" "$i" \
    "$(awk -v a="$a" -v b="$i" 'BEGIN { printf "%.2f", a / b }')"
done

# ---- Resize admission (issue 5): decisions/s in a 4-level queue tree, 10,000 running pods ----
cmake --build build-bench -j 2 --target bench-resize >/dev/null
RESIZE_DECISIONS=${BENCH_RESIZE_DECISIONS:-200}
out=$(build-bench/bench-resize "$RESIZE_DECISIONS" 10000)
r=$(sed -n 's/.*: \([0-9]*\) decisions\/s$/\1/p' <<<"$out")
printf '%-34s %10s %14s %14s %8s\n' "resize decisions/s (review decoded)" "10000p/4lv" "$r" "-" "-"
if command -v valgrind >/dev/null; then
  ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect=decide \
       build-bench/bench-resize 10 10000 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  printf '%-34s %10s %14s %14s %8s\n' "instructions / resize decision" "10000p/4lv" \
    "$(awk -v a="$ir" 'BEGIN { printf "%.0f", a / 10 }')" "-" "-"
  # The same review as the API server sends it: both pods carry metadata.managedFields.
  ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect=decide \
       build-bench/bench-resize --managed 10 10000 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  printf '%-34s %10s %14s %14s %8s\n' "instr / decision, managedFields" "10000p/4lv" \
    "$(awk -v a="$ir" 'BEGIN { printf "%.0f", a / 10 }')" "-" "-"
fi

# ---- Webhook (issue 6): wrk against tally serve and nginx's static 200, same run ----
# Installs wrk and nginx (scripts/deps.sh webbench); BENCH_WEBHOOK=0 skips it.
if [ "${BENCH_WEBHOOK:-1}" != 0 ]; then
  scripts/bench-webhook.sh
fi

# ---- The live mode (issues 13 and 14): events/s, instructions per event, webhook latency on the
# live state, initial sync, create-to-ungate latency and gating decisions (scripts/bench-live.sh).
# BENCH_LIVE=0 skips it.
if [ "${BENCH_LIVE:-1}" != 0 ]; then
  scripts/bench-live.sh
fi
