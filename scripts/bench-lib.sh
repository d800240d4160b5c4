# Shell functions the benchmark scripts share (sourced, not run).

# simulate_split TALLY FILE: runs `TALLY simulate -o json FILE` under callgrind
# and prints "total load engines": the whole run's instructions, and the
# inclusive instructions of the load (tly_store_load_path, tly_store_finish)
# and of the engines (tly_runsched_create/run, tly_podsched_create/run).
simulate_split() {
  local cg total load eng
  cg=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$cg" "$1" simulate -o json "$2" >/dev/null 2>&1
  callgrind_annotate --inclusive=yes --threshold=100 "$cg" > "$cg.txt"
  total=$(awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }' "$cg.txt")
  load=$(_cg_incl "$cg.txt" tly_store_load_path tly_store_finish)
  eng=$(_cg_incl "$cg.txt" tly_runsched_create tly_runsched_run tly_podsched_create tly_podsched_run)
  rm -f "$cg" "$cg.txt"
  echo "$total $load $eng"
}

# inclusive instructions of the named functions in a callgrind_annotate listing, summed
_cg_incl() {
  local txt=$1 fn sum=0 v
  shift
  for fn in "$@"; do
    v=$(awk -v f=":$fn [" 'index($0, f) { gsub(",", "", $1); print $1; exit }' "$txt")
    sum=$((sum + ${v:-0}))
  done
  echo "$sum"
}
