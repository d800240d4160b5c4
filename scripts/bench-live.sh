#!/usr/bin/env bash
# The live mode's benchmarks (docs/live.md "Performance"), part of `make bench`:
#   1. watch events applied per second (bench-live: parse, decode, apply), at 10,000 and 100,000
#      running pods, with forks held while the writer goes on; the writer lock's hold times;
#   2. instructions per event under callgrind (only parse + apply are counted) at 10,000, 100,000
#      and 1,000,000 pods: an event must cost the same however large the cluster
#      (BENCH_LIVE_1M=0 leaves the 1M run out: it needs about 6 GB and ten minutes);
#   3. webhook decision latency on the live state: p50/p99 of pods/resize decisions at a fixed
#      1,000 reviews/s with no events, then while 10,000 events/s stream in (bench-live --webhook);
#   4. initial sync: `tally serve --kubeconfig` against the test API server (tests/kube/) holding
#      100,000 pods (tally-gen), until /readyz is 200; tally's CPU against the server's.
# Wall-clock figures move with whatever else the machine runs; the instruction counts do not.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-build-bench/data}
mkdir -p "$OUT"
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DTALLY_TESTS=OFF >/dev/null
cmake --build build-bench -j 2 --target tally tally-gen bench-live >/dev/null

echo "== live: watch events applied (bench-live) =="
for n in 10000 100000; do
  build-bench/bench-live "$n" 90000 100 | sed "s/^/  /"
done

echo "== live: instructions per event (callgrind; parse + apply only, 20,000 events, 20 forks) =="
sizes="10000 100000"
[ "${BENCH_LIVE_1M:-1}" = 1 ] && sizes="$sizes 1000000"
base=
for n in $sizes; do
  ins=$(valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no --callgrind-out-file=/dev/null \
          build-bench/bench-live "$n" 20000 20 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  per=$((ins / 20000))
  [ -z "$base" ] && base=$per
  echo "  $n pods: $per instructions per event ($(awk -v a="$per" -v b="$base" 'BEGIN{printf "%.2f", a/b}')x the 10,000-pod figure)"
done

echo "== live: webhook decisions on the live state, 1,000 reviews/s, idle and with 10,000 events/s =="
build-bench/bench-live --webhook 10000 10000 1000 10 | sed "s/^/  /"

echo "== live: initial sync of 100,000 pods from the test API server =="
pods=$OUT/live-pods-100000.json
[ -s "$pods" ] || build-bench/tally-gen pods 100000 42 >"$pods"
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
python3 tests/kube/apiserver.py --dir "$tmp/api" --seed "$pods" >"$tmp/api.log" 2>&1 &
api=$!
for _ in $(seq 1200); do [ -s "$tmp/api/ready.json" ] && break; sleep 0.1; done
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=bench \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null
server_cpu0=$(awk '{print $14 + $15}' "/proc/$api/stat")
t0=$(date +%s.%N)
build-bench/tally serve --listen 127.0.0.1:0 --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key" \
  --kubeconfig "$tmp/api/kubeconfig" >"$tmp/serve.log" 2>&1 &
srv=$!
port=
for _ in $(seq 200); do
  port=$(sed -n 's/.*event=listening.* port=\([0-9]*\).*/\1/p' "$tmp/serve.log" | head -1)
  [ -n "$port" ] && break
  sleep 0.05
done
until [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$tmp/tls.crt" "https://127.0.0.1:$port/readyz")" = 200 ]; do
  sleep 0.05
done
t1=$(date +%s.%N)
tck=$(getconf CLK_TCK)
tally_cpu=$(awk -v t="$tck" '{printf "%.2f", ($14 + $15) / t}' "/proc/$srv/stat")
server_cpu=$(awk -v t="$tck" -v c="$server_cpu0" '{printf "%.2f", ($14 + $15 - c) / t}' "/proc/$api/stat")
echo "  ready after $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b - a}') s; CPU: tally $tally_cpu s, the test API server $server_cpu s"
kill "$srv" "$api" 2>/dev/null || true
