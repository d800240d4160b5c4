#!/usr/bin/env bash
# `tally snapshot --anonymize` end to end (contract section 9, docs/anonymize.md), run by ctest
# from the repository root:
#   bash tests/cli/anonymize.sh path/to/tally
# For each input, the test API server (tests/kube/apiserver.py) is seeded with its objects;
# `snapshot --anonymize --anonymize-map M -o A` and `snapshot -o B` are taken, and
# `simulate -o json` of A must equal that of B with every string mapped through M
# (tests/anonymize/compare.py), and A must hold no renamed original. A map with two tokens
# swapped must be caught by the same comparison. The inputs are examples/cluster and two
# scenarios (DRA request/subrequest references; Run affinity and name tie-breaks), turned into
# JSON by kubectl as tests/cli/live.sh does; ANON_ALL=1 runs every scenario of tests/scenarios/
# (a server start each, slower). tests/test_anonymize.c checks the same equivalence on every
# scenario without a server. Every wait is bounded; every process this script starts is killed
# on exit.
set -u
TALLY=$(realpath "${1:?usage: anonymize.sh path/to/tally}")
cd "$(dirname "$0")/../.." || exit 1
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
for tool in curl openssl jq python3 kubectl; do
  command -v "$tool" >/dev/null || { echo "anonymize.sh: $tool is missing"; exit 1; }
done

source tests/cli/lib/kubectl.sh
# apiserver [ARGS...]: starts the test API server in $tmp/k; sets KC and API_PID.
apiserver() {
  rm -f "$tmp/k/ready.json"
  python3 tests/kube/apiserver.py --dir "$tmp/k" "$@" >"$tmp/k.log" 2>&1 &
  API_PID=$!
  pids+=("$API_PID")
  for _ in $(seq 1 300); do [ -s "$tmp/k/ready.json" ] && break; sleep 0.1; done
  [ -s "$tmp/k/ready.json" ] || { echo "anonymize.sh: the test API server did not start:"; cat "$tmp/k.log"; exit 1; }
  KC="$tmp/k/kubeconfig"
  KUBECTL_BIN=$(tally_kubectl "$tmp/k/ready.json")
}
# The server keeps nothing worth a graceful stop.
stop_apiserver() {
  kill -9 "$API_PID" 2>/dev/null
  wait "$API_PID" 2>/dev/null
}
# tojson FILE.yaml: the objects as a JSON List (kubectl parses the YAML).
tojson() {
  "$KUBECTL_BIN" --kubeconfig "$KC" create --validate=false --dry-run=client -o json -f "$1" |
    jq -s '{apiVersion:"v1",kind:"List",items:([.[] | if .kind == "List" then .items[] else . end])}'
}

if [ "${ANON_ALL:-0}" = 1 ]; then
  scenarios=(tests/scenarios/*/)
else
  scenarios=(tests/scenarios/pods-dra-first-available tests/scenarios/runs-run-affinity)
fi

# snap NAME: both snapshots of what the server holds, both simulated, compared through the map.
snap() {
  local name=$1 s="$tmp/$1" extra=()
  [ -f "tests/scenarios/$name/args" ] && read -r -a extra <"tests/scenarios/$name/args"
  "$TALLY" snapshot --kubeconfig "$KC" -o "$s.b.json" 2>"$s.err" || bad "$name: snapshot failed: $(cat "$s.err")"
  "$TALLY" snapshot --kubeconfig "$KC" --anonymize --anonymize-map "$s.map.json" -o "$s.a.json" \
    2>"$s.err" || bad "$name: snapshot --anonymize failed: $(cat "$s.err")"
  [ -s "$s.a.json" ] && [ -s "$s.map.json" ] || { bad "$name: no anonymized snapshot or map"; return; }
  # The same objects, in the same order, of the same kinds; a capture time kept as a time.
  jq -e --slurpfile b "$s.b.json" '[.items[] | [.apiVersion, .kind]] == [$b[0].items[] | [.apiVersion, .kind]]
      and (.now | test("^[0-9-]+T[0-9:]+Z$"))' "$s.a.json" >/dev/null && ok ||
    bad "$name: the anonymized snapshot holds other objects"
  # One clock for both (the two captures may fall in different seconds).
  [ ${#extra[@]} -eq 0 ] && extra=(--now "$(jq -r .now "$s.b.json")")
  "$TALLY" simulate -o json "${extra[@]}" "$s.b.json" >"$s.b.out" 2>/dev/null
  "$TALLY" simulate -o json "${extra[@]}" "$s.a.json" >"$s.a.out" 2>/dev/null
  local out
  out=$(python3 tests/anonymize/compare.py "$s.map.json" "$s.b.out" "$s.a.out" --leaks "$s.a.json")
  [ $? -eq 0 ] && ok || bad "$name: simulate of the anonymized snapshot $out"
}

# ---- examples/cluster; the same server turns the scenarios' YAML into JSON -------------------
apiserver --seed tests/live/example-cluster.json
snap example-cluster
mkdir -p "$tmp/in"
for d in "${scenarios[@]}"; do
  d=${d%/}
  tojson "$d/input.yaml" >"$tmp/in/${d##*/}.json" 2>"$tmp/tojson.err" ||
    bad "${d##*/}: kubectl could not read input.yaml: $(head -c 300 "$tmp/tojson.err")"
done
stop_apiserver

# ---- each scenario on a server of its own --------------------------------------------------
for seed in "$tmp"/in/*.json; do
  apiserver --seed "$seed"
  snap "$(basename "$seed" .json)"
  stop_apiserver
done

# ---- the comparison can fail: two tokens swapped in the map -----------------------------------
s="$tmp/example-cluster"
jq 'to_entries as $e | ($e | map(select(.key | test("^team-")))) as $t
    | if ($t | length) < 2 then error("fewer than two team- names") else . end
    | .[$t[0].key] = $t[1].value | .[$t[1].key] = $t[0].value' "$s.map.json" >"$s.swapped.json"
python3 tests/anonymize/compare.py "$s.swapped.json" "$s.b.out" "$s.a.out" >/dev/null &&
  bad "a map with two tokens swapped still compares equal" || ok

# ---- the map file ------------------------------------------------------------------------------
python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
k = list(m)
sys.exit(0 if k == sorted(k, key=lambda s: s.encode()) and len(set(m.values())) == len(m)
         and not set(m.values()) & set(m) else 1)' "$s.map.json" && ok ||
  bad "the map is not sorted by original, or two originals share a token, or a token is an original"
grep -q '"cpu"\|"nvidia.com/gpu"\|"default-queue"' "$s.map.json" && bad "the map renames a kept string" || ok

# ---- the switches --------------------------------------------------------------------------------
"$TALLY" snapshot --kubeconfig /nonexistent --anonymize-map "$tmp/m.json" >/dev/null 2>"$tmp/e1"
[ $? -eq 2 ] && grep -q 'goes with --anonymize' "$tmp/e1" && ok || bad "--anonymize-map without --anonymize is not refused"
"$TALLY" snapshot --kubeconfig /nonexistent --anonymize --anonymize-map "$tmp/x.json" -o "$tmp/x.json" \
  >/dev/null 2>"$tmp/e2"
[ $? -eq 2 ] && grep -q 'a file of its own' "$tmp/e2" && ok || bad "a map written over the snapshot is not refused"
"$TALLY" snapshot --kubeconfig /nonexistent --anonymize --anonymize-map - >/dev/null 2>"$tmp/e3"
[ $? -eq 2 ] && ok || bad "a map on stdout next to the snapshot is not refused"
"$TALLY" snapshot --help | grep -q 'never send it' && ok || bad "the usage does not say the map stays with the sender"

echo "anonymize.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
